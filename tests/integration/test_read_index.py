"""The scope read index (issue 29; DESIGN §3): an in-memory cache that proposes, PostgreSQL the truth.

Two archives on one database stand for two processes (each has its own indexes); the kill -9 test
uses a real second process. Every comparison is between the indexed path and the SQL path
(``index=false``) or between an index caught up from the change log and one built from nothing.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import uuid
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

import mnemo
from mnemo import AsyncArchive, Scope, Settings
from mnemo.bench.locomo import load_locomo
from mnemo.models import Memory, Refusal
from mnemo.recall import scope_index as read_index
from mnemo.recall.scope_index import ScopeIndex
from mnemo.store import read_index as index_rows
from mnemo.write.importer import import_turns

pytestmark = pytest.mark.future_nights  # nights run days or weeks ahead of the clock

ROOT = Path(__file__).resolve().parents[2]
DEV = Path(os.environ.get("LOCOMO_DEV", ROOT.parent / "shared" / "bench" / "locomo" / "locomo-dev.json"))
DEV_FOUND = DEV.is_file()
ME = Scope("reader", "index")
SAMPLE = Path(mnemo.__file__).parent / "data" / "sample_conversation.jsonl"

SENTENCES = [
    "My sister Lena moved to Hamburg last spring.",
    "I adopted a dog called Pixel two years ago.",
    "The vault code is kept in the blue notebook.",
    "We went sailing on Lake Constance in July.",
    "I am allergic to shellfish, so no prawns for me.",
    "My bike is a red Gazelle with a basket.",
    "Jonas waters my plants when I travel.",
    "The pottery class meets on Thursday evenings.",
    "I started learning Portuguese for the trip to Lisbon.",
    "Our book club is reading Middlemarch this month.",
]
QUESTIONS = ["Where does Lena live?", "What is the dog called?", "What bike do I have?", "When is pottery?"]


def key(archive: AsyncArchive, scope: Scope) -> tuple[str, str, str]:
    return (scope.entity_id, scope.namespace, archive._rt.slug)


async def built(archive: AsyncArchive, scope: Scope) -> ScopeIndex:
    index = await archive._rt.indexes.ensure(archive._rt, key(archive, scope))
    assert index is not None
    return index


async def fresh(archive: AsyncArchive, scope: Scope) -> ScopeIndex:
    async with archive._rt.store.connection() as conn:
        return await read_index.build_index(archive._rt, conn, key(archive, scope))


async def caught_up(archive: AsyncArchive, index: ScopeIndex) -> None:
    async with archive._rt.store.connection() as conn:
        assert await index.catch_up(archive._rt, conn)


def contents(index: ScopeIndex) -> dict[str, object]:
    """Everything an index answers from, independent of the order it learnt it in."""
    lexicon, vectors = index.lexicon, index.vectors
    postings = set()
    for term, entry in lexicon.terms.items():
        slots, tf, doc_len = entry.arrays()
        for s, f, d in zip(slots.tolist(), tf.tolist(), doc_len.tolist(), strict=True):
            if lexicon.items.alive[s]:
                postings.add((term, lexicon.items.ids[s], lexicon.items.kinds[s], f, d))
    live = vectors.items.slot
    return {
        "postings": postings,
        "vectors": {i: (vectors.items.kinds[s], vectors.matrix[s].tobytes()) for i, s in live.items()},
        "late": (index.late.complete, sorted(index.late.items)),
        "tokens": {i: (tv.ids.tobytes(), tv.vectors.tobytes()) for i, tv in index.late.token_ids.items()},
        "said": (index.said, index.said_bytes),
    }


async def same_answers(
    a: AsyncArchive, b: AsyncArchive, scope: Scope, questions: list[str], kinds: tuple[str, ...] = ("turn", "memory")
) -> None:
    for question in questions:
        one = await a.recall(scope, question, 10, read_only=True, threshold=-1.0, kinds=kinds)
        two = await b.recall(scope, question, 10, read_only=True, threshold=-1.0, kinds=kinds)
        assert not isinstance(one, Refusal) and not isinstance(two, Refusal)
        assert np.allclose([h.score for h in one.hits], [h.score for h in two.hits], rtol=0, atol=TIE), question
        assert rankings_agree([(h.id, h.score) for h in one.hits], [(h.id, h.score) for h in two.hits]), question


TIE = 1e-6
"""Scores this close are the same score computed twice (float32 in memory, float in SQL)."""


def rankings_agree(one: list[tuple[uuid.UUID, float]], two: list[tuple[uuid.UUID, float]]) -> bool:
    """The same hits in the same order, except that hits tied within :data:`TIE` (two copies of one
    text, say) may come in either order, and a tie at the cut may keep either one."""
    cut = min(s for _, s in two) if two else 0.0
    for (a, score), (b, _) in zip(one, two, strict=True):
        if a != b and abs(score - cut) > TIE and a not in {i for i, s in two if abs(s - score) <= TIE}:
            return False
    return True


async def test_a_write_in_one_process_is_found_by_the_others_next_recall(
    archive: AsyncArchive, other: AsyncArchive
) -> None:
    for text in SENTENCES[:5]:
        await archive.remember(ME, text)
    index = await built(other, ME)
    before = index.version
    bike = await archive.remember(ME, SENTENCES[5])
    assert bike.id not in index.vectors.items.slot  # the other process has not seen it yet
    result = await other.recall(ME, "What bike do I have?", 3, read_only=True)
    assert not isinstance(result, Refusal)
    assert result.hits[0].id == bike.id
    assert index.version > before and bike.id in index.vectors.items.slot  # caught up from the log


async def test_a_forget_is_never_returned_by_another_process_even_from_a_stale_index(
    archive: AsyncArchive, other: AsyncArchive, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept = [await archive.remember(ME, text) for text in SENTENCES]
    index = await built(other, ME)
    secret = kept[2]
    await archive.forget(ME, secret.id)

    async def stale(self: object, rt: object, conn: object, key: object, version: int) -> ScopeIndex:
        return index  # never caught up: it still proposes the forgotten memory

    monkeypatch.setattr(read_index.ReadIndexes, "warm", stale)
    assert secret.id in index.vectors.items.slot
    result = await other.recall(ME, "Where is the vault code kept?", 10, read_only=True, threshold=-1.0)
    ids = [h.id for h in (result.candidates if isinstance(result, Refusal) else result.hits)]
    assert secret.id not in ids
    assert all("vault" not in h.content for h in (result.candidates if isinstance(result, Refusal) else result.hits))
    assert len(ids) == len(SENTENCES) - 1  # the others are all still found


async def test_a_forget_drops_the_processes_own_copy_at_once(archive: AsyncArchive) -> None:
    kept = [await archive.remember(ME, text) for text in SENTENCES[:4]]
    await built(archive, ME)
    await archive.forget(ME, kept[0].id)
    assert archive._rt.indexes.held(key(archive, ME)) is None
    # and another reader's index from before the forget cannot catch up past it: it is rebuilt
    async with archive._rt.store.connection() as conn:
        stale = await read_index.build_index(archive._rt, conn, key(archive, ME))
        stale.version -= 1
        assert not await stale.catch_up(archive._rt, conn)


async def test_an_index_caught_up_from_the_log_equals_one_built_from_nothing(
    archive: AsyncArchive, other: AsyncArchive
) -> None:
    first = [await archive.remember(ME, text) for text in SENTENCES[:4]]
    index = await built(other, ME)
    for text in SENTENCES[4:]:
        await archive.remember(ME, text)
    await archive.record_turn(ME, "s1", "user", "I finally fixed the bike's brakes today.")
    await archive.remember(ME, "Lena moved again, to Bremen.", supersedes=[first[0].id])
    await archive._rt.backfill.wait()
    await caught_up(other, index)
    assert contents(index) == contents(await fresh(other, ME))


async def test_a_pruned_log_makes_an_index_too_far_behind_rebuild(archive: AsyncArchive) -> None:
    early = await fresh(archive, ME)  # an empty scope, version 0
    for text in SENTENCES[:3]:
        await archive.remember(ME, text)
    recent = await fresh(archive, ME)
    for text in SENTENCES[3:6]:
        await archive.remember(ME, text)
    await archive._rt.backfill.wait()
    async with archive._rt.store.connection() as conn:
        cur = await conn.execute(
            "SELECT count(DISTINCT version) FROM mnemo.scope_changes WHERE entity_id = %s AND version > %s",
            (ME.entity_id, recent.version),
        )
        since_recent = (await cur.fetchone() or [0])[0]
        assert await index_rows.prune_changes(conn, keep=since_recent) > 0
        assert not await early.catch_up(archive._rt, conn)  # the log no longer reaches back
        assert await recent.catch_up(archive._rt, conn)  # every version after it is still there
    assert contents(recent) == contents(await fresh(archive, ME))


async def test_the_budget_evicts_the_least_recently_used_scope(archive: AsyncArchive) -> None:
    scopes = [Scope("reader", f"budget{n}") for n in range(3)]
    for scope in scopes:
        for text in SENTENCES:
            await archive.remember(scope, text)
    await archive._rt.backfill.wait()
    indexes = archive._rt.indexes
    one = (await built(archive, scopes[0])).nbytes
    indexes.max_bytes = int(one * 2.5)  # room for two of them
    for scope in scopes:
        await built(archive, scope)
    assert [indexes.held(key(archive, s)) is not None for s in scopes] == [False, True, True]
    assert indexes.nbytes <= indexes.max_bytes
    # a recall of the evicted scope is answered (through SQL) and builds its index again
    result = await archive.recall(scopes[0], "What is the dog called?", 1, read_only=True)
    assert not isinstance(result, Refusal) and "Pixel" in result.hits[0].content


async def test_a_scope_whose_vectors_alone_exceed_the_budget_is_refused_before_anything_is_read(
    archive: AsyncArchive,
) -> None:
    from mnemo.recall.scope_index import least_bytes

    scope = Scope("reader", "toobig")
    for text in SENTENCES:
        await archive.remember(scope, text)
    await archive._rt.backfill.wait()
    indexes = archive._rt.indexes
    at_least = least_bytes(len(SENTENCES), archive.embeddings.dim)
    indexes.max_bytes = at_least - 1  # the live vectors alone do not fit
    builds = indexes.builds
    assert await indexes.ensure(archive._rt, key(archive, scope)) is None
    assert indexes.builds == builds  # nothing was read or laid out
    assert indexes.refused[key(archive, scope)] == at_least
    # answered through SQL, and not tried again at every recall
    result = await archive.recall(scope, "What is the dog called?", 1, read_only=True)
    assert not isinstance(result, Refusal) and "Pixel" in result.hits[0].content
    assert indexes.builds == builds and indexes.held(key(archive, scope)) is None
    # with room for it (what a full build then measures), it is built and held
    indexes.max_bytes = None
    indexes.drop(scope.entity_id, scope.namespace)
    held = await indexes.ensure(archive._rt, key(archive, scope))
    assert held is not None, (indexes.refused, indexes.builds, builds, indexes.max_bytes)
    assert indexes.builds == builds + 1


async def test_the_index_only_holds_its_own_scope(archive: AsyncArchive) -> None:
    mine, theirs = Scope("reader", "mine"), Scope("stranger", "mine")
    own = [await archive.remember(mine, text) for text in SENTENCES[:3]]
    foreign = [await archive.remember(theirs, text) for text in SENTENCES[:3]]
    assert await archive.maintenance.warm(mine) == len(own)  # built at once, its own three items only
    index = await built(archive, mine)
    held = set(index.vectors.items.slot) | set(index.lexicon.items.slot) | {i for i, _, _ in index.late.items}
    assert held == {m.id for m in own}
    assert not held & {m.id for m in foreign}


async def test_kill_9_in_the_middle_of_writes_leaves_the_index_and_the_truth_consistent(
    archive: AsyncArchive, settings: Settings
) -> None:
    for text in SENTENCES[:3]:
        await archive.remember(ME, text)
    index = await built(archive, ME)
    writer = await asyncio.create_subprocess_exec(
        sys.executable, "-c", WRITER, settings.database_url or "", ME.entity_id, ME.namespace,
        stdout=asyncio.subprocess.PIPE, env={**os.environ, "MNEMO_SCORING": "deterministic"},
    )  # fmt: skip
    assert writer.stdout is not None
    for _ in range(3):  # a few writes have committed, the next is under way
        assert (await writer.stdout.readline()).strip() == b"wrote"
    writer.send_signal(signal.SIGKILL)
    await writer.wait()
    await asyncio.sleep(0.2)
    await caught_up(archive, index)
    assert len(index.vectors.items.slot) >= 6
    assert contents(index) == contents(await fresh(archive, ME))


WRITER = """
import asyncio, sys
import mnemo
from mnemo import AsyncArchive, Scope, Settings
async def main():
    archive = await AsyncArchive.open(Settings(database_url=sys.argv[1]))
    scope = Scope(sys.argv[2], sys.argv[3])
    n = 0
    while True:
        await archive.remember(scope, f"Note number {n} about the garden shed and its {n % 7} shelves.")
        print("wrote", flush=True)
        n += 1
