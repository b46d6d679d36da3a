"""A server that drops the connection mid-call: the caller gets a mnemo error, nothing half-written
survives, and the next call on the same archive succeeds (the pool checks connections before lending
them). Each test blocks the call on a table lock held by a second connection, terminates the blocked
backend with ``pg_terminate_backend`` (what a server restart or an administrator does), then lets go."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import TypeVar

import psycopg
import pytest
from psycopg_pool import PoolTimeout

from mnemo import AsyncArchive, DatabaseError, DatabaseUnavailableError, Scope
from mnemo.store.pool import convert_error
from tests.conftest import snapshot
from tests.night_data import START, arc_conversation, record

T = TypeVar("T")
ME = Scope("maya", "chat")
NIGHT_BOOKKEEPING = ("mnemo.night_runs", "mnemo.night_stages", "mnemo.night_state")


@asynccontextmanager
async def locked(url: str, table: str) -> AsyncIterator[psycopg.AsyncConnection]:
    """Hold ``table`` in ACCESS EXCLUSIVE mode (every other statement touching it waits)."""
    conn = await psycopg.AsyncConnection.connect(url)
    try:
        await conn.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")
        yield conn
    finally:
        await conn.rollback()
        await conn.close()


async def killed_while_blocked(url: str, table: str, call: Awaitable[T]) -> BaseException:
    """Run ``call`` until it waits on ``table``'s lock, terminate its backend, and return what it raised."""
    async with locked(url, table) as lock:
        task = asyncio.ensure_future(call)
        for _ in range(600):
            cur = await lock.execute(
                """SELECT pid FROM pg_stat_activity
                   WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()"""
            )
            waiting = [row[0] for row in await cur.fetchall()]
            if waiting:
                break
            assert not task.done(), f"the call finished without touching {table}: {task.result()!r}"
            await asyncio.sleep(0.05)
        else:
            task.cancel()
            pytest.fail(f"the call never waited on {table}")
        for pid in waiting:
            await lock.execute("SELECT pg_terminate_backend(%s)", (pid,))
    with pytest.raises(DatabaseUnavailableError) as info:
        await task
    return info.value


def assert_from_admin_shutdown(error: BaseException) -> None:
    # AdminShutdown when the driver reads the server's goodbye, a bare OperationalError when the socket
    # is gone first: both mean the connection was lost.
    assert isinstance(error.__cause__, psycopg.OperationalError)
    assert "is not reachable" in str(error)
    assert "Nothing of the interrupted call was kept" in str(error)


def data_rows(url: str) -> dict[str, int]:
    return {table: n for table, n in snapshot(url).items() if table not in NIGHT_BOOKKEEPING}


async def test_recall_on_a_killed_connection_raises_a_mnemo_error_and_the_next_recall_succeeds(
    archive: AsyncArchive, database_url: str
) -> None:
    await archive.remember(ME, "Maya is allergic to shellfish", kind="preference")
    before = snapshot(database_url)

    # The recall's own reads are killed (its trace and reinforcement are written behind it, issue 42).
    error = await killed_while_blocked(database_url, "mnemo.memories", archive.recall(ME, "what can't Maya eat?"))
    await archive.flush()

    assert_from_admin_shutdown(error)
    assert snapshot(database_url) == before  # no trace, no reinforcement of the interrupted recall
    result = await archive.recall(ME, "what can't Maya eat?")
    assert not result.refused
    assert result.hits[0].content == "Maya is allergic to shellfish"


async def test_a_write_killed_halfway_leaves_no_row_and_the_next_write_succeeds(
    archive: AsyncArchive, database_url: str
) -> None:
    await archive.remember(ME, "Maya lives in Munich")
    before = snapshot(database_url)
    vectors = f"vectors.{archive._rt.table}"

    # The memory row and its postings are written before the vector: the kill lands after them.
    error = await killed_while_blocked(database_url, vectors, archive.remember(ME, "Maya's beagle is called Pixel"))

    assert_from_admin_shutdown(error)
    assert snapshot(database_url) == before
    memory = await archive.remember(ME, "Maya's beagle is called Pixel")
    after = snapshot(database_url)
    assert after["mnemo.memories"] == before["mnemo.memories"] + 1
    assert after[vectors] == before[vectors] + 1
    assert (await archive.recall(ME, "what is the dog's name?", read_only=True)).hits[0].id == memory.id


async def test_a_night_stage_killed_halfway_keeps_nothing_and_a_rerun_completes_it(
    archive: AsyncArchive, database_url: str
) -> None:
    await record(archive, ME, "s1", arc_conversation(), START)
    as_of = START + timedelta(hours=1)
    await archive.night_cycle(ME, as_of=as_of, stages=("surprisal",))
    before = data_rows(database_url)

    error = await killed_while_blocked(
        database_url, "mnemo.blocks", archive.night_cycle(ME, as_of=as_of, stages=("blocks",))
    )

    assert_from_admin_shutdown(error)
    assert data_rows(database_url) == before
    report = await archive.night_cycle(ME, as_of=as_of, stages=("blocks",))
    assert report.blocks >= 1
    assert data_rows(database_url)["mnemo.blocks"] == before["mnemo.blocks"] + report.blocks


async def test_an_idle_pooled_connection_killed_between_calls_is_replaced_silently(
    archive: AsyncArchive, pg_admin_url: str, database_url: str
) -> None:
    await archive.remember(ME, "Maya plays the cello")
    dbname = psycopg.conninfo.conninfo_to_dict(database_url)["dbname"]
    with psycopg.connect(pg_admin_url, autocommit=True) as admin:
        killed = admin.execute(
            "SELECT count(*) FROM pg_stat_activity, pg_terminate_backend(pid) WHERE datname = %s", (dbname,)
        ).fetchone()
    assert killed is not None and killed[0] >= 1  # the pool's idle connections are gone

    result = await archive.recall(ME, "which instrument?", read_only=True)

    assert result.hits[0].content == "Maya plays the cello"


def test_driver_errors_other_than_connection_loss_become_a_database_error() -> None:
    url = "postgresql://mnemo:secret@db.example:5432/mind"
    unique = convert_error(psycopg.errors.UniqueViolation("duplicate key value"), url)
    lost = convert_error(psycopg.OperationalError("server closed the connection unexpectedly"), url)
    starved = convert_error(PoolTimeout("couldn't get a connection after 30.00 sec"), url)
    shutdown = convert_error(psycopg.errors.AdminShutdown("terminating connection"), url)

    assert type(unique) is DatabaseError
    assert "SQLSTATE 23505" in str(unique) and "secret" not in str(unique)
    assert type(lost) is DatabaseUnavailableError
    assert type(shutdown) is DatabaseUnavailableError
    assert type(starved) is DatabaseUnavailableError and "MNEMO_POOL_MAX_SIZE" in str(starved)
    assert "postgresql://mnemo@db.example:5432/mind" in str(lost)
