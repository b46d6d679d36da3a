"""The traces chamber (archive-adr §2 "The Eye"): an append-only record of recalls."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import psycopg

__all__ = ["record_retrieval"]


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
) -> None:
    await conn.execute(
        """INSERT INTO traces.retrievals (id, entity_id, namespace, reader, query, k, outcome, best_similarity,
                                          threshold, hit_ids, latency_ms, read_only)
           VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)""",
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
        ),
    )
