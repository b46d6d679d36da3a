"""``mnemo mcp``: mnemo as a Model Context Protocol server (official ``mcp`` SDK).

Seed: archive-adr §3 and §7 ("Sigil Scope": the server serves one scope, taken
from its configuration, and a client can never name another; "The Mentat
Refusal": below the threshold ``recall`` answers with the refusal sentence).

Tools: ``recall(query, k)``, ``remember(content, kind)``, ``context(text, budget)``,
``forget(item_id)`` and ``record_turn(content, session, role, speaker, idempotency_key)``
(and the reflex, inner-life and packet tools below). Each answers (as structured content, and
as JSON text) with the public record of :mod:`mnemo.models` as :func:`~mnemo.models.to_jsonable` makes
it: the field names, nesting and ISO 8601 times that the HTTP service and ``mnemo
... --json`` give for the same operation (``recall``: a ``RecallResult`` or a
``Refusal``; ``remember``: the ``Memory``; ``context``: the ``ContextBlock``;
``forget``: ``{"forgotten", "removed"}``).

Transport: stdio (default) or streamable HTTP (``--http``). The archive opens once,
in the background when the server starts (so MCP's ``initialize`` is answered at
once), then the embedding model loads in a worker thread; a tool call waits for the
archive to be open, and the first embedding for the model. The archive closes
(flushing the scratch buffer) when the server stops. If it cannot open, every tool
call answers with that error.

Over HTTP with ``auth=True`` (``mnemo mcp --http --auth``) every request needs a
bearer token from ``mnemo token create`` (the SDK's own bearer-auth middleware
answers 401 otherwise), and the scope comes from the token: its entity, and its
namespace when the token is bound to one (else the configured namespace). A
client can never name a scope.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import TYPE_CHECKING, Any

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from pydantic import ConfigDict

from mnemo._validate import check_id, to_utc
from mnemo.config import Settings
from mnemo.errors import MnemoError
from mnemo.interfaces.shapes import FeedbackOut, ForgetOut, PacketsOut, ReadinessOut, ReflexesOut, dump
from mnemo.models import MEMORY_KINDS, Scope, to_jsonable

if TYPE_CHECKING:
    from mnemo.archive import AsyncArchive

__all__ = ["build_server"]

_log = logging.getLogger("mnemo")

INSTRUCTIONS = (
    "Long-term memory for this user. Call recall before answering questions about the user or past "
    "conversations; if it says the archive contains nothing reliable, say you do not know. Call remember "
    "for facts, preferences and decisions worth keeping. context returns a ready block of relevant memory."
)


class _Opening:
    """The archive, opened in the background while the server already answers."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._task: asyncio.Task[AsyncArchive] | None = None
        self._warm: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._open())
        self._task.add_done_callback(self._opened)

    async def _open(self) -> AsyncArchive:
        # The archive's modules (store, recall, night cycle) import in a worker thread too.
        archive: Any = await asyncio.to_thread(importlib.import_module, "mnemo.archive")
        opened: AsyncArchive = await archive.AsyncArchive.open(self._settings)
        return opened

    def _opened(self, task: asyncio.Task[AsyncArchive]) -> None:
        if task.cancelled():
            return
        if (exc := task.exception()) is not None:
            _log.error("could not open the archive: %s", exc)
            return
        # Load the embedding model now, off the event loop, rather than in the first tool call.
        self._warm = asyncio.create_task(task.result().embeddings.load_async())
        self._warm.add_done_callback(_quiet)

    async def get(self) -> AsyncArchive:
        """The open archive (waits for it); raises the error that kept it from opening."""
        if self._task is None:
            raise MnemoError("the MCP server is not running")
        return await asyncio.shield(self._task)

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is None:
            return
        if not task.done():
            task.cancel()
        try:
            archive = await task
        except (Exception, asyncio.CancelledError):  # it never opened: nothing to close
            return
        await archive.close()


