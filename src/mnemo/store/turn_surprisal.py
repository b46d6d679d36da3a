"""Turns as the night scores and segments them: surprisal (stage 1a) and flux states.

Seeds: memory-architecture §8 (stages 1-2). Every function runs inside the caller's transaction.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg

from mnemo.models import Role

__all__ = [
    "TurnRow",
    "count_unscored",
    "scored_texts",
    "session_turns",
    "set_flux_states",
    "set_surprisal",
    "unscored_turns",
]


@dataclass(frozen=True, slots=True)
class TurnRow:
    """A turn as the night reads it: the columns of the night's turn SELECTs, in order."""

    id: uuid.UUID
    session_id: str
    turn_number: int
    role: Role
    speaker: str | None
    content: str
    created_at: datetime
    surprisal: float | None
    user_tier: str
    metadata: dict[str, Any]  # free-form JSONB


async def unscored_turns(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, as_of: datetime, limit: int
) -> list[TurnRow]:
    """Turns without a surprisal yet, oldest first (the model learns the scope's history in order)."""
    cur = await conn.execute(
        """SELECT id, session_id, turn_number, role, speaker, content, created_at, surprisal, user_tier, metadata
           FROM mnemo.turns
           WHERE entity_id = %s AND namespace = %s AND surprisal IS NULL AND created_at <= %s
           ORDER BY created_at, session_id, turn_number LIMIT %s""",
        (entity_id, namespace, as_of, limit),
    )
    return [TurnRow(*r) for r in await cur.fetchall()]


async def count_unscored(conn: psycopg.AsyncConnection, entity_id: str, namespace: str, as_of: datetime) -> int:
    cur = await conn.execute(
        """SELECT count(*) FROM mnemo.turns WHERE entity_id = %s AND namespace = %s AND surprisal IS NULL
           AND created_at <= %s""",
        (entity_id, namespace, as_of),
    )
    row = await cur.fetchone()
    return int(row[0]) if row else 0


async def set_surprisal(
    conn: psycopg.AsyncConnection, entity_id: str, values: Sequence[tuple[uuid.UUID, float]]
) -> None:
    async with conn.cursor() as cur:
        await cur.executemany(
            "UPDATE mnemo.turns SET surprisal = %s WHERE entity_id = %s AND id = %s",
            [(s, entity_id, i) for i, s in values],
        )


async def scored_texts(conn: psycopg.AsyncConnection, entity_id: str, namespace: str) -> list[str]:
    """The contents of the scope's already-scored turns, oldest first (to rebuild a dropped model)."""
    cur = await conn.execute(
        """SELECT content FROM mnemo.turns WHERE entity_id = %s AND namespace = %s AND surprisal IS NOT NULL
           ORDER BY created_at, session_id, turn_number""",
        (entity_id, namespace),
    )
    return [r[0] for r in await cur.fetchall()]


async def session_turns(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, session_id: str, after: int, as_of: datetime
) -> list[TurnRow]:
    """A session's scored turns after turn number ``after``, in order."""
    cur = await conn.execute(
        """SELECT id, session_id, turn_number, role, speaker, content, created_at, surprisal, user_tier, metadata
           FROM mnemo.turns
           WHERE entity_id = %s AND namespace = %s AND session_id = %s AND turn_number > %s AND created_at <= %s
             AND surprisal IS NOT NULL
           ORDER BY turn_number""",
        (entity_id, namespace, session_id, after, as_of),
    )
    return [TurnRow(*r) for r in await cur.fetchall()]


async def set_flux_states(
    conn: psycopg.AsyncConnection, entity_id: str, values: Sequence[tuple[uuid.UUID, str]]
) -> None:
    async with conn.cursor() as cur:
        await cur.executemany(
            "UPDATE mnemo.turns SET flux_state = %s WHERE entity_id = %s AND id = %s",
            [(s, entity_id, i) for i, s in values],
        )
