"""The idle loop's sampling: which memories the mind wanders to when attention is free.

Seed: cognitive-plan §4.7 ("DMN / Idle Loop"): a stochastic sample of all memories, whatever their
weight, biased toward neglected important memories (high weight, little recent access), memories in
tension with strong ones, temporally distant memories (creative association) and strong memories
about the self (introspection); each sampled memory connects to a goal (a self-prompt), to a
disparate memory (an insight candidate) or to the identity (an evaluation signal); an entropy guard
broadens the sampling when one topic keeps coming back.

Pure functions; every draw takes a ``numpy.random.Generator``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

__all__ = [
    "BIASES",
    "Channel",
    "Pooled",
    "bias",
    "channel",
    "needs_broadening",
    "sample",
    "topic_entropy",
]

Channel = Literal["self_prompt", "insight", "evaluation"]

BIASES = {"neglected": 3.0, "tension": 2.0, "distant": 1.0, "self": 2.0}
"""How much each bias adds to a memory's base chance of 1 (hand-set, not fitted: the seed names
the biases, not their sizes)."""
NEGLECT_HALF_LIFE_DAYS = 7.0
"""A memory unused for this long counts as half neglected."""
DISTANT_HALF_LIFE_DAYS = 30.0
"""A memory of something this long ago counts as half distant (a month: not fitted)."""


@dataclass(frozen=True, slots=True)
class Pooled:
    """A memory as the sampler sees it."""

    id: Hashable
    center: float
    """Its Beta weight's centre."""
    idle_days: float
    """Days since it was last accessed (or written)."""
    age_days: float
    """Days since what it tells happened."""
    in_tension: bool = False
    """It is named by an open tension (or is a tension)."""
    about_self: bool = False
    """It is about the agent itself (a reflection, narrative, tension or insight, or says "I")."""


def _aged(days: float, half_life: float) -> float:
    return 1.0 - 0.5 ** (max(days, 0.0) / half_life)


def bias(p: Pooled) -> tuple[float, dict[str, float]]:
    """A memory's sampling weight (1 plus its biases) and each bias's share."""
    parts = {
        "neglected": BIASES["neglected"] * p.center * _aged(p.idle_days, NEGLECT_HALF_LIFE_DAYS),
        "tension": BIASES["tension"] * float(p.in_tension),
        "distant": BIASES["distant"] * _aged(p.age_days, DISTANT_HALF_LIFE_DAYS),
        "self": BIASES["self"] * p.center * float(p.about_self),
    }
    return 1.0 + sum(parts.values()), parts


def sample(
    pool: Sequence[Pooled],
    n: int,
    rng: np.random.Generator,
    *,
    temperature: float = 1.0,
    avoid: frozenset[Hashable] = frozenset(),
) -> list[tuple[Pooled, dict[str, float]]]:
    """``n`` memories drawn without replacement with probability proportional to
    ``bias ** (1 / temperature)`` (a higher temperature flattens the biases: broader sampling);
    memories in ``avoid`` (topics that keep returning) are drawn only when nothing else is left."""
    if temperature <= 0:
        raise ValueError("temperature must be > 0")
    if n <= 0 or not pool:
        return []
    scored = [(p, *bias(p)) for p in pool]
    fresh = [s for s in scored if s[0].id not in avoid]
    chosen = _draw(fresh, min(n, len(fresh)), rng, temperature)
    if len(chosen) < n:
        stale = [s for s in scored if s[0].id in avoid]
        chosen += _draw(stale, min(n - len(chosen), len(stale)), rng, temperature)
    return chosen


def _draw(
    scored: list[tuple[Pooled, float, dict[str, float]]], n: int, rng: np.random.Generator, temperature: float
) -> list[tuple[Pooled, dict[str, float]]]:
    if n <= 0:
        return []
    weights = np.array([w for _, w, _ in scored], dtype=float) ** (1.0 / temperature)
    picks = rng.choice(len(scored), size=n, replace=False, p=weights / weights.sum())
    return [(scored[i][0], scored[i][2]) for i in picks]


def topic_entropy(topics: Sequence[Hashable]) -> float:
    """Shannon entropy of the recent topics, normalised to [0, 1] by its maximum for that many
    draws (1: every draw a new topic; 0: one topic only)."""
    if len(topics) < 2:
        return 1.0
    counts = Counter(topics)
    total = len(topics)
    h = -sum(c / total * math.log(c / total) for c in counts.values())
    return h / math.log(total)


def needs_broadening(topics: Sequence[Hashable], floor: float = 0.5, window: int = 8) -> frozenset[Hashable]:
    """The entropy guard: when the last ``window`` topics' entropy is under ``floor``, the topics
    that came back more than once (to be avoided next); else nothing."""
    recent = list(topics)[-window:]
    if len(recent) < window or topic_entropy(recent) >= floor:
        return frozenset()
    return frozenset(t for t, c in Counter(recent).items() if c > 1)


def channel(goal: float, identity: float, partner: float | None, floor: float) -> Channel | None:
    """Where a sampled memory goes: a goal it is about (cosine at least ``floor``) makes a
    self-prompt; else a value it touches an evaluation signal; else a disparate partner (a memory
    reached by association but unlike it, cosine under ``floor``) an insight candidate; else none."""
    if goal >= floor:
        return "self_prompt"
    if identity >= floor:
        return "evaluation"
    if partner is not None and partner < floor:
        return "insight"
    return None
