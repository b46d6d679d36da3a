"""Concurrent writers into one session: every write succeeds and turn numbers stay gapless, in commit order.

Writers to one session serialise on a per-session lock only while they number and insert
(:mod:`mnemo.write.importer`); these tests drive many of them at once through the API, through
bulk imports (in both session orders, so a lock-order deadlock would show), with deferred
embedding, and through the HTTP server, and check the numbers each session ends up with.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import Literal

import httpx
import numpy as np
import psycopg
import pytest

from mnemo import Archive, AsyncArchive, Scope, Settings
from mnemo.embed import Embeddings
from tests.conftest import SEED
from tests.integration.test_http import auth, server

__all__ = ["server"]  # the uvicorn fixture, shared with test_http

SCOPE = Scope("crowd", "default")
WRITERS = 8
PER_WRITER = 25
HOT = "hot"


def _session_of(writer: int, i: int) -> str:
    """Half the writers share one session; the other half spread over sessions of their own."""
    return HOT if writer < WRITERS // 2 else f"w{writer}-{i % 5}"


def _rows(url: str, scope: Scope) -> dict[str, list[tuple[int, uuid.UUID, datetime, str]]]:
    """Per session, ``(turn_number, id, created_at, content)`` in turn order."""
    with psycopg.connect(url) as conn:
        found = conn.execute(
            """SELECT session_id, turn_number, id, created_at, content FROM mnemo.turns
               WHERE entity_id = %s AND namespace = %s ORDER BY session_id, turn_number""",
            (scope.entity_id, scope.namespace),
        ).fetchall()
    sessions: dict[str, list[tuple[int, uuid.UUID, datetime, str]]] = defaultdict(list)
    for session, number, item_id, created, content in found:
        sessions[session].append((number, item_id, created, content))
    return dict(sessions)


def _assert_gapless(sessions: dict[str, list[tuple[int, uuid.UUID, datetime, str]]], expected: dict[str, int]) -> None:
    assert {s: len(rows) for s, rows in sessions.items()} == expected
    for session, rows in sessions.items():
        assert [r[0] for r in rows] == list(range(len(rows))), f"session {session} has gaps or duplicates"


class _PrefixWatch:
    """Polls one session while the writers run: if turn numbers follow commit order, every
    snapshot a reader can see is a prefix 0..m-1 (a later number never commits before an
    earlier one)."""

    def __init__(self, url: str, scope: Scope, session: str) -> None:
        self.url, self.scope, self.session = url, scope, session
        self.snapshots = 0
        self.violations: list[list[int]] = []
        self._stop = asyncio.Event()

    async def run(self) -> None:
        async with await psycopg.AsyncConnection.connect(self.url, autocommit=True) as conn:
            while not self._stop.is_set():
                cur = await conn.execute(
                    """SELECT coalesce(array_agg(turn_number ORDER BY turn_number), '{}') FROM mnemo.turns
                       WHERE entity_id = %s AND namespace = %s AND session_id = %s""",
                    (self.scope.entity_id, self.scope.namespace, self.session),
                )
                row = await cur.fetchone()
                numbers = list(row[0]) if row else []
                self.snapshots += 1
                if numbers != list(range(len(numbers))):
                    self.violations.append(numbers)
                await asyncio.sleep(0.002)

    def stop(self) -> None:
        self._stop.set()


@pytest.mark.parametrize("ingest_mode", ["sync", "async"])
async def test_concurrent_record_turn_is_gapless_in_commit_order(
    database_url: str, embeddings: Embeddings, ingest_mode: Literal["sync", "async"]
) -> None:
    settings = Settings(database_url=database_url, seed=SEED, pool_max_size=8, ingest_mode=ingest_mode)
    rng = np.random.default_rng(7)
    async with await AsyncArchive.open(settings, embeddings=embeddings) as archive:
        await archive.access.create_scope(SCOPE)

        async def writer(w: int) -> list[tuple[str, int]]:
            done = []
            for i in range(PER_WRITER):
                # sync mode: vectors given, so the transactions are short and the race is tight;
                # async mode: embedding deferred to a queued job, written in the same transaction
                vector = rng.standard_normal(embeddings.dim) if ingest_mode == "sync" else None
                turn = await archive.record_turn(
                    SCOPE, _session_of(w, i), "user", f"writer {w} turn {i}", embedding=vector
                )
                done.append((turn.session_id, turn.turn_number))
            return done

        watch = _PrefixWatch(database_url, SCOPE, HOT)
        watching = asyncio.create_task(watch.run())
        try:
            results = await asyncio.gather(*(writer(w) for w in range(WRITERS)), return_exceptions=True)
        finally:
            watch.stop()
            await watching
    failures = [r for r in results if isinstance(r, BaseException)]
    assert not failures, f"{len(failures)} writers failed, first: {failures[0]!r}"

    expected: dict[str, int] = defaultdict(int)
    for w in range(WRITERS):
        for i in range(PER_WRITER):
            expected[_session_of(w, i)] += 1
    sessions = _rows(database_url, SCOPE)
    _assert_gapless(sessions, dict(expected))
    # what each call returned is what was stored
    returned = sorted(pair for r in results if not isinstance(r, BaseException) for pair in r)
    assert returned == sorted((s, row[0]) for s, rows in sessions.items() for row in rows)
    # each writer's own turns keep its order
    for w in range(WRITERS // 2):
        mine = [int(row[3].rsplit(" ", 1)[1]) for row in sessions[HOT] if row[3].startswith(f"writer {w} ")]
        assert mine == list(range(PER_WRITER))
    # numbered under the session lock: ids (UUIDv7) and default timestamps rise with the number
    hot = sessions[HOT]
    assert [r[1] for r in hot] == sorted(r[1] for r in hot)
    assert [r[2] for r in hot] == sorted(r[2] for r in hot)
    # commit order: no reader ever saw a later number before an earlier one
    assert watch.snapshots > 0 and not watch.violations, watch.violations[:3]


async def test_concurrent_imports_and_turns_into_shared_sessions(
    database_url: str, embeddings: Embeddings, tmp_path: Path
) -> None:
    """Bulk imports append each session's turns as one contiguous run in file order, interleaved
    with single writes; imports naming the sessions in opposite orders do not deadlock."""
    settings = Settings(database_url=database_url, seed=SEED, pool_max_size=8)
    files = []
    for k in range(4):
        order = ["a", "b"] if k % 2 == 0 else ["b", "a"]
        lines = [
            {"session": order[i % 2], "role": "user", "content": f"import {k} line {i} about gardening"}
            for i in range(12)
        ]
        path = tmp_path / f"import{k}.jsonl"
        path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
        files.append(path)
    async with await AsyncArchive.open(settings, embeddings=embeddings) as archive:
        await archive.access.create_scope(SCOPE)

        async def single(w: int) -> None:
            for i in range(6):
                await archive.record_turn(SCOPE, "ab"[(w + i) % 2], "assistant", f"single {w} {i} about tea")

        jobs = [archive.import_file(SCOPE, f) for f in files] + [single(w) for w in range(4)]
        results = await asyncio.wait_for(asyncio.gather(*jobs, return_exceptions=True), timeout=120)
    failures = [r for r in results if isinstance(r, BaseException)]
    assert not failures, f"{len(failures)} writers failed, first: {failures[0]!r}"

    sessions = _rows(database_url, SCOPE)
    _assert_gapless(sessions, {"a": 4 * 6 + 12, "b": 4 * 6 + 12})
    for session, rows in sessions.items():
        for k in range(4):
            mine = [(row[0], row[3]) for row in rows if row[3].startswith(f"import {k} ")]
            numbers = [n for n, _ in mine]
            assert numbers == list(range(numbers[0], numbers[0] + 6)), f"import {k} split in session {session}"
            assert [int(c.split()[3]) for _, c in mine] == sorted(int(c.split()[3]) for _, c in mine)


@pytest.fixture
def token(settings: Settings, embeddings: Embeddings) -> str:
    with Archive(settings, embeddings=embeddings) as archive:
        secret, _ = archive.access.create_token("crowd")
    return secret


def test_concurrent_http_turns_all_201_and_gapless(server: str, token: str, database_url: str) -> None:
    per_client = 12

    def client(w: int) -> list[tuple[int, str, int]]:
        out = []
        with httpx.Client(base_url=server, headers=auth(token), timeout=60) as c:
            for i in range(per_client):
                session = HOT if w < WRITERS // 2 else f"w{w}"
                r = c.post("/v1/turns", json={"session": session, "role": "user", "content": f"client {w} says {i}"})
                out.append((r.status_code, session, r.json().get("turn_number", -1) if r.status_code == 201 else -1))
        return out

    with ThreadPoolExecutor(WRITERS) as pool:
        results = [x for part in pool.map(client, range(WRITERS)) for x in part]
    codes = sorted({code for code, _, _ in results})
    assert codes == [201], f"statuses {codes}: {sum(code != 201 for code, _, _ in results)} of {len(results)} failed"
    expected = {HOT: per_client * WRITERS // 2} | {f"w{w}": per_client for w in range(WRITERS // 2, WRITERS)}
    _assert_gapless(_rows(database_url, SCOPE), expected)
    for session, count in expected.items():
        assert sorted(n for _, s, n in results if s == session) == list(range(count))
