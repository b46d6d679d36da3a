"""Public API surface, configuration precedence, ids, the sync facade."""

from __future__ import annotations

import uuid

import pytest

import mnemo
from mnemo import Archive, ConfigurationError, MnemoError, RecallResult, Scope, Settings
from mnemo.config import load_settings
from mnemo.models import uuid7


def test_all_is_sorted_and_complete() -> None:
    assert mnemo.__all__ == sorted(mnemo.__all__)
    for name in mnemo.__all__:
        assert hasattr(mnemo, name), name
    errors = [getattr(mnemo, n) for n in mnemo.__all__ if n.endswith("Error")]
    assert all(issubclass(e, MnemoError) for e in errors)


def test_settings_precedence(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    assert Settings().refusal_threshold == 0.25
    monkeypatch.setenv("MNEMO_REFUSAL_THRESHOLD", "0.4")
    monkeypatch.setenv("MNEMO_HOME", str(tmp_path))
    assert Settings().refusal_threshold == 0.4 and Settings().home == tmp_path
    assert Settings(refusal_threshold=0.1).refusal_threshold == 0.1  # keyword beats environment
    assert Settings().embedded and not Settings(database_url="postgresql://x/y").embedded


@pytest.mark.parametrize(
    "kwargs",
    [
        {"refusal_threshold": 3},
        {"vector_space": "Bad Space"},
        {"pool_min_size": 5, "pool_max_size": 2},
        {"unknown_option": 1},
    ],
)
def test_bad_settings_are_configuration_errors(kwargs) -> None:
    with pytest.raises(ConfigurationError, match="invalid mnemo settings"):
        load_settings(**kwargs)


def test_bad_environment_is_a_configuration_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNEMO_CANDIDATE_DEPTH", "lots")
    with pytest.raises(ConfigurationError, match="candidate_depth"):
        load_settings()


def test_uuid7_is_version_7_and_ordered() -> None:
    ids = [uuid7() for _ in range(2000)]
    assert all(i.version == 7 and i.variant == uuid.RFC_4122 for i in ids)
    assert ids == sorted(ids) and len(set(ids)) == len(ids)


def test_scope_parse() -> None:
    assert Scope.parse("alice") == Scope("alice", "default")
    assert Scope.parse("alice/work") == Scope("alice", "work")
    assert str(Scope("a", "b")) == "a/b"


def test_sync_archive_round_trip(sync_archive: Archive) -> None:
    scope = Scope("sync", "facade")
    memory = sync_archive.remember(scope, "The sync facade runs the async archive on its own loop")
    result = sync_archive.recall(scope, "how does the sync facade work?", k=1)
    assert isinstance(result, RecallResult) and result[0].id == memory.id
    assert sync_archive.status().counts["memories"] == 1
