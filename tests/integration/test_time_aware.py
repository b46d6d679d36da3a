"""Time-aware queries against the real store (issue 14 item 2): a question naming a period lifts
the items of that period, resolved at the time it is asked (as_of)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from mnemo import AsyncArchive, RecallResult, Scope, Settings
from mnemo.embed import Embeddings

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
