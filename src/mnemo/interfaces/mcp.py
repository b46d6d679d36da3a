"""``mnemo mcp``: mnemo as a Model Context Protocol server (official ``mcp`` SDK).

Seed: archive-adr §3 and §7 ("Sigil Scope": the server serves one scope, taken
from its configuration, and a client can never name another; "The Mentat
Refusal": below the threshold ``recall`` answers with the refusal sentence).

Tools: ``recall(query, k)``, ``remember(content, kind)``, ``context(text, budget)``
and ``forget(item_id)``. Transport: stdio (default) or streamable HTTP
(``--http``). The archive opens once, when the server starts, and closes (flushing
the scratch buffer) when it stops.

Over HTTP with ``auth=True`` (``mnemo mcp --http --auth``) every request needs a
bearer token from ``mnemo token create`` (the SDK's own bearer-auth middleware
answers 401 otherwise), and the scope comes from the token: its entity, and its
namespace when the token is bound to one (else the configured namespace). A
client can never name a scope.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from mnemo.archive import AsyncArchive
from mnemo.config import Settings
from mnemo.errors import MnemoError
from mnemo.interfaces import auth as tokens
from mnemo.models import MEMORY_KINDS, Refusal, Scope

__all__ = ["build_server"]

INSTRUCTIONS = (
    "Long-term memory for this user. Call recall before answering questions about the user or past "
    "conversations; if it says the archive contains nothing reliable, say you do not know. Call remember "
    "for facts, preferences and decisions worth keeping. context returns a ready block of relevant memory."
)


class _TokenVerifier:
    """mnemo's hashed, revocable bearer tokens as the SDK's token verifier."""

    def __init__(self, held: dict[str, AsyncArchive]) -> None:
        self._held = held

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            who = await tokens.verify(self._held["archive"].runtime, token)
        except MnemoError:
            return None
        return AccessToken(
            token=token,
            client_id=who.entity_id,
            subject=who.entity_id,
            scopes=[],
            claims={"namespace": who.namespace},
        )


def build_server(
    settings: Settings, scope: Scope, *, max_k: int = 50, auth: bool = False, url: str = "http://127.0.0.1:8765"
) -> MCPServer[Any]:
    """An MCP server bound to ``scope`` (the archive opens when the server starts); with ``auth``
    (HTTP only), bound to each request's token instead (see the module docstring)."""
    held: dict[str, AsyncArchive] = {}

    @asynccontextmanager
    async def lifespan(_server: MCPServer[Any]) -> AsyncIterator[None]:
        held["archive"] = await AsyncArchive.open(settings)
        try:
            yield
        finally:
            await held.pop("archive").close()

    server: MCPServer[Any] = MCPServer(
        "mnemo",
        instructions=INSTRUCTIONS,
        lifespan=lifespan,
        token_verifier=_TokenVerifier(held) if auth else None,
        auth=AuthSettings(issuer_url=url, resource_server_url=f"{url}/mcp") if auth else None,  # type: ignore[arg-type]
    )

    def archive() -> AsyncArchive:
        return held["archive"]

    def current() -> Scope:
        if not auth:
            return scope
        token = get_access_token()
        if token is None or not token.subject:  # the middleware lets no such request through
            raise ToolError("not authenticated")
        return Scope(token.subject, (token.claims or {}).get("namespace") or scope.namespace)

    @server.tool()
    async def recall(query: str, k: int = 5) -> dict[str, Any]:
        """Search long-term memory. Returns hits (content, kind, time, score, id) best first, or
        refused=true with the refusal message when nothing reliable is stored."""
        if not 1 <= k <= max_k:
            raise ToolError(f"k must be between 1 and {max_k}")
        try:
            result = await archive().recall(current(), query, k)
        except MnemoError as exc:
            raise ToolError(str(exc)) from exc
        if isinstance(result, Refusal):
            return {"refused": True, "message": result.message, "hits": []}
        return {
            "refused": False,
            "hits": [
                {
                    "id": str(h.id),
                    "content": h.content,
                    "kind": h.memory_kind or "turn",
                    "speaker": h.speaker,
                    "time": h.created_at.isoformat(),
                    "score": round(h.score, 4),
                }
                for h in result.hits
            ],
        }

    @server.tool()
    async def remember(content: str, kind: str = "semantic") -> dict[str, Any]:
        """Store a memory worth keeping across conversations (kind: episodic, semantic, procedural,
        preference, reflection, correction, narrative, tension or insight)."""
        if kind not in MEMORY_KINDS:
            raise ToolError(f"kind must be one of {', '.join(MEMORY_KINDS)}")
        try:
            memory = await archive().remember(current(), content, kind=kind)
        except MnemoError as exc:
            raise ToolError(str(exc)) from exc
        return {"id": str(memory.id), "kind": memory.kind}

    @server.tool()
    async def context(text: str, budget: int = 1000) -> str:
        """The block of memory to prepend for ``text`` (the current request), within ``budget`` tokens."""
        try:
            block = await archive().context(current(), text, budget)
        except MnemoError as exc:
            raise ToolError(str(exc)) from exc
        return block.text or "The archive contains nothing reliable about this."

    @server.tool()
    async def forget(item_id: str) -> dict[str, Any]:
        """Delete one memory or turn (by the id recall returned) from every part of memory."""
        try:
            removed = await archive().forget(current(), item_id)
        except MnemoError as exc:
            raise ToolError(str(exc)) from exc
        return {"forgotten": item_id, "removed": removed}

    return server
