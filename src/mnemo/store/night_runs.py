"""Night runs, their per-scope state and per-session progress marks, and the night's lock.

Seeds: memory-architecture §8 (pipeline); DESIGN §4 (each stage commits with its progress mark, so a
crash loses nothing and a re-run does nothing twice). Every function runs inside the caller's
transaction, except :func:`held_scope`, which holds a session-level lock on its own connection.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

__all__ = [
    "count_turns",
    "finish_run",
    "get_state",
    "held_scope",
    "mark_stage",
    "open_run",
    "pending_sessions",
    "pending_work",
    "put_state",
    "set_session_progress",
    "unfinished_run",
]


async def get_state(conn: psycopg.AsyncConnection, entity_id: str, namespace: str, key: str) -> Any | None:
    cur = await conn.execute(
        "SELECT value FROM mnemo.night_state WHERE entity_id = %s AND namespace = %s AND key = %s",
        (entity_id, namespace, key),
    )
    row = await cur.fetchone()
    return None if row is None else row[0]


async def put_state(conn: psycopg.AsyncConnection, entity_id: str, namespace: str, key: str, value: Any) -> None:
    await conn.execute(
        """INSERT INTO mnemo.night_state (entity_id, namespace, key, value) VALUES (%s, %s, %s, %s)
           ON CONFLICT (entity_id, namespace, key) DO UPDATE SET value = EXCLUDED.value, updated_at = now()""",
        (entity_id, namespace, key, Jsonb(value)),
    )


async def open_run(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, run_id: uuid.UUID, as_of: datetime
) -> tuple[uuid.UUID, datetime, list[str], dict[str, Any], bool]:
    """The scope's unfinished run (resumed with its own ``as_of``), or a new one:
    ``(run_id, as_of, stages_done, report, resumed)``."""
    cur = await conn.execute(
        """SELECT id, as_of, stages_done, report FROM mnemo.night_runs
           WHERE entity_id = %s AND namespace = %s AND finished_at IS NULL
           ORDER BY started_at DESC LIMIT 1 FOR UPDATE""",
        (entity_id, namespace),
    )
    row = await cur.fetchone()
    if row is not None:
        return row[0], row[1], list(row[2]), dict(row[3]), True
    await conn.execute(
        "INSERT INTO mnemo.night_runs (entity_id, id, namespace, as_of) VALUES (%s, %s, %s, %s)",
        (entity_id, run_id, namespace, as_of),
    )
    return run_id, as_of, [], {}, False


async def unfinished_run(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str
) -> tuple[uuid.UUID, datetime, list[str]] | None:
    """The scope's unfinished run, read without locking: ``(run_id, as_of, stages_done)``."""
    cur = await conn.execute(
        """SELECT id, as_of, stages_done FROM mnemo.night_runs
           WHERE entity_id = %s AND namespace = %s AND finished_at IS NULL
           ORDER BY started_at DESC LIMIT 1""",
        (entity_id, namespace),
    )
    row = await cur.fetchone()
    return None if row is None else (row[0], row[1], list(row[2]))


async def mark_stage(
    conn: psycopg.AsyncConnection, entity_id: str, run_id: uuid.UUID, stage: str, report: Mapping[str, Any]
) -> None:
    await conn.execute(
        """UPDATE mnemo.night_runs SET stages_done = array_append(stages_done, %s),
                  report = report || jsonb_build_object(%s::text, %s::jsonb)
           WHERE entity_id = %s AND id = %s AND NOT (%s = ANY(stages_done))""",
        (stage, stage, Jsonb(dict(report)), entity_id, run_id, stage),
    )


async def finish_run(conn: psycopg.AsyncConnection, entity_id: str, run_id: uuid.UUID) -> None:
    await conn.execute(
        "UPDATE mnemo.night_runs SET finished_at = now() WHERE entity_id = %s AND id = %s", (entity_id, run_id)
    )


@asynccontextmanager
async def held_scope(conn: psycopg.AsyncConnection, entity_id: str, namespace: str) -> AsyncIterator[None]:
    """One night per scope at a time: a session-level advisory lock on ``conn``, held until the block
    ends (released on error too; a killed process's session releases it with the connection)."""
    await conn.execute("SELECT pg_advisory_lock(hashtext('mnemo.night.' || %s || '/' || %s))", (entity_id, namespace))
    try:
        yield
    finally:
        await conn.execute(
            "SELECT pg_advisory_unlock(hashtext('mnemo.night.' || %s || '/' || %s))", (entity_id, namespace)
        )


