"""Blocks and metablocks: the night's segments of the day table, their continuations and retention.

Seeds: memory-architecture §3.4 (block schema), §4 (continuity across sessions), §8.3 (retention).
Every function runs inside the caller's transaction.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

__all__ = [
    "Continuation",
    "archive_expired_blocks",
    "create_metablock",
    "earlier_blocks",
    "extend_metablock",
    "insert_block",
    "link_continuation",
    "metablock_of",
    "open_continuations",
    "retention_turns",
    "run_blocks",
    "set_citations",
]


@dataclass(frozen=True, slots=True)
class Continuation:
    """A block whose session ended inside an unresolved arc (:func:`open_continuations`)."""

    id: uuid.UUID
    session_id: str | None
    turn_ids: list[uuid.UUID]
    arc_end_time: datetime
    parent_metablock_id: uuid.UUID | None
    open_arc_turns: list[str]  # turn ids (text) of the arc's tail, from ``flux_metrics``


_BLOCK_FIELDS = (
    "entity_id",
    "id",
    "namespace",
    "kind",
    "session_id",
    "first_turn",
    "last_turn",
    "turn_ids",
    "prose",
    "content",
    "flux_metrics",
    "salience_scores",
    "coherence_gain",
    "ties_weight",
    "user_tier",
    "arc_start_time",
    "arc_end_time",
    "session_continuity",
    "parent_metablock_id",
    "continues_from",
    "derived_from",
    "memory_id",
    "run_id",
)


async def insert_block(conn: psycopg.AsyncConnection, row: Mapping[str, Any]) -> None:
    values = {k: row.get(k) for k in _BLOCK_FIELDS}
    for key in ("prose", "flux_metrics", "salience_scores"):
        values[key] = Jsonb(values[key] or {})
    values["turn_ids"] = list(values["turn_ids"] or [])
    values["session_continuity"] = bool(values["session_continuity"])
    values["user_tier"] = values["user_tier"] or "normal"
    query = sql.SQL("INSERT INTO mnemo.blocks ({}) VALUES ({})").format(
        sql.SQL(", ").join(sql.Identifier(k) for k in _BLOCK_FIELDS),
        sql.SQL(", ").join(sql.Placeholder(k) for k in _BLOCK_FIELDS),
    )
    await conn.execute(query, values)


async def run_blocks(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, run_id: uuid.UUID, *, exclude: Sequence[uuid.UUID]
) -> list[tuple[uuid.UUID, uuid.UUID]]:
    """``(block_id, memory_id)`` of the run's searchable blocks, except ``exclude``."""
    cur = await conn.execute(
        """SELECT id, memory_id FROM mnemo.blocks
           WHERE entity_id = %s AND namespace = %s AND run_id = %s AND memory_id IS NOT NULL AND id <> ALL(%s)
           ORDER BY id""",
        (entity_id, namespace, run_id, list(exclude)),
    )
    return [(r[0], r[1]) for r in await cur.fetchall()]


async def earlier_blocks(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, session_id: str, before: datetime, limit: int
) -> list[tuple[uuid.UUID, str]]:
    """``(block_id, content)`` of the newest ``limit`` blocks of other sessions that ended by ``before``."""
    cur = await conn.execute(
        """SELECT id, content FROM mnemo.blocks
           WHERE entity_id = %s AND namespace = %s AND session_id IS DISTINCT FROM %s AND arc_end_time <= %s
           ORDER BY arc_end_time DESC, id LIMIT %s""",
        (entity_id, namespace, session_id, before, limit),
    )
    return [(r[0], r[1]) for r in await cur.fetchall()]


async def set_citations(
    conn: psycopg.AsyncConnection, entity_id: str, cited: Sequence[tuple[uuid.UUID, list[str]]]
) -> None:
    """Each block's ``citations`` (the block ids it cites, memory-architecture §7.2)."""
    async with conn.cursor() as cur:
        await cur.executemany(
            "UPDATE mnemo.blocks SET citations = %s WHERE entity_id = %s AND id = %s",
            [(Jsonb(ids), entity_id, block_id) for block_id, ids in cited],
        )


