"""What the write and read paths need from an open archive.

A holder, wired by :func:`mnemo.admin.startup.start`: it imports nothing above the store at run
time (DESIGN §5), so every layer may use it.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mnemo.cognition.scoring.ranker import Ranker
from mnemo.config import Settings
from mnemo.embed import Embeddings
from mnemo.store import Store
from mnemo.store import search as search_rows
from mnemo.store import token_vectors as token_rows

if TYPE_CHECKING:
    from mnemo.cortex.lance_tables import Cortex
    from mnemo.recall.scope_index import ReadIndexes
    from mnemo.write.backfill import TokenBackfill

__all__ = ["Runtime", "UseQueue", "WriteTally"]

_log = logging.getLogger("mnemo")


@dataclass(slots=True)
class WriteTally:
    """Rows written by this process since the planner statistics were last refreshed."""

    pending: int = 0
    refreshed: int = 0  # how many refreshes so far

    def due(self) -> bool:
        """The first refresh after 100 writes (a new database has no statistics at all), then every 1,000."""
        return self.pending >= (100 if self.refreshed == 0 else 1000)


class UseQueue:
    """The use a recall or a context records, written behind it (issue 42 decision 3; DESIGN §3).

    One serial chain of asyncio tasks per scope (``(entity_id, namespace)``) in this process: a
    recall returns its result, and its trace and retrieval-induced mutation (accesses, weights,
    co-access links, audit) commit right after, in the order they were queued. :meth:`barrier`
    waits for what a scope has queued: the next recall, context or write on that scope calls it
    first, so a caller never reads its own past stale. :meth:`drain` waits for every scope (the
    archive's ``flush()`` and ``close()``). A queued write that fails is logged and counted
    (:attr:`failed`, ``Status.uses``), never raised into a later, unrelated call. A crash loses at
    most the uses still queued: derived data, never a memory or a turn.
    """

    __slots__ = ("_tails", "failed", "last_error", "queued", "written")

    def __init__(self) -> None:
        self._tails: dict[tuple[str, str], asyncio.Task[None]] = {}
        self.queued = 0  # uses handed to the queue since the archive opened
        self.written = 0  # ... committed
        self.failed = 0  # ... given up on (logged)
        self.last_error: str | None = None

    @property
    def pending(self) -> int:
        """Scopes with a use still queued or being written."""
        return sum(1 for t in self._tails.values() if not t.done())

    def submit(self, key: tuple[str, str], write: Callable[[], Awaitable[None]]) -> None:
        """Queue ``write`` behind what scope ``key`` has queued; returns at once (on a running loop)."""
        before = self._tails.get(key)

        async def run() -> None:
            if before is not None:
                await asyncio.wait([before])  # in order; an earlier failure does not stop this one
            try:
                await write()
            except Exception as exc:  # derived data: logged and counted, never raised into a later call
                self.failed += 1
                self.last_error = f"{type(exc).__name__}: {exc}"
                _log.warning("could not write the use of a recall in %s/%s (%s)", key[0], key[1], exc)
            else:
                self.written += 1

        task = asyncio.get_running_loop().create_task(run(), name=f"mnemo-use:{key[0]}/{key[1]}")
        self.queued += 1
        self._tails[key] = task
        task.add_done_callback(lambda done: self._forget(key, done))

    def _forget(self, key: tuple[str, str], done: asyncio.Task[None]) -> None:
        if self._tails.get(key) is done:
            del self._tails[key]

    async def barrier(self, entity_id: str, namespace: str | None = None) -> None:
        """Wait until what the scope (every namespace of ``entity_id`` when ``namespace`` is None)
        has queued is written. A cancelled waiter leaves the queued writes running."""
        tails = [t for (e, ns), t in self._tails.items() if e == entity_id and namespace in (None, ns)]
        await self._wait(tails)

    async def settled(self, scope: object) -> None:
        """Before a read of ``scope`` (an inspector page, the inner life): what it queued is written,
        so the read shows the caller's own past. Anything that is not a scope passes through, for
        the read's own check to refuse."""
        entity_id, namespace = getattr(scope, "entity_id", None), getattr(scope, "namespace", None)
        if isinstance(entity_id, str) and isinstance(namespace, str):
            await self.barrier(entity_id, namespace)

    async def drain(self) -> None:
        """Wait until every scope's queued uses are written (queued meanwhile included)."""
        while await self._wait(list(self._tails.values())):
            pass

    @staticmethod
    async def _wait(tails: list[asyncio.Task[None]]) -> bool:
        """Wait for the unfinished ``tails`` of the running loop; whether there were any."""
        loop = asyncio.get_running_loop()
        mine = [t for t in tails if not t.done() and t.get_loop() is loop]
        if mine:
            await asyncio.wait(mine)
        return bool(mine)


@dataclass(frozen=True, slots=True)
class Runtime:
    settings: Settings
    store: Store
    embeddings: Embeddings
    table: str  # the active vector space table, e.g. "universal_384"
    backfill: TokenBackfill  # token embeddings read in the background (mnemo.write.backfill)
    indexes: ReadIndexes  # scope read indexes (DESIGN §3; mnemo.recall.scope_index)
    rng: random.Random = field(default_factory=random.Random)  # seeded from settings.seed by the archive
    llm: Any = None  # a Pydantic AI model (or model name) for the optional LLM steps
    tally: WriteTally = field(default_factory=WriteTally)
    extra_embeddings: dict[str, Embeddings] = field(default_factory=dict)  # second vector spaces, loaded on use
    cortex: Cortex | None = None  # the long-term tier (LanceDB), connected on first use
    token_cache: token_rows.Cache = field(default_factory=token_rows.Cache)  # late interaction's reads
    reranker: Any = None  # a local cross-encoder (mnemo.rerank.Reranker) when settings.reranker is set
    ranker: Ranker = field(default_factory=Ranker.hand_set)  # the head's learned fusion (mnemo.recall.learned)
    # per scope, the claims recall weighs and the endings read from them, at the scope's version
    # (mnemo.recall.current): a write gives the scope a new version, so nothing stale is served
    claims_cache: dict[tuple[str, str], tuple[tuple[int, Any], Any]] = field(default_factory=dict)
    uses: UseQueue = field(default_factory=UseQueue)  # recalls' use, written behind them (issue 42 decision 3)

    def __post_init__(self) -> None:
        self.token_cache.max_bytes = self.settings.token_cache_mb << 20

    def tokens(self) -> token_rows.Cache:
        """The cache of recently read token embeddings (``token_cache_mb``)."""
        return self.token_cache

    def child_rng(self) -> random.Random:
        """A generator for one operation, drawn from the archive's seeded stream."""
        return random.Random(self.rng.getrandbits(64))

    @property
    def slug(self) -> str:
        return str(self.embeddings.slug)

    @property
    def reads_tokens(self) -> bool:
        """Whether items' token embeddings are kept: late interaction is on and the embedder gives them."""
        return self.settings.late_interaction and self.embeddings.reads_tokens

    def item_text(self, item: search_rows.ItemText) -> str:
        """What the model reads for an item: the text its vector was embedded from."""
        if item.kind is not None:
            return self.embeddings.document_text(item.content, item.kind)
        return self.embeddings.turn_text(item.content, item.speaker if self.settings.turn_context else None)
