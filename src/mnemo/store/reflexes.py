"""Reflexes (procedural memory) and the causal edges between them.

Seed: memory-architecture §10.3-10.5 (the schema, the causal graph and the
night's self-pruning rules, kept as the seed states them).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

import numpy as np
import psycopg
from pgvector import HalfVector
from psycopg.rows import class_row

__all__ = [
    "CausalEdgeRow",
    "PruneStats",
    "ReflexMatch",
    "ReflexRow",
    "candidates",
    "edges_from",
    "link",
    "prunable",
    "prune",
    "touch",
    "upsert",
]

_STALE = "last_accessed < %(now)s - interval '30 days' AND success_count < 2"

_COLUMNS = """id, context, action, action_type, success_count, failure_count, total_count, success_rate,
              last_accessed, last_success, created_at, process_id"""


@dataclass(frozen=True, slots=True)
class ReflexRow:
    """A reflex, as :data:`_COLUMNS` reads it."""

    id: uuid.UUID
    context: str
    action: str
    action_type: Literal["tool_call", "response_pattern", "delegation"]
    success_count: int
    failure_count: int
    total_count: int
    success_rate: float
    last_accessed: datetime
    last_success: datetime | None
    created_at: datetime
    process_id: str


@dataclass(frozen=True, slots=True)
class ReflexMatch(ReflexRow):
    """A reflex near a context (:func:`candidates`), with its cosine similarity."""

    similarity: float


@dataclass(frozen=True, slots=True)
class CausalEdgeRow:
    """A causal edge leaving a reflex, with its target's action (:func:`edges_from`)."""

    source_id: uuid.UUID
    target_id: uuid.UUID
    strength: float
    gap_seconds: float
    observations: int
    action: str
    action_type: str


async def upsert(
    conn: psycopg.AsyncConnection,
    entity_id: str,
    namespace: str,
    *,
    context: str,
    action: str,
    action_type: str,
    slug: str,
    vector: np.ndarray,
    success: bool,
    at: datetime,
) -> ReflexRow:
    """Count one outcome of ``action`` in ``context`` (the reflex is made on its first outcome)."""
    async with conn.cursor(row_factory=class_row(ReflexRow)) as cur:
        await cur.execute(
            f"""INSERT INTO mnemo.reflexes AS r (entity_id, namespace, context, action, action_type, slug, embedding,
                                                success_count, failure_count, last_accessed, last_success, created_at)
                VALUES (%(e)s, %(ns)s, %(context)s, %(action)s, %(type)s, %(slug)s, %(vec)s,
                        %(won)s::int, 1 - %(won)s::int, %(at)s, CASE WHEN %(won)s THEN %(at)s END, %(at)s)
                ON CONFLICT (entity_id, namespace, action_type, action, context) DO UPDATE
                SET success_count = r.success_count + EXCLUDED.success_count,
                    failure_count = r.failure_count + EXCLUDED.failure_count,
                    last_accessed = greatest(r.last_accessed, EXCLUDED.last_accessed),
                    last_success = CASE WHEN %(won)s THEN greatest(r.last_success, %(at)s) ELSE r.last_success END,
                    slug = EXCLUDED.slug, embedding = EXCLUDED.embedding
                RETURNING {_COLUMNS}""",  # noqa: S608 (constant columns)
            {
                "e": entity_id,
                "ns": namespace,
                "context": context,
                "action": action,
                "type": action_type,
                "slug": slug,
                "vec": HalfVector(vector),
                "won": success,
                "at": at,
            },
        )
        row = await cur.fetchone()
    assert row is not None
    return row


async def link(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, source: uuid.UUID, target: uuid.UUID, at: datetime
) -> bool:
    """``target`` followed ``source``: one more observation of the edge. Its strength is how often
    the source led to the target (observations / the source's outcomes), its gap the mean time
    between them. False when ``source`` is not a reflex of the scope."""
    cur = await conn.execute(
        """WITH src AS (SELECT total_count, last_accessed FROM mnemo.reflexes
                        WHERE entity_id = %(e)s AND namespace = %(ns)s AND id = %(s)s)
           INSERT INTO mnemo.causal_edges AS c (entity_id, namespace, source_id, target_id, strength, gap_seconds,
                                                observations, last_observed)
           SELECT %(e)s, %(ns)s, %(s)s, %(t)s, 1.0 / greatest(src.total_count, 1),
                  greatest(extract(epoch FROM %(at)s - src.last_accessed), 0), 1, %(at)s FROM src
           ON CONFLICT (entity_id, source_id, target_id) DO UPDATE
           SET observations = c.observations + 1,
               strength = least(1.0, (c.observations + 1)::float8 / greatest(
                   (SELECT total_count FROM src), c.observations + 1)),
               gap_seconds = (c.gap_seconds * c.observations + EXCLUDED.gap_seconds) / (c.observations + 1),
               last_observed = EXCLUDED.last_observed""",
        {"e": entity_id, "ns": namespace, "s": source, "t": target, "at": at},
    )
    return cur.rowcount == 1


