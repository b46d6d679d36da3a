"""The hippocampus side of the long-term tier: which blocks migrate, their lines, the marks.

Seeds: memory-architecture §5.3 (what migrates: coherence gain above a
threshold, blocks older than 7 days whatever the tier, blocks marked for
long-term retention), §6.4 (live zones verbatim, vectors at full precision),
DESIGN §9 (each night run records the cortex table versions it ended at, in the
same transaction as its progress).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import class_row, dict_row
from psycopg.types.json import Jsonb

from mnemo.models import Role
from mnemo.store.dynamics import lock_memories

__all__ = [
    "BlockLine",
    "LineHit",
    "block_lines",
    "cortex_id",
    "has_cortex",
    "hydrate_lines",
    "insert_lines",
    "line_turns",
    "linked_items",
    "mark_migrated",
    "migrated_blocks",
    "migrated_blocks_of",
    "migration_candidates",
    "record_versions",
    "turns_to_lines",
]

_NEVER = datetime(1, 1, 2, tzinfo=UTC)


async def cortex_id(conn: psycopg.AsyncConnection) -> uuid.UUID:
    """The id naming this database's cortex directory, made on first use."""
    await conn.execute("INSERT INTO mnemo.cortex (id) VALUES (uuidv7()) ON CONFLICT DO NOTHING")
    cur = await conn.execute("SELECT id FROM mnemo.cortex")
    row = await cur.fetchone()
    assert row is not None
    return uuid.UUID(str(row[0]))


async def insert_lines(conn: psycopg.AsyncConnection, rows: Sequence[Mapping[str, Any]]) -> None:
    """A block's verbatim lines (written with the block)."""
    if not rows:
        return
    async with conn.cursor() as cur:
        await cur.executemany(
            """INSERT INTO mnemo.block_lines (entity_id, namespace, block_id, turn_id, session_id, turn_number, role,
                                              speaker, content, created_at, metadata)
               VALUES (%(entity_id)s, %(namespace)s, %(block_id)s, %(turn_id)s, %(session_id)s, %(turn_number)s,
                       %(role)s, %(speaker)s, %(content)s, %(created_at)s, %(metadata)s)
               ON CONFLICT DO NOTHING""",
            [dict(r) | {"metadata": Jsonb(dict(r["metadata"]))} for r in rows],
        )


@dataclass(frozen=True, slots=True)
class BlockLine:
    """One verbatim line of a block (:func:`block_lines`)."""

    block_id: uuid.UUID
    turn_id: uuid.UUID
    session_id: str
    turn_number: int
    role: Role
    speaker: str | None
    content: str
    created_at: datetime
    metadata: dict[str, Any]  # free-form JSONB


async def block_lines(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, block_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, list[BlockLine]]:
    """The lines of ``block_ids``, in turn order."""
    if not block_ids:
        return {}
    async with conn.cursor(row_factory=class_row(BlockLine)) as cur:
        await cur.execute(
            """SELECT block_id, turn_id, session_id, turn_number, role, speaker, content, created_at, metadata
               FROM mnemo.block_lines WHERE entity_id = %s AND namespace = %s AND block_id = ANY(%s)
               ORDER BY block_id, turn_number""",
            (entity_id, namespace, list(block_ids)),
        )
        rows = await cur.fetchall()
    out: dict[uuid.UUID, list[BlockLine]] = {}
    for row in rows:
        out.setdefault(row.block_id, []).append(row)
    return out


@dataclass(frozen=True, slots=True)
class LineHit:
    """A block's verbatim line as recall shows it (:func:`hydrate_lines`): its id is its turn's."""

    id: uuid.UUID
    block_id: uuid.UUID
    session_id: str
    turn_number: int
    role: Role
    speaker: str | None
    content: str
    created_at: datetime
    metadata: dict[str, Any]  # free-form JSONB
    tier: str  # its block's: hippocampus or cortex
    gist: str | None  # its block's compressed text
    chars: int


