"""The scope read index: an in-memory copy of what first-stage retrieval reads, PostgreSQL the truth.

DESIGN §3 ("PostgreSQL is the truth; a read index is a cache"). Seeds: memory-architecture §2.1
(memory shares the machine with the model: no network round trip per item), cognitive-plan §2.2,
§2.5 (hybrid candidates), archive-adr §3.1 (pre-filter to the scope, then score a subset).

A process that serves recall keeps, per hot scope, the scope's BM25 postings, its live vectors in
the active space, the token embeddings the late-interaction scan reads, and each item's text and
speaker, which the learned stage reads (:attr:`ScopeIndex.said`). It only *proposes*:

- **coherence**: every writing transaction gives the scope the next version of its own counter and
  logs the items it touched (migration 0023's row triggers, in the writing transaction). A recall
  reads the version and its epoch in its first statement; an index that is behind re-reads the
  logged items (:meth:`ScopeIndex.catch_up`), or is rebuilt when the log was pruned past it or the
  epoch changed (the scope was purged: its versions count from 1 again);
- **safety**: what the index proposes is fetched from PostgreSQL by statements that re-check scope
  and status, so a stale index can never return a forgotten item; ``forget`` and ``purge`` drop the
  local copy at once (:meth:`ReadIndexes.drop`);
- **cold path**: a scope without an index is answered through SQL alone
  (:class:`~mnemo.recall.first_stage.SqlStage`) while its index is built in the background, on a
  connection of the store's background pool (``pool_reserve``), so a build and the requests never
  wait for each other's connections; nor for each other's cores (issue 42, the first recall after
  an import): a build takes its next step only when no recall of the process is in flight
  (:meth:`ReadIndexes.reading`), or when it has waited :data:`YIELD_S`, so the recall that asked
  for it answers from SQL at its usual speed, and the index is ready for the next one (the token
  index the scan reads laid out too); the token embeddings that recall read through SQL are handed
  to the build (:meth:`ReadIndexes.offer_tokens`), which does not read them again;
  ``index_mb`` evicts the least recently used scopes and ``index=false`` turns the whole thing off.

Both ways answer through one interface (:class:`~mnemo.recall.first_stage.FirstStage`), so the
recall pipeline is the same whether the index is warm or not, and every score is the one SQL
would give (BM25 over the same postings and statistics; cosine over the same halfvec values; MaxSim
over the same items).

The parts live beside this module: :mod:`~mnemo.recall.index_postings` (the items' slots and BM25
postings), :mod:`~mnemo.recall.index_vectors` (the dense vectors and the late-interaction tokens),
:mod:`~mnemo.recall.index_utterances` (the turns' and lines' places); the two ways of answering in
:mod:`~mnemo.recall.first_stage`. This module holds one scope's index, its build and catch-up, and
the process's indexes within ``index_mb``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import psycopg

from mnemo.recall.first_stage import Said
from mnemo.recall.index_postings import ALL_KINDS, LexicalIndex
from mnemo.recall.index_utterances import UtteranceIndex
from mnemo.recall.index_vectors import DenseIndex, LateIndex
from mnemo.recall.records import ITEM_KINDS
from mnemo.store import read_index as index_rows
from mnemo.store import search as search_rows
from mnemo.store import token_vectors as token_rows
from mnemo.store import vectors as vector_rows

if TYPE_CHECKING:
    from mnemo._runtime import Runtime
    from mnemo.cognition.scoring.late import TokenVectors
    from mnemo.store.search import ItemText

__all__ = ["YIELD_S", "ReadIndexes", "ScopeIndex", "ScopeKey", "TooBig", "build_index", "least_bytes"]

log = logging.getLogger(__name__)

ScopeKey = tuple[str, str, str]  # entity, namespace, slug
_SAID_BYTES = 200  # a held text's entry, less its characters
YIELD_S = 2.0
"""How long a build in the background waits, in all, for the process's recalls to end before it
reads or lays out its next part (then it goes on even while recalls are in flight)."""
_ASKED_KINDS = (*ITEM_KINDS, "line")  # what a recall that asks for every kind scans (retrieve.check)


async def _go_on() -> None:
    return None


# --- one scope's index --------------------------------------------------------------------------
@dataclass(slots=True)
class ScopeIndex:
    """One scope's read index at :attr:`version` (see the module docstring)."""

    key: ScopeKey
    version: int
    lexicon: LexicalIndex
    vectors: DenseIndex
    late: LateIndex
    utterances: UtteranceIndex
    epoch: uuid.UUID | None = None
    """The epoch of the scope's versions it was built at (None: before the scope's first write)."""
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    said: dict[uuid.UUID, Said] = field(default_factory=dict)
    """Each turn's, line's and memory's text and speaker (what the learned stage reads)."""
    said_bytes: int = 0

    @property
    def nbytes(self) -> int:
        parts = self.lexicon.nbytes + self.vectors.nbytes + self.late.nbytes + self.utterances.nbytes
        return parts + self.said_bytes

    def keep_said(self, texts: Mapping[uuid.UUID, ItemText]) -> None:
        for item, text in texts.items():
            self.forget_said(item)
            self.said[item] = (text.content, text.speaker)
            self.said_bytes += _SAID_BYTES + len(text.content) + len(text.speaker or "")

    def forget_said(self, item: uuid.UUID) -> None:
        old = self.said.pop(item, None)
        if old is not None:
            self.said_bytes -= _SAID_BYTES + len(old[0]) + len(old[1] or "")

    @property
    def size(self) -> int:
        return len(self.vectors.items.slot)

    @property
    def bloated(self) -> bool:
        """Whether changed and removed items' old entries outnumber the live ones (then a fresh
        build in the background replaces it; until then it answers as it is)."""
        if self.vectors.outgrown:  # grown past exact_scan_limit: a build lays out the ANN graph (issue 42)
            return True
        return any(part.dead > max(1024, len(part.slot)) for part in (self.lexicon.items, self.vectors.items))

    async def catch_up(self, rt: Runtime, conn: psycopg.AsyncConnection) -> bool:
        """Re-read every item the scope's writes touched since :attr:`version`; False when the log no
        longer reaches back or the scope's versions are of another :attr:`epoch` (rebuild instead)."""
        e, ns, slug = self.key
        changes = await index_rows.changes_since(conn, e, ns, self.version, self.epoch)
        if changes is None:
            return False
        if changes.version <= self.version:
            return True
        touched = changes.items
        for item in touched:
            self.lexicon.items.remove(item)
            self.vectors.remove(item)
            self.utterances.remove(item)
            self.forget_said(item)
            self.late.token_ids.pop(item, None)  # read again if it is still listed
        self.late.forget(touched)
        self.lexicon.load(await index_rows.postings(conn, e, ns, touched))
        self.utterances.load(await index_rows.utterances(conn, e, ns, touched))
        self.keep_said(await search_rows.item_texts(conn, e, ns, touched))
        self.vectors.load(*await index_rows.dense_rows(conn, rt.table, e, ns, slug, touched))
        await _load_late(rt, conn, self.key, self.late)
        self.version = changes.version
        return True


