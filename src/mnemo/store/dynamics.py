"""Memory dynamics rows: weight and access state, the weight audit log, safety events, co-access links.

Seeds: cognitive-plan §2.3 (alpha/beta, access timestamps), §3.1
(``memory_co_access``), §3.8 (retrieval-induced mutation), §3.9 (audit trail,
shadow-mode safety log).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any, Literal

import psycopg

from mnemo.models import MemoryKind, MemoryStatus

__all__ = [
    "STATE_COLUMNS",
    "AuditedChange",
    "MemoryRecord",
    "MemoryState",
    "SafetyEvent",
    "bump_co_access",
    "co_access_edges",
    "delete_co_access",
    "duplicate_memory",
    "insert_safety_events",
    "insert_weight_changes",
    "lock_memories",
    "mark_superseded",
    "memory_count",
    "memory_record",
    "memory_states",
    "save_accesses",
    "save_weights",
    "strongest",
    "weight_history",
    "weight_profile",
]


@dataclass(frozen=True, slots=True)
class MemoryState:
    """A memory's weight and access state with its text (:data:`STATE_COLUMNS`, in field order)."""

    id: uuid.UUID
    kind: MemoryKind
    content: str
    compressed: str | None
    alpha: float
    beta: float
    anchored: bool
    status: MemoryStatus
    created_at: datetime
    event_time: datetime | None
    access_timestamps: list[datetime]
    older_access_count: int
    oldest_access: datetime | None
    access_count: int
    last_accessed: datetime | None
    token_count: int
    metadata: dict[str, Any]  # free-form JSONB
    tier: str
    provenance: list[str]
    source_confidence: float = 1.0
    """How far its source is trusted (the user's word 1; the agent's own statements less)."""


STATE_COLUMNS = tuple(f.name for f in fields(MemoryState))
_STATE_SQL = ", ".join(STATE_COLUMNS)


async def memory_states(
    conn: psycopg.AsyncConnection,
    entity_id: str,
    namespace: str,
    ids: Sequence[uuid.UUID],
    *,
    lock: bool = False,
    live_only: bool = True,
) -> dict[uuid.UUID, MemoryState]:
    """Weight and access state of memories (``lock``: FOR UPDATE, inside a transaction)."""
    if not ids:
        return {}
    status = "AND status IN ('candidate', 'active')" if live_only else ""
    suffix = "ORDER BY id FOR UPDATE" if lock else ""
    cur = await conn.execute(
        f"SELECT {_STATE_SQL} FROM mnemo.memories "  # noqa: S608  (fixed column list)
        f"WHERE entity_id = %s AND namespace = %s AND id = ANY(%s) {status} {suffix}",
        (entity_id, namespace, list(ids)),
    )
    return {r[0]: MemoryState(*r) for r in await cur.fetchall()}


async def lock_memories(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, ids: Sequence[uuid.UUID]
) -> None:
    """Lock memories (FOR UPDATE, inside a transaction) in id order: the one order every statement
    that writes several memories takes them in, so two such transactions never wait on each other
    in a cycle (a recall's reinforcement beside a night's archiving, a forget or a curation)."""
    if ids:
        await conn.execute(
            "SELECT 1 FROM mnemo.memories WHERE entity_id = %s AND namespace = %s AND id = ANY(%s) "
            "ORDER BY id FOR UPDATE",
            (entity_id, namespace, list(ids)),
        )


