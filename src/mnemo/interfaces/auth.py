"""Bearer-token authentication for the HTTP and MCP adapters (archive-adr §7 "Sigil Scope").

Tokens are minted and revoked by the archive (:meth:`mnemo.AsyncArchive.create_token`); this
module turns a presented token into the :class:`Principal` it speaks for, or raises
:class:`~mnemo.errors.AuthenticationError`.
"""

from __future__ import annotations

import base64
import binascii
import uuid
from dataclasses import dataclass

from mnemo._runtime import Runtime
from mnemo.admin.access import PREFIX, token_hash
from mnemo.errors import AuthenticationError, MnemoError
from mnemo.models import Scope
from mnemo.store import tokens as token_rows

__all__ = ["UNKNOWN", "Principal", "verify"]

UNKNOWN = "unknown or expired bearer token"


@dataclass(frozen=True, slots=True)
class Principal:
    """Who a token speaks for."""

    entity_id: str
    namespace: str | None  # None: every namespace of the entity
    token_id: uuid.UUID


async def verify(rt: Runtime, token: str) -> Principal:
    """The principal behind ``token``; :class:`AuthenticationError` otherwise. An unknown and an
    expired token get the same error (HTTP: the same 401 body), so a stolen expired token tells
    nothing."""
    parts = token.split(".")
    if len(parts) != 3 or parts[0] != PREFIX:
        raise AuthenticationError("malformed bearer token")
    try:
        entity_id = base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)).decode()
        Scope(entity_id)
    except (binascii.Error, UnicodeDecodeError, MnemoError) as exc:
        raise AuthenticationError("malformed bearer token") from exc
    async with rt.store.connection() as conn:
        found = await token_rows.find_token(conn, entity_id, token_hash(token))
    if found is None or found.expired:  # an expired token says no more than an unknown one
        raise AuthenticationError(UNKNOWN)
    if found.revoked_at is not None:
        raise AuthenticationError("this bearer token was revoked")
    return Principal(entity_id, found.namespace, found.id)