class TooBig(Exception):
    """A scope's read index cannot fit the budget, told before it is read (:func:`build_index`)."""

    def __init__(self, at_least: int) -> None:
        super().__init__(f"the read index needs at least {at_least} bytes")
        self.at_least = at_least


def least_bytes(items: int, dim: int) -> int:
    """What a read index of ``items`` live vectors of ``dim`` dimensions takes at the least: the
    dense part's own accounting (:attr:`mnemo.recall.index_vectors.DenseIndex.nbytes`: float32 values,
    a float64 norm and ~120 bytes of bookkeeping an item), before postings, tokens and any graph."""
    return items * (4 * dim + 8 + 120)


async def build_index(
    rt: Runtime,
    conn: psycopg.AsyncConnection,
    key: ScopeKey,
    *,
    pause: Callable[[], Awaitable[None]] = _go_on,
    tokens: Mapping[uuid.UUID, TokenVectors] | None = None,
    budget: int | None = None,
) -> ScopeIndex:
    """Read a scope's whole index from PostgreSQL, at the version read first (changes committed
    while it reads are re-read by the next catch-up, so nothing is missed). ``pause`` is awaited
    before each part is read and before the layout (a build in the background yields to recalls);
    ``tokens``: items' token embeddings already read (not read again). :class:`TooBig` when the
    scope's live vectors alone would take more than ``budget`` bytes: nothing is read (a million
    items' index is gigabytes and minutes of layout, for an index that would not be kept)."""
    e, ns, slug = key
    if budget is not None:
        at_least = least_bytes(await index_rows.dense_count(conn, rt.table, e, ns, slug), rt.embeddings.dim)
        if at_least > budget:
            raise TooBig(at_least)
    version, _, epoch = await index_rows.scope_version(conn, e, ns)
    await pause()
    postings = await index_rows.postings(conn, e, ns)
    await pause()
    dense = await index_rows.dense_rows(conn, rt.table, e, ns, slug)
    late = LateIndex()
    await pause()
    await _load_late(rt, conn, key, late, tokens)
    await pause()
    said = await index_rows.utterances(conn, e, ns)
    texts = await search_rows.item_texts(conn, e, ns, None)
    await pause()

    def assemble() -> ScopeIndex:  # in a worker thread: a large scope's layout never stalls the event loop
        lexicon_ = LexicalIndex()
        lexicon_.load(postings)
        vectors = DenseIndex(rt.embeddings.dim, ann_above=rt.settings.exact_scan_limit)
        vectors.load(*dense)
        vectors.layout_ann()  # above exact_scan_limit only (issue 42, decision 2)
        utterances = UtteranceIndex()
        utterances.load(said)
        index = ScopeIndex(key, version, lexicon_, vectors, late, utterances, epoch)
        index.keep_said(texts)
        _lay_out_scan(rt, late)
        return index

    return await asyncio.to_thread(assemble)


