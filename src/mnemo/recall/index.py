"""The scope read index: an in-memory copy of what first-stage retrieval reads, PostgreSQL the truth.

DESIGN §3 ("PostgreSQL is the truth; a read index is a cache"). Seeds: memory-architecture §2.1
(memory shares the machine with the model: no network round trip per item), cognitive-plan §2.2,
§2.5 (hybrid candidates), archive-adr §3.1 (pre-filter to the scope, then score a subset).

A process that serves recall keeps, per hot scope, the scope's BM25 postings, its live vectors in
the active space, and the token embeddings the late-interaction scan reads. It only *proposes*:

- **coherence**: every write bumps the scope's version and logs the items it touched (migration
  0018's triggers, in the writing transaction). A recall reads the version in its first statement;
  an index that is behind re-reads the logged items (:meth:`ScopeIndex.catch_up`), or is rebuilt
  when the log was pruned past it;
- **safety**: what the index proposes is fetched from PostgreSQL by statements that re-check scope
  and status, so a stale index can never return a forgotten item; ``forget`` and ``purge`` drop the
  local copy at once (:meth:`ReadIndexes.drop`);
- **cold path**: a scope without an index is answered through SQL alone (:class:`SqlStage`) while
  its index is built in the background, on a connection of the store's background pool
  (``pool_reserve``), so a build and the requests never wait for each other's connections;
  ``index_mb`` evicts the least recently used scopes and ``index=false`` turns the whole thing off.

Both ways answer through one interface (:class:`FirstStage`), so the recall pipeline is the same
whether the index is warm or not, and every score is the one SQL would give (BM25 over the same
postings and statistics; cosine over the same halfvec values; MaxSim over the same items).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import uuid
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import numpy as np
import psycopg

from mnemo.cognition.scoring.bm25 import bm25_weights
from mnemo.cognition.scoring.late import QUANT, GrowingIndex, TokenIndex, TokenVectors, index_tokens
from mnemo.store import lexicon
from mnemo.store import read_index as index_rows
from mnemo.store import search as search_rows
from mnemo.store import token_vectors as token_rows
from mnemo.store import vectors as vector_rows

if TYPE_CHECKING:
    from mnemo._runtime import Runtime

__all__ = ["FirstStage", "IndexedStage", "ReadIndexes", "ScopeIndex", "SqlStage", "build_index"]

log = logging.getLogger(__name__)

ALL_KINDS = ("turn", "memory", "line")
"""What the index holds of every scope: every kind a recall can ask for."""
KIND_CODES = {kind: n for n, kind in enumerate(ALL_KINDS)}

ScopeKey = tuple[str, str, str]  # entity, namespace, slug
Hit = tuple[uuid.UUID, str, float]
Item = tuple[uuid.UUID, str, int | None]


class FirstStage(Protocol):
    """First-stage retrieval of one scope, answered from PostgreSQL or from a warm read index."""

    async def lexical(self, text: str, depth: int, kinds: Sequence[str]) -> list[Hit]: ...
    async def dense(self, vector: np.ndarray, depth: int) -> list[Hit]: ...
    async def similarities(self, vector: np.ndarray, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, float]: ...
    async def lexical_scores(self, text: str, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, float]: ...
    async def scope_items(self, kinds: Sequence[str], limit: int) -> list[Item]: ...
    async def token_index(self, kinds: Sequence[str], items: Sequence[Item]) -> TokenIndex: ...
    async def positions(
        self, ids: Sequence[uuid.UUID], anchors: Sequence[uuid.UUID], distance: int, *, lines: bool
    ) -> Positions: ...
    def held_tokens(self, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, TokenVectors]: ...


# --- the SQL path ------------------------------------------------------------------------------
@dataclass(slots=True)
class SqlStage:
    """First-stage retrieval through SQL: the cold path, and the only one with ``index=false``.
    Below ``exact_scan_limit`` items the dense search is exact (as the index's), above it HNSW."""

    rt: Runtime
    conn: psycopg.AsyncConnection
    entity_id: str
    namespace: str
    exact: bool

    async def lexical(self, text: str, depth: int, kinds: Sequence[str]) -> list[Hit]:
        return await lexicon.bm25(self.conn, self.entity_id, self.namespace, text, depth, kinds=kinds)

    async def dense(self, vector: np.ndarray, depth: int) -> list[Hit]:
        rt = self.rt
        return await vector_rows.search(
            self.conn, rt.table, rt.embeddings.dim, self.entity_id, self.namespace, rt.slug, vector, depth,
            exact=self.exact,
        )  # fmt: skip

    async def similarities(self, vector: np.ndarray, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, float]:
        return await vector_rows.similarities(self.conn, self.rt.table, self.entity_id, self.rt.slug, vector, ids)

    async def lexical_scores(self, text: str, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, float]:
        found = await lexicon.bm25(self.conn, self.entity_id, self.namespace, text, 0, ids=ids)
        return {i: s for i, _, s in found}

    async def scope_items(self, kinds: Sequence[str], limit: int) -> list[Item]:
        rt = self.rt
        return await vector_rows.scope_items(self.conn, rt.table, self.entity_id, self.namespace, rt.slug, kinds, limit)

    async def token_index(self, kinds: Sequence[str], items: Sequence[Item]) -> TokenIndex:
        """The scanned items' token index, from the process's token cache or PostgreSQL."""
        key = (self.entity_id, self.namespace, self.rt.slug)
        ids = tuple(i for i, _, _ in items)
        cache = self.rt.tokens()
        index = cache.index(key, ids)
        if index is None:
            tokens = await token_rows.fetch(self.conn, self.entity_id, self.namespace, self.rt.slug, ids)
            index = index_tokens([tokens.get(i, NO_TOKENS) for i in ids])
            cache.keep_index(key, ids, index)
        return index

    async def positions(
        self, ids: Sequence[uuid.UUID], anchors: Sequence[uuid.UUID], distance: int, *, lines: bool
    ) -> Positions:
        return await search_rows.positions(
            self.conn, self.entity_id, self.namespace, ids, anchors, distance, lines=lines
        )

    def held_tokens(self, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, TokenVectors]:
        """Nothing is held in memory on this path (the token cache is asked next)."""
        return {}


NO_TOKENS = TokenVectors(np.zeros(0, np.int32), np.zeros((0, 1), np.int8), 1.0 / QUANT)
"""An item whose token rows went away between listing and reading them: it scores 0."""


# --- the index's parts ---------------------------------------------------------------------------
class _Slots:
    """Items numbered in arrival order; a changed item gets a new number and its old one dies."""

    def __init__(self) -> None:
        self.ids: list[uuid.UUID] = []
        self.kinds: list[str] = []
        self.slot: dict[uuid.UUID, int] = {}
        self.alive = np.zeros(0, dtype=bool)
        self.codes = np.zeros(0, dtype=np.int8)  # each slot's kind, as KIND_CODES numbers it

    def add(self, item: uuid.UUID, kind: str) -> int:
        n = len(self.ids)
        self.ids.append(item)
        self.kinds.append(kind)
        self.slot[item] = n
        if n >= len(self.alive):
            self.alive = np.concatenate([self.alive, np.zeros(max(16, n), dtype=bool)])
            self.codes = np.concatenate([self.codes, np.full(max(16, n), -1, dtype=np.int8)])
        self.alive[n] = True
        self.codes[n] = KIND_CODES.get(kind, -1)
        return n

    def remove(self, item: uuid.UUID) -> None:
        n = self.slot.pop(item, None)
        if n is not None:
            self.alive[n] = False

    @property
    def dead(self) -> int:
        return len(self.ids) - len(self.slot)


class _Term:
    """One term's postings: item slots, term frequencies, document lengths (appends buffered)."""

    __slots__ = ("doc_len", "pending", "slots", "tf")

    def __init__(self) -> None:
        self.slots = np.zeros(0, dtype=np.int64)
        self.tf = np.zeros(0, dtype=np.float64)
        self.doc_len = np.zeros(0, dtype=np.float64)
        self.pending: list[tuple[int, float, float]] = []

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self.pending:
            more = np.array(self.pending, dtype=np.float64)
            self.slots = np.concatenate([self.slots, more[:, 0].astype(np.int64)])
            self.tf = np.concatenate([self.tf, more[:, 1]])
            self.doc_len = np.concatenate([self.doc_len, more[:, 2]])
            self.pending = []
        return self.slots, self.tf, self.doc_len


class _Lexicon:
    """The scope's postings (a mirror of ``mnemo.postings``), scored by BM25 as :mod:`lexicon` does."""

    def __init__(self) -> None:
        self.items = _Slots()
        self.terms: dict[str, _Term] = {}
        self.postings = 0

    def load(self, rows: index_rows.Postings) -> None:
        """Add every row of ``rows`` (items not already held; in (term, item) order): a few rows
        are buffered per term, a whole scope's are laid out as arrays term by term."""
        slot_of, add = self.items.slot, self.items.add
        slots: list[int] = []
        for item, kind in zip(rows.items, rows.kinds, strict=True):
            slot = slot_of.get(item)
            slots.append(add(item, kind) if slot is None else slot)
        self.postings += len(slots)
        if len(slots) < 1024:
            for n, term in enumerate(rows.terms):
                entry = self.terms.get(term)
                if entry is None:
                    entry = self.terms[term] = _Term()
                entry.pending.append((slots[n], float(rows.tf[n]), float(rows.doc_len[n])))
            return
        at = np.asarray(slots, dtype=np.int64)
        terms = rows.terms
        bounds = [0, *(n for n in range(1, len(terms)) if terms[n] != terms[n - 1]), len(terms)]
        for start, end in itertools.pairwise(bounds):
            entry = self.terms.get(terms[start])
            if entry is None:
                entry = self.terms[terms[start]] = _Term()
            entry.arrays()
            entry.slots = np.concatenate([entry.slots, at[start:end]])
            entry.tf = np.concatenate([entry.tf, rows.tf[start:end]])
            entry.doc_len = np.concatenate([entry.doc_len, rows.doc_len[start:end]])

    def _matches(self, terms: Sequence[str], docs: int, avgdl: float) -> tuple[np.ndarray, np.ndarray]:
        """Every live posting of the query's terms with its BM25 contribution: ``(slots, weights)``."""
        alive = self.items.alive
        slots, weights = [], []
        for term in terms:
            entry = self.terms.get(term)
            if entry is None:
                continue
            at, tf, doc_len = entry.arrays()
            live = alive[at]
            df = int(live.sum())
            if df == 0:
                continue
            slots.append(at[live])
            weights.append(bm25_weights(tf[live], doc_len[live], df, docs, avgdl))
        if not slots:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        return np.concatenate(slots), np.concatenate(weights)

    def totals(self, terms: Sequence[str], docs: int, avgdl: float) -> tuple[np.ndarray, np.ndarray]:
        """Every slot's BM25 score and whether any query term matched it."""
        at, weights = self._matches(terms, docs, avgdl)
        n = len(self.items.ids)
        return np.bincount(at, weights=weights, minlength=n), np.bincount(at, minlength=n) > 0

    def scores(self, terms: Sequence[str], docs: int, avgdl: float, slots: Sequence[int]) -> list[float | None]:
        """The BM25 score of each of ``slots`` (None where no query term matches it)."""
        total, hit = self.totals(terms, docs, avgdl)
        return [float(total[s]) if hit[s] else None for s in slots]

    def top(self, terms: Sequence[str], docs: int, avgdl: float, depth: int, kinds: Sequence[str]) -> list[Hit]:
        total, hit = self.totals(terms, docs, avgdl)
        found = np.flatnonzero(hit)
        wanted = [KIND_CODES[k] for k in kinds if k in KIND_CODES]
        found = found[np.isin(self.items.codes[found], wanted)]
        return _best(found, total, depth, self.items)

    @property
    def nbytes(self) -> int:
        return self.postings * 24 + len(self.items.ids) * 120 + len(self.terms) * 150


class _Vectors:
    """The scope's live vectors in the active space (halfvec values, as float32), scanned exactly."""

    def __init__(self, dim: int) -> None:
        self.items = _Slots()
        self.matrix = np.zeros((0, dim), dtype=np.float32)
        self.norms = np.zeros(0, dtype=np.float64)

    def load(self, ids: Sequence[uuid.UUID], kinds: Sequence[str], vectors: np.ndarray) -> None:
        start = len(self.items.ids)
        for item, kind in zip(ids, kinds, strict=True):
            self.items.add(item, kind)
        if not len(ids):
            return
        need = start + len(ids)
        if need > len(self.matrix):
            grown = np.zeros((max(need, 2 * len(self.matrix)), self.matrix.shape[1]), dtype=np.float32)
            grown[:start] = self.matrix[:start]
            norms = np.zeros(len(grown))
            norms[:start] = self.norms[:start]
            self.matrix, self.norms = grown, norms
        self.matrix[start:need] = vectors
        self.norms[start:need] = np.sqrt(np.einsum("ij,ij->i", vectors, vectors, dtype=np.float32), dtype=np.float64)

    def cosines(self, query: np.ndarray) -> np.ndarray:
        """Cosine of the query, as a halfvec, to every slot (dead slots included)."""
        n = len(self.items.ids)
        q = np.asarray(query, dtype=np.float16).astype(np.float32)
        qnorm = float(np.sqrt(np.dot(q, q, out=None)))
        dots = self.matrix[:n] @ q
        with np.errstate(divide="ignore", invalid="ignore"):
            return dots.astype(np.float64) / (self.norms[:n] * qnorm)

    def similarities(self, query: np.ndarray, slots: Sequence[int]) -> list[float]:
        """Cosine of the query, as a halfvec, to each of ``slots``."""
        q = np.asarray(query, dtype=np.float16).astype(np.float32)
        at = np.asarray(slots, dtype=np.int64)
        dots = self.matrix[at] @ q
        with np.errstate(divide="ignore", invalid="ignore"):
            return (dots.astype(np.float64) / (self.norms[at] * float(np.sqrt(np.dot(q, q))))).tolist()

    def nearest(self, query: np.ndarray, depth: int) -> list[Hit]:
        sims = self.cosines(query)
        live = np.flatnonzero(self.items.alive[: len(sims)] & np.isfinite(sims))
        return _best(live, sims, depth, self.items)

    @property
    def nbytes(self) -> int:
        return int(self.matrix.nbytes + self.norms.nbytes) + len(self.items.ids) * 120


def _best(found: np.ndarray, scores: np.ndarray, depth: int, items: _Slots) -> list[Hit]:
    """The ``depth`` best of the ``found`` slots by score, ties in id order (as SQL's ``ORDER BY
    score DESC, id``): a partition picks the few that can be among them, only those are sorted."""
    if len(found) > depth > 0:
        values = scores[found]
        cut = np.partition(values, len(values) - depth)[len(values) - depth]
        found = found[values >= cut]
    ids, kinds = items.ids, items.kinds
    best = sorted((-float(scores[s]), ids[s], s) for s in found.tolist())[:depth] if depth > 0 else []
    return [(item, kinds[s], -score) for score, item, s in best]


Place = tuple[str, int]  # session, turn number
Positions = tuple[dict[uuid.UUID, Place], dict[str, tuple[int, int]], dict[uuid.UUID, str]]


class _Utterances:
    """Where each raw turn and each block line sits in its session, as
    :func:`mnemo.store.search.positions` reads it (a line whose raw turn is still there is only
    an anchor; a raw turn wins over its line)."""

    def __init__(self) -> None:
        self.at: dict[str, dict[uuid.UUID, set[Place]]] = {"turn": {}, "line": {}}
        self.sessions: dict[str, dict[str, dict[int, set[uuid.UUID]]]] = {"turn": {}, "line": {}}

    def load(self, rows: Sequence[tuple[str, uuid.UUID, str, int]]) -> None:
        for kind, item, session, number in rows:
            self.at[kind].setdefault(item, set()).add((session, number))
            self.sessions[kind].setdefault(session, {}).setdefault(number, set()).add(item)

    def remove(self, item: uuid.UUID) -> None:
        for kind in ("turn", "line"):
            for session, number in self.at[kind].pop(item, ()):
                numbers = self.sessions[kind][session]
                numbers[number].discard(item)
                if not numbers[number]:
                    del numbers[number]
                if not numbers:
                    del self.sessions[kind][session]

    def positions(
        self, ids: Sequence[uuid.UUID], anchors: Sequence[uuid.UUID], distance: int, *, lines: bool
    ) -> Positions:
        where: dict[uuid.UUID, Place] = {}
        bounds: dict[str, tuple[int, int]] = {}
        kinds: dict[uuid.UUID, str] = {}
        turns = self.at["turn"]
        for kind in ("line", "turn") if lines else ("turn",):  # a raw turn wins
            found = self._near(kind, ids, anchors, distance)
            if kind == "line":
                found = [(item, place) for item, place in found if item not in turns]
            for item, (session, number) in found:
                where[item] = (session, number)
                kinds[item] = kind
                numbers = self.sessions[kind][session]
                lo, hi = min(numbers), max(numbers)
                old = bounds.get(session, (lo, hi))
                bounds[session] = (min(old[0], lo), max(old[1], hi))
        return where, bounds, kinds

    def _near(
        self, kind: str, ids: Sequence[uuid.UUID], anchors: Sequence[uuid.UUID], distance: int
    ) -> list[tuple[uuid.UUID, Place]]:
        """The ``kind`` utterances among ``ids``, and those within ``distance`` of an anchor's place
        (an anchor placed by its raw turn or by any line of it, for turns; by its lines, for lines)."""
        at, sessions = self.at[kind], self.sessions[kind]
        found = [(item, place) for item in dict.fromkeys(ids) for place in sorted(at.get(item, ()))]
        places: set[Place] = set()
        for anchor in anchors:
            places |= at.get(anchor, set())
            if kind == "turn":
                places |= self.at["line"].get(anchor, set())
        for session, number in sorted(places):
            numbers = sessions.get(session, {})
            for n in range(number - distance, number + distance + 1):
                found.extend((item, (session, n)) for item in sorted(numbers.get(n, ())))
        return found

    @property
    def nbytes(self) -> int:
        return sum(len(at) for at in self.at.values()) * 400


@dataclass(slots=True)
class _Late:
    """What the late-interaction scan reads: the scope's scannable items (as
    :func:`mnemo.store.vectors.scope_items` lists them) and one token index per set of kinds."""

    items: list[Item] = field(default_factory=list)
    token_ids: dict[uuid.UUID, TokenVectors] = field(default_factory=dict)
    indexes: dict[tuple[str, ...], tuple[tuple[uuid.UUID, ...], GrowingIndex]] = field(default_factory=dict)
    """Per set of kinds asked for: the items (in order) the token index was laid out from."""
    complete: bool = False  # the listing holds every scannable item (the scope is under the limit)

    @property
    def nbytes(self) -> int:
        held = sum(tv.vectors.nbytes + tv.ids.nbytes + 64 for tv in self.token_ids.values())
        return held + sum(i.nbytes for _, i in self.indexes.values())

    def index(self, kinds: tuple[str, ...], items: Sequence[Item]) -> TokenIndex:
        """The token index of ``items`` (of ``kinds``): the one kept if they are the same, the kept
        one extended when they only add items after it (new items sort last: ids are time-ordered),
        else laid out again."""
        ids = tuple(i for i, _, _ in items)
        kept = self.indexes.get(kinds)
        if kept is not None and kept[0] == ids:
            return kept[1].index
        tokens = [self.token_ids.get(i, NO_TOKENS) for i in ids]
        if kept is not None and ids[: len(kept[0])] == kept[0]:
            grown = kept[1].extend(tokens[len(kept[0]) :])
            if grown is not None:
                self.indexes[kinds] = (ids, kept[1])
                return grown
        growing = GrowingIndex(tokens)
        self.indexes[kinds] = (ids, growing)
        return growing.index

    def forget(self, items: Sequence[uuid.UUID]) -> None:
        """Drop the kept token indexes that hold any of ``items`` (changed or gone)."""
        gone = set(items)
        for kinds in [k for k, (ids, _) in self.indexes.items() if gone.intersection(ids)]:
            del self.indexes[kinds]


# --- one scope's index --------------------------------------------------------------------------
@dataclass(slots=True)
class ScopeIndex:
    """One scope's read index at :attr:`version` (see the module docstring)."""

    key: ScopeKey
    version: int
    lexicon: _Lexicon
    vectors: _Vectors
    late: _Late
    utterances: _Utterances
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    @property
    def nbytes(self) -> int:
        return self.lexicon.nbytes + self.vectors.nbytes + self.late.nbytes + self.utterances.nbytes

    @property
    def size(self) -> int:
        return len(self.vectors.items.slot)

    @property
    def bloated(self) -> bool:
        """Whether changed and removed items' old entries outnumber the live ones (then a fresh
        build in the background replaces it; until then it answers as it is)."""
        return any(part.dead > max(1024, len(part.slot)) for part in (self.lexicon.items, self.vectors.items))

    async def catch_up(self, rt: Runtime, conn: psycopg.AsyncConnection) -> bool:
        """Re-read every item the scope's writes touched since :attr:`version`; False when the log no
        longer reaches back (rebuild instead)."""
        e, ns, slug = self.key
        changes = await index_rows.changes_since(conn, e, ns, self.version)
        if changes is None:
            return False
        if changes.version <= self.version:
            return True
        touched = changes.items
        for item in touched:
            self.lexicon.items.remove(item)
            self.vectors.items.remove(item)
            self.utterances.remove(item)
            self.late.token_ids.pop(item, None)  # read again if it is still listed
        self.late.forget(touched)
        self.lexicon.load(await index_rows.postings(conn, e, ns, touched))
        self.utterances.load(await index_rows.utterances(conn, e, ns, touched))
        self.vectors.load(*await index_rows.dense_rows(conn, rt.table, e, ns, slug, touched))
        await _load_late(rt, conn, self.key, self.late)
        self.version = changes.version
        return True


async def build_index(rt: Runtime, conn: psycopg.AsyncConnection, key: ScopeKey) -> ScopeIndex:
    """Read a scope's whole index from PostgreSQL, at the version read first (changes committed
    while it reads are re-read by the next catch-up, so nothing is missed)."""
    e, ns, slug = key
    version, _ = await index_rows.scope_version(conn, e, ns)
    postings = await index_rows.postings(conn, e, ns)
    dense = await index_rows.dense_rows(conn, rt.table, e, ns, slug)
    late = _Late()
    await _load_late(rt, conn, key, late)
    said = await index_rows.utterances(conn, e, ns)

    def assemble() -> ScopeIndex:  # in a worker thread: a large scope's layout never stalls the event loop
        lexicon_ = _Lexicon()
        lexicon_.load(postings)
        vectors = _Vectors(rt.embeddings.dim)
        vectors.load(*dense)
        utterances = _Utterances()
        utterances.load(said)
        return ScopeIndex(key, version, lexicon_, vectors, late, utterances)

    return await asyncio.to_thread(assemble)


async def _load_late(rt: Runtime, conn: psycopg.AsyncConnection, key: ScopeKey, late: _Late) -> None:
    """List the scope's scannable items again and read the token embeddings of those new to it."""
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
    late.token_ids.update(await token_rows.fetch(conn, e, ns, slug, new))


@dataclass(slots=True)
class IndexedStage:
    """First-stage retrieval from a warm :class:`ScopeIndex`; what it cannot answer alone (an item
    the index does not hold) goes to the SQL path, so every answer is SQL's."""

    index: ScopeIndex
    sql: SqlStage
    terms: Sequence[str]
    docs: int
    avgdl: float

    async def lexical(self, text: str, depth: int, kinds: Sequence[str]) -> list[Hit]:
        return self.index.lexicon.top(self.terms, self.docs, self.avgdl, depth, kinds)

    async def dense(self, vector: np.ndarray, depth: int) -> list[Hit]:
        return self.index.vectors.nearest(vector, depth)

    async def similarities(self, vector: np.ndarray, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, float]:
        held = self.index.vectors.items.slot
        have = [i for i in ids if i in held]
        found: dict[uuid.UUID, float] = {}
        if have:
            sims = self.index.vectors.similarities(vector, [held[i] for i in have])
            found = dict(zip(have, sims, strict=True))
        rest = [i for i in ids if i not in held]
        return found | (await self.sql.similarities(vector, rest) if rest else {})

    async def lexical_scores(self, text: str, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, float]:
        lex = self.index.lexicon
        slot = lex.items.slot
        have = [i for i in ids if i in slot]
        if not have:
            return {}
        scores = lex.scores(self.terms, self.docs, self.avgdl, [slot[i] for i in have])
        return {i: score for i, score in zip(have, scores, strict=True) if score is not None}

    async def scope_items(self, kinds: Sequence[str], limit: int) -> list[Item]:
        late = self.index.late
        if not late.complete:
            return await self.sql.scope_items(kinds, limit)
        return [item for item in late.items if item[1] in kinds][:limit]

    async def token_index(self, kinds: Sequence[str], items: Sequence[Item]) -> TokenIndex:
        late = self.index.late
        if not late.complete:
            return await self.sql.token_index(kinds, items)
        return late.index(tuple(kinds), items)

    async def positions(
        self, ids: Sequence[uuid.UUID], anchors: Sequence[uuid.UUID], distance: int, *, lines: bool
    ) -> Positions:
        return self.index.utterances.positions(ids, anchors, distance, lines=lines)

    def held_tokens(self, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, TokenVectors]:
        held = self.index.late.token_ids
        return {i: held[i] for i in ids if i in held}


# --- the process's indexes ------------------------------------------------------------------------
class ReadIndexes:
    """This process's scope read indexes, least recently used first, within ``index_mb``."""

    def __init__(self) -> None:
        self._scopes: OrderedDict[ScopeKey, ScopeIndex] = OrderedDict()
        self._building: dict[ScopeKey, asyncio.Task[None]] = {}
        self.builds = 0
        self._too_big: set[ScopeKey] = set()  # scopes whose index alone exceeds the budget
        self.max_bytes: int | None = None
        """A budget in bytes instead of the settings' ``index_mb`` (tests, benchmarks)."""

    def __len__(self) -> int:
        return len(self._scopes)

    def held(self, key: ScopeKey) -> ScopeIndex | None:
        return self._scopes.get(key)

    @property
    def nbytes(self) -> int:
        return sum(i.nbytes for i in self._scopes.values())

    async def warm(self, rt: Runtime, conn: psycopg.AsyncConnection, key: ScopeKey, version: int) -> ScopeIndex | None:
        """The scope's index, caught up to at least ``version``; None when there is none yet (one is
        then built in the background) or indexing is off."""
        if not rt.settings.index:
            return None
        index = self._scopes.get(key)
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
        if key not in self._scopes:
            async with rt.store.background() as conn:  # never waits behind requests for a connection
                self._keep(rt, key, await build_index(rt, conn, key))
        return self._scopes.get(key)

    def _build_later(self, rt: Runtime, key: ScopeKey) -> None:
        if key in self._building or key in self._too_big:
            return
        self._building[key] = asyncio.get_running_loop().create_task(self._build(rt, key))

    async def _build(self, rt: Runtime, key: ScopeKey) -> None:
        try:
            async with rt.store.background() as conn:  # the reserved pool: no request's connection
                index = await build_index(rt, conn, key)
            self._keep(rt, key, index)
        except Exception:  # the SQL path keeps answering; the next recall tries again
            log.exception("building the read index of %s/%s failed", key[0], key[1])
        finally:
            self._building.pop(key, None)

    def _keep(self, rt: Runtime, key: ScopeKey, index: ScopeIndex) -> None:
        self.builds += 1
        budget = self.max_bytes if self.max_bytes is not None else rt.settings.index_mb << 20
        if index.nbytes > budget:  # answered through SQL; not built again at every recall
            self._too_big.add(key)
            return
        self._scopes[key] = index
        self._scopes.move_to_end(key)
        while self.nbytes > budget and len(self._scopes) > 1:
            self._scopes.popitem(last=False)

    def drop(self, entity_id: str, namespace: str | None = None) -> None:
        """Forget every index of the entity (of one namespace): ``forget`` and ``purge`` call this."""
        for key in [k for k in (*self._scopes, *self._building) if k[0] == entity_id and namespace in (None, k[1])]:
            self._scopes.pop(key, None)
            self._too_big.discard(key)
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
        self._scopes.clear()