async def hydrate_lines(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, turn_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, LineHit]:
    """Line items by id (their turn's id): the line, its block's id, tier and gist (recall's rows)."""
    if not turn_ids:
        return {}
    async with conn.cursor(row_factory=class_row(LineHit)) as cur:
        await cur.execute(
            """SELECT DISTINCT ON (l.turn_id) l.turn_id AS id, l.block_id, l.session_id, l.turn_number, l.role,
                      l.speaker, l.content, l.created_at, l.metadata,
                      CASE WHEN b.migrated_at IS NULL THEN 'hippocampus' ELSE 'cortex' END AS tier,
                      m.compressed AS gist, length(l.content) AS chars
               FROM mnemo.block_lines l
               JOIN mnemo.blocks b ON b.entity_id = l.entity_id AND b.id = l.block_id
               LEFT JOIN mnemo.memories m ON m.entity_id = b.entity_id AND m.id = b.memory_id
               WHERE l.entity_id = %s AND l.namespace = %s AND l.turn_id = ANY(%s)
               ORDER BY l.turn_id, b.created_at""",
            (entity_id, namespace, list(turn_ids)),
        )
        return {r.id: r for r in await cur.fetchall()}


async def line_turns(conn: psycopg.AsyncConnection, entity_id: str, turn_ids: Sequence[uuid.UUID]) -> set[uuid.UUID]:
    """Which of ``turn_ids`` are some block's verbatim line."""
    if not turn_ids:
        return set()
    cur = await conn.execute(
        "SELECT DISTINCT turn_id FROM mnemo.block_lines WHERE entity_id = %s AND turn_id = ANY(%s)",
        (entity_id, list(turn_ids)),
    )
    return {r[0] for r in await cur.fetchall()}


async def turns_to_lines(conn: psycopg.AsyncConnection, entity_id: str, turn_ids: Sequence[uuid.UUID]) -> None:
    """Raw turns that left the day table live on as their blocks' lines: their postings and vectors
    become the lines' (kind ``line``); a line whose block is in the cortex keeps its vector there only."""
    if not turn_ids:
        return
    ids = list(turn_ids)
    await conn.execute(
        "UPDATE mnemo.postings SET item_kind = 'line' WHERE entity_id = %s AND item_id = ANY(%s)", (entity_id, ids)
    )
    cur = await conn.execute(
        """SELECT DISTINCT l.turn_id FROM mnemo.block_lines l JOIN mnemo.blocks b
             ON b.entity_id = l.entity_id AND b.id = l.block_id
           WHERE l.entity_id = %s AND l.turn_id = ANY(%s) AND b.migrated_at IS NOT NULL""",
        (entity_id, ids),
    )
    cold = [r[0] for r in await cur.fetchall()]
    for table in await _spaces(conn):
        name = sql.Identifier("vectors", table)
        await conn.execute(
            sql.SQL("DELETE FROM {} WHERE entity_id = %s AND item_id = ANY(%s)").format(name), (entity_id, cold)
        )
        await conn.execute(
            sql.SQL("UPDATE {} SET item_kind = 'line' WHERE entity_id = %s AND item_id = ANY(%s)").format(name),
            (entity_id, ids),
        )


async def _spaces(conn: psycopg.AsyncConnection) -> list[str]:
    cur = await conn.execute("SELECT table_name FROM vectors.spaces ORDER BY table_name")
    return [str(r[0]) for r in await cur.fetchall()]