def _lay_out_scan(rt: Runtime, late: LateIndex) -> None:
    """Lay out the token index that a recall asking for every kind scans (the items
    :func:`mnemo.recall.retrieve._late_retrieval` lists), so the first recall through the index
    does not; another set of kinds is laid out when first asked for (:meth:`LateIndex.index`)."""
    limit = rt.settings.late_scan_limit
    if not late.complete:
        return
    listed = [item for item in late.items if item[1] in _ASKED_KINDS][: limit + 1]
    scanned = [item for item in listed if item[2] is not None]
    if scanned and len(listed) <= limit:
        late.index(_ASKED_KINDS, scanned)


async def _load_late(
    rt: Runtime,
    conn: psycopg.AsyncConnection,
    key: ScopeKey,
    late: LateIndex,
    given: Mapping[uuid.UUID, TokenVectors] | None = None,
) -> None:
    """List the scope's scannable items again and read the token embeddings of those new to it
    (those in ``given``, read by a recall a moment ago, are not read again: an item's token
    embeddings never change under one slug)."""
    e, ns, slug = key
    limit = rt.settings.late_scan_limit
    items = await vector_rows.scope_items(conn, rt.table, e, ns, slug, ALL_KINDS, limit + 1)
    late.items = items
    late.complete = len(items) <= limit and rt.settings.late_retrieval
    if not late.complete:
        late.token_ids.clear()
        late.indexes.clear()
        return
    listed = {i for i, _, size in items if size is not None}
    for gone in [i for i in late.token_ids if i not in listed]:
        del late.token_ids[gone]
    new = [i for i in listed if i not in late.token_ids]
    if given:
        late.token_ids.update((i, given[i]) for i in new if i in given)
        new = [i for i in new if i not in late.token_ids]
    late.token_ids.update(await token_rows.fetch(conn, e, ns, slug, new))


