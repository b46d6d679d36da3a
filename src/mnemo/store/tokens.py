"""Bearer tokens of the HTTP service: stored hashed, revocable, optionally expiring (archive-adr §7;
migrations 0005, 0008)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

import psycopg

__all__ = ["FoundToken", "TokenRow", "create_token", "find_token", "list_tokens", "revoke_token"]


async def create_token(
    conn: psycopg.AsyncConnection,
    entity_id: str,
    token_hash: str,
    token_id: uuid.UUID,
    namespace: str | None,
    label: str | None,
    expires_at: datetime | None = None,
) -> datetime:
    """Store a token's hash; its creation time. ``expires_at`` None: it never expires (no check
    here that it lies ahead: :func:`mnemo.access.control.create` refuses a past expiry)."""
    cur = await conn.execute(
        """INSERT INTO mnemo.tokens (entity_id, token_hash, id, namespace, label, expires_at)
           VALUES (%s, %s, %s, %s, %s, %s) RETURNING created_at""",
        (entity_id, token_hash, token_id, namespace, label, expires_at),
    )
    row = await cur.fetchone()
    assert row is not None
    return row[0]


@dataclass(frozen=True, slots=True)
class FoundToken:
    """A token looked up by its hash (:func:`find_token`)."""

    id: uuid.UUID
    namespace: str | None
    revoked_at: datetime | None
    expired: bool  # by the database's clock


@dataclass(frozen=True, slots=True)
class TokenRow:
    """A token as :func:`list_tokens` lists it (never its hash)."""

    id: uuid.UUID
    namespace: str | None
    label: str | None
    created_at: datetime
    revoked_at: datetime | None
    expires_at: datetime | None
    expired: bool  # by the database's clock


async def find_token(conn: psycopg.AsyncConnection, entity_id: str, token_hash: str) -> FoundToken | None:
    """The token with this hash: its id, namespace, revocation and whether it has expired (by the
    database's clock, the one that wrote ``created_at``)."""
    cur = await conn.execute(
        """SELECT id, namespace, revoked_at, coalesce(expires_at <= now(), false) FROM mnemo.tokens
           WHERE entity_id = %s AND token_hash = %s""",
        (entity_id, token_hash),
    )
    row = await cur.fetchone()
    if row is None:
        return None
    return FoundToken(row[0], row[1], row[2], bool(row[3]))


async def token_valid(conn: psycopg.AsyncConnection, entity_id: str, token_id: uuid.UUID) -> bool:
    """Whether the token ``token_id`` still speaks for ``entity_id``: neither revoked nor expired (by
    the database's clock). One primary-key read: cheap enough for every inspector request."""
    cur = await conn.execute(
        """SELECT 1 FROM mnemo.tokens
           WHERE entity_id = %s AND id = %s AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())""",
        (entity_id, token_id),
    )
    return await cur.fetchone() is not None


async def revoke_token(conn: psycopg.AsyncConnection, entity_id: str, token_id: uuid.UUID) -> bool:
    cur = await conn.execute(
        "UPDATE mnemo.tokens SET revoked_at = now() WHERE entity_id = %s AND id = %s AND revoked_at IS NULL",
        (entity_id, token_id),
    )
    return cur.rowcount == 1


async def list_tokens(conn: psycopg.AsyncConnection, entity_id: str) -> list[TokenRow]:
    """Every token of ``entity_id``, oldest first; never the hash. ``expired``: by the database's clock."""
    cur = await conn.execute(
        """SELECT id, namespace, label, created_at, revoked_at, expires_at, coalesce(expires_at <= now(), false)
           FROM mnemo.tokens WHERE entity_id = %s ORDER BY created_at""",
        (entity_id,),
    )
    return [TokenRow(*r) for r in await cur.fetchall()]