async def migration_candidates(
    conn: psycopg.AsyncConnection,
    entity_id: str,
    namespace: str,
    *,
    gain: float,
    made_before: datetime,
    hot_until: Mapping[str, datetime | None],
    limit: int,
) -> list[dict[str, Any]]:
    """Blocks still in the hippocampus that migrate now (§5.3): coherence gain above ``gain``, made
    before ``made_before``, marked ``long_term`` in their memory's metadata, or past their user
    tier's hot retention (``hot_until``: made before this, per tier). Live memories only."""
    params: dict[str, Any] = {k: (v if v is not None else _NEVER) for k, v in hot_until.items()}
    params |= {"e": entity_id, "ns": namespace, "gain": gain, "before": made_before, "n": limit}
    async with conn.cursor(row_factory=dict_row) as cur:
        await cur.execute(
            """SELECT b.*, m.compressed AS gist, m.anchored, m.status AS memory_status
               FROM mnemo.blocks b JOIN mnemo.memories m ON m.entity_id = b.entity_id AND m.id = b.memory_id
               WHERE b.entity_id = %(e)s AND b.namespace = %(ns)s AND b.migrated_at IS NULL
                 AND m.tier = 'hippocampus' AND m.status IN ('candidate', 'active')
                 AND (b.coherence_gain > %(gain)s OR b.created_at < %(before)s
                      OR coalesce(m.metadata ->> 'long_term', 'false') = 'true'
                      OR b.created_at < CASE b.user_tier WHEN 'elder' THEN %(elder)s WHEN 'meso' THEN %(meso)s
                                                         ELSE %(normal)s END)
               ORDER BY b.created_at, b.id LIMIT %(n)s""",
            params,
        )
        return list(await cur.fetchall())


async def mark_migrated(
    conn: psycopg.AsyncConnection,
    entity_id: str,
    namespace: str,
    blocks: Sequence[tuple[uuid.UUID, uuid.UUID]],
    now: datetime,
) -> None:
    """The hippocampus side of a migration, in the caller's transaction: ``(block_id, memory_id)``
    pairs are marked as in the cortex, and their vectors (every space) and their lines' vectors
    leave PostgreSQL (a raw turn still in the day table keeps its own)."""
    if not blocks:
        return
    block_ids = [b for b, _ in blocks]
    memory_ids = [m for _, m in blocks]
    await lock_memories(conn, entity_id, namespace, memory_ids)
    await conn.execute(
        "UPDATE mnemo.blocks SET migrated_at = %s WHERE entity_id = %s AND namespace = %s AND id = ANY(%s)",
        (now, entity_id, namespace, block_ids),
    )
    await conn.execute(
        """UPDATE mnemo.memories SET tier = 'cortex', updated_at = now()
           WHERE entity_id = %s AND namespace = %s AND id = ANY(%s)""",
        (entity_id, namespace, memory_ids),
    )
    for table in await _spaces(conn):
        name = sql.Identifier("vectors", table)
        await conn.execute(
            sql.SQL("DELETE FROM {} WHERE entity_id = %s AND item_id = ANY(%s)").format(name), (entity_id, memory_ids)
        )
        await conn.execute(  # the vectors of lines whose raw turns are gone: the cortex has them now
            sql.SQL(
                """DELETE FROM {} v USING mnemo.block_lines l
                   WHERE v.entity_id = %s AND v.item_kind = 'line' AND l.entity_id = v.entity_id
                     AND l.turn_id = v.item_id AND l.block_id = ANY(%s)"""
            ).format(name),
            (entity_id, block_ids),
        )


async def migrated_blocks(conn: psycopg.AsyncConnection, entity_id: str, namespace: str) -> set[str]:
    """The ids of the scope's blocks that live in the cortex (to reconcile the cortex against)."""
    cur = await conn.execute(
        "SELECT id FROM mnemo.blocks WHERE entity_id = %s AND namespace = %s AND migrated_at IS NOT NULL",
        (entity_id, namespace),
    )
    return {str(r[0]) for r in await cur.fetchall()}


async def migrated_blocks_of(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, memory_ids: Sequence[uuid.UUID]
) -> list[uuid.UUID]:
    """The cortex blocks whose memory rows are among ``memory_ids`` (about to be forgotten)."""
    cur = await conn.execute(
        """SELECT id FROM mnemo.blocks WHERE entity_id = %s AND namespace = %s AND memory_id = ANY(%s)
             AND migrated_at IS NOT NULL""",
        (entity_id, namespace, list(memory_ids)),
    )
    return [r[0] for r in await cur.fetchall()]


async def block_memories(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, memory_ids: Sequence[uuid.UUID]
) -> set[uuid.UUID]:
    """Those of ``memory_ids`` that are blocks' memory rows, in either tier."""
    if not memory_ids:
        return set()
    cur = await conn.execute(
        "SELECT memory_id FROM mnemo.blocks WHERE entity_id = %s AND namespace = %s AND memory_id = ANY(%s)",
        (entity_id, namespace, list(memory_ids)),
    )
    return {r[0] for r in await cur.fetchall()}


