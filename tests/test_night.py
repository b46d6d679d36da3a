"""The night cycle end to end on small hand-made conversations (issue 5)."""

from __future__ import annotations

import uuid
from datetime import timedelta

import psycopg
import pytest

from mnemo import AsyncArchive, Scope
from tests.night_data import BREAKTHROUGH, START, arc_conversation, record

ME = Scope("alice", "night")


def rows(url: str, query: str, *args: object) -> list[tuple[object, ...]]:
    with psycopg.connect(url) as conn:
        return conn.execute(query, args).fetchall()  # type: ignore[arg-type]


async def test_arc_becomes_a_block_with_the_breakthrough_verbatim(archive: AsyncArchive, database_url: str) -> None:
    texts = arc_conversation()
    await record(archive, ME, "s1", texts, START)
    report = await archive.night_cycle(ME, as_of=START + timedelta(hours=1))

    assert report.turns_scored == len(texts)
    assert report.arcs == 1
    surprisal = rows(
        database_url,
        "SELECT turn_number, surprisal, flux_state FROM mnemo.turns WHERE entity_id = %s ORDER BY turn_number",
        ME.entity_id,
    )
    assert all(s is not None and s >= 0 for _, s, _ in surprisal)
    spike_turn = 16  # the first turn about Kubernetes
    assert surprisal[spike_turn][1] > 3 * surprisal[spike_turn - 1][1]  # type: ignore[operator]
    assert surprisal[spike_turn][2] == "spike"
    assert {state for _, _, state in surprisal} <= {"baseline", "spike", "resolution", "stable"}

    blocks = rows(
        database_url,
        """SELECT kind, first_turn, last_turn, prose, coherence_gain, ties_weight, salience_scores, memory_id
           FROM mnemo.blocks WHERE entity_id = %s AND kind <> 'compound' ORDER BY first_turn""",
        ME.entity_id,
    )
    covered = [n for b in blocks for n in range(b[1], b[2] + 1)]  # type: ignore[arg-type, operator]
    assert covered == list(range(len(texts)))  # every turn in exactly one block, in order
    arc = [b for b in blocks if b[0] == "arc"]
    assert len(arc) == 1
    kind, first, last, prose, gain, weight, salience, memory_id = arc[0]
    assert first <= spike_turn - 2 and last >= spike_turn + 5  # type: ignore[operator]  # margins
    live = "\n".join(z["content"] for z in prose["live_zones"])  # type: ignore[index]
    assert BREAKTHROUGH in live  # the resolution is kept verbatim
    assert gain > 0  # the arc ended less perplexed than its baseline
    assert 0 <= weight <= 1  # type: ignore[operator]
    assert set(salience) >= {"utterance_level", "exchange_level", "theme_level", "composite"}  # type: ignore[arg-type]

    # The block is searchable: recall finds its memory row, which names the block.
    result = await archive.recall(ME, "why was the Postgres replica evicted?", k=5, read_only=True)
    block_hits = [h for h in result.hits if h.metadata.get("block_id")]
    assert block_hits and block_hits[0].id == memory_id


async def test_second_run_does_nothing_twice(archive: AsyncArchive, database_url: str) -> None:
    await record(archive, ME, "s1", arc_conversation(), START)
    first = await archive.night_cycle(ME, as_of=START + timedelta(hours=1))
    counts = rows(
        database_url,
        """SELECT (SELECT count(*) FROM mnemo.blocks), (SELECT count(*) FROM mnemo.facts),
                  (SELECT sum(mention_count) FROM mnemo.facts), (SELECT count(*) FROM mnemo.memories)""",
    )
    second = await archive.night_cycle(ME, as_of=START + timedelta(hours=2))
    assert first.blocks > 0 and second.blocks == 0 and second.turns_scored == 0 and second.facts_new == 0
    again = rows(
        database_url,
        """SELECT (SELECT count(*) FROM mnemo.blocks), (SELECT count(*) FROM mnemo.facts),
                  (SELECT sum(mention_count) FROM mnemo.facts), (SELECT count(*) FROM mnemo.memories)""",
    )
    assert again == counts


