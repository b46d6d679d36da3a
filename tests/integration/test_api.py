"""The sync facade on the real database and embedder (the rest of the public API: tests/unit/test_api.py)."""

from __future__ import annotations

from mnemo import Archive, RecallResult, Scope


def test_sync_archive_round_trip(sync_archive: Archive) -> None:
    scope = Scope("sync", "facade")
    memory = sync_archive.remember(scope, "The sync facade runs the async archive on its own loop")
    result = sync_archive.recall(scope, "how does the sync facade work?", k=1)
    assert isinstance(result, RecallResult) and result[0].id == memory.id
    assert sync_archive.status().counts["memories"] == 1
