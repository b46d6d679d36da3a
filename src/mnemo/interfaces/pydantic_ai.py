"""Pydantic AI tools over one scope of an archive.

Seed: archive-adr §3 ("The Grant": an agent is given memory as tools bound to
its own scope, and only when the embedder is healthy), §7 ("The Mentat
Refusal": below the threshold the tool answers with the refusal sentence so
the agent does not guess; "Sigil Scope": the tools cannot name another scope).

::

    toolset = await memory_toolset(archive, Scope("maya", "chat"))
    agent = Agent("openai:gpt-4o-mini", toolsets=[toolset] if toolset else [])
"""

from __future__ import annotations

import asyncio
import logging
import operator
from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.toolsets import FunctionToolset

from mnemo import Archive
from mnemo.archive import AsyncArchive
from mnemo.errors import MnemoError
from mnemo.models import MEMORY_KINDS, Hit, Refusal, Scope

__all__ = ["REFUSAL", "memory_toolset"]

_log = logging.getLogger("mnemo")

REFUSAL = "The archive contains nothing reliable about this."


async def _call(archive: AsyncArchive | Archive, method: str, *args: Any, **kwargs: Any) -> Any:
    """Call ``method`` (a core verb, or a feature's: ``maintenance.health``) on either archive."""
    bound = operator.attrgetter(method)(archive)
    if isinstance(archive, Archive):  # the blocking facade runs on its own loop thread
        return await asyncio.to_thread(bound, *args, **kwargs)
    return await bound(*args, **kwargs)


def _found(hit: Hit) -> dict[str, Any]:
    """One recall hit as the tool shows it to a model."""
    kind = "summary" if hit.item_kind == "node" else hit.memory_kind or f"{hit.role or 'turn'} turn"
    return {
        "content": hit.content,
        "kind": kind,
        "time": hit.created_at.isoformat(),
        "score": round(hit.score, 4),
        **({"speaker": hit.speaker} if hit.speaker else {}),
        **({"gist": hit.gist} if hit.gist and hit.gist != hit.content else {}),
        **({"tier": hit.tier} if hit.tier == "cortex" else {}),
    }


async def memory_toolset(
    archive: AsyncArchive | Archive, scope: Scope, *, max_k: int | None = None
) -> FunctionToolset[Any] | None:
    """Tools bound to ``scope``: ``query_archive``, ``remember`` and ``context``.

    ``query_archive`` clamps its ``k`` (a model's guess, not an error) to ``settings.max_k``, the
    archive's own limit, or to ``max_k`` when that is lower.

    Returns None (and logs why) when the embedder is not healthy, so an agent never
    searches a memory it cannot read correctly.
    """
    limit = archive.settings.max_k if max_k is None else max(1, min(max_k, archive.settings.max_k))
    problem = await _call(archive, "maintenance.health")
    if problem is not None:
        _log.warning("no memory tools for %s: %s", scope, problem)
        return None
    toolset: FunctionToolset[Any] = FunctionToolset()

    async def query_archive(
        query: str, k: int = 5, expand: bool = False, level: int | None = None
    ) -> list[dict[str, Any]] | str:
        k = max(1, min(int(k), limit))
        try:
            result = await _call(archive, "recall", scope, query, k, expand=bool(expand), level=level or None)
        except MnemoError as exc:
            return f"memory error: {exc}"
        if isinstance(result, Refusal):
            return REFUSAL
        return [_found(h) for h in result.hits]

    query_archive.__doc__ = f"""Search your long-term memory. Returns the best matching memories and past exchanges
        (content, kind, time, score; for a line of an older episode, the episode's gist), or a sentence
        saying memory holds nothing reliable.

        Args:
            query: what to look for, in natural language.
            k: how many results (1-{limit}).
            expand: return whole episodes instead of their lines that match.
            level: 1-3 for summaries of whole groups of episodes (1 narrow, 3 broad) instead of details.
        """
    toolset.tool_plain(query_archive)

    @toolset.tool_plain
    async def remember(content: str, kind: str = "semantic") -> str:
        """Store something worth remembering across conversations.

        Args:
            content: the fact, preference or event, as one self-contained sentence.
            kind: one of episodic, semantic, procedural, preference, reflection, correction,
                narrative, tension, insight.
        """
        if kind not in MEMORY_KINDS:
            return f"unknown kind {kind!r}; use one of {', '.join(MEMORY_KINDS)}"
        try:
            memory = await _call(archive, "remember", scope, content, kind=kind)
        except MnemoError as exc:
            return f"not stored: {exc}"
        return f"remembered ({memory.kind}, id {memory.id})"

    @toolset.tool
    async def context(ctx: RunContext[Any], budget: int = 1000) -> str:
        """Everything memory holds that matters for the current request, as a block of text
        within a token budget (anchored rules, identity, relevant memories).

        Args:
            budget: the most tokens the block may take (50-8000).
        """
        attention = ctx.prompt if isinstance(ctx.prompt, str) and ctx.prompt.strip() else "current conversation"
        try:
            block = await _call(archive, "context", scope, attention, max(50, min(int(budget), 8000)))
        except MnemoError as exc:
            return f"memory error: {exc}"
        return block.text or REFUSAL

    return toolset