async def strongest(
    conn: psycopg.AsyncConnection,
    entity_id: str,
    namespace: str,
    limit: int,
    *,
    anchored: bool,
    kinds: Sequence[str] | None = None,
    written_by: datetime | None = None,
) -> list[MemoryState]:
    """Active memories by weight centre, strongest first: anchored ones, or the top ``limit`` others
    (only of ``kinds`` when given; only those that happened by ``written_by`` when given: their event
    time, else when written)."""
    only = None if kinds is None else list(kinds)
    cur = await conn.execute(
        f"SELECT {_STATE_SQL} FROM mnemo.memories "  # noqa: S608
        "WHERE entity_id = %s AND namespace = %s AND status = 'active' AND anchored = %s "
        "AND (%s::text[] IS NULL OR kind = ANY(%s::text[])) "
        "AND (%s::timestamptz IS NULL OR coalesce(event_time, created_at) <= %s) "
        "ORDER BY alpha / (alpha + beta) DESC, id LIMIT %s",
        (entity_id, namespace, anchored, only, only, written_by, written_by, limit),
    )
    return [MemoryState(*r) for r in await cur.fetchall()]


async def memory_count(conn: psycopg.AsyncConnection, entity_id: str, namespace: str) -> int:
    cur = await conn.execute(
        "SELECT count(*) FROM mnemo.memories WHERE entity_id = %s AND namespace = %s "
        "AND status IN ('candidate', 'active')",
        (entity_id, namespace),
    )
    row = await cur.fetchone()
    return int(row[0]) if row else 0


async def weight_profile(conn: psycopg.AsyncConnection, entity_id: str, namespace: str) -> tuple[int, float]:
    """The scope's live memories and its identity density: the weight centres above 0.7 summed over
    every live memory (0 with none)."""
    cur = await conn.execute(
        "SELECT count(*), coalesce(sum(alpha / (alpha + beta)) FILTER (WHERE alpha / (alpha + beta) > 0.7), 0) "
        "FROM mnemo.memories WHERE entity_id = %s AND namespace = %s AND status IN ('candidate', 'active')",
        (entity_id, namespace),
    )
    row = await cur.fetchone()
    count = int(row[0]) if row else 0
    return count, (float(row[1]) / count if row and count else 0.0)


async def save_weights(
    conn: psycopg.AsyncConnection, entity_id: str, weights: Sequence[tuple[uuid.UUID, float, float]]
) -> None:
    """Store new ``(id, alpha, beta)`` values."""
    if not weights:
        return
    await conn.execute(
        """UPDATE mnemo.memories m SET alpha = w.alpha, beta = w.beta, updated_at = now()
           FROM unnest(%s::uuid[], %s::float8[], %s::float8[]) AS w(id, alpha, beta)
           WHERE m.entity_id = %s AND m.id = w.id""",
        ([w[0] for w in weights], [w[1] for w in weights], [w[2] for w in weights], entity_id),
    )


async def save_accesses(
    conn: psycopg.AsyncConnection,
    entity_id: str,
    rows: Sequence[tuple[uuid.UUID, Sequence[datetime], int, datetime | None, datetime]],
) -> None:
    """Store ``(id, recent timestamps, older count, oldest, last accessed)``; access_count grows by one."""
    if not rows:
        return
    stamps = ["{" + ",".join(f'"{t.isoformat()}"' for t in r[1]) + "}" for r in rows]  # array literals
    await conn.execute(
        """UPDATE mnemo.memories m
           SET access_timestamps = u.stamps::timestamptz[], older_access_count = u.older, oldest_access = u.oldest,
               last_accessed = greatest(m.last_accessed, u.last), access_count = m.access_count + 1
           FROM unnest(%s::uuid[], %s::text[], %s::int[], %s::timestamptz[], %s::timestamptz[])
                AS u(id, stamps, older, oldest, last)
           WHERE m.entity_id = %s AND m.id = u.id""",
        ([r[0] for r in rows], stamps, [r[2] for r in rows], [r[3] for r in rows], [r[4] for r in rows], entity_id),
    )


