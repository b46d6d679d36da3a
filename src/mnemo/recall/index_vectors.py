"""The read index's vectors: the scope's live item vectors, and the late-interaction scan's tokens.

DESIGN §3 (the read index, :mod:`mnemo.recall.scope_index`); cognitive-plan §2.5. The dense part
scans the active space's halfvec values exactly (cosine as PostgreSQL computes it); the late part
holds the scope's scannable items, their token embeddings and the token indexes laid out from them
(MaxSim over the same items as SQL's scan).

Above ``exact_scan_limit`` live items (issue 42, decision 2) the dense part answers through an
in-process ANN (a :mod:`usearch` HNSW graph of the unit vectors in int8, laid out when the index is
built): it only *proposes* candidates, each is scored again exactly from the held halfvec values
(the cosine SQL gives), and PostgreSQL re-checks the winners as it does every hit. The graph is
built and grown on one thread in slot order (usearch draws each node's level from a generator of
fixed seed), so the same scope gives the same graph and the same answers. Below the limit the
scan stays exact (the index-vs-SQL equivalence holds item for item).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from mnemo.cognition.scoring.late import GrowingIndex, TokenIndex, TokenVectors
from mnemo.recall.first_stage import NO_TOKENS, Hit, Item
from mnemo.recall.index_postings import ItemSlots, best_slots

if TYPE_CHECKING:
    from usearch.index import Index

__all__ = ["ANN_DTYPE", "DenseIndex", "LateIndex"]

ANN_DTYPE = "i8"  # the graph's copy of each unit vector (the exact re-score reads the halfvec values)
ANN_CONNECTIVITY = 16
ANN_EXPANSION_ADD = 64
ANN_EXPANSION_SEARCH = 128  # at least; a deeper search widens it to the candidates it asks for
ANN_OVERSAMPLE = 2  # candidates asked of the graph per hit wanted, all re-scored exactly


class DenseIndex:
    """The scope's live vectors in the active space (halfvec values, as float32), scanned exactly,
    or, above ``ann_above`` live items once :meth:`layout_ann` has run, searched through an ANN
    graph whose candidates are re-scored exactly (see the module docstring)."""

    def __init__(self, dim: int, ann_above: int | None = None) -> None:
        self.items = ItemSlots()
        self.matrix = np.zeros((0, dim), dtype=np.float32)
        self.norms = np.zeros(0, dtype=np.float64)
        self.ann_above = ann_above
        self.ann: Index | None = None

    @property
    def outgrown(self) -> bool:
        """Whether the scope has grown past ``ann_above`` without a graph (the caught-up index keeps
        answering exactly; a fresh build in the background lays the graph out)."""
        return self.ann is None and self.ann_above is not None and len(self.items.slot) > self.ann_above

    def layout_ann(self) -> None:
        """Lay out the ANN graph of every live slot, if the scope is above ``ann_above`` (a build
        does this in its worker thread, never on the event loop)."""
        if not self.outgrown:
            return
        self.ann = _graph(
            ndim=self.matrix.shape[1],
            metric="cos",
            dtype=ANN_DTYPE,
            connectivity=ANN_CONNECTIVITY,
            expansion_add=ANN_EXPANSION_ADD,
            expansion_search=ANN_EXPANSION_SEARCH,
        )
        live = np.flatnonzero(self.items.alive[: len(self.items.ids)])
        self._add_ann(live)

    def _add_ann(self, slots: np.ndarray) -> None:
        """Add ``slots`` to the graph as unit vectors, one thread, in slot order (deterministic)."""
        if self.ann is None:
            return
        slots = slots[self.norms[slots] > 0]  # a zero vector has no cosine: never a hit, as in SQL
        if len(slots):
            unit = self.matrix[slots] / self.norms[slots, None].astype(np.float32)
            self.ann.add(slots.astype(np.uint64), unit, threads=1)

    def remove(self, item: uuid.UUID) -> None:
        """Forget ``item``'s entry (changed or gone): its slot dies and leaves the graph."""
        n = self.items.slot.get(item)
        self.items.remove(item)
        if n is not None and self.ann is not None and self.ann.contains(n):
            self.ann.remove(n)

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
        self._add_ann(np.arange(start, need))  # caught-up items join the graph, if there is one

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
        """The ``depth`` live items nearest to the query, by the cosine SQL gives, ties in id order:
        an exact scan, or the ANN graph's candidates re-scored exactly (above ``ann_above``)."""
        if self.ann is not None and depth > 0:
            return self._nearest_ann(query, depth)
        sims = self.cosines(query)
        live = np.flatnonzero(self.items.alive[: len(sims)] & np.isfinite(sims))
        return best_slots(live, sims, depth, self.items)

    def _nearest_ann(self, query: np.ndarray, depth: int) -> list[Hit]:
        ann = self.ann
        assert ann is not None
        q = np.asarray(query, dtype=np.float16).astype(np.float32)
        count = min(len(ann), max(ANN_OVERSAMPLE * depth, 32))
        if not count:
            return []
        ann.expansion_search = max(ANN_EXPANSION_SEARCH, count)  # type: ignore[misc]
        found = np.asarray(ann.search(q, count, threads=1).keys, dtype=np.int64)
        found = np.unique(found[(found >= 0) & (found < len(self.items.ids))])
        found = found[self.items.alive[found]]
        if not len(found):
            return []
        sims = np.asarray(self.similarities(q, found.tolist()))
        ok = np.isfinite(sims)
        ids, kinds = self.items.ids, self.items.kinds
        best = sorted((-float(s), ids[n], n) for n, s in zip(found[ok].tolist(), sims[ok].tolist(), strict=True))
        return [(item, kinds[n], -score) for score, item, n in best[:depth]]

    @property
    def nbytes(self) -> int:
        graph = 0 if self.ann is None else int(self.ann.memory_usage)
        return int(self.matrix.nbytes + self.norms.nbytes) + len(self.items.ids) * 120 + graph


def _graph(**spec: int | str) -> Index:
    """An empty usearch graph. Imported here, after ONNX Runtime: usearch 2.26's extension loaded
    first makes ONNX Runtime's import crash the process (a segmentation fault), and only a process
    that holds a scope above ``exact_scan_limit`` needs it."""
    import onnxruntime  # noqa: F401  (before usearch; see above)
    from usearch.index import Index

    return Index(**spec)  # type: ignore[arg-type]


@dataclass(slots=True)
class LateIndex:
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
