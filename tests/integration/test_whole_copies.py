"""Whole copies (issue 39 items 1-2): a scope after two nights with retention, forked and
round-tripped through packets into a new home, is the same scope: the same recall hits in the
same order, the same facts, the same blocks, lines and night bookkeeping; and a night on each copy
changes nothing that the same night on the source would not (no episode, fact or insight made
twice). A merge brings a memory's block and facts along."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest

import mnemo
from mnemo import AsyncArchive, EntityFacts, MalformedImportError, RecallResult, Scope, Settings, UnknownItemError
from mnemo.embed import Embeddings
from tests.conftest import SEED, new_database, snapshot
from tests.integration.test_cli import env, run  # noqa: F401  # the env fixture

ME = Scope("alice", "home")
SAMPLE = Path(mnemo.__file__).parent / "data" / "sample_conversation.jsonl"
QUESTIONS = (
    "Where does Maya live?",
    "What is Maya allergic to?",
    "What does Maya do at work?",
    "Where is Maya's apartment?",
    "What did Maya say about the hills?",
)
AGO = timedelta(days=20)


@pytest.fixture
async def new_home(pg_admin_url: str, template_url: str, embeddings: Embeddings) -> AsyncIterator[AsyncArchive]:
    """Another mnemo: its own database and its own cortex."""
    arch = await AsyncArchive.open(Settings(database_url=new_database(pg_admin_url), seed=SEED), embeddings=embeddings)
    try:
        yield arch
    finally:
        await arch.close()


def age(url: str, scope: Scope, by: timedelta) -> None:
    """Let ``by`` pass for the scope: its turns arrived and its blocks were made that much earlier."""
    with psycopg.connect(url) as conn:
        for table, column in (("turns", "recorded_at"), ("blocks", "created_at")):
            conn.execute(
                f"UPDATE mnemo.{table} SET {column} = {column} - %s WHERE entity_id = %s AND namespace = %s",  # noqa: S608
                (by, scope.entity_id, scope.namespace),
            )


async def two_nights(archive: AsyncArchive, url: str) -> None:
    """A scope after two nights, twenty days apart: the second removes the raw turns (retention)
    and moves blocks to the cortex; then a new session that no night has read yet."""
    await archive.import_file(ME, SAMPLE)
    first = await archive.night_cycle(ME)
    assert first.blocks > 1 and first.facts_new > 0
    age(url, ME, AGO)
    second = await archive.night_cycle(ME)
    assert second.turns_removed > 0 and second.blocks_migrated > 0
    await archive.record_turn(ME, "s9", "user", "My dog is called Biscuit.", speaker="Maya")


def state(url: str, scope: Scope) -> dict[str, Any]:
    """What a scope's nights made, in terms that do not depend on ids."""
    e, ns = scope.entity_id, scope.namespace
    with psycopg.connect(url) as conn:

        def rows(query: str) -> list[tuple[Any, ...]]:
            return sorted(conn.execute(query, (e, ns)).fetchall(), key=repr)

        return {
            "turns": rows("SELECT session_id, turn_number, content, surprisal IS NULL, flux_state FROM mnemo.turns"
                          " WHERE entity_id = %s AND namespace = %s"),
            "memories": rows("SELECT kind, content, status, tier FROM mnemo.memories"
                             " WHERE entity_id = %s AND namespace = %s"),
            "blocks": rows("SELECT kind, session_id, first_turn, last_turn, content, migrated_at IS NULL,"
                           " cardinality(turn_ids) FROM mnemo.blocks WHERE entity_id = %s AND namespace = %s"),
            "lines": rows("SELECT session_id, turn_number, content FROM mnemo.block_lines"
                          " WHERE entity_id = %s AND namespace = %s"),
            "facts": rows("SELECT attribute, value, fact_kind, valid_from, valid_to, closed_by IS NULL, mention_count"
                          " FROM mnemo.facts WHERE entity_id = %s AND namespace = %s"),
            "triples": rows("SELECT predicate, object, valid_to FROM mnemo.triples"
                            " WHERE entity_id = %s AND namespace = %s"),
            "links": rows("SELECT link_type, count(*) FROM mnemo.links WHERE entity_id = %s AND namespace = %s"
                          " GROUP BY 1"),
            "night": rows("SELECT session_id, blocks_through, facts_through, open_arc FROM mnemo.night_sessions"
                          " WHERE entity_id = %s AND namespace = %s"),
            "night_state": rows("SELECT key, value::text FROM mnemo.night_state"
                                " WHERE entity_id = %s AND namespace = %s"),
        }  # fmt: skip


