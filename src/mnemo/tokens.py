"""Bearer tokens for the HTTP service: create, verify, revoke (archive-adr §7 "Sigil Scope").

A token is ``mn1.<base64url(entity_id)>.<43 random characters>``: the entity is
readable from the token so the lookup is by ``(entity_id, sha256(token))``, and
only the hash is stored. A token may be limited to one namespace.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import secrets
import uuid
from dataclasses import dataclass

from mnemo.errors import MnemoError
from mnemo.models import Scope, uuid7
from mnemo.runtime import Runtime
from mnemo.store import tokens as token_rows

__all__ = ["AuthenticationError", "Principal", "create", "revoke", "verify"]


class AuthenticationError(MnemoError):
    """A missing, malformed, unknown or revoked bearer token."""


@dataclass(frozen=True, slots=True)
class Principal:
    """Who a token speaks for."""

    entity_id: str
    namespace: str | None  # None: every namespace of the entity
    token_id: uuid.UUID


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


async def create(
    rt: Runtime, entity_id: str, namespace: str | None = None, label: str | None = None
) -> tuple[str, uuid.UUID]:
    """A new token for ``entity_id`` (validated like a scope); returns ``(token, token_id)``."""
    Scope(entity_id, namespace or "default")
    encoded = base64.urlsafe_b64encode(entity_id.encode()).decode().rstrip("=")
    token = f"mn1.{encoded}.{secrets.token_urlsafe(32)}"
    token_id = uuid7()
    async with rt.store.connection() as conn:
        await token_rows.create_token(conn, entity_id, _hash(token), token_id, namespace, label)
    return token, token_id


async def verify(rt: Runtime, token: str) -> Principal:
    """The principal behind ``token``; :class:`AuthenticationError` otherwise."""
    parts = token.split(".")
    if len(parts) != 3 or parts[0] != "mn1":
        raise AuthenticationError("malformed bearer token")
    try:
        entity_id = base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)).decode()
        Scope(entity_id)
    except (binascii.Error, UnicodeDecodeError, MnemoError) as exc:
        raise AuthenticationError("malformed bearer token") from exc
    async with rt.store.connection() as conn:
        found = await token_rows.find_token(conn, entity_id, _hash(token))
    if found is None:
        raise AuthenticationError("unknown bearer token")
    if found["revoked_at"] is not None:
        raise AuthenticationError("this bearer token was revoked")
    return Principal(entity_id, found["namespace"], found["id"])


async def revoke(rt: Runtime, entity_id: str, token_id: uuid.UUID) -> bool:
    async with rt.store.connection() as conn:
        return await token_rows.revoke_token(conn, entity_id, token_id)
