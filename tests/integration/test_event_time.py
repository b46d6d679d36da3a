"""Two clocks (DESIGN §2 "Time", issue 28 item 2): what the night derives from imported history
carries the event time of its sources (a block, a fact: its turns; an insight, a narrative: its
source memories), and recall's recency and activation, ``as_of`` and the dates a context shows
use that time. A night that runs today never makes 2024's news look new."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import cast

import psycopg
import pytest

from mnemo import AsyncArchive, Scope, Settings
from mnemo.cognition.scoring.activation import AccessHistory, activation, base_level, retrieval_probability, spreading
from mnemo.cognition.scoring.blend_components import recency

ME = Scope("assistant", "maya")
START = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)
MOVED = START + timedelta(days=40)  # the session in which Maya says she moved
ROUTINE = [
    "I cooked pasta with tomato sauce tonight.",
    "Nice, pasta with tomato sauce is a good dinner.",
    "I cooked pasta with garlic and olive oil today.",
    "Pasta with garlic and olive oil is a good dinner too.",
]
SESSIONS = {
    "s1": (START, ["I live in Freising.", "Freising is a nice town.", "I love hiking in the Alps.", "Sounds great."]),
    "s2": (
        MOVED,
        [
            "I moved from Freising to Munich city centre last week.",
            "Congratulations on the move!",
            "I adopted a second dog called Biscuit.",
            "Biscuit is a lovely name.",
        ],
    ),
}
NOTES = (  # near duplicates: one insight and its narrative; written in 2024, with no event time of their own
    "Maya prefers simple deployment tools over complex infrastructure.",
    "Maya prefers simple deployment tools rather than complex infrastructure.",
    "Maya prefers simple deployment tools to complex infrastructure.",
)
NOTED = START + timedelta(days=10)


def rows(url: str, query: str, *args: object) -> list[tuple[object, ...]]:
    with psycopg.connect(url) as conn:
        return conn.execute(query, args).fetchall()


def conversation(path: Path) -> Path:
    lines = []
    for session, (start, texts) in SESSIONS.items():
        for i, text in enumerate([*texts, *ROUTINE]):
            lines.append({
                "session": session,
                "role": "user" if i % 2 == 0 else "assistant",
                "speaker": "Maya" if i % 2 == 0 else "Assistant",
                "content": text,
                "created_at": (start + timedelta(minutes=i)).isoformat(),
            })  # fmt: skip
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    return path


async def imported_and_consolidated(archive: AsyncArchive, database_url: str, tmp_path: Path) -> datetime:
    """The 2024 conversation imported and three 2024 notes, then a night run now; returns when it ran."""
    await archive.import_file(ME, conversation(tmp_path / "maya.jsonl"))
    for i, text in enumerate(NOTES):
        note = await archive.remember(ME, text)
        with psycopg.connect(database_url) as conn:  # written in 2024, before event times were given
            conn.execute(
                "UPDATE mnemo.memories SET created_at = %s, updated_at = %s WHERE id = %s",
                (NOTED + timedelta(hours=i), NOTED + timedelta(hours=i), note.id),
            )
    ran = datetime.now(UTC)
    report = await archive.night_cycle(ME)
    assert report.blocks >= 2 and report.facts_new >= 4 and report.insights == 1 and report.narratives == 1
    return ran


def source_times(database_url: str, ids: list[str]) -> list[datetime]:
    """The event times of what an item was made from: turns (their time), memories (their event
    time, else when they were written)."""
    found = rows(
        database_url,
        """SELECT created_at FROM mnemo.turns WHERE id = ANY(%s::uuid[])
           UNION ALL SELECT coalesce(event_time, created_at) FROM mnemo.memories WHERE id = ANY(%s::uuid[])""",
        ids,
        ids,
    )
    return [t for (t,) in found]  # type: ignore[misc]


async def test_what_the_night_derives_carries_the_time_of_its_sources(
    archive: AsyncArchive, database_url: str, tmp_path: Path
) -> None:
    ran = await imported_and_consolidated(archive, database_url, tmp_path)
    derived = rows(
        database_url,
        "SELECT id, kind, source_tag, event_time, created_at, provenance, content FROM mnemo.memories "
        "WHERE source_tag LIKE 'night:%%'",
    )
    assert {str(r[2]) for r in derived} == {"night:block", "night:fact", "night:insight", "night:narrative"}
    for _, kind, tag, event_time, created_at, provenance, content in derived:
        sources = source_times(database_url, cast("list[str]", provenance))
        assert sources, (tag, content)
        assert isinstance(event_time, datetime), (tag, content)
        assert min(sources) <= event_time <= max(sources), (tag, kind, content, event_time, sources)
        assert event_time < START + timedelta(days=60) and created_at >= ran  # type: ignore[operator]
    # the insight's sources were written in 2024 with no event time of their own: that is their time
    insight_time, story_time = (
        rows(database_url, "SELECT event_time FROM mnemo.memories WHERE kind = %s", kind)[0][0]
        for kind in ("insight", "narrative")
    )
    assert insight_time == story_time == NOTED + timedelta(hours=2)
    # a fact's memory is dated when it was said, its validity stays the fact's own
    said, valid_from = rows(
        database_url,
        """SELECT m.event_time, f.valid_from FROM mnemo.facts f JOIN mnemo.memories m ON m.id = f.memory_id
           WHERE f.value = 'Munich city centre'""",
    )[0]
    assert said == MOVED and valid_from == MOVED - timedelta(days=7, hours=9)  # "last week", resolved at the turn
    for table in ("facts", "triples"):
        for first_seen, last_seen in rows(database_url, f"SELECT first_seen, last_seen FROM mnemo.{table}"):  # noqa: S608
            assert START <= first_seen <= last_seen < START + timedelta(days=60)  # type: ignore[operator]
    for start, end in rows(database_url, "SELECT arc_start_time, arc_end_time FROM mnemo.blocks"):
        assert START <= start <= end < START + timedelta(days=60)  # type: ignore[operator]


async def test_recall_measures_a_derived_memory_from_its_event_time(
    archive: AsyncArchive, database_url: str, tmp_path: Path, settings: Settings
) -> None:
    await imported_and_consolidated(archive, database_url, tmp_path)
    ids = {str(c): i for i, c in rows(database_url, "SELECT id, content FROM mnemo.memories")}
    munich = ids["Maya lives in Munich city centre"]
    at = MOVED + timedelta(days=3)  # after the conversation, long before the night ran
    result = await archive.recall(ME, "where does Maya live?", k=10, read_only=True, as_of=at)
    hit = next((h for h in result.hits if h.id == munich), None)
    assert hit is not None, [h.content for h in result.hits]  # the night's work is there at its sources' time
    assert hit.event_time == MOVED
    # as recent as the turn it was read from (which it stands for in the hits: one thing said once)
    assert hit.recency == pytest.approx(recency((at - MOVED).total_seconds(), settings.recency_half_life_days * 86400))
    assert not any(h.content.startswith("I moved from Freising") for h in result.hits)
    assert hit.activation == pytest.approx(
        retrieval_probability(
            activation(
                base_level(AccessHistory(MOVED.timestamp()), at.timestamp(), settings.actr_decay),
                spreading(hit.similarity or 0.0, settings.actr_spreading),
            ),
            settings.actr_tau,
            settings.actr_noise,
        )
    )
    # asked now, 2024's news is old news: nothing derived from it looks new
    now = await archive.recall(ME, "where does Maya live?", k=10, read_only=True)
    derived = [h for h in now.hits if h.item_kind == "memory"]
    assert derived and all(h.recency < 0.01 and h.activation < 0.5 for h in derived), [
        (h.content, h.recency, h.activation) for h in derived
    ]


async def test_as_of_sees_what_had_happened_by_then(archive: AsyncArchive, database_url: str, tmp_path: Path) -> None:
    await imported_and_consolidated(archive, database_url, tmp_path)
    before_move = MOVED - timedelta(days=1)
    then = await archive.recall(ME, "where does Maya live?", k=10, read_only=True, as_of=before_move)
    assert then.hits and not any("Munich" in h.content for h in then.hits)  # not said yet
    assert all((h.event_time or h.created_at) <= before_move for h in then.hits)
    block = await archive.context(ME, "where does Maya live now?", 400, read_only=True, as_of=MOVED + timedelta(days=3))
    lines = block.text.splitlines()
    fact = next((line for line in lines if line.endswith("Maya lives in Munich city centre")), "")
    assert fact.startswith(f"- [{MOVED:%Y-%m-%d} · semantic")  # dated when Maya said it, not when the night ran
    assert not any(f"{datetime.now(UTC):%Y-%m-%d}" in line for line in lines)


def test_the_command_line_dates_a_hit_by_its_event_time(capsys: pytest.CaptureFixture[str]) -> None:
    from mnemo.interfaces.cli._common import print_recall

    hit = {
        "id": str(uuid.uuid4()), "item_kind": "memory", "memory_kind": "semantic", "content": "Maya lives in Munich",
        "score": 0.5, "similarity": 0.5, "activation": 0.0, "weight": 0.2, "recency": 0.0,
        "created_at": "2026-11-26T10:00:00+00:00", "event_time": "2024-06-10T09:00:00+00:00",
    }  # fmt: skip
    print_recall({"query": "q", "scope": "a/b", "latency_ms": 1.0, "hits": [hit]}, as_json=False)
    out = capsys.readouterr().out
    assert "2024-06-10" in out and "2026-11-26" not in out
