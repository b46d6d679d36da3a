"""The queue chamber: background jobs in procrastinate's tables (schema ``queue``, migration 0007).

Seeds: archive-adr §2 ("queue (The Labor)": background labor is transactional with
state changes), §4 (ingestion is a background ritual). Jobs are enqueued here, on
mnemo's own connection and inside the caller's transaction, through
``queue.mnemo_defer_job`` (a thin wrapper over procrastinate's defer function that
pins the search_path), so a rolled-back write leaves no job behind and a committed
write always has its job. The worker side (fetching, running, retrying) is
procrastinate's own, in :mod:`mnemo.jobs`.

The job catalogue (task names and their queues) lives here too: the names are
stored in the jobs table, like column values, and both sides must agree on them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

__all__ = [
    "EMBED_TURNS",
    "INGEST",
    "MAINTENANCE",
    "NIGHT",
    "NIGHT_CYCLE",
    "NIGHT_SCOPE",
    "QUEUES",
    "REEMBED",
    "RETRY_STALLED",
    "JobRow",
    "enqueue",
    "jobs_of",
    "night_scopes",
]

# queues
INGEST = "ingest"
MAINTENANCE = "maintenance"
NIGHT = "night"
QUEUES = (INGEST, MAINTENANCE, NIGHT)

# task names (stable: they are stored with every job)
EMBED_TURNS = "mnemo.embed_turns"
REEMBED = "mnemo.reembed"
NIGHT_CYCLE = "mnemo.night_cycle"
RETRY_STALLED = "mnemo.retry_stalled"
NIGHT_SCOPE = "mnemo.night_scope"

_QUEUEING_LOCK_INDEX = "procrastinate_jobs_queueing_lock_idx_v1"


async def enqueue(
    conn: psycopg.AsyncConnection,
    queue: str,
    task: str,
    args: dict[str, Any],
    *,
    lock: str | None = None,
    queueing_lock: str | None = None,
    priority: int = 0,
) -> int | None:
    """Add a job in the caller's transaction; its id, or None when ``queueing_lock`` already has a
    job waiting (procrastinate allows one ``todo`` job per queueing lock).

    ``lock``: jobs sharing it never run at the same time.
    """
    query = "SELECT queue.mnemo_defer_job(%s, %s, %s, %s, %s, %s)"
    params = (queue, task, lock, queueing_lock, Jsonb(args), priority)
    if queueing_lock is None:
        cur = await conn.execute(query, params)
    else:
        try:
            async with conn.transaction():  # a savepoint: a lock clash must not abort the caller's write
                cur = await conn.execute(query, params)
        except psycopg.errors.UniqueViolation as exc:
            if exc.diag.constraint_name == _QUEUEING_LOCK_INDEX:
                return None
            raise
    row = await cur.fetchone()
    assert row is not None
    return int(row[0])


@dataclass(frozen=True, slots=True)
class JobRow:
    """A queued job (:func:`jobs_of`)."""

    id: int
    queue: str
    task: str
    status: str
    attempts: int
    args: dict[str, Any]  # the task's JSON arguments
    lock: str | None
    queueing_lock: str | None


async def jobs_of(conn: psycopg.AsyncConnection, task: str | None = None) -> list[JobRow]:
    """Jobs (all, or of one task), oldest first: id, queue, task, status, attempts, args, locks."""
    cur = await conn.execute(
        """SELECT id, queue_name, task_name, status::text, attempts, args, lock, queueing_lock
           FROM queue.procrastinate_jobs WHERE %(t)s::text IS NULL OR task_name = %(t)s ORDER BY id""",
        {"t": task},
    )
    return [JobRow(*row) for row in await cur.fetchall()]


async def night_scopes(conn: psycopg.AsyncConnection) -> list[tuple[str, str]]:
    """Scopes with turns or memories: what the night cycle works on (a scope whose raw turns
    retention has removed still needs curation and decay)."""
    cur = await conn.execute(
        """SELECT s.entity_id, s.namespace FROM mnemo.scopes s
           WHERE EXISTS (SELECT 1 FROM mnemo.turns t WHERE t.entity_id = s.entity_id AND t.namespace = s.namespace)
              OR EXISTS (SELECT 1 FROM mnemo.memories m
                         WHERE m.entity_id = s.entity_id AND m.namespace = s.namespace)
           ORDER BY 1, 2"""
    )
    return [(r[0], r[1]) for r in await cur.fetchall()]
