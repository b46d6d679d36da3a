"""Time-aware queries against the real store (issue 14 item 2): a question naming a period lifts
the items of that period, resolved at the time it is asked (as_of)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from mnemo import Archive, AsyncArchive, InvalidInputError, MalformedImportError, RecallResult, Scope, Settings
from mnemo.embed import Embeddings
from mnemo.interfaces.cli import app
from mnemo.interfaces.http import create_app
from tests.conftest import snapshot
from tests.integration.test_http import auth, serve

ME = Scope("cook", "chat")
TURNS = [
    {"session": "a", "speaker": "Ana", "content": "I cooked a big pot of lentil soup for the neighbours",
     "created_at": "2024-03-02T18:00:00+00:00"},
    {"session": "b", "speaker": "Ana", "content": "I cooked a pot of mushroom risotto for my friends",
     "created_at": "2024-06-04T19:00:00+00:00"},
    {"session": "c", "speaker": "Ana", "content": "I cooked a tray of roast vegetables for the family",
     "created_at": "2024-09-15T12:00:00+00:00"},
]  # fmt: skip


async def _load(archive: AsyncArchive, tmp_path: Path) -> None:
    path = tmp_path / "cook.jsonl"
    path.write_text("\n".join(json.dumps(t) for t in TURNS) + "\n")
    await archive.import_file(ME, path)


def _first(result: object) -> str:
    assert isinstance(result, RecallResult)
    return result.hits[0].content


async def test_the_period_a_question_names_comes_first(archive: AsyncArchive, tmp_path: Path) -> None:
    await _load(archive, tmp_path)
    for month, dish in (("March", "lentil"), ("June", "risotto"), ("September", "roast")):
        result = await archive.recall(ME, f"What did Ana cook in {month} 2024?", k=3, read_only=True)
        assert dish in _first(result)
        assert isinstance(result, RecallResult)
        assert [h.in_period for h in result.hits] == [True, False, False]


async def test_a_relative_period_is_resolved_at_the_time_asked(archive: AsyncArchive, tmp_path: Path) -> None:
    await _load(archive, tmp_path)
    # "last week" asked on 10 June 2024 is the week of the risotto; asked in September, the roast
    june = await archive.recall(ME, "What did Ana cook last week?", k=3, read_only=True,
                                as_of=datetime(2024, 6, 10, tzinfo=UTC))  # fmt: skip
    assert "risotto" in _first(june)
    september = await archive.recall(ME, "What did Ana cook last week?", k=3, read_only=True,
                                     as_of=datetime(2024, 9, 20, tzinfo=UTC))  # fmt: skip
    assert "roast" in _first(september)


async def test_no_period_or_the_setting_off_lifts_nothing(
    database_url: str, embeddings: Embeddings, tmp_path: Path
) -> None:
    settings = Settings(database_url=database_url, seed=4, time_aware=False)
    archive = await AsyncArchive.open(settings, embeddings=embeddings)
    try:
        await _load(archive, tmp_path)
        off = await archive.recall(ME, "What did Ana cook in June 2024?", k=3, read_only=True)
    finally:
        await archive.close()
    assert isinstance(off, RecallResult) and not any(h.in_period for h in off.hits)


# --- event times in the future (issue 27 item 5) ---------------------------------------------------
FAR = "2999-01-01T00:00:00+00:00"
LIMIT = r"more than 24 hours ahead of this machine's clock.*MNEMO_CLOCK_SKEW_HOURS"


def _future_file(path: Path, when: str) -> Path:
    rows = [
        {"session": "a", "content": "I moved to Lisbon"},
        {"session": "a", "content": "See you", "created_at": when},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


async def test_a_time_beyond_the_clock_skew_is_refused_on_every_write_and_changes_nothing(
    archive: AsyncArchive, tmp_path: Path, database_url: str
) -> None:
    await archive.remember(ME, "something already stored")
    before = snapshot(database_url)
    with pytest.raises(InvalidInputError, match="event_time 2999-01-01T00:00:00\\+00:00 is " + LIMIT):
        await archive.remember(ME, "The launch happened", event_time=FAR)
    with pytest.raises(InvalidInputError, match="created_at .* is " + LIMIT):
        await archive.record_turn(ME, "s", "user", "Hello", created_at=datetime(2999, 1, 1, tzinfo=UTC))
    with pytest.raises(MalformedImportError, match="future.jsonl:2: created_at .* is " + LIMIT) as info:
        await archive.import_file(ME, _future_file(tmp_path / "future.jsonl", FAR))
    assert info.value.line == 2
    assert snapshot(database_url) == before
    report = await archive.import_file(ME, tmp_path / "future.jsonl", skip_invalid=True)
    assert report.turns == 1 and [line for line, _ in report.skipped] == [2]
    # within the skew (a clock a few hours behind the writer's) is accepted
    soon = datetime.now(UTC) + timedelta(hours=3)
    assert (await archive.record_turn(ME, "s", "user", "Hello", created_at=soon)).created_at == soon
    assert (await archive.remember(ME, "The launch is soon", event_time=soon)).event_time == soon


async def test_the_clock_skew_is_a_setting(settings: Settings, embeddings: Embeddings, database_url: str) -> None:
    soon = datetime.now(UTC) + timedelta(hours=3)
    strict = settings.model_copy(update={"clock_skew_hours": 1.0})
    async with await AsyncArchive.open(strict, embeddings=embeddings) as archive:
        with pytest.raises(InvalidInputError, match=r"more than 1 hour ahead.*MNEMO_CLOCK_SKEW_HOURS"):
            await archive.remember(ME, "The launch is soon", event_time=soon)
    loose = settings.model_copy(update={"clock_skew_hours": 24 * 365 * 2000})
    async with await AsyncArchive.open(loose, embeddings=embeddings) as archive:
        assert (await archive.remember(ME, "The launch", event_time=FAR)).event_time == datetime(2999, 1, 1, tzinfo=UTC)


def test_cli_and_http_imports_refuse_a_future_time(
    settings: Settings, embeddings: Embeddings, database_url: str, tmp_path: Path
) -> None:
    with Archive(settings, embeddings=embeddings) as archive:
        archive.remember(ME, "something already stored")
        token, _ = archive.access.create_token(ME.entity_id, namespace=ME.namespace)
    before = snapshot(database_url)
    env = {"MNEMO_DATABASE_URL": database_url, "MNEMO_HOME": str(tmp_path), "MNEMO_ENTITY": "cook"}
    result = CliRunner().invoke(app, ["import", str(_future_file(tmp_path / "future.jsonl", FAR))], env=env)
    assert result.exit_code == 1 and "future.jsonl:2: created_at 2999-01-01T00:00:00+00:00 is more than 24 hours" in (
        result.stderr
    ), result.output
    turns: list[dict[str, Any]] = [{"content": "I moved to Lisbon"}, {"content": "See you", "created_at": FAR}]
    with serve(create_app(settings, embeddings=embeddings)) as url, httpx.Client(base_url=url, timeout=60) as c:
        refused = c.post("/v1/import", json={"turns": turns}, headers=auth(token))
        assert refused.status_code == 422 and "turns[1]: created_at" in refused.json()["error"]["message"]
        assert "MNEMO_CLOCK_SKEW_HOURS" in refused.json()["error"]["message"]
        assert snapshot(database_url) == before
        done = c.post("/v1/import", json={"turns": turns, "skip_invalid": True}, headers=auth(token))
        assert done.status_code == 201 and done.json()["turns"] == 1
        assert [s["index"] for s in done.json()["skipped"]] == [1]
    env["MNEMO_CLOCK_SKEW_HOURS"] = str(24 * 365 * 2000)  # the setting's environment variable
    result = CliRunner().invoke(app, ["import", str(tmp_path / "future.jsonl"), "-n", "later"], env=env)
    assert result.exit_code == 0 and "imported 2 turns" in result.stdout, result.output