async def candidates(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, slug: str, vector: np.ndarray, limit: int
) -> list[ReflexMatch]:
    """The scope's reflexes of model ``slug`` nearest to ``vector`` (cosine similarity), best first."""
    async with conn.cursor(row_factory=class_row(ReflexMatch)) as cur:
        await cur.execute(
            f"""SELECT {_COLUMNS}, 1 - (embedding <=> %(vec)s) AS similarity FROM mnemo.reflexes
                WHERE entity_id = %(e)s AND namespace = %(ns)s AND slug = %(slug)s
                ORDER BY embedding <=> %(vec)s, id LIMIT %(n)s""",  # noqa: S608 (constant columns)
            {"e": entity_id, "ns": namespace, "slug": slug, "vec": HalfVector(vector), "n": limit},
        )
        return list(await cur.fetchall())


async def edges_from(conn: psycopg.AsyncConnection, entity_id: str, ids: list[uuid.UUID]) -> list[CausalEdgeRow]:
    """The causal edges leaving ``ids``, strongest first, with the target's action."""
    async with conn.cursor(row_factory=class_row(CausalEdgeRow)) as cur:
        await cur.execute(
            """SELECT c.source_id, c.target_id, c.strength, c.gap_seconds, c.observations, r.action, r.action_type
               FROM mnemo.causal_edges c
               JOIN mnemo.reflexes r ON r.entity_id = c.entity_id AND r.id = c.target_id
               WHERE c.entity_id = %s AND c.source_id = ANY(%s) ORDER BY c.strength DESC, c.target_id""",
            (entity_id, ids),
        )
        return list(await cur.fetchall())


async def touch(conn: psycopg.AsyncConnection, entity_id: str, ids: list[uuid.UUID], at: datetime) -> None:
    """The reflexes were consulted (their ``last_accessed`` keeps them from pruning)."""
    await conn.execute(
        "UPDATE mnemo.reflexes SET last_accessed = greatest(last_accessed, %s) WHERE entity_id = %s AND id = ANY(%s)",
        (at, entity_id, ids),
    )


@dataclass(slots=True)
class PruneStats:
    """What :func:`prune` removed and weakened."""

    pruned: int = 0
    weakened: int = 0
    edges_dropped: int = 0


async def prune(conn: psycopg.AsyncConnection, entity_id: str, namespace: str, now: datetime) -> PruneStats:
    """The seed's self-pruning (§10.5), as of ``now``: reflexes unused for 30 days with fewer than
    two successes go; edges unobserved for 7 days weaken by 10%; edges under 0.1 go."""
    p = {"e": entity_id, "ns": namespace, "now": now}
    pruned = await conn.execute(
        "DELETE FROM mnemo.reflexes WHERE entity_id = %(e)s AND namespace = %(ns)s AND " + _STALE,  # noqa: S608
        p,
    )
    weakened = await conn.execute(
        """UPDATE mnemo.causal_edges SET strength = strength * 0.9
           WHERE entity_id = %(e)s AND namespace = %(ns)s AND last_observed < %(now)s - interval '7 days'""",
        p,
    )
    dropped = await conn.execute(
        "DELETE FROM mnemo.causal_edges WHERE entity_id = %(e)s AND namespace = %(ns)s AND strength < 0.1", p
    )
    return PruneStats(pruned=pruned.rowcount, weakened=weakened.rowcount, edges_dropped=dropped.rowcount)


async def prunable(conn: psycopg.AsyncConnection, entity_id: str, namespace: str, now: datetime) -> int:
    """How many reflexes :func:`prune` would remove at ``now`` (a dry run)."""
    cur = await conn.execute(
        "SELECT count(*) FROM mnemo.reflexes WHERE entity_id = %(e)s AND namespace = %(ns)s AND " + _STALE,  # noqa: S608
        {"e": entity_id, "ns": namespace, "now": now},
    )
    row = await cur.fetchone()
    return int(row[0]) if row else 0
