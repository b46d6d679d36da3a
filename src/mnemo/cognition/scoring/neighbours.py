"""Conversation-neighbour smoothing of recall scores.

The evidence for a question about a conversation is often spread over a few
adjacent turns (a question and its answer, a story told over three messages).
A turn therefore also earns a share of the relevance of the turns 1, 2, ...
places away in the same session::

    score(i) = base(i) + sum over distance d, neighbour j at i +- d:  w_d * evidence(j)

    evidence(j) = base(j)   if j was scored (retrieved or expanded),
                = floor     if j exists in the session but was not retrieved (evidence of irrelevance),
                = 0         if there is no such turn (session start or end: no evidence either way).

Base scores are z-scores, so 0 is "an average candidate". Items without a
conversation position (memories) keep their base score. Seeds:
memory-architecture §1.3 (retrieval follows links to context), cognitive-plan
§4.6 (contextual retrieval).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

__all__ = ["smooth"]

K = TypeVar("K", bound=Hashable)


def smooth(
    base: Mapping[K, float],
    positions: Mapping[K, tuple[str, int]],
    weights: Sequence[float],
    *,
    floor: float,
    bounds: Mapping[str, tuple[int, int]] | None = None,
) -> dict[K, float]:
    """Smoothed scores for every item of ``base`` (see the module docstring).

    ``positions`` maps items to ``(session, turn_number)``; ``bounds`` maps a
    session to its first and last turn number (without it, unscored neighbours
    count as absent).
    """
    if not weights:
        return dict(base)
    at = {pos: key for key, pos in positions.items() if key in base}
    out = dict(base)
    for key, (session, number) in positions.items():
        if key not in base:
            continue
        lo, hi = (bounds or {}).get(session, (number, number))
        boost = 0.0
        for distance, weight in enumerate(weights, start=1):
            for other in (number - distance, number + distance):
                neighbour = at.get((session, other))
                if neighbour is not None:
                    boost += weight * base[neighbour]
                elif lo <= other <= hi:
                    boost += weight * floor
        out[key] = base[key] + boost
    return out