async def test_session_ending_mid_arc_is_continued_by_the_next_session(
    archive: AsyncArchive, database_url: str
) -> None:
    from tests.night_data import ROUTINE, SPIKE

    await record(archive, ME, "s1", ROUTINE + ROUTINE + SPIKE[:3], START)
    await record(archive, ME, "s2", [SPIKE[0], *SPIKE[3:], *ROUTINE[:6]], START + timedelta(hours=3))
    report = await archive.night_cycle(ME, as_of=START + timedelta(hours=5))
    assert report.open_arcs >= 1
    assert report.continuations == 1
    linked = rows(
        database_url,
        """SELECT a.session_id, b.session_id, a.parent_metablock_id = b.parent_metablock_id
           FROM mnemo.blocks a JOIN mnemo.blocks b ON b.id = a.continued_by AND b.continues_from = a.id""",
    )
    assert linked == [("s1", "s2", True)]
    meta = rows(database_url, "SELECT kind, prose FROM mnemo.blocks WHERE kind = 'compound'")
    assert len(meta) == 1 and len(meta[0][1]["constituent_blocks"]) == 2  # type: ignore[index]
    assert rows(database_url, "SELECT link_type FROM mnemo.links WHERE link_type = 'continues'") == [("continues",)]


async def test_unknown_scope_and_stage_are_refused(archive: AsyncArchive) -> None:
    from mnemo import UnknownScopeError

    with pytest.raises(UnknownScopeError):
        await archive.night_cycle(Scope("nobody", "here"))
    await record(archive, ME, "s1", arc_conversation()[:4], START)
    with pytest.raises(ValueError, match="unknown night stages"):
        await archive.night_cycle(ME, stages=("surprisal", "dreaming"))


async def test_retention_removes_covered_raw_turns_and_keeps_the_blocks(
    archive: AsyncArchive, database_url: str
) -> None:
    texts = arc_conversation()
    await record(archive, ME, "s1", texts, START)
    await record(archive, ME, "s2", ["A brand new turn that no night has seen yet."], START + timedelta(days=3))
    # As of two days later: s1 (one cycle old) is past the normal tier's raw retention.
    report = await archive.night_cycle(ME, as_of=START + timedelta(days=2), stages=("surprisal", "blocks", "retention"))
    assert report.turns_removed == len(texts)
    left = rows(database_url, "SELECT session_id FROM mnemo.turns WHERE entity_id = %s", ME.entity_id)
    assert left == [("s2",)]  # not covered by a block (and newer than as_of): kept
    for table in rows(database_url, "SELECT table_name FROM vectors.spaces"):
        assert rows(
            database_url,
            f"SELECT count(*) FROM vectors.{table[0]} WHERE item_kind = 'turn' AND entity_id = %s",  # noqa: S608
            ME.entity_id,
        ) == [(1,)]
    result = await archive.recall(ME, "why was the Postgres replica evicted?", k=3, read_only=True)
    assert result.hits[0].metadata.get("block_id")
    assert BREAKTHROUGH in result.hits[0].content


async def test_forgetting_a_turn_removes_the_blocks_and_facts_that_copied_it(
    archive: AsyncArchive, database_url: str
) -> None:
    from tests.test_forget import find_anywhere

    await record(archive, ME, "s1", arc_conversation(), START)
    await archive.night_cycle(ME, as_of=START + timedelta(hours=1))
    (turn_id,) = rows(database_url, "SELECT id FROM mnemo.turns WHERE content = %s", BREAKTHROUGH)[0]
    assert find_anywhere(database_url, "node disk causes the eviction")
    assert rows(database_url, "SELECT key FROM mnemo.night_state") == [("surprisal.ngram",)]
    await archive.forget(ME, uuid.UUID(str(turn_id)))
    assert find_anywhere(database_url, "node disk causes the eviction") == {}
    assert rows(database_url, "SELECT key FROM mnemo.night_state") == []  # the n-gram counts learnt it
    await record(archive, ME, "s2", ["Back to pasta with tomato sauce."], START + timedelta(hours=2))
    report = await archive.night_cycle(ME, as_of=START + timedelta(hours=3))
    assert report.turns_scored == 1
    state = rows(database_url, "SELECT value FROM mnemo.night_state")[0][0]
    assert "disk" not in str(state) and "pasta" in str(state)  # rebuilt from the turns that remain