async def open_continuations(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, run_id: uuid.UUID, before: datetime
) -> list[Continuation]:
    """Blocks of this run whose session ended inside an unresolved arc and that nothing continues
    yet, newest first, that ended before ``before`` (seed §4.2-4.4: same cycle only)."""
    cur = await conn.execute(
        """SELECT id, session_id, turn_ids, arc_end_time, parent_metablock_id,
                  coalesce(flux_metrics -> 'open_arc_turns', '[]'::jsonb) FROM mnemo.blocks
           WHERE entity_id = %s AND namespace = %s AND run_id = %s AND session_continuity
             AND continued_by IS NULL AND arc_end_time <= %s
           ORDER BY arc_end_time DESC""",
        (entity_id, namespace, run_id, before),
    )
    return [Continuation(*r) for r in await cur.fetchall()]


async def link_continuation(
    conn: psycopg.AsyncConnection, entity_id: str, earlier: uuid.UUID, later: uuid.UUID, parent: uuid.UUID
) -> None:
    """``later`` continues ``earlier``; both belong to the metablock ``parent``."""
    await conn.execute(
        "UPDATE mnemo.blocks SET continued_by = %s, parent_metablock_id = %s WHERE entity_id = %s AND id = %s",
        (later, parent, entity_id, earlier),
    )
    await conn.execute(
        "UPDATE mnemo.blocks SET continues_from = %s, parent_metablock_id = %s WHERE entity_id = %s AND id = %s",
        (earlier, parent, entity_id, later),
    )


async def metablock_of(conn: psycopg.AsyncConnection, entity_id: str, block_id: uuid.UUID) -> uuid.UUID | None:
    cur = await conn.execute(
        "SELECT parent_metablock_id FROM mnemo.blocks WHERE entity_id = %s AND id = %s", (entity_id, block_id)
    )
    row = await cur.fetchone()
    return None if row is None or row[0] is None else uuid.UUID(str(row[0]))


async def create_metablock(
    conn: psycopg.AsyncConnection,
    entity_id: str,
    namespace: str,
    metablock_id: uuid.UUID,
    constituents: Sequence[uuid.UUID],
    run_id: uuid.UUID,
) -> None:
    """A compound block over ``constituents`` (in order): their turns, time range, mean
    coherence gain and merge weight; it has no memory row of its own (its parts are searched)."""
    await conn.execute(
        """INSERT INTO mnemo.blocks (entity_id, id, namespace, kind, turn_ids, prose, content, coherence_gain,
                                     ties_weight, arc_start_time, arc_end_time, run_id)
           SELECT %(e)s, %(id)s, %(ns)s, 'compound',
                  ARRAY(SELECT t FROM mnemo.blocks b2, unnest(b2.turn_ids) t
                        WHERE b2.entity_id = %(e)s AND b2.id = ANY(%(ids)s)),
                  jsonb_build_object('constituent_blocks', to_jsonb(%(texts)s::text[])),
                  'Continued inquiry across sessions: ' || string_agg(left(b.content, 200), ' ... '
                                                                      ORDER BY b.arc_start_time),
                  avg(b.coherence_gain), avg(b.ties_weight), min(b.arc_start_time), max(b.arc_end_time), %(run)s
           FROM mnemo.blocks b WHERE b.entity_id = %(e)s AND b.id = ANY(%(ids)s)""",
        {
            "e": entity_id,
            "id": metablock_id,
            "ns": namespace,
            "ids": list(constituents),
            "texts": [str(i) for i in constituents],
            "run": run_id,
        },
    )


async def extend_metablock(
    conn: psycopg.AsyncConnection, entity_id: str, metablock_id: uuid.UUID, block_id: uuid.UUID
) -> None:
    await conn.execute(
        """UPDATE mnemo.blocks m SET
               turn_ids = m.turn_ids || b.turn_ids,
               prose = jsonb_set(m.prose, '{constituent_blocks}',
                                 (m.prose -> 'constituent_blocks') || to_jsonb(%s::text)),
               arc_end_time = greatest(m.arc_end_time, b.arc_end_time)
           FROM mnemo.blocks b
           WHERE m.entity_id = %s AND m.id = %s AND b.entity_id = m.entity_id AND b.id = %s""",
        (str(block_id), entity_id, metablock_id, block_id),
    )