def duplicates(url: str, scope: Scope) -> int:
    with psycopg.connect(url) as conn:
        found = conn.execute(
            """SELECT count(*) FROM (SELECT 1 FROM mnemo.memories WHERE entity_id = %s AND namespace = %s
               GROUP BY content, kind HAVING count(*) > 1) d""",
            (scope.entity_id, scope.namespace),
        ).fetchone()
    assert found is not None
    return int(found[0])


def known(found: EntityFacts) -> tuple[Any, ...]:
    """What ``facts`` says, the ids of the turns that stated each fact aside (a copy's are its own)."""
    facts = [(f.attribute, f.value, f.kind, f.confidence, f.mention_count, f.valid_from, f.valid_to, f.source,
              len(f.provenance)) for f in found.facts]  # fmt: skip
    return found.name, found.mention_count, facts, found.triples


async def answers(archive: AsyncArchive, scope: Scope) -> list[list[tuple[Any, ...]]]:
    out = []
    for question in QUESTIONS:
        result = await archive.recall(scope, question, k=5, read_only=True)
        assert isinstance(result, RecallResult)
        out.append([(h.item_kind, h.tier, h.content, round(h.score, 3)) for h in result.hits])
    return out


async def test_a_scope_after_two_nights_forks_and_travels_whole(
    archive: AsyncArchive, new_home: AsyncArchive, database_url: str, tmp_path: Path
) -> None:
    await two_nights(archive, database_url)
    branch = await archive.portability.fork(ME, "what-if")
    file = tmp_path / "home.jsonl"
    await archive.portability.export_packets(ME, file)
    report = await new_home.portability.import_packets(ME, file)
    home_url = str(new_home._rt.settings.database_url)
    assert home_url != database_url

    source = state(database_url, ME)
    assert source["blocks"] and source["lines"] and source["facts"] and source["night"]
    assert any(not hot for *_, hot, _ in source["blocks"])  # some blocks live in the cortex
    assert state(database_url, branch) == source
    assert state(home_url, ME) == source
    assert report.state["block"] > 0 and report.state["fact"] > 0 and report.state["night"] == 1

    asked = await answers(archive, ME)
    assert any(kind == "line" for hits in asked for kind, *_ in hits)  # the verbatim lines answer
    assert await answers(archive, branch) == asked
    assert await answers(new_home, ME) == asked
    facts = known(await archive.knowledge.facts(ME, "Maya"))
    assert facts[2] and known(await archive.knowledge.facts(branch, "Maya")) == facts
    assert known(await new_home.knowledge.facts(ME, "Maya")) == facts

    # The same night on the source and on each copy: the same work, no duplicate of what was made.
    night = datetime.now(UTC) + timedelta(hours=1)
    reports = [
        await archive.night_cycle(ME, as_of=night),
        await archive.night_cycle(branch, as_of=night),
        await new_home.night_cycle(ME, as_of=night),
    ]
    made = [(r.turns_scored, r.blocks, r.facts_new, r.insights, r.narratives) for r in reports]
    assert made[0] == made[1] == made[2]
    after = state(database_url, ME)
    assert Counter(m[:2] for m in after["memories"]) == Counter(m[:2] for m in state(database_url, branch)["memories"])
    assert Counter(m[:2] for m in after["memories"]) == Counter(m[:2] for m in state(home_url, ME)["memories"])
    assert duplicates(database_url, branch) == duplicates(home_url, ME) == duplicates(database_url, ME)

    again = await new_home.portability.import_packets(ME, file)  # idempotent, state included
    assert (again.turns, again.memories, again.state) == (0, 0, {})
    # What is forgotten in the copy a re-import brings back: the memory and its block, lines and all.
    blocks = state(home_url, ME)["blocks"]
    with psycopg.connect(home_url) as conn:
        found = conn.execute("SELECT memory_id FROM mnemo.blocks WHERE migrated_at IS NOT NULL LIMIT 1").fetchone()
    assert found is not None
    await new_home.forget(ME, found[0])
    assert len(state(home_url, ME)["blocks"]) == len(blocks) - 1
    back = await new_home.portability.import_packets(ME, file)
    assert back.memories == 1 and back.state["block"] == 1 and state(home_url, ME)["blocks"] == blocks


