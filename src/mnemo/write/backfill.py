"""Token embeddings for items that have none, read in the background instead of during a recall.

Seeds: cognitive-plan §2.6 (late interaction over token embeddings) and §2.2, §2.5 (recall stays
fast: "pre-filter, then score a subset"; memory-architecture §2.1, "microseconds").

Most items get their token embeddings from the forward pass that made their vector. Some do not:
memories the night wrote, items stored with a precomputed vector, items written while late
interaction was off. A recall that meets them scores what it has, leaves them out of the
late-interaction scores (average on that scale), and asks for them here. One task per archive
reads them a batch at a time (``embed_batch_size``) and writes them through the store; the next
recalls use them. Token rows are derived data: a crash loses only work that is asked for again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Iterable
from typing import TYPE_CHECKING

from mnemo.cognition.scoring.late import quantize
from mnemo.store import search as search_rows
from mnemo.store import token_vectors as token_rows

if TYPE_CHECKING:
    from mnemo._runtime import Runtime

__all__ = ["MAX_PENDING", "TokenBackfill"]

_log = logging.getLogger("mnemo")

Key = tuple[str, str, str]
"""(entity_id, namespace, embedder slug)"""

MAX_PENDING = 100_000
"""Items waiting at most; more requests are dropped until the queue drains (recalls ask again)."""


class TokenBackfill:
    """The items waiting for token embeddings, per scope and embedder, and the task reading them."""

    def __init__(self) -> None:
        self._pending: dict[Key, dict[uuid.UUID, None]] = {}
        self._task: asyncio.Task[None] | None = None
        self.read = 0
        """Items whose token embeddings this archive has read in the background."""

    @property
    def pending(self) -> int:
        return sum(len(ids) for ids in self._pending.values())

    def request(self, rt: Runtime, key: Key, ids: Iterable[uuid.UUID]) -> None:
        """Ask for ``ids``' token embeddings (the model reads each item as :meth:`Runtime.item_text`)."""
        room = MAX_PENDING - self.pending
        if room <= 0:
            return
        waiting = self._pending.setdefault(key, {})
        for item in ids:
            if room <= 0:
                break
            if item not in waiting:
                waiting[item] = None
                room -= 1
        if not waiting:
            del self._pending[key]
        elif self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run(rt), name="mnemo-token-backfill")

    async def wait(self) -> None:
        """Until every requested item has been read (tests, benchmarks, a clean shutdown)."""
        while self._task is not None and not self._task.done():
            await asyncio.shield(self._task)

    async def close(self) -> None:
        """Stop reading; what is still waiting is asked for again by later recalls."""
        task, self._task = self._task, None
        self._pending.clear()
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _run(self, rt: Runtime) -> None:
        while self._pending:
            key = next(iter(self._pending))
            waiting = self._pending[key]
            batch = list(waiting)[: rt.settings.embed_batch_size]
            for item in batch:
                del waiting[item]
            if not waiting:
                del self._pending[key]
            try:
                self.read += await _read(rt, key, batch)
            except Exception as exc:  # a recall asks again; never let the task die on one batch
                _log.warning(
                    "could not read token embeddings of %d items (%s); later recalls ask again", len(batch), exc
                )


async def _read(rt: Runtime, key: Key, batch: list[uuid.UUID]) -> int:
    """Embed and store the token embeddings of ``batch`` that are still there and still have none."""
    e, ns, slug = key
    if slug != str(rt.slug):
        return 0  # the active embedder changed: these would be another model's tokens
    async with rt.store.background() as conn:  # the reserved pool: never a request's connection
        have = await token_rows.fetch(conn, e, ns, slug, batch)
        texts = await search_rows.item_texts(conn, e, ns, [i for i in batch if i not in have])
    if not texts:
        return 0
    todo = list(texts)
    _, fresh = await rt.embeddings.embed_documents_with_tokens([rt.item_text(texts[i]) for i in todo])
    made = {i: quantize(tv) for i, tv in zip(todo, fresh, strict=True)}
    async with rt.store.background() as conn, conn.transaction():
        await token_rows.write(conn, e, ns, slug, made)  # not for an item forgotten meanwhile
    return len(made)
