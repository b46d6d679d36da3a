"""The memories decay reads and marks (cognitive-plan §4.1). Every function runs inside the caller's transaction."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import psycopg

__all__ = [
    "DecayCandidate",
    "decay_candidates",
    "mark_deep_decayed",
]


@dataclass(frozen=True, slots=True)
class DecayCandidate:
    """An unanchored live memory with what decay needs to know (:func:`decay_candidates`)."""

    id: uuid.UUID
    last_accessed: datetime | None
    created_at: datetime
    access_count: int  # access_count + older_access_count
    deep_decayed_at: str | None  # ISO time, from metadata


async def decay_candidates(conn: psycopg.AsyncConnection, entity_id: str, namespace: str) -> list[DecayCandidate]:
    """Unanchored live memories with what decay needs to know."""
    cur = await conn.execute(
        """SELECT id, last_accessed, created_at, access_count + older_access_count, metadata ->> 'deep_decayed_at'
           FROM mnemo.memories
           WHERE entity_id = %s AND namespace = %s AND status IN ('candidate', 'active') AND NOT anchored
           ORDER BY id""",
        (entity_id, namespace),
    )
    return [DecayCandidate(*r) for r in await cur.fetchall()]


async def mark_deep_decayed(
    conn: psycopg.AsyncConnection, entity_id: str, ids: Sequence[uuid.UUID], at: datetime
) -> None:
    if ids:
        await conn.execute(
            """UPDATE mnemo.memories SET metadata = metadata || jsonb_build_object('deep_decayed_at', %s::text)
               WHERE entity_id = %s AND id = ANY(%s)""",
            (at.isoformat(), entity_id, list(ids)),
        )
