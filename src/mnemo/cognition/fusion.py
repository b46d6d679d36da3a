"""Reciprocal-rank fusion of ranked candidate lists.

Seed: cognitive-plan §2.5 "Hybrid Search with RRF" (top-50 candidates from each
list, RRF k=60). A document's fused score is ``sum_i w_i / (k + rank_i)`` over
the lists it appears in (ranks start at 1), so agreement between retrievers
outranks a single strong vote, and no score calibration is needed.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

__all__ = ["FusedItem", "rrf"]

K = TypeVar("K", bound=Hashable)


class FusedItem(tuple[object, float, dict[str, int]]):
    """``(key, score, ranks)`` where ``ranks`` maps list name to 1-based rank."""

    __slots__ = ()

    def __new__(cls, key: object, score: float, ranks: Mapping[str, int]) -> FusedItem:
        return super().__new__(cls, (key, score, dict(ranks)))

    @property
    def key(self) -> object:
        return self[0]

    @property
    def score(self) -> float:
        return float(self[1])

    @property
    def ranks(self) -> dict[str, int]:
        return dict(self[2])


def rrf(
    rankings: Mapping[str, Sequence[K]],
    *,
    k: int = 60,
    weights: Mapping[str, float] | None = None,
) -> list[FusedItem]:
    """Fuse named rankings (best first) into one list, best first.

    Duplicates within one ranking count at their first (best) position. Ties
    break by the best single rank, then by first appearance, so the result is
    deterministic.
    """
    if k < 1:
        raise ValueError("k must be >= 1")
    scores: dict[object, float] = {}
    ranks: dict[object, dict[str, int]] = {}
    order: dict[object, int] = {}
    for name, ranking in rankings.items():
        weight = 1.0 if weights is None else float(weights.get(name, 1.0))
        for position, key in enumerate(ranking, start=1):
            item_ranks = ranks.setdefault(key, {})
            if name in item_ranks:
                continue
            item_ranks[name] = position
            order.setdefault(key, len(order))
            scores[key] = scores.get(key, 0.0) + weight / (k + position)
    fused = sorted(scores, key=lambda key: (-scores[key], min(ranks[key].values()), order[key]))
    return [FusedItem(key, scores[key], ranks[key]) for key in fused]
