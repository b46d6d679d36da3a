"""Scores a person can read (issue 40 item 7): the score shown beside each hit follows the order the
hits are in.

Recall orders its hits by more than the blend's score: relevance tiers first (the blend reorders
only within a tier), a superseded memory below its successor, a line paid for once. A blend score
shown as it is can then rise down the list, and a reader takes the list for unsorted.
:func:`rank_scores` keeps the blend's scale and caps each score by the ones above it, so the column
never rises; where the order overruled the blend, the hit shows the score of the hit above it.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["rank_scores", "rank_tiers"]


def rank_scores(scores: Sequence[float]) -> list[float]:
    """``scores`` (best-ranked first) as shown in rank order: each one capped by every score above
    it (a running minimum), so the result never rises; scores already in order stay as they are."""
    shown: list[float] = []
    for score in scores:
        shown.append(min(score, shown[-1]) if shown else score)
    return shown


def rank_tiers(tiers: Sequence[int | None]) -> list[int | None]:
    """The relevance tier each hit (best-ranked first) was ranked in: its own, or the best tier of any
    hit below it, when a later stage put it above that hit (a statement's successor moved right above
    it); so the tiers never fall down the hits. None (no tier: a tree node) stays None."""
    shown: list[int | None] = []
    best: int | None = None
    for tier in reversed(tiers):
        if tier is not None:
            best = tier if best is None else min(best, tier)
        shown.append(None if tier is None else best)
    return shown[::-1]
