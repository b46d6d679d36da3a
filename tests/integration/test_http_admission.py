"""Admission at the door of ``mnemo serve`` and the reserved background pool (issue 39 item 6).

After every restart of a busy service, requests used to wait the connection pool's whole 30 s
time-out and then get a 503, and the read index build failed with the same time-out: 16 clients
shared the default pool of 4. Now the service admits ``http_concurrency`` requests, its pool holds
a connection for each, the next request waits at the door at most ``http_queue_seconds`` and is
told ``busy`` with ``Retry-After``, and index builds draw on a pool of their own.

Requests are made to hold their connections for as long as a test needs by a real lock: the test
holds a session's turn-numbering lock (or a scope's memory rows) in an open transaction, so writes
to that session (or a recall that reinforces those memories) wait inside PostgreSQL, each on its
connection, until the test commits. Timings are the benchmark's business (benchmarks/chaos.py);
these tests assert statuses, headers and what got built.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import httpx
import psycopg

from mnemo import Archive, AsyncArchive, Scope, Settings
from mnemo.embed import Embeddings
from mnemo.interfaces.http import create_app
from mnemo.store.turns import session_lock_key
from tests.integration.test_http import auth, serve

HELD = "held"  # the session whose numbering lock the test holds

FACTS = [
    "Bob's sister Lena moved to Hamburg last spring.",
    "Bob adopted a dog called Pixel two years ago.",
    "Bob's bike is a red Gazelle with a basket.",
    "Bob waters the plants on Sundays.",
]


def _settings(settings: Settings, **changes: Any) -> Settings:
    return settings.model_copy(update=changes)


def _waiting(url: str, locktype: str) -> int:
    """Sessions of the database waiting for a lock of ``locktype`` (advisory, transactionid, ...)."""
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
            "WHERE l.locktype = %s AND NOT l.granted AND a.datname = current_database()",
            (locktype,),
        ).fetchone()
    return int(row[0]) if row else 0


def _until(what: str, check: Any, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


@contextmanager
def _session_held(url: str, entity: str) -> Iterator[None]:
    """Hold the numbering lock of ``entity``'s session ``HELD`` until the block ends: its writers wait."""
    with psycopg.connect(url) as conn:
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (session_lock_key(entity, "default", HELD),))
        yield
        conn.commit()


def _turn(base: str, token: str, n: int) -> httpx.Response:
    with httpx.Client(base_url=base, headers=auth(token), timeout=120) as c:
        return c.post("/v1/turns", json={"session": HELD, "role": "user", "content": f"note {n} about the garden"})


def test_admitted_requests_never_wait_for_a_connection_and_one_more_is_told_busy(
    settings: Settings, embeddings: Embeddings
) -> None:
    # a pool of one, as small as it gets: the service sizes its pool from what it admits
    cfg = _settings(settings, pool_max_size=1, http_concurrency=3, http_queue_seconds=0.3)
    with Archive(cfg, embeddings=embeddings) as archive:
        token, _ = archive.access.create_token("alice")
    url = str(cfg.database_url)
    with serve(create_app(cfg, embeddings=embeddings)) as base, ThreadPoolExecutor(4) as pool:
        c = httpx.Client(base_url=base, headers=auth(token), timeout=120)
        assert _turn(base, token, 0).status_code == 201  # the scope and the session exist
        with _session_held(url, "alice"):
            writes: list[Future[httpx.Response]] = [pool.submit(_turn, base, token, n) for n in (1, 2)]
            # two admitted writes wait inside PostgreSQL, each holding a connection of the pool
            _until("two writes hold connections", lambda: _waiting(url, "advisory") == 2)
            status = c.get("/v1/status")  # the third admitted request has a connection of its own
            assert status.status_code == 200, status.text
            writes.append(pool.submit(_turn, base, token, 3))
            _until("three writes hold connections", lambda: _waiting(url, "advisory") == 3)
            busy = c.get("/v1/status")  # a fourth is over the limit: told so, not left waiting
            assert busy.status_code == 503, busy.text
            assert busy.headers["retry-after"] == "1"
            assert busy.headers["content-type"] == "application/json"
            error = busy.json()["error"]
            assert error["code"] == "busy", error
            assert "3 requests at once" in error["message"] and "MNEMO_HTTP_CONCURRENCY" in error["message"]
            assert all(not w.done() for w in writes)  # the refusal did not cost an admitted request
        answers = [w.result() for w in writes]
        assert [a.status_code for a in answers] == [201, 201, 201], [a.text for a in answers]
        assert sorted(a.json()["turn_number"] for a in answers) == [1, 2, 3]
        assert c.get("/v1/status").status_code == 200  # the door is open again
        c.close()