async def insert_weight_changes(conn: psycopg.AsyncConnection, rows: Sequence[dict[str, Any]]) -> None:
    """Write audit rows of one scope in one statement, however many (issue 42 decision 4: the
    statements of a reinforcement do not grow with the memories it touches)."""
    if not rows:
        return
    entity_id, namespace = _one_scope(rows)
    await conn.execute(
        """INSERT INTO traces.weight_changes (id, entity_id, namespace, memory_id, at, operation, gain,
                                              old_alpha, old_beta, new_alpha, new_beta, reason, evidence, blocked)
           SELECT r.id, %s, %s, r.memory_id, r.at, r.operation, r.gain, r.old_alpha, r.old_beta, r.new_alpha,
                  r.new_beta, r.reason, r.evidence::jsonb, r.blocked
           FROM unnest(%s::uuid[], %s::uuid[], %s::timestamptz[], %s::text[], %s::float8[], %s::float8[],
                       %s::float8[], %s::float8[], %s::float8[], %s::text[], %s::text[], %s::bool[])
                AS r(id, memory_id, at, operation, gain, old_alpha, old_beta, new_alpha, new_beta, reason,
                     evidence, blocked)""",
        (
            entity_id,
            namespace,
            [r["id"] for r in rows],
            [r["memory_id"] for r in rows],
            [r["at"] for r in rows],
            [r["operation"] for r in rows],
            [r["gain"] for r in rows],
            [r.get("old_alpha") for r in rows],
            [r.get("old_beta") for r in rows],
            [r["new_alpha"] for r in rows],
            [r["new_beta"] for r in rows],
            [r["reason"] for r in rows],
            [json.dumps(r.get("evidence") or {}, default=str) for r in rows],
            [bool(r.get("blocked", False)) for r in rows],
        ),
    )


async def insert_safety_events(conn: psycopg.AsyncConnection, rows: Sequence[dict[str, Any]]) -> None:
    """Write safety events of one scope in one statement."""
    if not rows:
        return
    entity_id, namespace = _one_scope(rows)
    await conn.execute(
        """INSERT INTO traces.safety_events (id, entity_id, namespace, memory_id, at, ceiling, enforced, detail,
                                             change_id)
           SELECT r.id, %s, %s, r.memory_id, r.at, r.ceiling, r.enforced, r.detail, r.change_id
           FROM unnest(%s::uuid[], %s::uuid[], %s::timestamptz[], %s::text[], %s::bool[], %s::text[], %s::uuid[])
                AS r(id, memory_id, at, ceiling, enforced, detail, change_id)""",
        (
            entity_id,
            namespace,
            [r["id"] for r in rows],
            [r["memory_id"] for r in rows],
            [r["at"] for r in rows],
            [r["ceiling"] for r in rows],
            [r["enforced"] for r in rows],
            [r["detail"] for r in rows],
            [r["change_id"] for r in rows],
        ),
    )


def _one_scope(rows: Sequence[dict[str, Any]]) -> tuple[str, str]:
    """The one scope every row belongs to (one statement writes one entity's rows: DESIGN §7)."""
    scopes = {(r["entity_id"], r["namespace"]) for r in rows}
    if len(scopes) != 1:
        raise ValueError(f"rows of one scope expected, not {len(scopes)}")
    entity_id, namespace = scopes.pop()
    return str(entity_id), str(namespace)


@dataclass(frozen=True, slots=True)
class AuditedChange:
    """One audited weight change of a memory (:func:`weight_history`)."""

    id: uuid.UUID
    at: datetime
    operation: Literal["reinforce", "contradict", "create"]
    gain: float
    old_alpha: float | None
    old_beta: float | None
    new_alpha: float
    new_beta: float
    reason: str
    evidence: dict[str, Any]  # free-form JSONB
    blocked: bool


@dataclass(frozen=True, slots=True)
class SafetyEvent:
    """A ceiling a weight change met (:func:`weight_history`)."""

    at: datetime
    ceiling: str
    enforced: bool
    detail: str
    change_id: uuid.UUID


