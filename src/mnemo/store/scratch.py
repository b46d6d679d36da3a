"""The scratch buffer between the entry and the exit gate (cognitive-plan §2.9)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

__all__ = ["ScratchItem", "buffer_item", "claim", "delete_items", "fresh_count", "keep_buffered", "pending_scopes"]


@dataclass(frozen=True, slots=True)
class ScratchItem:
    """A buffered item (:func:`claim`), the columns of :data:`_COLS` in order."""

    id: uuid.UUID
    content: str
    kind: str
    role: str | None
    source_tag: str | None
    metadata: dict[str, Any]  # free-form JSONB
    created_at: datetime
    expires_at: datetime
    rounds: int


_COLS = tuple(f.name for f in fields(ScratchItem))


async def buffer_item(conn: psycopg.AsyncConnection, row: dict[str, Any]) -> None:
    await conn.execute(
        """INSERT INTO mnemo.scratch (id, entity_id, namespace, content, kind, role, source_tag, metadata,
                                      created_at, expires_at)
           VALUES (%(id)s, %(entity_id)s, %(namespace)s, %(content)s, %(kind)s, %(role)s, %(source_tag)s,
                   %(metadata)s, %(created_at)s, %(expires_at)s)""",
        {**row, "metadata": Jsonb(row.get("metadata") or {})},
    )


async def fresh_count(conn: psycopg.AsyncConnection, entity_id: str, namespace: str) -> int:
    """Items buffered since the last flush (never evaluated by the exit gate)."""
    cur = await conn.execute(
        "SELECT count(*) FROM mnemo.scratch WHERE entity_id = %s AND namespace = %s AND rounds = 0",
        (entity_id, namespace),
    )
    row = await cur.fetchone()
    return int(row[0]) if row else 0


async def claim(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, ids: Sequence[uuid.UUID] | None = None
) -> list[ScratchItem]:
    """Lock a scope's buffered items (only ``ids`` when given) for a flush, oldest first, skipping
    ones another flush holds."""
    cur = await conn.execute(
        f"SELECT {', '.join(_COLS)} FROM mnemo.scratch "  # noqa: S608
        "WHERE entity_id = %s AND namespace = %s AND (%s::uuid[] IS NULL OR id = ANY(%s::uuid[])) "
        "ORDER BY created_at, id FOR UPDATE SKIP LOCKED",
        (entity_id, namespace, None if ids is None else list(ids), None if ids is None else list(ids)),
    )
    return [ScratchItem(*r) for r in await cur.fetchall()]


async def delete_items(conn: psycopg.AsyncConnection, entity_id: str, ids: Sequence[uuid.UUID]) -> None:
    if ids:
        await conn.execute("DELETE FROM mnemo.scratch WHERE entity_id = %s AND id = ANY(%s)", (entity_id, list(ids)))


async def keep_buffered(conn: psycopg.AsyncConnection, entity_id: str, ids: Sequence[uuid.UUID]) -> None:
    if ids:
        await conn.execute(
            "UPDATE mnemo.scratch SET rounds = rounds + 1 WHERE entity_id = %s AND id = ANY(%s)",
            (entity_id, list(ids)),
        )


async def pending_scopes(conn: psycopg.AsyncConnection, before: datetime | None = None) -> list[tuple[str, str]]:
    """Scopes with buffered items (created before ``before``, when given)."""
    cur = await conn.execute(
        """SELECT DISTINCT entity_id, namespace FROM mnemo.scratch
           WHERE %(before)s::timestamptz IS NULL OR created_at < %(before)s ORDER BY 1, 2""",
        {"before": before},
    )
    return [(r[0], r[1]) for r in await cur.fetchall()]
