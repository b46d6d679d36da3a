"""The read index above ``exact_scan_limit`` (issue 42, decision 2; DESIGN §3): its dense search
goes through the in-process ANN, which only proposes. Each hit's similarity is the one PostgreSQL
computes for that item, every hit is a live item of the scope, on a small set the hits are SQL's
exact ones, a new item joins another process's graph as it catches up (removals: the unit tests),
and a forgotten item is never returned."""

from __future__ import annotations

from collections.abc import AsyncIterator

import numpy as np
import pytest

from mnemo import AsyncArchive, Scope, Settings
from mnemo.embed import Embeddings
from mnemo.models import Refusal
from mnemo.recall.scope_index import ScopeIndex
from mnemo.store import vectors as vector_rows

ME = Scope("reader", "ann")
LIMIT = 12
PEOPLE = ["Lena", "Jonas", "Aiko", "Tom", "Priya", "Grace", "Lukas", "Elena", "Sam", "José"]
CITIES = ["Hamburg", "Lisbon", "Osaka", "Leeds"]
HOBBIES = ["sailing", "pottery", "chess", "climbing"]
QUESTIONS = ["Who lives in Osaka?", "Who likes pottery?", "Where does Lena live?", "Who climbs?", "Tell me about Sam."]


def _limited(settings: Settings) -> Settings:
    return settings.model_copy(update={"exact_scan_limit": LIMIT})


@pytest.fixture
async def small_limit(settings: Settings, embeddings: Embeddings) -> AsyncIterator[AsyncArchive]:
    async with await AsyncArchive.open(_limited(settings), embeddings=embeddings) as archive:
        yield archive


@pytest.fixture
async def other(settings: Settings, embeddings: Embeddings) -> AsyncIterator[AsyncArchive]:
    async with await AsyncArchive.open(_limited(settings), embeddings=embeddings) as archive:
        yield archive


async def _built(archive: AsyncArchive) -> ScopeIndex:
    rt = archive._rt
    index = await rt.indexes.ensure(rt, (ME.entity_id, ME.namespace, rt.slug))
    assert index is not None
    return index


async def test_above_the_limit_the_ann_proposes_and_sql_rechecks(small_limit: AsyncArchive) -> None:
    archive, rt = small_limit, small_limit._rt
    for n, person in enumerate(PEOPLE * 3):
        await archive.remember(ME, f"{person} lives in {CITIES[n % 4]} and loves {HOBBIES[n // 3 % 4]} ({n}).")
    index = await _built(archive)
    assert index.size > LIMIT and index.vectors.ann is not None
    for question in QUESTIONS:
        vector = await rt.embeddings.embed_query(question)
        hits = index.vectors.nearest(vector, 10)
        async with rt.store.connection() as conn:
            truth = await vector_rows.similarities(conn, rt.table, ME.entity_id, rt.slug, vector, [h[0] for h in hits])
            exact = await vector_rows.search(
                conn, rt.table, rt.embeddings.dim, ME.entity_id, ME.namespace, rt.slug, vector, 10, exact=True
            )
        assert len(hits) == 10
        assert np.allclose([h[2] for h in hits], [truth[h[0]] for h in hits], rtol=0, atol=1e-6), question
        assert {h[0] for h in hits} == {h[0] for h in exact}, question  # a small easy set: ANN = exact
        result = await archive.recall(ME, question, 10, read_only=True, threshold=-1.0)
        assert not isinstance(result, Refusal)
        assert {h.id for h in result.hits} <= set(index.vectors.items.slot)


async def test_a_new_item_joins_the_graph_of_another_processs_index_as_it_catches_up(
    small_limit: AsyncArchive, other: AsyncArchive
) -> None:
    for n, p in enumerate(PEOPLE * 2):
        await small_limit.remember(ME, f"{p} keeps the spare key of flat {n}.")
    index = await _built(other)
    assert index.vectors.ann is not None
    new = await small_limit.remember(ME, "Tom lost the spare key of the garden shed.")
    assert new.id not in index.vectors.items.slot
    result = await other.recall(ME, "Who lost the key of the shed?", 10, read_only=True, threshold=-1.0)
    assert not isinstance(result, Refusal) and result.hits[0].id == new.id
    assert other._rt.indexes.held((ME.entity_id, ME.namespace, other._rt.slug)) is index  # caught up, not rebuilt
    assert index.vectors.ann.contains(index.vectors.items.slot[new.id])
    assert len(index.vectors.ann) == len(index.vectors.items.slot)


async def test_a_forgotten_item_is_never_returned_above_the_limit(
    small_limit: AsyncArchive, other: AsyncArchive
) -> None:
    kept = [await small_limit.remember(ME, f"{p} parks the car on level {n}.") for n, p in enumerate(PEOPLE * 2)]
    await _built(other)
    gone = kept[4]
    await small_limit.forget(ME, gone.id)
    for question in ("Who parks on level 4?", "Where does Priya park the car?"):
        result = await other.recall(ME, question, 10, read_only=True, threshold=-1.0)
        ids = [h.id for h in (result.candidates if isinstance(result, Refusal) else result.hits)]
        assert gone.id not in ids and ids
