"""The rows behind bifocal packets and forks: what an export reads, what an import restores.

Seeds: memory-architecture §6.1-6.3 (a packet carries prose and vectors
together), archive-adr "Consent-Governed Sharing" (export is a right of its
own) and "Logical Domain Isolation" (forks).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import psycopg
from psycopg import sql
from psycopg.rows import class_row
from psycopg.types.json import Jsonb

from mnemo.models import Role

__all__ = [
    "MemoryPageRow",
    "TurnPageRow",
    "WeightChangeRow",
    "export_access",
    "fork_of",
    "imported",
    "mark_fork",
    "memory_page",
    "restore_states",
    "spaces",
    "turn_page",
    "vectors_of",
    "weight_histories",
]


async def export_access(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, reader: str
) -> tuple[bool, bool]:
    """``(scope_exists, reader_may_export)``: the owner, or a grantee whose grant includes export.
    ``scope_exists`` is False for anyone else whether or not it exists (no probing)."""
    cur = await conn.execute(
        """SELECT EXISTS (SELECT 1 FROM mnemo.scopes WHERE entity_id = %(e)s AND namespace = %(ns)s),
                  %(r)s = %(e)s OR EXISTS (SELECT 1 FROM mnemo.grants WHERE entity_id = %(e)s
                                           AND namespace = %(ns)s AND grantee = %(r)s AND export)""",
        {"e": entity_id, "ns": namespace, "r": reader},
    )
    row = await cur.fetchone()
    assert row is not None
    allowed = bool(row[1])
    return allowed and bool(row[0]), allowed


@dataclass(frozen=True, slots=True)
class TurnPageRow:
    """A turn as a packet exports it (:func:`turn_page`)."""

    id: uuid.UUID
    session_id: str
    turn_number: int
    role: Role
    speaker: str | None
    content: str
    created_at: datetime
    metadata: dict[str, Any]  # free-form JSONB
    process_id: str
    surprisal: float | None
    flux_state: str | None
    user_tier: str
    recorded_at: datetime


@dataclass(frozen=True, slots=True)
class MemoryPageRow:
    """A memory as a packet exports it, with its block's prose, salience and references when it is a
    block's memory (:func:`memory_page`; the block columns are None otherwise)."""

    id: uuid.UUID
    kind: str
    content: str
    compressed: str | None
    alpha: float
    beta: float
    access_count: int
    last_accessed: datetime | None
    access_timestamps: list[datetime]
    older_access_count: int
    oldest_access: datetime | None
    status: str
    anchored: bool
    source_tag: str | None
    source_confidence: float
    provenance: list[str]
    event_time: datetime | None
    created_at: datetime
    metadata: dict[str, Any]  # free-form JSONB
    process_id: str
    tier: str
    block_id: uuid.UUID | None
    prose: dict[str, Any] | None  # free-form JSONB
    flux_metrics: dict[str, Any] | None
    salience_scores: dict[str, Any] | None
    coherence_gain: float | None
    arc_start_time: datetime | None
    arc_end_time: datetime | None
    continues_from: uuid.UUID | None
    derived_from: uuid.UUID | None
    citations: list[uuid.UUID] | None


@dataclass(frozen=True, slots=True)
class WeightChangeRow:
    """An audited weight change, as a packet exports it (:func:`weight_histories`)."""

    at: datetime
    operation: str
    gain: float
    old_alpha: float | None
    old_beta: float | None
    new_alpha: float
    new_beta: float
    reason: str
    evidence: dict[str, Any]  # free-form JSONB
    blocked: bool


async def turn_page(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, after: uuid.UUID | None, limit: int
) -> list[TurnPageRow]:
    """The scope's turns in id order, after ``after``."""
    async with conn.cursor(row_factory=class_row(TurnPageRow)) as cur:
        await cur.execute(
            """SELECT id, session_id, turn_number, role, speaker, content, created_at, metadata, process_id,
                      surprisal, flux_state, user_tier, recorded_at
               FROM mnemo.turns WHERE entity_id = %s AND namespace = %s AND (%s::uuid IS NULL OR id > %s)
               ORDER BY id LIMIT %s""",
            (entity_id, namespace, after, after, limit),
        )
        return list(await cur.fetchall())


