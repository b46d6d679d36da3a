"""Concurrent mutating recalls: no deadlock, no error, and every reinforcement applied exactly once.

A mutating recall locks the memories it returns (to add an access and reinforce them), the near
misses below them (to suppress them) and the co-access links between the returned ones. Recalls
over overlapping hit sets take those locks at the same time: one recall's hit is another's near
miss, and the same pair of memories is linked by both. These tests drive many of them at once,
through the API (one archive, its pool full) and through the HTTP service (8 clients), and then
check the books: every recall that returned a memory added exactly one access, one audited
``recalled`` weight change, and every pair of memories returned together counted once.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import random
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor

import httpx
import psycopg
import pytest

from mnemo import AsyncArchive, RecallResult, Scope, Settings
from mnemo.embed import Embeddings
from tests.conftest import SEED
from tests.integration.test_http import auth, serve

SCOPE = Scope("crowd", "recall")
TOPICS = ("hiking", "cooking", "chess", "the garden", "the dog", "guitar")
PLACES = ("Munich", "Berlin", "Lisbon", "Oslo", "Kyoto")
CLIENTS = 8
ROUNDS = 12


def _facts() -> list[str]:
    """Many memories that share words, so queries about one topic hit overlapping sets."""
    return [f"Maya talked about {t} in {p} with friend number {i}" for i, (t, p) in
            enumerate(itertools.product(TOPICS, PLACES))]  # fmt: skip


_asked = itertools.count()


def _queries(rng: random.Random) -> list[str]:
    """One round's questions, each unique (numbered), so the books can tie every change to its recall."""
    return [
        f"what did Maya say about {rng.choice(TOPICS)} in {rng.choice(PLACES)}? ({next(_asked)})"
        for _ in range(CLIENTS)
    ]


def _rows(url: str, query: str) -> list[tuple[object, ...]]:
    with psycopg.connect(url) as conn:
        return conn.execute(query, (SCOPE.entity_id, SCOPE.namespace)).fetchall()


def _assert_books(url: str, returned: dict[str, list[uuid.UUID]]) -> None:
    """Every recall committed exactly once (its trace row, written with its changes), reinforced
    only what it returned, each at most once; accesses and links add up to the reinforcements."""
    traced = Counter(
        str(q) for (q,) in _rows(url, "SELECT query FROM traces.retrievals WHERE entity_id = %s AND namespace = %s")
    )
    assert traced == Counter(list(returned))  # one committed trace per recall: none lost, none twice
    audits = _rows(
        url,
        """SELECT evidence ->> 'query', memory_id FROM traces.weight_changes
           WHERE entity_id = %s AND namespace = %s AND reason = 'recalled'""",
    )
    per_recall: dict[str, list[uuid.UUID]] = {}
    for query, memory in audits:
        per_recall.setdefault(str(query), []).append(memory)  # type: ignore[arg-type]
    assert len(audits) > CLIENTS * ROUNDS // 2  # the recalls did reinforce memories
    for query, memories in per_recall.items():
        assert len(memories) == len(set(memories)), f"a memory reinforced twice by {query!r}"
        assert set(memories) <= set(returned[query]), f"{query!r} reinforced what it did not return"
    per_memory = Counter(m for memories in per_recall.values() for m in memories)
    access = Counter(
        {
            i: n
            for i, n in _rows(
                url, "SELECT id, access_count FROM mnemo.memories WHERE entity_id = %s AND namespace = %s"
            )
        }
    )
    assert +access == per_memory  # one access per reinforcement
    pairs = Counter(
        tuple(sorted(p, key=lambda u: u.bytes))
        for memories in per_recall.values()
        for p in itertools.combinations(set(memories), 2)
    )
    links = {
        (a, b): n
        for a, b, n in _rows(url, "SELECT a, b, count FROM mnemo.co_access WHERE entity_id = %s AND namespace = %s")
    }
    # Pruning may drop weak links; every link left counts each co-reinforcement exactly once.
    assert links, "recalls reinforcing several memories link them"
    assert links == {p: pairs[p] for p in links}


async def _fill(archive: AsyncArchive) -> None:
    for fact in _facts():
        await archive.remember(SCOPE, fact)


async def test_concurrent_mutating_recalls_through_the_api(settings: Settings, embeddings: Embeddings) -> None:
    """8 recalls at a time over overlapping hits (each one's near misses are others' hits), many
    rounds, on one archive whose pool lets them overlap: no error, every change exactly once."""
    rng = random.Random(SEED)
    async with await AsyncArchive.open(settings, embeddings=embeddings) as archive:
        await _fill(archive)
        returned: dict[str, list[uuid.UUID]] = {}
        for _ in range(ROUNDS):
            queries = _queries(rng)
            results = await asyncio.gather(
                *(archive.recall(SCOPE, q, k=6, read_only=False) for q in queries), return_exceptions=True
            )
            errors = [r for r in results if isinstance(r, BaseException)]
            assert not errors, errors[:3]
            returned |= {
                q: [h.id for h in r.hits] for q, r in zip(queries, results, strict=True) if isinstance(r, RecallResult)
            }
    _assert_books(settings.database_url or "", returned)