def _record(record: object) -> dict[str, Any]:
    """A tool's answer: the public record as :func:`~mnemo.models.to_jsonable` makes it, the shape
    the HTTP service and ``mnemo … --json`` give for the same operation."""
    data: dict[str, Any] = to_jsonable(record)
    return data


def _quiet(task: asyncio.Task[None]) -> None:
    """A warm-up that failed says nothing here: the first embedding raises the same error."""
    if not task.cancelled():
        task.exception()


class _TokenVerifier:
    """mnemo's hashed, revocable bearer tokens as the SDK's token verifier."""

    def __init__(self, opening: _Opening) -> None:
        self._opening = opening

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            who = await (await self._opening.get()).access.verify_token(token)
        except MnemoError:
            return None
        return AccessToken(
            token=token,
            client_id=who.entity_id,
            subject=who.entity_id,
            scopes=[],
            claims={"namespace": who.namespace},
        )


class _Bound:
    """What every tool shares: the archive (waited for), the caller's scope and ``recall``'s ``k`` limit."""

    def __init__(self, opening: _Opening, scope: Scope, *, auth: bool, limit: int) -> None:
        self._opening = opening
        self._scope = scope
        self._auth = auth
        self.limit = limit

    async def archive(self) -> AsyncArchive:
        try:
            return await self._opening.get()
        except MnemoError as exc:
            raise ToolError(str(exc)) from exc

    def current(self) -> Scope:
        """The configured scope, or with ``auth`` the request's token's (Sigil Scope)."""
        if not self._auth:
            return self._scope
        token = get_access_token()
        if token is None or not token.subject:  # the middleware lets no such request through
            raise ToolError("not authenticated")
        return Scope(token.subject, (token.claims or {}).get("namespace") or self._scope.namespace)


@contextmanager
def _tool_errors() -> Iterator[None]:
    """The archive's errors answer as the tool's error."""
    try:
        yield
    except MnemoError as exc:
        raise ToolError(str(exc)) from exc


def build_server(
    settings: Settings,
    scope: Scope,
    *,
    max_k: int | None = None,
    auth: bool = False,
    url: str = "http://127.0.0.1:8765",
) -> MCPServer[Any]:
    """An MCP server bound to ``scope`` (the archive opens in the background when the server starts);
    with ``auth`` (HTTP only), bound to each request's token instead (see the module docstring).

    ``recall``'s ``k`` is limited to ``settings.max_k`` (the archive's own limit), or to ``max_k``
    when that is lower."""
    limit = settings.max_k if max_k is None else min(max_k, settings.max_k)
    opening = _Opening(settings)

    @asynccontextmanager
    async def lifespan(_server: MCPServer[Any]) -> AsyncIterator[None]:
        opening.start()
        try:
            yield
        finally:
            await opening.close()

    server: MCPServer[Any] = MCPServer(
        "mnemo",
        instructions=INSTRUCTIONS,
        lifespan=lifespan,
        token_verifier=_TokenVerifier(opening) if auth else None,
        auth=AuthSettings(issuer_url=url, resource_server_url=f"{url}/mcp") if auth else None,  # type: ignore[arg-type]
    )
    bound = _Bound(opening, scope, auth=auth, limit=limit)
    for tools in (_memory_tools, _reflex_tools, _inner_tools, _packet_tools):
        tools(server, bound)
    _strict_arguments(server)
    return server


class _StrictMetadata(FuncMetadata):
    """A tool's arguments taken as sent: no JSON parsed out of strings (``k: "5"`` stays a string)."""

    def pre_parse_json(self, data: dict[str, Any]) -> dict[str, Any]:
        return dict(data)


