"""The first recall after an import (issue 42): the scope is answered through SQL while its read
index is built in the background, and the build waits for the recalls in flight (it never takes
their cores), for at most ``YIELD_S``; the index it builds has the scan laid out and answers as SQL.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Sequence

import numpy as np
import psycopg
import pytest

from mnemo import AsyncArchive, Refusal, Scope, Settings, TurnInput
from mnemo.cognition.scoring.late import TokenVectors
from mnemo.embed import Embeddings
from mnemo.recall import scope_index
from mnemo.store import token_vectors as token_rows

ME = Scope("reader", "first")
TURNS = [
    "My sister Lena moved to Hamburg last spring.",
    "I adopted a dog called Pixel two years ago.",
    "The vault code is kept in the blue notebook.",
    "We went sailing on Lake Constance in July.",
    "My bike is a red Gazelle with a basket.",
    "Jonas waters my plants when I travel.",
]
QUESTIONS = ["Where does Lena live?", "What is the dog called?", "What bike do I have?"]


async def _imported(archive: AsyncArchive) -> None:
    await archive.import_turns(ME, [TurnInput(session_id="s1", role="user", content=t) for t in TURNS])
    await archive._rt.backfill.wait()


def _key(archive: AsyncArchive) -> tuple[str, str, str]:
    return (ME.entity_id, ME.namespace, archive._rt.slug)


async def _until_held(archive: AsyncArchive) -> scope_index.ScopeIndex:
    for _ in range(600):
        index = archive._rt.indexes.held(_key(archive))
        if index is not None:
            return index
        await asyncio.sleep(0.05)
    raise AssertionError("the read index was never built")


async def test_the_first_recall_answers_through_sql_and_the_build_waits_for_the_recalls_in_flight(
    archive: AsyncArchive, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(scope_index, "YIELD_S", 60.0)
    await _imported(archive)
    indexes = archive._rt.indexes
    async with indexes.reading():  # another recall still in flight
        result = await archive.recall(ME, QUESTIONS[0], 3, read_only=True)  # asks for the build
        assert not isinstance(result, Refusal) and "Hamburg" in result.hits[0].content
        for _ in range(20):
            await asyncio.sleep(0.02)
            assert indexes.held(_key(archive)) is None and indexes.builds == 0  # no step taken
    index = await _until_held(archive)  # the recalls are over: built
    assert indexes.builds == 1 and index.size == len(TURNS)


async def test_a_build_goes_on_when_recalls_never_stop_once_it_has_waited_its_time(
    archive: AsyncArchive, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(scope_index, "YIELD_S", 0.0)
    await _imported(archive)
    async with archive._rt.indexes.reading():
        await archive.recall(ME, QUESTIONS[0], 3, read_only=True)
        index = await _until_held(archive)  # built although a recall is in flight
    assert index.size == len(TURNS)


async def test_the_built_index_has_the_scan_laid_out_and_answers_as_sql(
    archive: AsyncArchive, sql_only: AsyncArchive
) -> None:
    await _imported(archive)
    index = await archive._rt.indexes.ensure(archive._rt, _key(archive))
    assert index is not None
    laid_out = index.late.indexes.get(scope_index._ASKED_KINDS)
    assert laid_out is not None and set(laid_out[0]) == {i for i, _, _ in index.late.items}
    for question in QUESTIONS:
        one = await archive.recall(ME, question, 5, read_only=True, threshold=-1.0)
        two = await sql_only.recall(ME, question, 5, read_only=True, threshold=-1.0)
        assert not isinstance(one, Refusal) and not isinstance(two, Refusal)
        assert [h.id for h in one.hits] == [h.id for h in two.hits], question
        # float32 in memory, float in SQL: the same score computed twice (test_read_index.TIE)
        assert np.allclose([h.score for h in one.hits], [h.score for h in two.hits], rtol=0, atol=1e-6), question
    assert index.late.indexes[scope_index._ASKED_KINDS][1] is laid_out[1]  # the recalls scanned it, not a new one


@pytest.fixture
async def other(settings: Settings, embeddings: Embeddings) -> AsyncIterator[AsyncArchive]:
    """A second process on the same database, with its own caches and read indexes."""
    archive = await AsyncArchive.open(settings, embeddings=embeddings)
    try:
        yield archive
    finally:
        await archive.close()


async def test_token_embeddings_are_read_once_the_import_hands_them_to_its_process_and_a_recall_to_the_build(
    archive: AsyncArchive, other: AsyncArchive, monkeypatch: pytest.MonkeyPatch
) -> None:
    await _imported(archive)
    calls: list[list[uuid.UUID]] = []
    fetch = token_rows.fetch

    async def counted(
        conn: psycopg.AsyncConnection, e: str, ns: str, slug: str, ids: Sequence[uuid.UUID]
    ) -> dict[uuid.UUID, TokenVectors]:
        calls.append(list(ids))
        return await fetch(conn, e, ns, slug, ids)

    monkeypatch.setattr(token_rows, "fetch", counted)
    # the process that imported: its first recall (through SQL) and the build read no token row
    one = await archive.recall(ME, QUESTIONS[1], 3, read_only=True, threshold=-1.0)
    index = await _until_held(archive)
    assert [ids for ids in calls if ids] == []
    # another process: its first recall reads them all, its build none again
    two = await other.recall(ME, QUESTIONS[1], 3, read_only=True, threshold=-1.0)
    assert [len(ids) for ids in calls if ids] == [len(TURNS)]
    held = await _until_held(other)
    assert [len(ids) for ids in calls if ids] == [len(TURNS)]
    assert not isinstance(one, Refusal) and not isinstance(two, Refusal)
    assert [h.id for h in one.hits] == [h.id for h in two.hits]
    async with archive._rt.store.connection() as conn:
        fresh = await scope_index.build_index(archive._rt, conn, _key(archive))
    assert [len(ids) for ids in calls if ids] == [len(TURNS)] * 2  # a build without them reads them all

    def tokens(i: scope_index.ScopeIndex) -> dict[uuid.UUID, tuple[bytes, bytes, float]]:
        return {k: (tv.ids.tobytes(), tv.vectors.tobytes(), tv.scale) for k, tv in i.late.token_ids.items()}

    assert tokens(index) == tokens(fresh) == tokens(held)  # the same bits as read from PostgreSQL