async def weight_history(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, memory_id: uuid.UUID
) -> tuple[list[AuditedChange], list[SafetyEvent]]:
    """A memory's weight changes and safety events, oldest first."""
    cols = tuple(f.name for f in fields(AuditedChange))
    cur = await conn.execute(
        f"SELECT {', '.join(cols)} FROM traces.weight_changes "  # noqa: S608
        "WHERE entity_id = %s AND namespace = %s AND memory_id = %s ORDER BY at, id",
        (entity_id, namespace, memory_id),
    )
    changes = [AuditedChange(*r) for r in await cur.fetchall()]
    ecols = tuple(f.name for f in fields(SafetyEvent))
    cur = await conn.execute(
        f"SELECT {', '.join(ecols)} FROM traces.safety_events "  # noqa: S608
        "WHERE entity_id = %s AND namespace = %s AND memory_id = %s ORDER BY at, id",
        (entity_id, namespace, memory_id),
    )
    events = [SafetyEvent(*r) for r in await cur.fetchall()]
    return changes, events


async def bump_co_access(
    conn: psycopg.AsyncConnection,
    entity_id: str,
    namespace: str,
    pairs: Sequence[tuple[uuid.UUID, uuid.UUID]],
    at: datetime,
) -> None:
    """Count one more co-retrieval for each ``(a, b)`` pair (``a < b``); rows are written (and
    locked) in key order, the one order every writer of links uses."""
    if not pairs:
        return
    await conn.execute(
        """INSERT INTO mnemo.co_access AS c (entity_id, namespace, a, b, count, last_at)
           SELECT %s, %s, p.a, p.b, 1, %s FROM unnest(%s::uuid[], %s::uuid[]) AS p(a, b) ORDER BY p.a, p.b
           ON CONFLICT (entity_id, a, b)
           DO UPDATE SET count = c.count + 1, last_at = greatest(c.last_at, EXCLUDED.last_at)""",
        (entity_id, namespace, at, [p[0] for p in pairs], [p[1] for p in pairs]),
    )


async def co_access_edges(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, ids: Sequence[uuid.UUID]
) -> list[tuple[uuid.UUID, uuid.UUID, int, datetime]]:
    """Every link touching ``ids``: ``(a, b, count, last_at)``. Partners may be archived memories;
    callers read memories through :func:`memory_states`, which keeps live ones only."""
    if not ids:
        return []
    cur = await conn.execute(_EDGES, {"e": entity_id, "ns": namespace, "ids": list(ids)})
    return [(r[0], r[1], int(r[2]), r[3]) for r in await cur.fetchall()]


_EDGES = """SELECT a, b, count, last_at FROM mnemo.co_access  -- two index probes, not an OR over both columns
    WHERE entity_id = %(e)s AND namespace = %(ns)s AND a = ANY(%(ids)s)
    UNION
    SELECT a, b, count, last_at FROM mnemo.co_access
    WHERE entity_id = %(e)s AND namespace = %(ns)s AND b = ANY(%(ids)s)"""


async def lock_with_edges(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, ids: Sequence[uuid.UUID]
) -> tuple[dict[uuid.UUID, MemoryState], list[tuple[uuid.UUID, uuid.UUID, int, datetime]]]:
    """:func:`memory_states` of ``ids`` (any status), locked in id order, and then every link
    touching them (:func:`co_access_edges`), both sent before either is read: one round trip in
    a pipeline. The links are read after the locks are held, so no other recall changes them
    before this transaction ends."""
    if not ids:
        return {}, []
    states = await conn.execute(
        f"SELECT {_STATE_SQL} FROM mnemo.memories "  # noqa: S608  (fixed column list)
        "WHERE entity_id = %s AND namespace = %s AND id = ANY(%s) ORDER BY id FOR UPDATE",
        (entity_id, namespace, list(ids)),
    )
    edges = await conn.execute(_EDGES, {"e": entity_id, "ns": namespace, "ids": list(ids)})
    found = {r[0]: MemoryState(*r) for r in await states.fetchall()}
    return found, [(r[0], r[1], int(r[2]), r[3]) for r in await edges.fetchall()]


