"""Curated memories (cognitive-plan §2.3, archive-adr §5.1)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from mnemo.models import Item, ListedMemory

__all__ = ["MemoryRow", "find_item", "insert_memory", "list_memories"]

MemoryRow = dict[str, Any]  # a memory to insert: its columns by name


async def insert_memory(conn: psycopg.AsyncConnection, row: MemoryRow) -> datetime:
    """Insert one memory; returns its ``created_at``."""
    cur = await conn.execute(
        """INSERT INTO mnemo.memories (id, entity_id, namespace, kind, content, compressed, alpha, beta, status,
                                       anchored, source_tag, source_confidence, provenance, event_time,
                                       token_count, metadata)
           VALUES (%(id)s, %(entity_id)s, %(namespace)s, %(kind)s, %(content)s, %(compressed)s, %(alpha)s,
                   %(beta)s, %(status)s, %(anchored)s, %(source_tag)s, %(source_confidence)s, %(provenance)s,
                   %(event_time)s, %(token_count)s, %(metadata)s)
           RETURNING created_at""",
        {**row, "metadata": Jsonb(row.get("metadata") or {})},
    )
    created = await cur.fetchone()
    assert created is not None
    return created[0]


async def list_memories(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, *, limit: int, before: uuid.UUID | None = None
) -> list[ListedMemory]:
    """Up to ``limit`` memories of the scope (any status) as the public record lists them, newest
    id first (ids are UUIDv7), keyset-paged: only ids below ``before`` when given."""
    cur = await conn.execute(
        """SELECT id, kind, status, content, created_at, event_time, anchored, alpha, beta
           FROM mnemo.memories
           WHERE entity_id = %(e)s AND namespace = %(ns)s AND (%(before)s::uuid IS NULL OR id < %(before)s::uuid)
           ORDER BY id DESC
           LIMIT %(limit)s""",
        {"e": entity_id, "ns": namespace, "before": before, "limit": limit},
    )
    return [ListedMemory(*r) for r in await cur.fetchall()]


async def find_item(conn: psycopg.AsyncConnection, entity_id: str, namespace: str, item: uuid.UUID) -> Item | None:
    """One turn or memory of the scope (any status), or None; ``type`` says which (a turn has no
    weight, a memory no session: those fields are None)."""
    cur = await conn.execute(
        """SELECT 'memory', id, content, created_at, kind, status, event_time, anchored, alpha, beta,
                  NULL::text, NULL::integer, NULL::text, NULL::text
           FROM mnemo.memories WHERE entity_id = %(e)s AND namespace = %(ns)s AND id = %(id)s
           UNION ALL
           SELECT 'turn', id, content, created_at, NULL, NULL, NULL, NULL, NULL, NULL,
                  session_id, turn_number, role, speaker
           FROM mnemo.turns WHERE entity_id = %(e)s AND namespace = %(ns)s AND id = %(id)s
           LIMIT 1""",
        {"e": entity_id, "ns": namespace, "id": item},
    )
    row = await cur.fetchone()
    return None if row is None else Item(*row)
