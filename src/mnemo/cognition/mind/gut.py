"""The two-centroid gut feeling: where attention is against where the self is, and its axes.

Seed: cognitive-plan §5.1 ("Two-Centroid Gut Feeling"): the subconscious centroid is
``0.5 * L0 + 0.25 * L1 + 0.25 * L2`` (values, goals, and the importance-weighted average of all
memories; a missing layer's share goes to the others), the attention centroid is the
recency-weighted average of the current context, their delta is the gut: its magnitude the
motivational intensity, its direction the valence. Every delta is logged with its context, action
and an outcome slot; deep consolidation runs a PCA over the logged deltas and names the axes that
correlate with outcomes (things that went well: "hope"; badly: "fear"). The gut feeds the blend's
emotional component (mood-congruent recall), attention's emotional charge and the window's intensity.

Pure numpy over unit vectors; no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "LAYER_SHARES",
    "LEAST_DELTAS",
    "Axis",
    "Feeling",
    "attention_centroid",
    "axes",
    "charge",
    "feel",
    "mood_alignment",
    "subconscious_centroid",
    "weighted_centroid",
]

LAYER_SHARES = (0.5, 0.25, 0.25)
"""The seed's layer weights for values (L0), goals (L1) and memories (L2)."""
LEAST_DELTAS = 10
"""Deltas a scope needs before the night looks for axes in them."""
NAMED = 0.3
"""An axis whose correlation with outcomes is at least this (in absolute value) is named hope or
fear (not fitted; a conventional "moderate" correlation)."""


def _unit(v: np.ndarray) -> np.ndarray | None:
    norm = float(np.linalg.norm(v))
    return None if norm < 1e-12 else v / norm


def weighted_centroid(vectors: Sequence[np.ndarray], weights: Sequence[float]) -> np.ndarray | None:
    """The unit vector of ``sum w_i v_i`` (None with no vectors or no positive weight)."""
    if len(vectors) == 0:
        return None
    if len(vectors) != len(weights):
        raise ValueError("one weight per vector")
    w = np.clip(np.asarray(weights, dtype=float), 0.0, None)
    if w.sum() <= 0:
        return None
    return _unit(np.average(np.asarray(vectors, dtype=float), axis=0, weights=w))


def subconscious_centroid(
    values: np.ndarray | None, goals: np.ndarray | None, memories: np.ndarray | None
) -> np.ndarray | None:
    """The seed's layered centroid of the three layer centroids (each a unit vector or None)."""
    layers = [(s, c) for s, c in zip(LAYER_SHARES, (values, goals, memories), strict=True) if c is not None]
    if not layers:
        return None
    return weighted_centroid([c for _, c in layers], [s for s, _ in layers])


def attention_centroid(recent: Sequence[np.ndarray], half_life: float = 3.0) -> np.ndarray | None:
    """Recency-weighted centroid of the context, oldest first: the newest weighs 1, one
    ``half_life`` items older 0.5."""
    if half_life <= 0:
        raise ValueError("half_life must be > 0")
    n = len(recent)
    return weighted_centroid(list(recent), [0.5 ** ((n - 1 - i) / half_life) for i in range(n)])


@dataclass(frozen=True, slots=True)
class Feeling:
    """One gut delta: attention minus subconscious."""

    delta: np.ndarray
    magnitude: float
    """Motivational intensity in [0, 1]: half the delta's length (two unit vectors are at most 2 apart)."""
    valence: float
    """Motivational valence in [-1, 1]: the delta's cosine with the hope direction (the named hope
    axis, else the goals' centroid), 0 when there is none."""


def feel(attention: np.ndarray, subconscious: np.ndarray, hope: np.ndarray | None = None) -> Feeling:
    """The gut delta of an attention centroid against the subconscious one."""
    delta = np.asarray(attention, dtype=float) - np.asarray(subconscious, dtype=float)
    magnitude = min(1.0, float(np.linalg.norm(delta)) / 2.0)
    valence = 0.0
    unit, direction = _unit(delta), None if hope is None else _unit(np.asarray(hope, dtype=float))
    if unit is not None and direction is not None:
        valence = float(np.clip(unit @ direction, -1.0, 1.0))
    return Feeling(delta, magnitude, valence)