def test_concurrent_mutating_recalls_over_http(settings: Settings, embeddings: Embeddings) -> None:
    """8 HTTP clients, mutating recalls over overlapping hits, many rounds: never a 500."""
    from mnemo.interfaces.http import create_app

    rng = random.Random(SEED + 1)

    async def setup() -> str:
        async with await AsyncArchive.open(settings, embeddings=embeddings) as archive:
            await _fill(archive)
            token, _ = await archive.access.create_token(SCOPE.entity_id, label="clients")
            return token

    token = asyncio.run(setup())
    returned: dict[str, list[uuid.UUID]] = {}
    with serve(create_app(settings, embeddings=embeddings)) as base, httpx.Client(timeout=60) as client:

        def ask(query: str) -> httpx.Response:
            body = {"namespace": SCOPE.namespace, "query": query, "k": 6}
            return client.post(f"{base}/v1/recall", json=body, headers=auth(token))

        with ThreadPoolExecutor(CLIENTS) as pool:
            for _ in range(ROUNDS):
                queries = _queries(rng)
                responses = list(pool.map(ask, queries))
                failed = [(r.status_code, r.text[:300]) for r in responses if r.status_code != 200]
                assert not failed, failed
                returned |= {
                    q: [uuid.UUID(h["id"]) for h in r.json()["hits"] if h["item_kind"] == "memory"]
                    for q, r in zip(queries, responses, strict=True)
                }
    _assert_books(settings.database_url or "", returned)


async def test_a_deadlock_victim_runs_again_and_applies_once(database_url: str) -> None:
    """Two transactions that lock two rows in opposite orders: PostgreSQL aborts one as a deadlock
    victim; :func:`retry_conflicts` runs it again, and each adds its count exactly once."""
    from mnemo.store.pool import retry_conflicts

    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as setup:
        await setup.execute("CREATE TABLE public.pair (id int PRIMARY KEY, n int NOT NULL)")
        await setup.execute("INSERT INTO public.pair VALUES (1, 0), (2, 0)")
    first_locks = asyncio.Barrier(2)
    runs: Counter[str] = Counter()

    def transfer(name: str, order: tuple[int, int]) -> Callable[[], Awaitable[None]]:
        async def work() -> None:
            runs[name] += 1
            async with await psycopg.AsyncConnection.connect(database_url) as conn, conn.transaction():
                await conn.execute("UPDATE public.pair SET n = n + 1 WHERE id = %s", (order[0],))
                if runs[name] == 1:
                    await first_locks.wait()  # both hold their first row: the next lock closes the cycle
                await conn.execute("UPDATE public.pair SET n = n + 1 WHERE id = %s", (order[1],))

        return work

    await asyncio.wait_for(
        asyncio.gather(retry_conflicts(transfer("a", (1, 2))), retry_conflicts(transfer("b", (2, 1)))), 60
    )
    assert sorted(runs.values()) == [1, 2]  # one of them was the victim and ran again
    async with await psycopg.AsyncConnection.connect(database_url) as conn:
        rows = await (await conn.execute("SELECT id, n FROM public.pair ORDER BY id")).fetchall()
    assert rows == [(1, 2), (2, 2)]  # each transfer counted once on each row


def test_a_database_failure_is_logged_with_its_traceback(
    settings: Settings, embeddings: Embeddings, caplog: pytest.LogCaptureFixture
) -> None:
    """A 500 (here: the co-access links are gone, so recall cannot read them; its trace is written
    behind it, issue 42) answers the client with a short message and puts the failure, traceback
    included, in the server log."""
    from mnemo.interfaces.http import create_app

    async def setup() -> str:
        async with await AsyncArchive.open(settings, embeddings=embeddings) as archive:
            await _fill(archive)
            token, _ = await archive.access.create_token(SCOPE.entity_id)
            return token

    token = asyncio.run(setup())
    with serve(create_app(settings, embeddings=embeddings)) as base:
        with psycopg.connect(settings.database_url or "", autocommit=True) as conn:
            conn.execute("DROP TABLE mnemo.co_access CASCADE")
        with caplog.at_level(logging.ERROR, logger="mnemo"):
            response = httpx.post(
                f"{base}/v1/recall", json={"namespace": SCOPE.namespace, "query": "chess in Oslo"},
                headers=auth(token), timeout=60,
            )  # fmt: skip
    assert response.status_code == 500, response.text
    assert response.json()["error"]["code"] == "internal"
    logged = [r for r in caplog.records if r.name == "mnemo" and r.levelno == logging.ERROR]
    assert logged and "POST /v1/recall" in logged[0].getMessage()
    assert logged[0].exc_info is not None and "co_access" in str(logged[0].exc_info[1])
