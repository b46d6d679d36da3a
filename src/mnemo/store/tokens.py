"""Bearer tokens of the HTTP service: stored hashed, revocable (archive-adr §7)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

import psycopg

__all__ = ["create_token", "find_token", "list_tokens", "revoke_token"]


async def create_token(
    conn: psycopg.AsyncConnection,
    entity_id: str,
    token_hash: str,
    token_id: uuid.UUID,
    namespace: str | None,
    label: str | None,
) -> datetime:
    cur = await conn.execute(
        """INSERT INTO mnemo.tokens (entity_id, token_hash, id, namespace, label) VALUES (%s, %s, %s, %s, %s)
           RETURNING created_at""",
        (entity_id, token_hash, token_id, namespace, label),
    )
    row = await cur.fetchone()
    assert row is not None
    return row[0]


async def find_token(conn: psycopg.AsyncConnection, entity_id: str, token_hash: str) -> dict[str, Any] | None:
    cur = await conn.execute(
        "SELECT id, namespace, revoked_at FROM mnemo.tokens WHERE entity_id = %s AND token_hash = %s",
        (entity_id, token_hash),
    )
    row = await cur.fetchone()
    return None if row is None else {"id": row[0], "namespace": row[1], "revoked_at": row[2]}


async def revoke_token(conn: psycopg.AsyncConnection, entity_id: str, token_id: uuid.UUID) -> bool:
    cur = await conn.execute(
        "UPDATE mnemo.tokens SET revoked_at = now() WHERE entity_id = %s AND id = %s AND revoked_at IS NULL",
        (entity_id, token_id),
    )
    return cur.rowcount == 1


async def list_tokens(conn: psycopg.AsyncConnection, entity_id: str) -> list[dict[str, Any]]:
    """Every token of ``entity_id``, oldest first; never the hash."""
    cur = await conn.execute(
        "SELECT id, namespace, label, created_at, revoked_at FROM mnemo.tokens "
        "WHERE entity_id = %s ORDER BY created_at",
        (entity_id,),
    )
    cols = ("id", "namespace", "label", "created_at", "revoked_at")
    return [dict(zip(cols, r, strict=True)) for r in await cur.fetchall()]
