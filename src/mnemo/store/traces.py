"""The traces chamber (archive-adr §2 "The Eye"): an append-only record of recalls and gate decisions."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

__all__ = ["GateDecision", "commit_lazily", "gate_decisions", "record_gate_decisions", "record_retrieval"]


async def commit_lazily(conn: psycopg.AsyncConnection) -> None:
    """Let the current transaction commit without waiting for its WAL to reach the disk
    (``synchronous_commit = off``, this transaction only): it is still atomic and ordered after
    every earlier commit, and only a crash of PostgreSQL or the machine within the WAL writer's
    delay (a fraction of a second) can lose it whole, never part of it. For what a recall writes
    after the fact: its trace, and the reinforcement of what it returned (cognitive-plan §3.8)."""
    await conn.execute("SET LOCAL synchronous_commit = off")


async def record_retrieval(
    conn: psycopg.AsyncConnection,
    *,
    trace_id: uuid.UUID,
    entity_id: str,
    namespace: str,
    reader: str,
    query: str,
    k: int,
    outcome: str,
    best_similarity: float | None,
    threshold: float,
    hit_ids: Sequence[uuid.UUID],
    latency_ms: float,
    read_only: bool,
    parts: Sequence[dict[str, float]] | None = None,
) -> None:
    await conn.execute(
        """INSERT INTO traces.retrievals (id, entity_id, namespace, reader, query, k, outcome, best_similarity,
                                          threshold, hit_ids, latency_ms, read_only, parts)
           VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)""",
        (
            trace_id,
            entity_id,
            namespace,
            reader,
            query,
            k,
            outcome,
            best_similarity,
            threshold,
            list(hit_ids),
            latency_ms,
            read_only,
            None if parts is None else Jsonb(list(parts)),
        ),
    )


async def record_gate_decisions(conn: psycopg.AsyncConnection, rows: Sequence[dict[str, Any]]) -> None:
    """Append entry/exit gate decisions (cognitive-plan §2.8-2.9: every decision is traced)."""
    if not rows:
        return
    async with conn.cursor() as cur:
        await cur.executemany(
            """INSERT INTO traces.gate_decisions (id, entity_id, namespace, at, gate, item_id, action, reason,
                                                  relevance, similarity, contradiction, related_id, memory_id,
                                                  content, outcome_id)
               VALUES (%(id)s, %(entity_id)s, %(namespace)s, %(at)s, %(gate)s, %(item_id)s, %(action)s,
                       %(reason)s, %(relevance)s, %(similarity)s, %(contradiction)s, %(related_id)s,
                       %(memory_id)s, %(content)s, coalesce(%(outcome_id)s, uuidv7()))""",
            [
                {
                    "relevance": None,
                    "similarity": None,
                    "contradiction": None,
                    "related_id": None,
                    "memory_id": None,
                    "outcome_id": None,
                }
                | dict(r)
                for r in rows
            ],
        )


@dataclass(frozen=True, slots=True)
class GateDecision:
    """One logged gate decision (:func:`gate_decisions`)."""

    at: datetime
    gate: str
    item_id: uuid.UUID
    action: str
    reason: str
    relevance: float | None
    similarity: float | None
    contradiction: str | None
    related_id: uuid.UUID | None
    memory_id: uuid.UUID | None
    content: str


async def gate_decisions(conn: psycopg.AsyncConnection, entity_id: str, namespace: str) -> list[GateDecision]:
    cols = tuple(f.name for f in fields(GateDecision))
    cur = await conn.execute(
        f"SELECT {', '.join(cols)} FROM traces.gate_decisions "  # noqa: S608
        "WHERE entity_id = %s AND namespace = %s ORDER BY at, id",
        (entity_id, namespace),
    )
    return [GateDecision(*r) for r in await cur.fetchall()]