def _strict_arguments(server: MCPServer[Any]) -> None:
    """Every tool refuses an argument it does not take and a value of the wrong JSON type (``k: "5"``,
    ``k: true``), as the HTTP service and the JSONL import do (issue 39 item 9); the published input
    schema says so (``additionalProperties: false``)."""
    for tool in server._tool_manager.list_tools():
        loose = tool.fn_metadata.arg_model
        config = ConfigDict(**(loose.model_config | {"extra": "forbid", "strict": True}))
        strict: type[ArgModelBase] = type(
            loose.__name__, (loose,), {"model_config": config, "__module__": loose.__module__}
        )
        tool.fn_metadata = _StrictMetadata(
            arg_model=strict,
            output_schema=tool.fn_metadata.output_schema,
            output_model=tool.fn_metadata.output_model,
            wrap_output=tool.fn_metadata.wrap_output,
        )
        tool.parameters = strict.model_json_schema(by_alias=True)


def _memory_tools(server: MCPServer[Any], bound: _Bound) -> None:
    """``recall``, ``remember``, ``context``, ``record_turn`` and ``forget``."""

    @server.tool()
    async def recall(
        query: str, k: int = 5, expand: bool = False, level: int | None = None, as_of: str | None = None
    ) -> dict[str, Any]:
        """Search long-term memory. Returns ``hits`` (each with ``content``, ``memory_kind`` or
        ``item_kind`` "turn" / "line", ``speaker``, ``created_at``, ``event_time``, ``score`` (in rank
        order; ``blend`` the blend's own), ``relevance_tier``, ``tier``, ``id``; an episode's hit
        quotes its matching lines in ``excerpt``) best first, or
        ``refused`` true with the refusal ``message`` when nothing reliable is stored. ``expand``:
        episodes whole; ``level`` 1-3: summaries of the long-term tree (branch, trunk, canopy);
        ``as_of`` (ISO-8601): recall as at that time, nothing written after it."""
        if not 1 <= k <= bound.limit:
            raise ToolError(f"k must be an integer between 1 and {bound.limit}, not {k!r}")
        if level is not None and not 0 <= level <= 3:
            raise ToolError(f"level must be 0, 1, 2 or 3, not {level!r}")
        with _tool_errors():
            when = None if as_of is None else to_utc(as_of, label="as_of")
            result = await (await bound.archive()).recall(
                bound.current(), query, k, expand=expand, level=level, as_of=when
            )
        return _record(result)

    @server.tool()
    async def remember(content: str, kind: str = "semantic") -> dict[str, Any]:
        """Store a memory worth keeping across conversations (kind: episodic, semantic, procedural,
        preference, reflection, correction, narrative, tension or insight). Returns the memory."""
        if kind not in MEMORY_KINDS:
            raise ToolError(f"kind must be one of {', '.join(MEMORY_KINDS)}")
        with _tool_errors():
            memory = await (await bound.archive()).remember(bound.current(), content, kind=kind)
        return _record(memory)

    @server.tool()
    async def context(text: str, budget: int = 1000, as_of: str | None = None) -> dict[str, Any]:
        """The block of memory to prepend for ``text`` (the current request), within ``budget``
        tokens: ``text`` is the block (empty, with ``refused`` true, when nothing reliable is
        stored), ``items`` what went into it; ``as_of`` (ISO-8601) as for ``recall``."""
        with _tool_errors():
            when = None if as_of is None else to_utc(as_of, label="as_of")
            block = await (await bound.archive()).context(bound.current(), text, budget, as_of=when)
        return _record(block)

    @server.tool()
    async def record_turn(
        content: str,
        session: str = "default",
        role: str = "user",
        speaker: str | None = None,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """Record one raw conversation turn (role: user, assistant, system or tool); the night
        consolidates turns into memory. ``idempotency_key``: your name for this turn: sending it again
        (a retry) stores nothing and returns the turn stored the first time with ``repeat`` true.
        Returns the turn with its ``turn_number`` in the session and ``repeat``."""
        with _tool_errors():
            turn = await (await bound.archive()).record_turn(
                bound.current(), session, role, content, speaker=speaker, idempotency_key=idempotency_key
            )
        return _record(turn)

    @server.tool()
    async def forget(item_id: str) -> dict[str, Any]:
        """Delete one memory or turn (by the id recall returned) from every part of memory."""
        with _tool_errors():
            wanted = check_id(item_id, label="item id")
            removed = await (await bound.archive()).forget(bound.current(), wanted)
        return dump(ForgetOut(forgotten=wanted, removed=removed))


def _reflex_tools(server: MCPServer[Any], bound: _Bound) -> None:
    """``record_outcome`` and ``reflexes_for`` (procedural memory)."""

    @server.tool()
    async def record_outcome(
        context: str, action: str, success: bool, action_type: str = "tool_call", follows: str | None = None
    ) -> dict[str, Any]:
        """Remember how an action turned out in a context (procedural memory): ``action_type`` is
        tool_call, response_pattern or delegation; ``follows`` the id of the reflex just before.
        Returns the reflex with its success and failure counts."""
        with _tool_errors():
            reflex = await (await bound.archive()).reflexes.record_outcome(
                bound.current(), context, action, success=success, action_type=action_type, follows=follows
            )
        return _record(reflex)

    @server.tool()
    async def reflexes_for(context: str, k: int = 5) -> dict[str, Any]:
        """What worked (and failed) before in contexts like this one: ``reflexes`` best first, each
        with its action, success rate, similarity and ``next`` (what tended to follow it)."""
        with _tool_errors():
            found = await (await bound.archive()).reflexes.matching(bound.current(), context, k)
        return dump(ReflexesOut(reflexes=found))


def _inner_tools(server: MCPServer[Any], bound: _Bound) -> None:
    """``feedback`` and ``readiness`` (issue 31: outcomes that tune the blend; bootstrap milestones)."""

    @server.tool()
    async def feedback(outcome_id: str, value: float = 1.0, used: list[str] | None = None) -> dict[str, Any]:
        """Tell memory how a recall went: ``outcome_id`` is the recall's ``outcome_id``, ``value`` from -1
        (it misled) to 1 (it helped), ``used`` the ids of the hits actually used. The night tunes
        recall's blend on these. Returns the outcome's ``id``."""
        with _tool_errors():
            found = await (await bound.archive()).inner.feedback(bound.current(), outcome_id, value, used=used or [])
        return dump(FeedbackOut(id=found))

    @server.tool()
    async def readiness() -> dict[str, Any]:
        """The ten bootstrap readiness milestones of this memory: ``reached`` (how many), and each
        milestone with ``reached_at`` (null when not yet) and what reaches it."""
        with _tool_errors():
            found = await (await bound.archive()).inner.readiness(bound.current())
        return dump(ReadinessOut.of(found))


def _packet_tools(server: MCPServer[Any], bound: _Bound) -> None:
    """``export_packets`` (memory-architecture §6.2: the bifocal packets, paged)."""

    @server.tool()
    async def export_packets(limit: int = 1000, after: str | None = None) -> dict[str, Any]:
        """Your own memory as bifocal packets (prose, base64 float32 vectors with their model, weights,
        provenance, references), at most ``limit`` (1-10000) per call: ``packets``, and ``next`` to pass
        as ``after`` for the rest (None when done). An error while your memory holds nothing yet."""
        if not 1 <= limit <= 10_000:
            raise ToolError(f"limit must be an integer between 1 and 10000, not {limit!r}")
        packets: list[dict[str, Any]] = []
        skipping = after is not None
        with _tool_errors():
            async for packet in (await bound.archive()).portability.packets(bound.current()):
                if skipping:
                    skipping = packet["packet_id"] != after
                    continue
                if len(packets) == limit:
                    return dump(PacketsOut(packets=packets, next=packets[-1]["packet_id"]))
                packets.append(packet)
        if skipping:  # never found: an empty page would read as "done"
            raise ToolError(f"after {after!r} is no packet of this memory: pass the `next` of the page before")
        return dump(PacketsOut(packets=packets, next=None))