async def retention_turns(
    conn: psycopg.AsyncConnection,
    entity_id: str,
    namespace: str,
    as_of: datetime,
    keep: Mapping[str, timedelta],
    run_id: uuid.UUID | None,
) -> tuple[list[uuid.UUID], int, datetime | None]:
    """Raw turns that a block covers (§8.3), split by retention: ``(expired, kept, next_due)``.

    A covered turn expires once it arrived (``recorded_at``, not its event time ``created_at``)
    more than its tier's ``keep`` before ``as_of`` and a block of an earlier night run covers it:
    the night that first cuts a turn into a block never removes it. ``kept`` counts the covered
    turns that stay for now, and ``next_due`` is the earliest ``as_of`` from which a later night
    removes some of them (None when none stay)."""
    cur = await conn.execute(
        """WITH covered AS (
               SELECT t.id,
                      t.recorded_at + CASE t.user_tier WHEN 'elder' THEN %(elder)s WHEN 'meso' THEN %(meso)s
                                                       ELSE %(normal)s END AS due,
                      bool_and(coalesce(b.run_id = %(run)s, false)) AS fresh
               FROM mnemo.turns t
               JOIN mnemo.blocks b
                 ON b.entity_id = t.entity_id AND b.namespace = t.namespace AND b.session_id = t.session_id
                AND b.kind <> 'compound' AND t.turn_number BETWEEN b.first_turn AND b.last_turn
               WHERE t.entity_id = %(e)s AND t.namespace = %(ns)s
               GROUP BY t.id, t.recorded_at, t.user_tier)
           SELECT coalesce(array_agg(id ORDER BY id) FILTER (WHERE due < %(now)s AND NOT fresh), '{}'),
                  count(*) FILTER (WHERE due >= %(now)s OR fresh),
                  min(greatest(due, %(now)s)) FILTER (WHERE due >= %(now)s OR fresh)
           FROM covered""",
        {"e": entity_id, "ns": namespace, "now": as_of, "run": run_id, **keep},
    )
    row = await cur.fetchone()
    if row is None:
        return [], 0, None
    return list(row[0]), int(row[1]), row[2]


_EXPIRED_BLOCKS = sql.SQL("""
           FROM mnemo.blocks b
           WHERE b.entity_id = %(e)s AND b.namespace = %(ns)s AND m.entity_id = b.entity_id AND m.id = b.memory_id
             AND m.status IN ('candidate', 'active') AND m.tier = 'hippocampus' AND NOT m.anchored
             AND coalesce(b.run_id <> %(run)s, true)
             AND b.created_at < CASE b.user_tier WHEN 'elder' THEN %(elder)s WHEN 'meso' THEN %(meso)s
                                                 ELSE %(normal)s END""")


async def archive_expired_blocks(
    conn: psycopg.AsyncConnection,
    entity_id: str,
    namespace: str,
    cutoffs: Mapping[str, datetime | None],
    run_id: uuid.UUID | None,
    *,
    dry_run: bool = False,
) -> int:
    """Move the memory rows of blocks past their tier's hot retention to ``archived`` (cold), except
    the blocks night run ``run_id`` made itself; ``dry_run`` only counts them."""
    never = datetime(1, 1, 2, tzinfo=UTC)  # a tier whose blocks stay hot forever
    params: dict[str, Any] = {k: (v if v is not None else never) for k, v in cutoffs.items()}
    params |= {"e": entity_id, "ns": namespace, "run": run_id}
    if dry_run:
        query = sql.SQL(
            "SELECT count(*) FROM mnemo.memories m WHERE m.entity_id = %(e)s AND EXISTS (SELECT 1 {})"
        ).format(_EXPIRED_BLOCKS)
        cur = await conn.execute(query, params)
        row = await cur.fetchone()
        return int(row[0]) if row else 0
    # Locked first in id order (as every writer of several memories does), then archived.
    cur = await conn.execute(
        sql.SQL(
            """WITH expired AS (SELECT m.id FROM mnemo.memories m WHERE m.entity_id = %(e)s AND EXISTS (SELECT 1 {})
                                ORDER BY m.id FOR UPDATE OF m)
               UPDATE mnemo.memories m SET status = 'archived', updated_at = now()
               FROM expired x WHERE m.entity_id = %(e)s AND m.id = x.id"""
        ).format(_EXPIRED_BLOCKS),
        params,
    )
    return max(cur.rowcount, 0)
