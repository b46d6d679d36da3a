"""The relevance blend: how its components mix, and relevance first.

Seed: cognitive-plan §3.1 (components in [0, 1] mixed by Dirichlet-sampled
weights; a cold-start alpha set that favours semantic search until the
archive holds enough memories, then the mature set; noise for exploration;
temporal recency). The seed's "semantic similarity" is mnemo's fused search
score (semantic + lexical, min-max scaled over the candidates); ACT-R
activation and the Beta weight join it. The components themselves, their
alphas and how each is computed are declared once, in
:mod:`mnemo.cognition.scoring.blend_components`.

Stochastic mode draws the blend weights from Dirichlet(alphas) and the noise
component uniformly, both from a seeded generator; deterministic mode (the
default for benchmarks and tests) uses the expected weights
``alpha_c / sum(alpha)`` and noise 0.5, so one query always ranks the same.

The alphas keep search dominant. That alone still let
a new, much-used memory pass a clearly more relevant old one (issue 28), so
:func:`relevance_tiers` now makes it a rule: the blend orders candidates only
within a tier of about equal relevance.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from itertools import pairwise
from typing import TypeVar

import numpy as np

from mnemo.cognition.scoring.blend_components import COMPONENTS

K = TypeVar("K", bound=Hashable)

__all__ = [
    "blend",
    "blend_weights",
    "minmax",
    "most_relevant",
    "relevance_tiers",
    "suppressible",
]


def blend_weights(alphas: Mapping[str, float], rng: np.random.Generator | None = None) -> dict[str, float]:
    """Weights summing to 1: a Dirichlet(alphas) draw with ``rng``, else their expected values."""
    keys = [c for c in COMPONENTS if c in alphas]
    values = np.array([alphas[c] for c in keys], dtype=float)
    if len(keys) == 0 or np.any(values <= 0):
        raise ValueError("every blend alpha must be > 0")
    drawn = rng.dirichlet(values) if rng is not None else values / values.sum()
    return {c: float(w) for c, w in zip(keys, drawn, strict=True)}


def minmax(scores: Mapping[object, float]) -> dict[object, float]:
    """Scale scores to [0, 1] over the candidates (all 1.0 when they are equal)."""
    if not scores:
        return {}
    lo, hi = min(scores.values()), max(scores.values())
    if hi - lo < 1e-12:
        return dict.fromkeys(scores, 1.0)
    return {k: (v - lo) / (hi - lo) for k, v in scores.items()}


def blend(components: Mapping[str, float], weights: Mapping[str, float]) -> float:
    """The final score: ``sum_c weight_c * component_c`` (components missing from ``components`` count 0)."""
    return sum(w * components.get(c, 0.0) for c, w in weights.items())


# --- use strengthens, being returned does not (cognitive-plan §3.8) ---------------------------------
def most_relevant(search: Mapping[K, float], k: int) -> frozenset[K]:
    """The ``k`` candidates with the best search scores: relevance alone, before use, weight, recency,
    association and noise reorder them (ties broken by ``str`` of the key, as the blend's sort does).

    Recall reinforces a returned memory only when it is among these: a memory the blend lifted into
    the top k over more relevant ones is not strengthened for it, so a lift never feeds the next."""
    ranked = sorted(search, key=lambda i: (-search[i], str(i)))
    return frozenset(ranked[: max(k, 0)])


def suppressible(item: K, relevant: frozenset[K], similarity: Mapping[K, float], threshold: float) -> bool:
    """Whether a near miss may be suppressed: only when it is not relevant, neither among the search
    ranking's top k nor as similar to the question as recall's refusal line asks of an answer
    (retrieval-induced forgetting weakens competitors, never what the question is about)."""
    return item not in relevant and similarity.get(item, 0.0) < threshold


# --- relevance first (cognitive-plan §3.1, ACT-R partial matching) -----------------------------------
def relevance_tiers(search: Mapping[K, float]) -> dict[K, int]:
    """Group candidates into tiers of about equal relevance: walking down the search scores, a new
    tier starts at a clear gap, one wider than the mean gap over the candidates (the scores' own
    scale, no constant) and not followed by a wider one (a gap just before a wider one sits inside
    a loose cluster, as between two twins that differ in one detail, not at its edge). Tier 0 is
    the most relevant; equal scores always share a tier.

    Use, weight, recency, association and noise reorder candidates inside a tier; they never lift an
    item over one in a better tier: a clearly less relevant memory stays below however active it is,
    as partial matching keeps a dissimilar chunk out in ACT-R."""
    ranked = sorted(search, key=lambda i: -search[i])
    if len(ranked) < 3:
        return dict.fromkeys(ranked, 0)
    gaps = [search[a] - search[b] for a, b in pairwise(ranked)]
    mean_gap = sum(gaps) / len(gaps)
    tiers = {ranked[0]: 0}
    tier = 0
    for n, item in enumerate(ranked[1:]):
        following = gaps[n + 1] if n + 1 < len(gaps) else 0.0
        if gaps[n] > mean_gap and gaps[n] >= following:
            tier += 1
        tiers[item] = tier
    return tiers