async def pending_sessions(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, as_of: datetime, column: str
) -> list[tuple[str, int]]:
    """Sessions with scored turns past their ``column`` mark (``blocks_through`` or
    ``facts_through``), in the order they began: ``(session_id, mark)``."""
    if column not in ("blocks_through", "facts_through"):
        raise ValueError(column)
    cur = await conn.execute(
        sql.SQL(
            """SELECT t.session_id, coalesce(max(p.{col}), -1) AS mark
               FROM mnemo.turns t
               LEFT JOIN mnemo.night_sessions p
                 ON p.entity_id = t.entity_id AND p.namespace = t.namespace AND p.session_id = t.session_id
               WHERE t.entity_id = %s AND t.namespace = %s AND t.created_at <= %s AND t.surprisal IS NOT NULL
                 AND t.turn_number > coalesce(p.{col}, -1)
               GROUP BY t.session_id ORDER BY min(t.created_at), t.session_id"""
        ).format(col=sql.Identifier(column)),
        (entity_id, namespace, as_of),
    )
    return [(r[0], int(r[1])) for r in await cur.fetchall()]


async def pending_work(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, as_of: datetime, column: str, *, scored_only: bool
) -> tuple[int, int]:
    """``(sessions, turns)`` past their ``column`` mark (``blocks_through`` or ``facts_through``):
    what the blocks or knowledge stage has left to do (``scored_only``: turns with a surprisal)."""
    if column not in ("blocks_through", "facts_through"):
        raise ValueError(column)
    cur = await conn.execute(
        sql.SQL(
            """SELECT count(DISTINCT t.session_id), count(*)
               FROM mnemo.turns t
               LEFT JOIN mnemo.night_sessions p
                 ON p.entity_id = t.entity_id AND p.namespace = t.namespace AND p.session_id = t.session_id
               WHERE t.entity_id = %s AND t.namespace = %s AND t.created_at <= %s
                 AND (t.surprisal IS NOT NULL OR NOT %s) AND t.turn_number > coalesce(p.{col}, -1)"""
        ).format(col=sql.Identifier(column)),
        (entity_id, namespace, as_of, scored_only),
    )
    row = await cur.fetchone()
    return (int(row[0]), int(row[1])) if row else (0, 0)


async def set_session_progress(
    conn: psycopg.AsyncConnection,
    entity_id: str,
    namespace: str,
    session_id: str,
    *,
    blocks_through: int | None = None,
    facts_through: int | None = None,
    open_arc: bool | None = None,
) -> None:
    await conn.execute(
        """INSERT INTO mnemo.night_sessions (entity_id, namespace, session_id, blocks_through, facts_through, open_arc)
           VALUES (%(e)s, %(ns)s, %(s)s, coalesce(%(b)s, -1), coalesce(%(f)s, -1), coalesce(%(o)s, false))
           ON CONFLICT (entity_id, namespace, session_id) DO UPDATE SET
               blocks_through = coalesce(%(b)s, mnemo.night_sessions.blocks_through),
               facts_through = coalesce(%(f)s, mnemo.night_sessions.facts_through),
               open_arc = coalesce(%(o)s, mnemo.night_sessions.open_arc),
               updated_at = now()""",
        {"e": entity_id, "ns": namespace, "s": session_id, "b": blocks_through, "f": facts_through, "o": open_arc},
    )


async def count_turns(conn: psycopg.AsyncConnection, entity_id: str, namespace: str, as_of: datetime) -> int:
    """Turns the run may still have to cut into blocks or mine for facts (past neither mark)."""
    cur = await conn.execute(
        """SELECT count(*) FROM mnemo.turns t
           LEFT JOIN mnemo.night_sessions p
             ON p.entity_id = t.entity_id AND p.namespace = t.namespace AND p.session_id = t.session_id
           WHERE t.entity_id = %s AND t.namespace = %s AND t.created_at <= %s
             AND t.turn_number > least(coalesce(p.blocks_through, -1), coalesce(p.facts_through, -1))""",
        (entity_id, namespace, as_of),
    )
    row = await cur.fetchone()
    return int(row[0]) if row else 0