async def memory_page(
    conn: psycopg.AsyncConnection,
    entity_id: str,
    namespace: str,
    after: uuid.UUID | None,
    limit: int,
    ids: Sequence[uuid.UUID] | None = None,
) -> list[MemoryPageRow]:
    """The scope's memories (all of them, or ``ids``) in id order after ``after``, each with its
    block's prose, salience and references when it is a block's memory."""
    async with conn.cursor(row_factory=class_row(MemoryPageRow)) as cur:
        await cur.execute(
            """SELECT m.id, m.kind, m.content, m.compressed, m.alpha, m.beta, m.access_count, m.last_accessed,
                      m.access_timestamps, m.older_access_count, m.oldest_access,
                      m.status, m.anchored, m.source_tag, m.source_confidence, m.provenance, m.event_time,
                      m.created_at, m.metadata, m.process_id, m.tier,
                      b.id AS block_id, b.prose, b.flux_metrics, b.salience_scores, b.coherence_gain,
                      b.arc_start_time, b.arc_end_time,
                      -- references name blocks; a packet names the memory a block is
                      (SELECT c.memory_id FROM mnemo.blocks c
                       WHERE c.entity_id = b.entity_id AND c.id = b.continues_from) AS continues_from,
                      (SELECT c.memory_id FROM mnemo.blocks c
                       WHERE c.entity_id = b.entity_id AND c.id = b.derived_from) AS derived_from,
                      (SELECT coalesce(array_agg(c.memory_id), '{}') FROM mnemo.blocks c
                       WHERE c.entity_id = b.entity_id AND c.memory_id IS NOT NULL
                         AND c.id::text IN (SELECT jsonb_array_elements_text(b.citations))) AS citations
               FROM mnemo.memories m
               LEFT JOIN mnemo.blocks b ON b.entity_id = m.entity_id AND b.memory_id = m.id
               WHERE m.entity_id = %s AND m.namespace = %s AND (%s::uuid IS NULL OR m.id > %s)
                 AND (%s::uuid[] IS NULL OR m.id = ANY(%s))
               ORDER BY m.id LIMIT %s""",
            (entity_id, namespace, after, after, ids, ids, limit),
        )
        return list(await cur.fetchall())


async def spaces(conn: psycopg.AsyncConnection) -> list[str]:
    cur = await conn.execute("SELECT table_name FROM vectors.spaces ORDER BY 1")
    return [str(r[0]) for r in await cur.fetchall()]


async def vectors_of(
    conn: psycopg.AsyncConnection, entity_id: str, tables: Sequence[str], ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, dict[str, tuple[str, np.ndarray]]]:
    """Every stored vector of ``ids`` in every space: ``{id: {table: (slug, float32 vector)}}``."""
    found: dict[uuid.UUID, dict[str, tuple[str, np.ndarray]]] = {}
    if not ids:
        return found
    for table in tables:
        query = sql.SQL("SELECT item_id, slug, embedding FROM vectors.{} WHERE entity_id = %s AND item_id = ANY(%s)")
        cur = await conn.execute(query.format(sql.Identifier(table)), (entity_id, list(ids)))
        for item, slug, vec in await cur.fetchall():
            found.setdefault(item, {})[table] = (str(slug), np.asarray(vec.to_numpy(), dtype=np.float32))
    return found


