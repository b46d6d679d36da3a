"""Links between items and what the night derives along them: structural links, derivation
chains, insight candidates, each memory's provenance.

Seeds: memory-architecture §7.3 (links), cognitive-plan §4.2 (insights, ``why_do_i_believe``).
Every function runs inside the caller's transaction.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import psycopg

__all__ = [
    "DerivationStep",
    "InsightCandidate",
    "derivation",
    "insert_links",
    "insight_candidates",
    "memory_kind",
    "memory_provenance",
]


@dataclass(frozen=True, slots=True)
class DerivationStep:
    """One step of a derivation chain (:func:`derivation`): ``id`` was derived from... ``parent``."""

    depth: int
    parent: uuid.UUID
    id: uuid.UUID
    kind: str
    content: str | None
    status: str | None  # None for a turn or a block


@dataclass(frozen=True, slots=True)
class InsightCandidate:
    """A live memory no insight was derived from yet (:func:`insight_candidates`)."""

    id: uuid.UUID
    kind: str
    content: str
    entity: str | None  # metadata ->> 'entity'
    attribute: str | None  # metadata ->> 'attribute'
    provenance: list[uuid.UUID]
    event_time: datetime


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


async def derivation(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, item_id: uuid.UUID, max_depth: int = 8
) -> list[DerivationStep]:
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
    return [DerivationStep(*r) for r in await cur.fetchall()]


async def insight_candidates(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, limit: int
) -> list[InsightCandidate]:
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
    return [InsightCandidate(*r) for r in await cur.fetchall()]


async def memory_kind(conn: psycopg.AsyncConnection, entity_id: str, namespace: str, item: uuid.UUID) -> str | None:
    cur = await conn.execute(
        "SELECT kind FROM mnemo.memories WHERE entity_id = %s AND namespace = %s AND id = %s",
        (entity_id, namespace, item),
    )
    row = await cur.fetchone()
    return None if row is None else str(row[0])


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
