"""The learned fusion of recall's head: a linear ranking model over what the search already
computed, and the spreading of the head across sessions.

Seeds: cognitive-plan §2.5 (hybrid search, fused), §4.6 (contextual retrieval: evidence sits in
turns around a hit and in other sessions), §4.5 (weights learned from outcomes, not hand-set).

Each candidate of the head is described by :data:`FEATURES`: the hand-set ranking's verdict as
``-log(rank)`` (the z-score fusion of dense, BM25 and MaxSim, neighbour smoothing, the late
re-rank and the period lift), its session neighbours' evidence one and two turns away, the evidence
its whole session holds and its rank there, whether the question names its speaker or it mentions
the question's names, whether it lies in the period the question names, and its kind. A
:class:`Ranker` scores them as ``sum_i w_i * (x_i - mean_i) / scale_i``: a pairwise logistic
model with non-negative weights (more evidence never counts against a candidate), trained offline
(``benchmarks/learn_fusion.py``, cross-validated by conversation) and shipped as a few numbers in
``mnemo/data/ranker.json``. The retrievers' own scores enter only through the hand-set rank: free
weights on them fitted LoCoMo's long chit-chat turns (a negative weight on dense similarity) and
lost short stated facts. A model whose other weights are zero reproduces the hand-set order.

:func:`spread_sessions` then re-orders the top of a ranking so that one session does not hold
every slot: each further candidate of a session already taken pays ``penalty`` (in units of the
scores' standard deviation), so a second session's best turn comes up unless it is much weaker.

:func:`represent_sessions` (issue 43) is the rule, not the penalty: the sessions with a candidate
within reach of the best (:func:`sessions_in_reach`: the first relevance tier of the ranking's
scores, as :func:`~mnemo.cognition.scoring.relevance.relevance_tiers` cuts it, no constant) are
each represented by their best candidate before any session's second candidate takes a place, so
one session's many turns cannot crowd another that matches as well.
"""

from __future__ import annotations

import json
import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from mnemo.cognition.scoring.relevance import relevance_tiers

__all__ = ["FEATURES", "Ranker", "represent_sessions", "sessions_in_reach", "spread_sessions", "standardise"]

K = TypeVar("K", bound=Hashable)

FEATURES: tuple[str, ...] = (
    "hand",
    "near1",
    "near2",
    "session_mass",
    "session_rank",
    "names",
    "speaker",
    "period",
    "memory",
    "line",
)
"""The features a candidate is ranked by, in the model's column order."""


