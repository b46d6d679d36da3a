"""ACT-R activation: base-level learning, spreading, partial matching, noise.

Seed: cognitive-plan §2.7 (``A_i = B_i + S_i + P_i + eps_i`` with d = 0.5,
s = 0.4, P = -1.0, tau; dual timestamps: the first trace is the memory's
``event_time``, falling back to ``created_at``) and §2.3 (access timestamps).

Times are seconds (ages are clamped to at least one second). A hot memory's
access history is bounded: the newest ``keep`` timestamps are stored exactly
and older ones as a count plus the oldest time, summed in closed form with
Petrov's (2006) approximation, which assumes the older accesses were spread
evenly between the oldest one and the oldest kept one::

    sum_{j>k} t_j^-d  ~=  (n - k) * (t_n^(1-d) - t_k^(1-d)) / ((1 - d) * (t_n - t_k))
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = [
    "AccessHistory",
    "activation",
    "base_level",
    "logistic_noise",
    "partial_match",
    "record_access",
    "retrieval_probability",
    "spreading",
]

MIN_AGE = 1.0


@dataclass(frozen=True, slots=True)
class AccessHistory:
    """When a memory was used: the creation trace, the newest accesses, and a summary of older ones.

    ``recent`` holds epoch seconds, oldest first. ``older_count`` accesses happened before
    ``recent[0]``, the earliest of them at ``oldest``.
    """

    created: float
    recent: tuple[float, ...] = ()
    older_count: int = 0
    oldest: float | None = None

    @property
    def count(self) -> int:
        """Accesses ever recorded (the creation trace not included)."""
        return len(self.recent) + self.older_count


def record_access(history: AccessHistory, at: float, keep: int = 20) -> AccessHistory:
    """Add one access at ``at``; keeps at most ``keep`` exact timestamps and folds older ones into the summary."""
    if keep < 1:
        raise ValueError("keep must be >= 1")
    recent = sorted((*history.recent, at))
    older_count, oldest = history.older_count, history.oldest
    while len(recent) > keep:
        dropped = recent.pop(0)
        oldest = dropped if oldest is None else min(oldest, dropped)
        older_count += 1
    return AccessHistory(history.created, tuple(recent), older_count, oldest)


def _power(age: float, d: float) -> float:
    return max(age, MIN_AGE) ** -d


def base_level(history: AccessHistory, now: float, d: float = 0.5) -> float:
    """``B = ln(sum_j t_j^-d)`` over every trace, ages in seconds before ``now``."""
    if not 0 < d < 1:
        raise ValueError("decay d must be in (0, 1)")
    total = _power(now - history.created, d) + sum(_power(now - t, d) for t in history.recent)
    if history.older_count:
        t_k = max(now - (history.recent[0] if history.recent else now), MIN_AGE)
        t_n = max(now - (history.oldest if history.oldest is not None else now), MIN_AGE)
        if t_n - t_k > 1e-9:
            total += history.older_count * (t_n ** (1 - d) - t_k ** (1 - d)) / ((1 - d) * (t_n - t_k))
        else:
            total += history.older_count * _power(t_n, d)
    return math.log(total)


def spreading(similarity: float, weight: float = 1.0) -> float:
    """``S_i``: association with the current context, here ``weight * cosine(item, context)``."""
    return weight * similarity


def partial_match(attributes: Mapping[str, object], cues: Mapping[str, object], penalty: float = -1.0) -> float:
    """``P_i``: ``penalty`` times the share of cues that the item's attributes contradict.

    A cue the item has no attribute for is not a mismatch (nothing is known).
    """
    if not cues:
        return 0.0
    mismatched = sum(1 for key, want in cues.items() if key in attributes and attributes[key] != want)
    return penalty * mismatched / len(cues)


def logistic_noise(rng: random.Random, s: float = 0.4) -> float:
    """``eps_i``: one draw from a logistic distribution with scale ``s`` (mean 0)."""
    u = min(max(rng.random(), 1e-12), 1 - 1e-12)
    return s * math.log(u / (1.0 - u))


def activation(base: float, spread: float = 0.0, partial: float = 0.0, noise: float = 0.0) -> float:
    """``A_i = B_i + S_i + P_i + eps_i``."""
    return base + spread + partial + noise


def retrieval_probability(a: float, tau: float, s: float = 0.4) -> float:
    """ACT-R's chance that a chunk of activation ``a`` is retrieved at threshold ``tau``: in (0, 1)."""
    z = (a - tau) / s
    if z < -60:
        return 0.0
    return 1.0 / (1.0 + math.exp(-z))
