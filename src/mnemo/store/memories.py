"""Curated memories (cognitive-plan §2.3, archive-adr §5.1)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

__all__ = ["MemoryRow", "insert_memory"]

MemoryRow = dict[str, Any]


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
