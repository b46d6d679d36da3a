"""Night-cycle rows: runs and progress, surprisal, blocks, links.

Seeds: memory-architecture §3.4 (block schema), §4 (continuity), §7.3 (links),
§8 (pipeline). Every function runs inside the caller's transaction; each
stage commits its work together with its progress marker, so a crash loses
nothing and a re-run does nothing twice.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

__all__ = [
    "archive_expired_blocks",
    "count_turns",
    "count_unscored",
    "create_metablock",
    "decay_candidates",
    "derivation",
    "earlier_blocks",
    "extend_metablock",
    "finish_run",
    "get_state",
    "held_scope",
    "insert_block",
    "insert_links",
    "insight_candidates",
    "link_continuation",
    "mark_deep_decayed",
    "mark_stage",
    "memory_kind",
    "memory_provenance",
    "metablock_of",
    "open_continuations",
    "open_run",
    "pending_sessions",
    "pending_work",
    "put_state",
    "retention_turns",
    "run_blocks",
    "scored_texts",
    "session_turns",
    "set_citations",
    "set_flux_states",
    "set_session_progress",
    "set_surprisal",
    "unfinished_run",
    "unscored_turns",
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


_TURN_COLS = (
    "id",
    "session_id",
    "turn_number",
    "role",
    "speaker",
    "content",
    "created_at",
    "surprisal",
    "user_tier",
    "metadata",
)


async def unscored_turns(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, as_of: datetime, limit: int
) -> list[dict[str, Any]]:
    """Turns without a surprisal yet, oldest first (the model learns the scope's history in order)."""
    cur = await conn.execute(
        """SELECT id, session_id, turn_number, role, speaker, content, created_at, surprisal, user_tier, metadata
           FROM mnemo.turns
           WHERE entity_id = %s AND namespace = %s AND surprisal IS NULL AND created_at <= %s
           ORDER BY created_at, session_id, turn_number LIMIT %s""",
        (entity_id, namespace, as_of, limit),
    )
    return [dict(zip(_TURN_COLS, r, strict=True)) for r in await cur.fetchall()]


async def set_surprisal(
    conn: psycopg.AsyncConnection, entity_id: str, values: Sequence[tuple[uuid.UUID, float]]
) -> None:
    async with conn.cursor() as cur:
        await cur.executemany(
            "UPDATE mnemo.turns SET surprisal = %s WHERE entity_id = %s AND id = %s",
            [(s, entity_id, i) for i, s in values],
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


async def session_turns(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, session_id: str, after: int, as_of: datetime
) -> list[dict[str, Any]]:
    """A session's scored turns after turn number ``after``, in order."""
    cur = await conn.execute(
        """SELECT id, session_id, turn_number, role, speaker, content, created_at, surprisal, user_tier, metadata
           FROM mnemo.turns
           WHERE entity_id = %s AND namespace = %s AND session_id = %s AND turn_number > %s AND created_at <= %s
             AND surprisal IS NOT NULL
           ORDER BY turn_number""",
        (entity_id, namespace, session_id, after, as_of),
    )
    return [dict(zip(_TURN_COLS, r, strict=True)) for r in await cur.fetchall()]


async def set_flux_states(
    conn: psycopg.AsyncConnection, entity_id: str, values: Sequence[tuple[uuid.UUID, str]]
) -> None:
    async with conn.cursor() as cur:
        await cur.executemany(
            "UPDATE mnemo.turns SET flux_state = %s WHERE entity_id = %s AND id = %s",
            [(s, entity_id, i) for i, s in values],
        )


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


async def insert_links(
    conn: psycopg.AsyncConnection,
    entity_id: str,
    namespace: str,
    links: Sequence[tuple[uuid.UUID, uuid.UUID, str, float | None]],
) -> None:
    """Structural links ``(source, target, type, strength)``; a repeat keeps the stronger strength."""
    if not links:
        return
    async with conn.cursor() as cur:
        await cur.executemany(
            """INSERT INTO mnemo.links (entity_id, namespace, source_id, target_id, link_type, strength)
               VALUES (%s, %s, %s, %s, %s, %s)
               ON CONFLICT (entity_id, source_id, target_id, link_type)
               DO UPDATE SET strength = greatest(mnemo.links.strength, EXCLUDED.strength)""",
            [(entity_id, namespace, s, t, kind, strength) for s, t, kind, strength in links],
        )


async def open_continuations(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, run_id: uuid.UUID, before: datetime
) -> list[dict[str, Any]]:
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
    cols = ("id", "session_id", "turn_ids", "arc_end_time", "parent_metablock_id", "open_arc_turns")
    return [dict(zip(cols, r, strict=True)) for r in await cur.fetchall()]


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


async def decay_candidates(conn: psycopg.AsyncConnection, entity_id: str, namespace: str) -> list[dict[str, Any]]:
    """Unanchored live memories with what decay needs to know."""
    cur = await conn.execute(
        """SELECT id, last_accessed, created_at, access_count + older_access_count, metadata ->> 'deep_decayed_at'
           FROM mnemo.memories
           WHERE entity_id = %s AND namespace = %s AND status IN ('candidate', 'active') AND NOT anchored
           ORDER BY id""",
        (entity_id, namespace),
    )
    cols = ("id", "last_accessed", "created_at", "access_count", "deep_decayed_at")
    return [dict(zip(cols, r, strict=True)) for r in await cur.fetchall()]


async def mark_deep_decayed(
    conn: psycopg.AsyncConnection, entity_id: str, ids: Sequence[uuid.UUID], at: datetime
) -> None:
    if ids:
        await conn.execute(
            """UPDATE mnemo.memories SET metadata = metadata || jsonb_build_object('deep_decayed_at', %s::text)
               WHERE entity_id = %s AND id = ANY(%s)""",
            (at.isoformat(), entity_id, list(ids)),
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


async def insight_candidates(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, limit: int
) -> list[dict[str, Any]]:
    """The newest live memories that no insight was derived from yet (insights, narratives and
    superseded memories excluded), each with its event time (when none was given: when it was
    written, which is then when it happened)."""
    cur = await conn.execute(
        """SELECT m.id, m.kind, m.content, m.metadata ->> 'entity', m.metadata ->> 'attribute', m.provenance,
                  coalesce(m.event_time, m.created_at) FROM mnemo.memories m
           WHERE m.entity_id = %s AND m.namespace = %s AND m.status IN ('candidate', 'active')
             AND m.kind NOT IN ('insight', 'narrative')
             AND coalesce(jsonb_array_length(CASE jsonb_typeof(m.metadata -> 'superseded_by')
                                                  WHEN 'array' THEN m.metadata -> 'superseded_by' END), 0) = 0
             AND NOT EXISTS (SELECT 1 FROM mnemo.links l WHERE l.entity_id = m.entity_id AND l.target_id = m.id
                             AND l.link_type = 'derived_from')
           ORDER BY m.created_at DESC, m.id LIMIT %s""",
        (entity_id, namespace, limit),
    )
    cols = ("id", "kind", "content", "entity", "attribute", "provenance", "event_time")
    return [dict(zip(cols, r, strict=True)) for r in await cur.fetchall()]


async def derivation(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, item_id: uuid.UUID, max_depth: int = 8
) -> list[dict[str, Any]]:
    """What ``item_id`` was derived from, transitively: ``(depth, parent, id, kind, content, status)``
    rows in depth-first order (cognitive-plan §4.2 ``why_do_i_believe``). A source turn removed by
    retention shows as the block that now carries it (kind ``block``)."""
    cur = await conn.execute(
        """WITH RECURSIVE chain(depth, parent, id, path) AS (
               SELECT 1, l.source_id, l.target_id, ARRAY[l.source_id, l.target_id]
               FROM mnemo.links l
               WHERE l.entity_id = %(e)s AND l.namespace = %(ns)s AND l.source_id = %(id)s
                 AND l.link_type = 'derived_from'
               UNION ALL
               SELECT c.depth + 1, l.source_id, l.target_id, c.path || l.target_id
               FROM chain c JOIN mnemo.links l
                 ON l.entity_id = %(e)s AND l.source_id = c.id AND l.link_type = 'derived_from'
               WHERE c.depth < %(max)s AND NOT l.target_id = ANY(c.path))
           SELECT c.depth, c.parent, c.id,
                  coalesce(m.kind, CASE WHEN t.id IS NULL AND b.content IS NOT NULL THEN 'block' ELSE 'turn' END),
                  coalesce(m.content, t.content, b.content), m.status
           FROM chain c
           LEFT JOIN mnemo.memories m ON m.entity_id = %(e)s AND m.id = c.id
           LEFT JOIN mnemo.turns t ON t.entity_id = %(e)s AND t.id = c.id
           LEFT JOIN LATERAL (  -- a raw turn past retention lives on in the block that covers it
               SELECT content FROM mnemo.blocks
               WHERE entity_id = %(e)s AND namespace = %(ns)s AND c.id = ANY(turn_ids) AND kind <> 'compound'
               LIMIT 1) b ON m.id IS NULL AND t.id IS NULL
           ORDER BY c.path""",
        {"e": entity_id, "ns": namespace, "id": item_id, "max": max_depth},
    )
    cols = ("depth", "parent", "id", "kind", "content", "status")
    return [dict(zip(cols, r, strict=True)) for r in await cur.fetchall()]


async def count_unscored(conn: psycopg.AsyncConnection, entity_id: str, namespace: str, as_of: datetime) -> int:
    cur = await conn.execute(
        """SELECT count(*) FROM mnemo.turns WHERE entity_id = %s AND namespace = %s AND surprisal IS NULL
           AND created_at <= %s""",
        (entity_id, namespace, as_of),
    )
    row = await cur.fetchone()
    return int(row[0]) if row else 0


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


async def memory_kind(conn: psycopg.AsyncConnection, entity_id: str, namespace: str, item: uuid.UUID) -> str | None:
    cur = await conn.execute(
        "SELECT kind FROM mnemo.memories WHERE entity_id = %s AND namespace = %s AND id = %s",
        (entity_id, namespace, item),
    )
    row = await cur.fetchone()
    return None if row is None else str(row[0])


async def scored_texts(conn: psycopg.AsyncConnection, entity_id: str, namespace: str) -> list[str]:
    """The contents of the scope's already-scored turns, oldest first (to rebuild a dropped model)."""
    cur = await conn.execute(
        """SELECT content FROM mnemo.turns WHERE entity_id = %s AND namespace = %s AND surprisal IS NOT NULL
           ORDER BY created_at, session_id, turn_number""",
        (entity_id, namespace),
    )
    return [r[0] for r in await cur.fetchall()]


async def memory_provenance(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str
) -> dict[uuid.UUID, tuple[list[str], int]]:
    """Every live memory's provenance (turn or memory ids) and token count (for benchmarks)."""
    cur = await conn.execute(
        """SELECT id, provenance, token_count FROM mnemo.memories
           WHERE entity_id = %s AND namespace = %s AND status IN ('candidate', 'active')""",
        (entity_id, namespace),
    )
    return {r[0]: (list(r[1]), int(r[2])) for r in await cur.fetchall()}


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
