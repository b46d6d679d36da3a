"""Recall as it is lived (issue 28): a new user's Maya conversation, asked with the archive's
defaults (the owner's mutating recall, stochastic scoring) before the night, after it, after the
night a week later whose retention removes the raw turns, and after 200 unrelated recalls. "Where
does Maya live?" finds the move, or the fact made from it, first every time: use, weight,
recency and noise reorder what is about equally relevant, never lift a clearly less relevant
memory (the dog, the allergy, the sister) over it. The move closes Freising and leaves Munich
open: the turn that states a fact never closes it."""

from __future__ import annotations

import itertools
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from mnemo import AsyncArchive, Scope
from mnemo.recall.retrieve import check, retrieve, start_embedding

pytestmark = pytest.mark.future_nights  # nights run days or weeks ahead of the clock

ME = Scope("assistant", "maya-lived")
START = datetime(2024, 8, 1, 18, 0, tzinfo=UTC)
SESSIONS = (  # (days after START, Maya's lines; the assistant answers each)
    (0, [
        "I live in Freising, a small town near Munich.",
        "My sister Lena lives in Hamburg.",
        "I am allergic to shellfish, so no prawns for me.",
        "My neighbour Jonas waters my plants when I travel.",
        "I adopted a dog called Pixel two years ago.",
    ]),
    (14, [
        "I ran my first half marathon yesterday!",
        "It took me two hours and five minutes.",
        "Lena sent me flowers after the race.",
        "Pixel slept all afternoon after our walk.",
        "I am training for a full marathon next spring.",
    ]),
    (45, [
        "I moved from Freising to Munich city centre last week.",
        "The new flat is close to the Viktualienmarkt.",
        "I adopted a second dog called Biscuit.",
        "Jonas helped me carry the boxes.",
        "I still cannot eat shellfish at the market, sadly.",
    ]),
    (60, [
        "I started a new job at a solar energy company.",
        "My commute is now ten minutes by bike.",
        "Lena is visiting me next weekend.",
        "Biscuit and Pixel get along well.",
        "I like cooking pasta on Sundays.",
    ]),
)  # fmt: skip
UNRELATED = (
    "What is Maya allergic to?",
    "What are the names of Maya's dogs?",
    "Who waters Maya's plants?",
    "When did Maya run a half marathon?",
    "Where does Maya's sister live?",
    "What does Maya cook on Sundays?",
    "Where does Maya work?",
    "How long did the half marathon take?",
)
QUESTION = "Where does Maya live?"


def conversation(path: Path) -> Path:
    lines = []
    for days, said in SESSIONS:
        for i, text in enumerate(said):
            at = START + timedelta(days=days, minutes=2 * i)
            lines.append(
                {
                    "session": f"day-{days}",
                    "role": "user",
                    "speaker": "Maya",
                    "content": text,
                    "created_at": at.isoformat(),
                }
            )
            lines.append({"session": f"day-{days}", "role": "assistant", "speaker": "Assistant",
                          "content": f"Thanks for telling me, Maya. ({i + 1})",
                          "created_at": (at + timedelta(minutes=1)).isoformat()})  # fmt: skip
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    return path


async def first_hit(archive: AsyncArchive) -> str:
    result = await archive.recall(ME, QUESTION, 5)  # the defaults: mutating, stochastic
    assert result.hits, "the question is about Maya: it is answered, not refused"
    return result.hits[0].content


async def test_where_maya_lives_stays_first_through_nights_retention_and_use(
    archive: AsyncArchive, tmp_path: Path
) -> None:
    await archive.import_file(ME, conversation(tmp_path / "maya.jsonl"))
    assert "Munich" in await first_hit(archive)

    tonight = await archive.night_cycle(ME)
    assert tonight.facts_new >= 5
    assert "Munich" in await first_hit(archive)

    later = await archive.night_cycle(ME, as_of=tonight.as_of + timedelta(days=8))
    assert later.turns_removed > 0, "retention removed the raw turns: their blocks' lines answer now"
    assert "Munich" in await first_hit(archive)

    for question in itertools.islice(itertools.cycle(UNRELATED), 200):
        await archive.recall(ME, question, 5)
    assert "Munich" in await first_hit(archive)

    maya = await archive.knowledge.facts(ME, "Maya")
    lives = {f.value: f for f in maya.facts if f.attribute == "lives in"}
    munich = next(f for value, f in lives.items() if "Munich" in value)
    assert munich.current, "the turn that says Maya moved never closes the fact it states"
    assert all(not f.current for value, f in lives.items() if "Freising" in value and "Munich" not in value)


async def test_after_retention_late_interaction_still_reads_every_line(archive: AsyncArchive, tmp_path: Path) -> None:
    """The turns retention removed live on as their blocks' lines, most of them in the cortex (their
    vectors there): the MaxSim scan reads them as it read the turns, so a night never makes the
    same words harder to find."""
    await archive.import_file(ME, conversation(tmp_path / "maya.jsonl"))
    tonight = await archive.night_cycle(ME)
    later = await archive.night_cycle(ME, as_of=tonight.as_of + timedelta(days=8))
    assert later.turns_removed > 0 and tonight.blocks_migrated + later.blocks_migrated > 0
    rt = archive._rt
    async with rt.store.connection() as conn:
        cur = await conn.execute(
            """SELECT DISTINCT l.turn_id FROM mnemo.block_lines l
               WHERE l.entity_id = %s AND l.namespace = %s
                 AND NOT EXISTS (SELECT 1 FROM mnemo.turns t WHERE t.entity_id = l.entity_id AND t.id = l.turn_id)""",
            (ME.entity_id, ME.namespace),
        )
        lines = {r[0] for r in await cur.fetchall()}
        request = check(
            rt, ME, "Where does Maya live?", 5, as_entity=None, read_only=True, threshold=None,
            kinds=("turn", "memory"), trace=False, query_vector=None, cues=None, now=None, seed=None, hops=None,
        )  # fmt: skip
        found = await retrieve(rt, conn, request, start_embedding(rt, request))
    assert len(lines) >= 20
    assert lines <= set(found.scanned), "every line is scored by MaxSim, as its turn was"


async def test_after_retention_a_fact_still_leads_to_the_line_it_was_read_from(
    archive: AsyncArchive, tmp_path: Path
) -> None:
    """The structural step follows a fact's ``derived_from`` link to its turn; once retention removed
    the turn, the link leads to the block's line that keeps its words."""
    from mnemo.store import tiers

    await archive.import_file(ME, conversation(tmp_path / "maya.jsonl"))
    tonight = await archive.night_cycle(ME)
    await archive.night_cycle(ME, as_of=tonight.as_of + timedelta(days=8))
    rt = archive._rt
    async with rt.store.connection() as conn:
        cur = await conn.execute(
            """SELECT m.id, m.provenance[1]::uuid FROM mnemo.memories m
               WHERE m.entity_id = %s AND m.namespace = %s AND m.content = 'Maya lives in Munich city centre'""",
            (ME.entity_id, ME.namespace),
        )
        fact, turn = await cur.fetchone() or (None, None)
        assert fact is not None
        gone = await conn.execute(
            "SELECT count(*) FROM mnemo.turns WHERE entity_id = %s AND id = %s", (ME.entity_id, turn)
        )
        assert (await gone.fetchone() or (1,))[0] == 0, "retention removed the turn that said it"
        linked = await tiers.linked_items(conn, ME.entity_id, ME.namespace, [fact])
    assert (turn, "line") in linked