def test_the_read_index_is_built_while_requests_hold_every_connection(
    settings: Settings, embeddings: Embeddings
) -> None:
    """A recall schedules its scope's index build and then waits, holding its connection, while a
    write holds the other: every request connection is taken, and the build still gets one."""
    cfg = _settings(settings, pool_max_size=1, http_concurrency=2, http_queue_seconds=0.3)
    with Archive(cfg, embeddings=embeddings) as archive:
        alice, _ = archive.access.create_token("alice")
        bob, _ = archive.access.create_token("bob")
        for fact in FACTS:
            archive.remember(Scope("bob", "default"), fact)
    url = str(cfg.database_url)
    app = create_app(cfg, embeddings=embeddings)
    with serve(app) as base, ThreadPoolExecutor(2) as pool:
        runtime = app.state.archive._rt
        key = ("bob", "default", runtime.slug)
        assert _turn(base, alice, 0).status_code == 201
        with _session_held(url, "alice"), psycopg.connect(url) as rows:
            # bob's memories locked: a recall that reinforces them waits, holding its connection
            rows.execute("SELECT id FROM mnemo.memories WHERE entity_id = 'bob' AND namespace = 'default' FOR UPDATE")
            write = pool.submit(_turn, base, alice, 1)
            recall = pool.submit(_recall, base, bob, "What is Bob's dog called?")
            _until("a write and a recall hold both connections", lambda: _both_waiting(url))
            assert _busy(base, alice)  # the clients have the whole service
            _until("the index is built", lambda: runtime.indexes.held(key) is not None)
            rows.commit()
        assert write.result().status_code == 201
        assert recall.result().status_code == 200, recall.result().text
    assert runtime.indexes.builds >= 1


def _recall(base: str, token: str, query: str) -> httpx.Response:
    with httpx.Client(base_url=base, headers=auth(token), timeout=120) as c:
        return c.post("/v1/recall", json={"query": query, "k": 3})


def _both_waiting(url: str) -> bool:
    return _waiting(url, "advisory") == 1 and _waiting(url, "transactionid") + _waiting(url, "tuple") >= 1


def _busy(base: str, token: str) -> bool:
    with httpx.Client(base_url=base, headers=auth(token), timeout=120) as c:
        return c.get("/v1/status").status_code == 503


async def test_a_read_index_build_never_waits_behind_the_callers_connections(
    settings: Settings, embeddings: Embeddings
) -> None:
    """The library: callers hold every connection of the main pool; building an index does not wait."""
    scope = Scope("bob", "default")
    cfg = _settings(settings, pool_max_size=2)
    archive = await AsyncArchive.open(cfg, embeddings=embeddings)
    try:
        for fact in FACTS:
            await archive.remember(scope, fact)
        await archive.record_turn(Scope("alice", "default"), HELD, "user", "first note")
        url = str(cfg.database_url)
        with _session_held(url, "alice"):
            writes = [
                asyncio.create_task(archive.record_turn(Scope("alice", "default"), HELD, "user", f"note {n}"))
                for n in (1, 2)
            ]
            await asyncio.to_thread(_until, "two writes hold the pool", lambda: _waiting(url, "advisory") == 2)
            size = await asyncio.wait_for(archive.maintenance.warm(scope), 60)
            assert size == len(FACTS)
        await asyncio.gather(*writes)
    finally:
        await archive.close()


def test_the_service_pool_is_sized_from_the_requests_it_admits(settings: Settings) -> None:
    from mnemo.interfaces._admission import sized

    assert sized(_settings(settings, pool_max_size=4, http_concurrency=16)).pool_max_size == 16
    assert sized(_settings(settings, pool_max_size=32, http_concurrency=16)).pool_max_size == 32