# --- the process's indexes ------------------------------------------------------------------------
class ReadIndexes:
    """This process's scope read indexes, least recently used first, within ``index_mb``."""

    def __init__(self) -> None:
        self._scopes: OrderedDict[ScopeKey, ScopeIndex] = OrderedDict()
        self._building: dict[ScopeKey, asyncio.Task[None]] = {}
        self.builds = 0
        self._too_big: set[ScopeKey] = set()  # scopes whose index alone exceeds the budget
        self.refused: dict[ScopeKey, int] = {}
        """The size in bytes of each index built and not kept: alone over the budget (its scope is
        answered through SQL)."""
        self.max_bytes: int | None = None
        self._reads = 0  # recalls in flight (:meth:`reading`)
        self._offered: dict[ScopeKey, dict[uuid.UUID, TokenVectors]] = {}  # for the builds pending
        self._quiet: asyncio.Event | None = None  # set while none is
        """A budget in bytes instead of the settings' ``index_mb`` (tests, benchmarks)."""

    def __len__(self) -> int:
        return len(self._scopes)

    def held(self, key: ScopeKey) -> ScopeIndex | None:
        return self._scopes.get(key)

    @property
    def nbytes(self) -> int:
        return sum(i.nbytes for i in self._scopes.values())

    async def warm(
        self, rt: Runtime, conn: psycopg.AsyncConnection, key: ScopeKey, at: tuple[int, uuid.UUID | None]
    ) -> ScopeIndex | None:
        """The scope's index, caught up to at least version ``at[0]`` of epoch ``at[1]`` (what the
        recall read of the scope); None when there is none yet, or only one of another epoch (the
        scope was purged since: one is then built in the background), or indexing is off."""
        if not rt.settings.index:
            return None
        version, epoch = at
        index = self._scopes.get(key)
        if index is not None and index.epoch != epoch:  # its versions are not comparable: never stale
            self._scopes.pop(key, None)
            index = None
        if index is None:
            self._build_later(rt, key)
            return None
        if index.version < version:
            async with index.lock:
                if index.version < version and not await index.catch_up(rt, conn):
                    self._scopes.pop(key, None)
                    self._build_later(rt, key)
                    return None
            if index.bloated:
                self._build_later(rt, key)
        self._scopes.move_to_end(key)
        return index

    async def ensure(self, rt: Runtime, key: ScopeKey) -> ScopeIndex | None:
        """Build the scope's index now, if indexing is on (benchmarks, tests, a service warming up)."""
        if not rt.settings.index:
            return None
        if key not in self._scopes and key not in self._too_big:
            async with rt.store.background() as conn:  # never waits behind requests for a connection
                try:
                    self._keep(rt, key, await build_index(rt, conn, key, budget=self.budget(rt)))
                except TooBig as big:
                    self._refuse(key, big.at_least)
        return self._scopes.get(key)

    def budget(self, rt: Runtime) -> int:
        """The bytes the indexes may take: :attr:`max_bytes`, else ``index_mb``."""
        return self.max_bytes if self.max_bytes is not None else rt.settings.index_mb << 20

    def _refuse(self, key: ScopeKey, nbytes: int) -> None:
        """The scope's index alone is over the budget: answered through SQL, not built again."""
        self._too_big.add(key)
        self.refused[key] = nbytes

    @contextlib.asynccontextmanager
    async def reading(self) -> AsyncIterator[None]:
        """Around a recall: while any is in flight, a build in the background takes no next step
        (for at most :data:`YIELD_S` in all), so it never takes the recall's cores (issue 42)."""
        self._reads += 1
        if self._quiet is not None:
            self._quiet.clear()
        try:
            yield
        finally:
            self._reads -= 1
            if not self._reads and self._quiet is not None:
                self._quiet.set()

    def offer_tokens(self, key: ScopeKey, tokens: Mapping[uuid.UUID, TokenVectors]) -> None:
        """Token embeddings a recall just read through SQL, for the scope's pending build (kept
        only while one is: it lists the scope's items itself, so an item gone meanwhile is left out)."""
        if key in self._building:
            self._offered.setdefault(key, {}).update(tokens)

    def _build_later(self, rt: Runtime, key: ScopeKey) -> None:
        if key in self._building or key in self._too_big:
            return
        self._building[key] = asyncio.get_running_loop().create_task(self._build(rt, key))

    async def _build(self, rt: Runtime, key: ScopeKey) -> None:
        loop = asyncio.get_running_loop()
        until = loop.time() + YIELD_S

        async def pause() -> None:  # until no recall is in flight, or the build has waited long enough
            while self._reads and (left := until - loop.time()) > 0:
                if self._quiet is None:
                    self._quiet = asyncio.Event()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._quiet.wait(), left)

        try:
            await pause()  # the recall that asked for it first
            async with rt.store.background() as conn:  # the reserved pool: no request's connection
                offered = self._offered.setdefault(key, {})
                index = await build_index(rt, conn, key, pause=pause, tokens=offered, budget=self.budget(rt))
            self._keep(rt, key, index)
        except TooBig as big:
            self._refuse(key, big.at_least)
        except Exception:  # the SQL path keeps answering; the next recall tries again
            log.exception("building the read index of %s/%s failed", key[0], key[1])
        finally:
            self._building.pop(key, None)
            self._offered.pop(key, None)

    def _keep(self, rt: Runtime, key: ScopeKey, index: ScopeIndex) -> None:
        self.builds += 1
        budget = self.budget(rt)
        if index.nbytes > budget:  # answered through SQL; not built again at every recall
            self._refuse(key, index.nbytes)
            return
        self._scopes[key] = index
        self._scopes.move_to_end(key)
        while self.nbytes > budget and len(self._scopes) > 1:
            self._scopes.popitem(last=False)

    def drop(self, entity_id: str, namespace: str | None = None) -> None:
        """Forget every index of the entity (of one namespace): ``forget`` and ``purge`` call this."""
        known = (*self._scopes, *self._building, *self._too_big)  # a refused scope too: it may fit once rewritten
        for key in [k for k in dict.fromkeys(known) if k[0] == entity_id and namespace in (None, k[1])]:
            self._scopes.pop(key, None)
            self._too_big.discard(key)
            self.refused.pop(key, None)
            self._offered.pop(key, None)
            task = self._building.pop(key, None)
            if task is not None:
                task.cancel()

    async def close(self) -> None:
        tasks = list(self._building.values())
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):
                await task
        self._building.clear()
        self._offered.clear()
        self._scopes.clear()
