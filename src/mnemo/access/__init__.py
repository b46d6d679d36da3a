"""Access (archive-adr §7 "Sigil Scope"): scopes, read grants and bearer tokens, in one home.

:class:`Access` is ``archive.access`` (issue 41 item 1): who may read a scope, and the bearer
tokens the HTTP service and the MCP server accept. The rules live in :mod:`.control`, the rows
in ``store/scopes.py`` (scopes and grants) and ``store/tokens.py`` (bearer tokens, stored hashed).
"""

from __future__ import annotations

import uuid
from datetime import datetime

from mnemo._runtime import Runtime
from mnemo._validate import check_id
from mnemo.access import control
from mnemo.models import Principal, Scope, ScopeSummary, TokenInfo

__all__ = ["Access"]


class Access:
    """Scopes, read grants and bearer tokens of an open archive: ``archive.access``."""

    def __init__(self, runtime: Runtime) -> None:
        self._rt = runtime

    async def create_scope(self, scope: Scope) -> None:
        """Make ``scope`` exist before anything is written to it (idempotent)."""
        await control.create_scope(self._rt, scope)

    async def grant(self, scope: Scope, grantee: str, *, export: bool = False) -> bool:
        """Let entity ``grantee`` read ``scope`` (call as its owner); ``export`` also lets it export the
        scope's packets (consent-governed sharing: reading does not imply it). False if it already could."""
        return await control.grant(self._rt, scope, grantee, export=export)

    async def revoke(self, scope: Scope, grantee: str) -> bool:
        """Withdraw entity ``grantee``'s read access to ``scope``; False if it had none."""
        return await control.revoke_grant(self._rt, scope, grantee)

    async def grants(self, scope: Scope) -> list[str]:
        """The entities granted read access to ``scope``, sorted (``mnemo grants``);
        :class:`UnknownScopeError` when the scope does not exist."""
        return await control.grantees(self._rt, scope)

    async def scopes(self, entity_id: str | None = None) -> list[ScopeSummary]:
        """Every scope (or ``entity_id``'s) with its counts of turns, memories, blocks and current
        facts, and its last write (``mnemo scopes``)."""
        return await control.summaries(self._rt, entity_id)

    async def create_token(
        self,
        entity_id: str,
        *,
        namespace: str | None = None,
        label: str | None = None,
        expires_at: datetime | None = None,
    ) -> tuple[str, uuid.UUID]:
        """A bearer token for ``entity_id`` (optionally one namespace): ``(token, id)``; shown once.
        ``expires_at``: when it stops working (must lie ahead; naive is UTC); None: never."""
        return await control.create(self._rt, entity_id, namespace, label, expires_at)

    async def verify_token(self, token: str) -> Principal:
        """The principal a bearer token speaks for; :class:`~mnemo.errors.AuthenticationError` when
        it is malformed, unknown, expired (the same answer as unknown) or revoked."""
        return await control.verify(self._rt, token)

    async def recheck_principal(self, principal: Principal) -> Principal:
        """``principal`` again if its token is still valid (not revoked, not expired);
        :class:`~mnemo.errors.AuthenticationError` otherwise. A session made from a token asks
        this on every request, so revocation and expiry end it."""
        return await control.still_valid(self._rt, principal)

    async def revoke_token(self, entity_id: str, token_id: uuid.UUID | str) -> bool:
        """Revoke a token; False when there is no active token with that id."""
        return await control.revoke(self._rt, entity_id, check_id(token_id, label="token id"))

    async def tokens(self, entity_id: str) -> list[TokenInfo]:
        """``entity_id``'s tokens, oldest first, revoked and expired ones included (``mnemo token
        list``); never the tokens themselves, which only their holders have."""
        return await control.list_tokens(self._rt, entity_id)