async def imported(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, packet_ids: Sequence[str]
) -> dict[str, uuid.UUID]:
    """Which of ``packet_ids`` this scope already holds (imports are idempotent): packet id -> item id."""
    if not packet_ids:
        return {}
    cur = await conn.execute(
        """SELECT metadata->>'packet_id', id FROM mnemo.turns
           WHERE entity_id = %(e)s AND namespace = %(ns)s AND metadata->>'packet_id' = ANY(%(p)s)
           UNION ALL
           SELECT metadata->>'packet_id', id FROM mnemo.memories
           WHERE entity_id = %(e)s AND namespace = %(ns)s AND metadata->>'packet_id' = ANY(%(p)s)
           UNION ALL  -- a scope's consolidated state (blocks, facts, ...): mnemo.packet_items
           SELECT packet_id, item_id FROM mnemo.packet_items
           WHERE entity_id = %(e)s AND namespace = %(ns)s AND packet_id = ANY(%(p)s)""",
        {"e": entity_id, "ns": namespace, "p": list(packet_ids)},
    )
    return {str(p): i for p, i in await cur.fetchall()}


async def weight_histories(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, list[WeightChangeRow]]:
    """Each memory's audited weight changes, oldest first: ``{memory id: [change, ...]}``."""
    found: dict[uuid.UUID, list[WeightChangeRow]] = {}
    if not ids:
        return found
    async with conn.cursor() as cur:
        await cur.execute(
            """SELECT memory_id, at, operation, gain, old_alpha, old_beta, new_alpha, new_beta, reason, evidence,
                      blocked
               FROM traces.weight_changes WHERE entity_id = %s AND namespace = %s AND memory_id = ANY(%s)
               ORDER BY at, id""",
            (entity_id, namespace, list(ids)),
        )
        for row in await cur.fetchall():
            found.setdefault(row[0], []).append(WeightChangeRow(*row[1:]))
    return found


async def restore_states(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, states: Sequence[Mapping[str, Any]]
) -> None:
    """Give imported memories (``states[i]["id"]``) the access history and record time their packets
    carried (not a new memory's)."""
    if not states:
        return
    async with conn.cursor() as cur:
        await cur.executemany(
            """UPDATE mnemo.memories SET access_count = %(access_count)s, access_timestamps = %(access_timestamps)s,
                      older_access_count = %(older_access_count)s, oldest_access = %(oldest_access)s,
                      last_accessed = %(last_accessed)s, created_at = %(created_at)s
               WHERE entity_id = %(e)s AND namespace = %(ns)s AND id = %(id)s""",
            [dict(state) | {"e": entity_id, "ns": namespace} for state in states],
        )


async def add_links(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, links: Sequence[tuple[uuid.UUID, uuid.UUID, str]]
) -> None:
    """Structural links between imported items (their references, remapped)."""
    if not links:
        return
    async with conn.cursor() as cur:
        await cur.executemany(
            """INSERT INTO mnemo.links (entity_id, namespace, source_id, target_id, link_type)
               VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING""",
            [(entity_id, namespace, s, t, kind) for s, t, kind in links],
        )


async def mark_fork(conn: psycopg.AsyncConnection, entity_id: str, namespace: str, parent: str, at: datetime) -> bool:
    """Create the fork's scope, marked as branched from ``parent``; False when the namespace exists."""
    cur = await conn.execute(
        """INSERT INTO mnemo.scopes (entity_id, namespace, forked_from, forked_at) VALUES (%s, %s, %s, %s)
           ON CONFLICT DO NOTHING""",
        (entity_id, namespace, parent, at),
    )
    return cur.rowcount == 1


async def fork_of(conn: psycopg.AsyncConnection, entity_id: str, namespace: str) -> str | None:
    """The scope ``(entity_id, namespace)`` was forked from, None when it is no fork (or absent)."""
    cur = await conn.execute(
        "SELECT forked_from FROM mnemo.scopes WHERE entity_id = %s AND namespace = %s", (entity_id, namespace)
    )
    row = await cur.fetchone()
    return None if row is None or row[0] is None else str(row[0])


def jsonb(value: Any) -> Jsonb:
    return Jsonb(value)