@dataclass(frozen=True, slots=True)
class Ranker:
    """A linear ranking model over :data:`FEATURES`."""

    features: tuple[str, ...]
    """The feature each weight belongs to (:data:`FEATURES`, in order)."""
    mean: tuple[float, ...]
    """Each feature's mean over the training candidates."""
    scale: tuple[float, ...]
    """Each feature's standard deviation over the training candidates (1 where it is constant)."""
    weights: tuple[float, ...]
    """The weight of each standardised feature."""
    penalty: float = 0.0
    """Session spreading's penalty (:func:`spread_sessions`), chosen by cross-validation."""
    note: str = ""
    """Where the numbers came from (data, folds, figures)."""

    def __post_init__(self) -> None:
        n = len(self.features)
        if not (len(self.mean) == len(self.scale) == len(self.weights) == n):
            raise ValueError("a ranker needs one mean, scale and weight per feature")
        if any(not math.isfinite(v) for v in (*self.mean, *self.scale, *self.weights, self.penalty)):
            raise ValueError("a ranker's numbers must be finite")
        if any(s <= 0 for s in self.scale):
            raise ValueError("a ranker's scales must be positive")

    def scores(self, matrix: np.ndarray) -> np.ndarray:
        """The score of each row of ``matrix`` (one column per feature, in :attr:`features` order)."""
        x = np.asarray(matrix, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != len(self.features):
            raise ValueError(f"expected a matrix of {len(self.features)} columns, got shape {x.shape}")
        z = (x - np.asarray(self.mean)) / np.asarray(self.scale)
        return z @ np.asarray(self.weights)

    @classmethod
    def hand_set(cls) -> Ranker:
        """The hand-set order alone (every weight but ``hand``'s zero)."""
        n = len(FEATURES)
        return cls(FEATURES, (0.0,) * n, (1.0,) * n, tuple(float(f == "hand") for f in FEATURES))

    def to_json(self) -> str:
        return json.dumps(
            {
                "features": list(self.features),
                "mean": list(self.mean),
                "scale": list(self.scale),
                "weights": list(self.weights),
                "penalty": self.penalty,
                "note": self.note,
            },
            indent=1,
        )

    @classmethod
    def from_json(cls, text: str) -> Ranker:
        raw = json.loads(text)
        features = tuple(str(f) for f in raw["features"])
        if features != FEATURES:
            raise ValueError(f"a ranker over {features} does not fit the features recall computes ({FEATURES})")
        return cls(
            features,
            tuple(float(v) for v in raw["mean"]),
            tuple(float(v) for v in raw["scale"]),
            tuple(float(v) for v in raw["weights"]),
            float(raw.get("penalty", 0.0)),
            str(raw.get("note", "")),
        )


def standardise(values: Mapping[K, float], keys: Sequence[K], missing: float | None = None) -> list[float]:
    """``values`` of ``keys`` as z-scores over the keys that have one; a key without a value takes
    ``missing`` (default: the lowest z-score, "no evidence")."""
    present = [values[k] for k in keys if k in values]
    if not present:
        return [0.0] * len(keys)
    mu = sum(present) / len(present)
    sd = (sum((v - mu) ** 2 for v in present) / len(present)) ** 0.5
    if sd <= 1e-9 * max(1.0, abs(mu)):  # equal values (up to rounding): all average
        return [0.0 if k in values else (0.0 if missing is None else missing) for k in keys]
    low = (min(present) - mu) / sd if missing is None else missing
    return [(values[k] - mu) / sd if k in values else low for k in keys]


def spread_sessions(
    order: Sequence[K], scores: Mapping[K, float], session_of: Mapping[K, str], penalty: float, slots: int
) -> list[K]:
    """``order`` (best first) with its first ``slots`` places re-chosen greedily: each candidate's
    score less ``penalty`` standard deviations for every candidate of its session already placed
    (items with no session pay nothing). ``penalty`` 0 keeps ``order``; the rest follow in order."""
    if penalty <= 0 or slots < 2 or len(order) < 2:
        return list(order)
    values = [scores[k] for k in order]
    mu = sum(values) / len(values)
    sd = (sum((v - mu) ** 2 for v in values) / len(values)) ** 0.5 or 1.0
    left = list(order)
    taken: dict[str, int] = {}
    placed: list[K] = []
    while left and len(placed) < slots:
        best = max(
            range(len(left)),
            key=lambda n: (scores[left[n]] / sd - penalty * taken.get(session_of.get(left[n], ""), 0), -n),
        )
        chosen = left.pop(best)
        placed.append(chosen)
        session = session_of.get(chosen)
        if session is not None:
            taken[session] = taken.get(session, 0) + 1
    return placed + left


def sessions_in_reach(order: Sequence[K], scores: Mapping[K, float], session_of: Mapping[K, str]) -> set[str]:
    """The sessions within reach of the best: those with a candidate in the first relevance tier of
    the ranking's scores (walking down them, up to the first clear gap:
    :func:`~mnemo.cognition.scoring.relevance.relevance_tiers`, the scores' own scale, no constant)."""
    tiers = relevance_tiers({k: scores[k] for k in order})
    return {session_of[k] for k in order if k in session_of and tiers[k] == 0}


def represent_sessions(order: Sequence[K], reach: set[str], session_of: Mapping[K, str]) -> list[K]:
    """``order`` (best first) with each session of ``reach`` represented by its first candidate
    before any session's second candidate: a session's later candidates met while a session of
    ``reach`` is still unrepresented wait, in their order, until the last one is placed. Items with
    no session keep their places among the others; nothing changes with fewer than two sessions in
    reach."""
    if len(reach) < 2:
        return list(order)
    placed: list[K] = []
    waiting: list[K] = []
    seen: set[str] = set()
    missing = set(reach)
    for k in order:
        session = session_of.get(k)
        if session is None or session not in seen:
            placed.append(k)
            if session is not None:
                seen.add(session)
                missing.discard(session)
                if not missing:
                    placed.extend(waiting)
                    waiting.clear()
        elif missing:
            waiting.append(k)
        else:
            placed.append(k)
    return placed + waiting