async def test_facts_about_an_unknown_entity_say_when_a_night_would_not_help(archive: AsyncArchive) -> None:
    await archive.import_file(ME, SAMPLE)
    with pytest.raises(UnknownItemError, match="turns wait for it"):
        await archive.knowledge.facts(ME, "Nobody")
    await archive.night_cycle(ME)
    with pytest.raises(UnknownItemError, match="read every turn here") as caught:
        await archive.knowledge.facts(ME, "Nobody")
    assert caught.value.remedy is None


async def test_a_merged_memory_brings_its_block_and_facts(archive: AsyncArchive, database_url: str) -> None:
    await two_nights(archive, database_url)
    branch = await archive.portability.fork(ME, "what-if")
    with psycopg.connect(database_url) as conn:
        found = conn.execute(
            """SELECT m.id, (m.metadata->>'packet_id')::uuid, b.id FROM mnemo.memories m
               JOIN mnemo.blocks b ON b.entity_id = m.entity_id AND b.memory_id = m.id
               WHERE m.namespace = 'what-if' AND m.status <> 'archived' ORDER BY m.id LIMIT 1"""
        ).fetchone()
        fact = conn.execute(
            """SELECT m.id, (m.metadata->>'packet_id')::uuid, f.attribute, f.value FROM mnemo.memories m
               JOIN mnemo.facts f ON f.entity_id = m.entity_id AND f.memory_id = m.id
               WHERE m.namespace = 'what-if' AND f.valid_to IS NULL ORDER BY m.id LIMIT 1"""
        ).fetchone()
        assert found is not None and fact is not None
        lines = conn.execute("SELECT count(*) FROM mnemo.block_lines WHERE block_id = %s", (found[2],)).fetchone()
    # The parent lets go of both memories (and the block and fact they are); the fork still has them.
    await archive.forget(ME, found[1])
    await archive.forget(ME, fact[1])
    merged = await archive.portability.merge(branch, [found[0], fact[0]])
    assert merged.memories == 2 and merged.state["block"] == 1 and merged.state["fact"] >= 1
    with psycopg.connect(database_url) as conn:
        block = conn.execute(
            "SELECT id FROM mnemo.blocks WHERE entity_id = 'alice' AND namespace = 'home' AND memory_id = %s",
            (merged.items[str(found[0])],),
        ).fetchone()
        assert block is not None
        assert conn.execute("SELECT count(*) FROM mnemo.block_lines WHERE block_id = %s", block).fetchone() == lines
        back = conn.execute(
            """SELECT attribute, value FROM mnemo.facts WHERE entity_id = 'alice' AND namespace = 'home'
               AND memory_id = %s AND valid_to IS NULL""",
            (merged.items[str(fact[0])],),
        ).fetchone()
    assert back == fact[2:]


def test_the_command_line_forks_and_copies_a_scope_whole(
    env: dict[str, str],  # noqa: F811  # the fixture
    database_url: str,
    tmp_path: Path,
) -> None:
    scope = ("-e", "alice", "-n", "home")
    assert run(env, "import", str(SAMPLE), *scope)[0] == 0
    assert run(env, "night", *scope)[0] == 0
    age(database_url, ME, AGO)
    assert run(env, "night", *scope)[0] == 0
    code, _, err = run(env, "fork", "alice/home", "--into", "what-if")
    assert code == 0, err
    code, out, err = run(env, "export", "alice/home")
    assert code == 0, err
    file = tmp_path / "home.jsonl"
    file.write_text(out)
    code, out, err = run(env, "import-packets", str(file), "--into", "alice/copy")
    assert code == 0 and "blocks" in out and "facts" in out and "the night's bookkeeping" in out, err
    said = []
    for namespace in ("home", "what-if", "copy"):
        code, out, err = run(env, "facts", "Maya", "-e", "alice", "-n", namespace, "--json")
        assert code == 0, err
        found = json.loads(out)
        said.append([{k: v for k, v in f.items() if k != "provenance"} for f in found["facts"]] + found["triples"])
    assert said[0] and said[0] == said[1] == said[2]


async def test_a_whole_copy_into_sessions_that_hold_its_turn_numbers_is_refused(
    archive: AsyncArchive, database_url: str, tmp_path: Path
) -> None:
    await archive.import_file(ME, SAMPLE)
    await archive.night_cycle(ME)
    file = tmp_path / "home.jsonl"
    await archive.portability.export_packets(ME, file)
    other = Scope("alice", "busy")
    await archive.record_turn(other, "session-1", "user", "A turn of my own, numbered 0.")
    before = snapshot(database_url)
    with pytest.raises(MalformedImportError, match="keeps its turn numbers; import it into a new scope"):
        await archive.portability.import_packets(other, file)
    assert snapshot(database_url) == before
