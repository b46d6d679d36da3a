"""The read index's vectors: the scope's live item vectors, and the late-interaction scan's tokens.

DESIGN §3 (the read index, :mod:`mnemo.recall.scope_index`); cognitive-plan §2.5. The dense part
scans the active space's halfvec values exactly (cosine as PostgreSQL computes it); the late part
holds the scope's scannable items, their token embeddings and the token indexes laid out from them
(MaxSim over the same items as SQL's scan).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from mnemo.cognition.scoring.late import GrowingIndex, TokenIndex, TokenVectors
from mnemo.recall.first_stage import NO_TOKENS, Hit, Item
from mnemo.recall.index_postings import ItemSlots, best_slots

__all__ = ["DenseIndex", "LateIndex"]


class DenseIndex:
    """The scope's live vectors in the active space (halfvec values, as float32), scanned exactly."""

    def __init__(self, dim: int) -> None:
        self.items = ItemSlots()
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
        return best_slots(live, sims, depth, self.items)

    @property
    def nbytes(self) -> int:
        return int(self.matrix.nbytes + self.norms.nbytes) + len(self.items.ids) * 120


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
