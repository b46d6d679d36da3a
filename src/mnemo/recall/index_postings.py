"""The read index's postings: the scope's items numbered in slots, and BM25 over held postings.

DESIGN §3 (the read index, :mod:`mnemo.recall.scope_index`). A mirror of ``mnemo.postings``, scored
by BM25 exactly as :mod:`mnemo.store.lexicon` scores it in SQL (the same postings and statistics).
:func:`best_slots` picks the best slots in SQL's order; the dense part uses it too.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Sequence

import numpy as np

from mnemo.cognition.scoring.bm25 import bm25_weights
from mnemo.recall.first_stage import Hit
from mnemo.store import read_index as index_rows

__all__ = ["ALL_KINDS", "KIND_CODES", "ItemSlots", "LexicalIndex", "TermPostings", "best_slots"]

ALL_KINDS = ("turn", "memory", "line")
"""What the index holds of every scope: every kind a recall can ask for."""
KIND_CODES = {kind: n for n, kind in enumerate(ALL_KINDS)}


class ItemSlots:
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


class TermPostings:
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


class LexicalIndex:
    """The scope's postings (a mirror of ``mnemo.postings``), scored by BM25 as :mod:`lexicon` does."""

    def __init__(self) -> None:
        self.items = ItemSlots()
        self.terms: dict[str, TermPostings] = {}
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
                    entry = self.terms[term] = TermPostings()
                entry.pending.append((slots[n], float(rows.tf[n]), float(rows.doc_len[n])))
            return
        at = np.asarray(slots, dtype=np.int64)
        terms = rows.terms
        bounds = [0, *(n for n in range(1, len(terms)) if terms[n] != terms[n - 1]), len(terms)]
        for start, end in itertools.pairwise(bounds):
            entry = self.terms.get(terms[start])
            if entry is None:
                entry = self.terms[terms[start]] = TermPostings()
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
        return best_slots(found, total, depth, self.items)

    @property
    def nbytes(self) -> int:
        return self.postings * 24 + len(self.items.ids) * 120 + len(self.terms) * 150


def best_slots(found: np.ndarray, scores: np.ndarray, depth: int, items: ItemSlots) -> list[Hit]:
    """The ``depth`` best of the ``found`` slots by score, ties in id order (as SQL's ``ORDER BY
    score DESC, id``): a partition picks the few that can be among them, only those are sorted."""
    if len(found) > depth > 0:
        values = scores[found]
        cut = np.partition(values, len(values) - depth)[len(values) - depth]
        found = found[values >= cut]
    ids, kinds = items.ids, items.kinds
    best = sorted((-float(scores[s]), ids[s], s) for s in found.tolist())[:depth] if depth > 0 else []
    return [(item, kinds[s], -score) for score, item, s in best]
