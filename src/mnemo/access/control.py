"""Access control (archive-adr §7 "Sigil Scope"): scopes, read grants, and bearer tokens.

A token is ``mn1.<base64url(entity_id)>.<43 random characters>``: the entity is
readable from the token so the lookup is by ``(entity_id, sha256(token))``, and
only the hash is stored. A token may be limited to one namespace, and may expire
(``expires_at``, issue 12). :func:`verify` turns a presented token into the
:class:`~mnemo.models.Principal` it speaks for (the adapters ask through
:meth:`mnemo.AsyncArchive.access.verify_token`).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import secrets
import uuid
from datetime import UTC, datetime

from mnemo._runtime import Runtime
from mnemo._validate import check_text, to_utc
from mnemo.errors import AuthenticationError, InvalidContentError, MnemoError, UnknownScopeError
from mnemo.models import Maturity, Principal, Scope, ScopeSummary, TokenInfo, uuid7
from mnemo.store import dynamics as dynamic_rows
from mnemo.store import scopes as scope_rows
from mnemo.store import tokens as token_rows

__all__ = [
    "PREFIX",
    "UNKNOWN",
    "create",
    "create_scope",
    "grant",
    "grantees",
    "list_tokens",
    "revoke",
    "revoke_grant",
    "still_valid",
    "summaries",
    "token_hash",
    "verify",
]

PREFIX = "mn1"
UNKNOWN = "unknown or expired bearer token"


def token_hash(token: str) -> str:
    """What the database stores of a token."""
    return hashlib.sha256(token.encode()).hexdigest()


async def create(
    rt: Runtime,
    entity_id: str,
    namespace: str | None = None,
    label: str | None = None,
    expires_at: datetime | None = None,
) -> tuple[str, uuid.UUID]:
    """A new token for ``entity_id`` (validated like a scope); returns ``(token, token_id)``.
    ``expires_at`` (aware, or naive taken as UTC) must lie ahead: :class:`InvalidContentError`
    otherwise, and nothing is stored."""
    Scope(entity_id, namespace or "default")
    if label is not None:
        label = check_text(label, label="token label")
    if expires_at is not None:
        expires_at = to_utc(expires_at, label="expires_at")
        if expires_at <= datetime.now(UTC):
            raise InvalidContentError(f"expires_at {expires_at.isoformat()} is not in the future")
    encoded = base64.urlsafe_b64encode(entity_id.encode()).decode().rstrip("=")
    token = f"{PREFIX}.{encoded}.{secrets.token_urlsafe(32)}"
    token_id = uuid7()
    async with rt.store.connection() as conn:
        await token_rows.create_token(conn, entity_id, token_hash(token), token_id, namespace, label, expires_at)
    return token, token_id


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


async def still_valid(rt: Runtime, principal: Principal) -> Principal:
    """``principal`` again, if the token it came from is neither revoked nor expired now;
    :class:`AuthenticationError` otherwise (worded as :func:`verify` words an unknown token). What a
    session made from a token (the inspector's) asks on every request, so revoking or expiring the
    token ends it."""
    async with rt.store.connection() as conn:
        valid = await token_rows.token_valid(conn, principal.entity_id, principal.token_id)
    if not valid:
        raise AuthenticationError(UNKNOWN + " (revoked or expired since sign-in)")
    return principal


async def revoke(rt: Runtime, entity_id: str, token_id: uuid.UUID) -> bool:
    """Revoke a token; False when there is no active token with that id."""
    async with rt.store.connection() as conn:
        return await token_rows.revoke_token(conn, entity_id, token_id)


async def create_scope(rt: Runtime, scope: Scope) -> None:
    """Make ``scope`` exist (idempotent)."""
    async with rt.store.connection() as conn:
        await scope_rows.ensure_scope(conn, scope.entity_id, scope.namespace)


async def grant(rt: Runtime, scope: Scope, grantee: str, *, export: bool = False) -> bool:
    """Let entity ``grantee`` read ``scope`` (and export its packets, with ``export``); False if it
    already could. The owner cannot be its own grantee (it always reads its scopes):
    :class:`InvalidContentError`."""
    Scope(grantee)  # validates the id
    if grantee == scope.entity_id:
        raise InvalidContentError(
            f"{grantee!r} owns scope {scope} and always reads its own scope; grant access to another entity"
        )
    async with rt.store.connection() as conn:
        exists, _ = await scope_rows.read_access(conn, scope.entity_id, scope.namespace, scope.entity_id)
        if not exists:
            raise UnknownScopeError(f"scope {scope} does not exist; write to it before granting access")
        return await scope_rows.create_grant(conn, scope.entity_id, scope.namespace, grantee, export=bool(export))


async def revoke_grant(rt: Runtime, scope: Scope, grantee: str) -> bool:
    """Withdraw ``grantee``'s read access to ``scope``; False if it had none."""
    Scope(grantee)  # validates the id
    async with rt.store.connection() as conn:
        return await scope_rows.revoke_grant(conn, scope.entity_id, scope.namespace, grantee)


async def grantees(rt: Runtime, scope: Scope) -> list[str]:
    """The entities granted read access to ``scope``, sorted; :class:`UnknownScopeError` when the
    scope does not exist (a misspelt scope is not silently "no grants")."""
    async with rt.store.connection() as conn:
        exists, _ = await scope_rows.read_access(conn, scope.entity_id, scope.namespace, scope.entity_id)
        if not exists:
            raise UnknownScopeError(f"scope {scope} does not exist")
        return await scope_rows.list_grants(conn, scope.entity_id, scope.namespace)


async def summaries(rt: Runtime, entity_id: str | None = None) -> list[ScopeSummary]:
    """Every scope (of ``entity_id``, validated, when given) with its counts and last write."""
    if entity_id is not None:
        Scope(entity_id)  # validates the id
    async with rt.store.connection() as conn:
        rows = await scope_rows.scope_summaries(conn, entity_id)
    return [
        ScopeSummary(Scope(e, ns), int(turns), int(memories), int(blocks), int(facts), last)
        for e, ns, turns, memories, blocks, facts, last in rows
    ]


async def maturity(rt: Runtime, scope: Scope) -> Maturity:
    """``scope``'s live memory count and identity density (see :class:`~mnemo.models.Maturity`)."""
    async with rt.store.connection() as conn:
        count, density = await dynamic_rows.weight_profile(conn, scope.entity_id, scope.namespace)
    return Maturity(count, min(1.0, max(0.0, density)))


async def list_tokens(rt: Runtime, entity_id: str) -> list[TokenInfo]:
    """``entity_id``'s tokens (validated like a scope), oldest first, revoked ones included."""
    Scope(entity_id)  # validates the id
    async with rt.store.connection() as conn:
        rows = await token_rows.list_tokens(conn, entity_id)
    return [TokenInfo(r.id, r.namespace, r.label, r.created_at, r.revoked_at, r.expires_at, r.expired) for r in rows]
