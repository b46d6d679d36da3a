"""Reciprocal-rank fusion of ranked candidate lists.

Seed: cognitive-plan §2.5 "Hybrid Search with RRF" (top-50 candidates from each
list, RRF k=60). A document's fused score is ``sum_i w_i / (k + rank_i)`` over
the lists it appears in (ranks start at 1), so agreement between retrievers
outranks a single strong vote, and no score calibration is needed.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Mapping, Sequence
from typing import TypeVar

__all__ = ["FusedItem", "rrf", "zscore_fuse"]

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


def zscore_fuse(
    scores: Mapping[str, Mapping[K, float]],
    *,
    weights: Mapping[str, float] | None = None,
    missing: Mapping[str, float] | None = None,
    reference: Collection[K] | None = None,
) -> dict[K, float]:
    """Weighted sum of per-retriever z-scores over the union of candidates.

    Each retriever's scores are standardised over the candidates it scored
    (mean 0, sd 1), so cosine similarities and BM25 scores become comparable;
    an item a retriever did not score takes ``missing[name]`` (default: that
    retriever's minimum, i.e. "no evidence from it"). With ``reference``, the
    mean and deviation come from those items only, so late additions (such as
    neighbours) are scored on the same scale as the retrieved candidates.
    """
    keys: list[K] = []
    seen: set[K] = set()
    for ranking in scores.values():
        for key in ranking:
            if key not in seen:
                seen.add(key)
                keys.append(key)
    fused: dict[K, float] = dict.fromkeys(keys, 0.0)
    within = None if reference is None else set(reference)  # membership in O(1), not a list scan
    for name, values in scores.items():
        if not values:
            continue
        weight = 1.0 if weights is None else float(weights.get(name, 1.0))
        raw = [v for k, v in values.items() if within is None or k in within] or list(values.values())
        mu = sum(raw) / len(raw)
        sd = (sum((v - mu) ** 2 for v in raw) / len(raw)) ** 0.5 or 1.0
        default = min(raw) if missing is None or name not in missing else missing[name]
        for key in keys:
            fused[key] += weight * (values.get(key, default) - mu) / sd
    return fused