asyncio.run(main())
"""


async def test_nights_are_caught_up_and_answered_as_sql_does(
    archive: AsyncArchive, other: AsyncArchive, sql_only: AsyncArchive
) -> None:
    """Consolidation, retention (the raw turns become block lines) and migration to the cortex,
    all learnt from the change log by an index built before them."""
    scope = Scope("maya", "nights")
    await archive.import_file(scope, SAMPLE)
    await archive._rt.backfill.wait()
    index = await built(other, scope)
    first = await archive.night_cycle(scope)
    later = await archive.night_cycle(scope, as_of=first.as_of + timedelta(days=8))
    assert later.turns_removed > 0
    await archive._rt.backfill.wait()
    await caught_up(other, index)
    assert contents(index) == contents(await fresh(other, scope))
    assert index.utterances.at["line"]  # the removed turns' lines are where neighbours are found
    questions = ["Where did Maya move from?", "What does Maya's team design?", "What is Maya's job?"]
    await same_answers(other, sql_only, scope, questions)


def keep(held: list[Memory], memory: Memory) -> None:
    """Hold ``memory`` once: remembering a text the scope holds returns the memory it has."""
    if all(m.id != memory.id for m in held):
        held.append(memory)


@hsettings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(st.tuples(st.sampled_from(["remember", "turn", "forget", "supersede"]), st.integers(0, 9)),
                    min_size=1, max_size=8))  # fmt: skip
async def test_random_edits_keep_the_index_equal_to_sql(
    archive: AsyncArchive, sql_only: AsyncArchive, other: AsyncArchive, ops: list[tuple[str, int]]
) -> None:
    scope = Scope("reader", f"prop-{uuid.uuid4().hex[:8]}")
    held = [await archive.remember(scope, text) for text in SENTENCES[:3]]
    index = await built(other, scope)
    for op, n in ops:
        if op == "remember":
            keep(held, await archive.remember(scope, SENTENCES[n]))
        elif op == "turn":
            await archive.record_turn(scope, "s1", "user", SENTENCES[n])
        elif op == "forget" and len(held) > 1:
            await archive.forget(scope, held.pop(n % len(held)).id)
        elif op == "supersede" and held:
            old = held[n % len(held)]
            keep(held, await archive.remember(scope, f"{SENTENCES[n]} (updated)", supersedes=[old.id]))
    await archive._rt.backfill.wait()
    await other._rt.backfill.wait()
    async with other._rt.store.connection() as conn:
        if not await index.catch_up(other._rt, conn):  # a forget: the log no longer reaches back
            index = await read_index.build_index(other._rt, conn, key(other, scope))
    assert contents(index) == contents(await fresh(other, scope))
    await built(other, scope)
    await same_answers(other, sql_only, scope, QUESTIONS)


async def test_the_indexed_path_answers_every_locomo_dev_question_as_sql_does(
    archive: AsyncArchive, sql_only: AsyncArchive
) -> None:
    assert DEV_FOUND, f"the LoCoMo dev split is read from {DEV} (../shared beside the repository)"
    conversations = load_locomo(DEV)
    asked = 0
    for conv in conversations:
        scope = Scope("locomo", conv.sample_id)
        await import_turns(archive._rt, scope, conv.turns)
        await archive._rt.backfill.wait()
        index = await built(archive, scope)
        assert index.size == len(conv.turns) and index.late.complete
        await same_answers(archive, sql_only, scope, [q.text for q in conv.questions])
        asked += len(conv.questions)
    assert asked == sum(len(c.questions) for c in conversations) > 1000