LINK_TYPES = ("cites", "continues", "derived_from", "thematic")


async def linked_items(
    conn: psycopg.AsyncConnection,
    entity_id: str,
    namespace: str,
    memory_ids: Sequence[uuid.UUID],
    link_types: Sequence[str] = LINK_TYPES,
) -> list[tuple[uuid.UUID, str]]:
    """Items one structural link away from ``memory_ids`` (memory-architecture §7.4), either
    direction: ``(id, "memory")`` for a linked block's or memory's row, ``(id, "turn")`` for a
    linked turn, ``(id, "line")`` for a linked turn that retention removed and a block keeps as its
    line (a fact still leads to the words it was read from). A block's links are followed from its
    memory row."""
    if not memory_ids:
        return []
    cur = await conn.execute(
        """WITH seeds AS (
               SELECT unnest(%(ids)s::uuid[]) AS id
               UNION ALL
               SELECT b.id FROM mnemo.blocks b
               WHERE b.entity_id = %(e)s AND b.namespace = %(ns)s AND b.memory_id = ANY(%(ids)s)
           ), ends AS (
               SELECT l.target_id AS other FROM mnemo.links l JOIN seeds s ON l.source_id = s.id
               WHERE l.entity_id = %(e)s AND l.namespace = %(ns)s AND l.link_type = ANY(%(types)s)
               UNION
               SELECT l.source_id FROM mnemo.links l JOIN seeds s ON l.target_id = s.id
               WHERE l.entity_id = %(e)s AND l.namespace = %(ns)s AND l.link_type = ANY(%(types)s)
           )
           SELECT DISTINCT coalesce(b.memory_id, m.id, t.id, ln.turn_id),
                  CASE WHEN t.id IS NOT NULL THEN 'turn' WHEN b.id IS NULL AND m.id IS NULL THEN 'line'
                       ELSE 'memory' END
           FROM ends x
           LEFT JOIN mnemo.blocks b ON b.entity_id = %(e)s AND b.namespace = %(ns)s AND b.id = x.other
           LEFT JOIN mnemo.memories m ON m.entity_id = %(e)s AND m.namespace = %(ns)s AND m.id = x.other
           LEFT JOIN mnemo.turns t ON t.entity_id = %(e)s AND t.namespace = %(ns)s AND t.id = x.other
           LEFT JOIN LATERAL (SELECT l.turn_id FROM mnemo.block_lines l
                              WHERE l.entity_id = %(e)s AND l.namespace = %(ns)s AND l.turn_id = x.other
                              LIMIT 1) ln ON true
           WHERE coalesce(b.memory_id, m.id, t.id, ln.turn_id) IS NOT NULL""",
        {"e": entity_id, "ns": namespace, "ids": list(memory_ids), "types": list(link_types)},
    )
    return [(r[0], str(r[1])) for r in await cur.fetchall()]


async def record_versions(
    conn: psycopg.AsyncConnection, entity_id: str, run_id: uuid.UUID, versions: Mapping[str, int]
) -> None:
    """Note the cortex table versions night run ``run_id`` has reached (DESIGN §9)."""
    await conn.execute(
        "UPDATE mnemo.night_runs SET cortex_versions = cortex_versions || %s WHERE entity_id = %s AND id = %s",
        (Jsonb(dict(versions)), entity_id, run_id),
    )


async def has_cortex(conn: psycopg.AsyncConnection, entity_id: str, namespace: str) -> bool:
    """Whether any block of the scope lives in the cortex (so recall need not open LanceDB otherwise)."""
    cur = await conn.execute(
        """SELECT EXISTS (SELECT 1 FROM mnemo.blocks WHERE entity_id = %s AND namespace = %s
                            AND migrated_at IS NOT NULL)""",
        (entity_id, namespace),
    )
    row = await cur.fetchone()
    return bool(row and row[0])