def charge(vector: np.ndarray, feeling: Feeling | None) -> float:
    """A candidate's emotional charge for attention: how far it lies along the gut's direction,
    scaled by the gut's intensity (0 without a feeling)."""
    if feeling is None:
        return 0.0
    unit = _unit(feeling.delta)
    if unit is None:
        return 0.0
    return float(min(1.0, abs(float(np.asarray(vector, dtype=float) @ unit)) * (0.5 + feeling.magnitude)))


def mood_alignment(similarity_to_mood: float) -> float:
    """The blend's emotional component from an item's cosine with the mood direction: 0.5 + cos/2
    (the seed's neutral 0.5 when the item is orthogonal, or when there is no mood)."""
    return float(np.clip(0.5 + 0.5 * similarity_to_mood, 0.0, 1.0))


@dataclass(frozen=True, slots=True)
class Axis:
    """A principal component of the logged deltas."""

    rank: int
    axis: np.ndarray
    variance: float
    """The share of the deltas' variance along it."""
    correlation: float | None
    """Pearson correlation of the deltas' projections with their outcomes (None: fewer than 3
    outcomes or no spread)."""
    name: str


def axes(deltas: np.ndarray, outcomes: Sequence[float | None], k: int = 10) -> list[Axis]:
    """PCA of the deltas (rows): the top ``k`` components by variance, each signed so that its
    projection correlates positively with good outcomes where outcomes exist; the most correlated
    one, when it reaches :data:`NAMED`, is named ``hope`` (it points toward what went well; its
    opposite pole is fear), the others ``axis N``.

    A component is an axis when it carries more than an average direction's share of the variance
    (the Kaiser criterion: more than 1/r of it, r the deltas' rank) or its correlation with outcomes
    reaches :data:`NAMED`; the rest is noise spread evenly, not a feeling (issue 39 item 13: nine
    axes at 0% of variance were listed)."""
    x = np.asarray(deltas, dtype=float)
    if x.ndim != 2 or len(x) < 2:
        return []
    if len(outcomes) != len(x):
        raise ValueError("one outcome slot per delta")
    centred = x - x.mean(axis=0)
    _, s, vt = np.linalg.svd(centred, full_matrices=False)
    total = float((s**2).sum())
    if total <= 1e-12:
        return []
    known = np.array([o is not None for o in outcomes])
    values = np.array([0.0 if o is None else float(o) for o in outcomes])
    found: list[Axis] = []
    average = 1.0 / max(1, int((s**2 / total > 1e-9).sum()))
    for rank in range(min(k, len(s))):
        share = float(s[rank] ** 2 / total)
        if share < 1e-9:
            break
        axis, corr = vt[rank], None
        if known.sum() >= 3:
            proj = centred[known] @ axis
            if proj.std() > 1e-12 and values[known].std() > 1e-12:
                corr = float(np.corrcoef(proj, values[known])[0, 1])
                if corr < 0:  # an SVD direction's sign is arbitrary: point it toward good outcomes
                    axis, corr = -axis, -corr
        if rank == 0 or share > average or abs(corr or 0.0) >= NAMED:
            found.append(Axis(len(found), axis, share, corr, f"axis {len(found) + 1}"))
    return _named(found)


def _named(found: list[Axis]) -> list[Axis]:
    """The most outcome-correlated axis (signed toward good outcomes) is ``hope``, when its
    correlation reaches :data:`NAMED`."""
    best = max(found, key=lambda a: a.correlation or 0.0, default=None)
    if best is None or (best.correlation or 0.0) < NAMED:
        return found
    return [Axis(a.rank, a.axis, a.variance, a.correlation, "hope") if a is best else a for a in found]