async def delete_co_access(
    conn: psycopg.AsyncConnection, entity_id: str, pairs: Sequence[tuple[uuid.UUID, uuid.UUID]]
) -> int:
    """Delete links, locking them first in key order (two recalls pruning the same links across
    their hit sets take them in the same order, so neither waits for the other while holding one)."""
    if not pairs:
        return 0
    cur = await conn.execute(
        """WITH doomed AS (
               SELECT c.a, c.b FROM mnemo.co_access c JOIN unnest(%s::uuid[], %s::uuid[]) AS p(a, b)
                 ON c.entity_id = %s AND c.a = p.a AND c.b = p.b
               ORDER BY c.a, c.b FOR UPDATE OF c)
           DELETE FROM mnemo.co_access c USING doomed d WHERE c.entity_id = %s AND c.a = d.a AND c.b = d.b""",
        ([p[0] for p in pairs], [p[1] for p in pairs], entity_id, entity_id),
    )
    return cur.rowcount


async def mark_superseded(
    conn: psycopg.AsyncConnection, entity_id: str, ids: Sequence[uuid.UUID], by: uuid.UUID
) -> None:
    """Record on each old memory that ``by`` supersedes it (``metadata.superseded_by``)."""
    if ids:
        await conn.execute(
            """UPDATE mnemo.memories
               SET metadata = jsonb_set(metadata, '{superseded_by}',
                                        coalesce(metadata -> 'superseded_by', '[]'::jsonb) || to_jsonb(%s::text)),
                   updated_at = now()
               WHERE entity_id = %s AND id = ANY(%s)""",
            (str(by), entity_id, list(ids)),
        )


async def duplicate_memory(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, kind: str, content: str, *, anchored: bool
) -> uuid.UUID | None:
    """A live (candidate or active, not superseded) memory of the scope with exactly this content,
    kind and anchoring.

    Serialises writers of the same text first (a transaction-level advisory lock), so two concurrent
    identical writes cannot both miss each other; must run inside a transaction. Locks the row found.
    """
    await conn.execute(
        "SELECT pg_advisory_xact_lock(hashtextextended('mnemo.remember.' || %s || '/' || %s || '/' || %s, 0))",
        (entity_id, namespace, content),
    )
    cur = await conn.execute(
        """SELECT id FROM mnemo.memories
           WHERE entity_id = %s AND namespace = %s AND kind = %s AND content = %s AND anchored = %s
             AND status IN ('candidate', 'active') AND NOT metadata ? 'superseded_by'
           ORDER BY created_at, id LIMIT 1 FOR UPDATE""",
        (entity_id, namespace, kind, content, anchored),
    )
    row = await cur.fetchone()
    return None if row is None else row[0]


@dataclass(frozen=True, slots=True)
class MemoryRecord:
    """One memory's fields as :class:`~mnemo.models.Memory` names them, without its scope (:func:`memory_record`)."""

    id: uuid.UUID
    kind: MemoryKind
    content: str
    created_at: datetime
    alpha: float
    beta: float
    status: MemoryStatus
    anchored: bool
    compressed: str | None
    source_tag: str | None
    source_confidence: float
    provenance: list[str]
    event_time: datetime | None
    access_count: int
    last_accessed: datetime | None
    token_count: int
    metadata: dict[str, Any]  # free-form JSONB


_RECORD_COLUMNS = tuple(f.name for f in fields(MemoryRecord))


async def memory_record(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, memory_id: uuid.UUID
) -> MemoryRecord | None:
    """One memory's fields, as :class:`~mnemo.models.Memory` names them (without its scope)."""
    cur = await conn.execute(
        f"SELECT {', '.join(_RECORD_COLUMNS)} FROM mnemo.memories "  # noqa: S608  (fixed column list)
        "WHERE entity_id = %s AND namespace = %s AND id = %s",
        (entity_id, namespace, memory_id),
    )
    row = await cur.fetchone()
    return None if row is None else MemoryRecord(*row)
