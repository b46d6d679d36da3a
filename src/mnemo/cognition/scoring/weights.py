"""Beta-distributed memory weights with diminishing returns and a ceiling.

Seeds: cognitive-plan §2.3 (``StochasticWeight``: alpha = evidence for,
beta = evidence against; Beta(1, 4) for a new memory, Beta(50, 1) for an
anchored one) and §3.9 Phase A (no centre above 0.95 unless anchored;
diminishing returns ``gain / log2(evidence + 1)``).

Weights are immutable values: :meth:`StochasticWeight.reinforce` and
:meth:`StochasticWeight.contradict` return new weights. Every change that is
stored goes through :func:`mnemo._dynamics.change_weights`, which adds the audit
row and the safety checks of :mod:`mnemo.cognition.scoring.safety`.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

__all__ = [
    "ANCHORED",
    "CEILING",
    "DEFAULT",
    "StochasticWeight",
    "ceiling_alpha",
    "diminished",
]

CEILING = 0.95


def diminished(gain: float, evidence: float) -> float:
    """``gain / log2(evidence + 1)``: the more evidence already held, the less one more piece moves.

    Evidence below 1 is treated as 1, so a gain is never amplified.
    """
    if gain < 0:
        raise ValueError("gain must be >= 0")
    return gain / math.log2(max(evidence, 1.0) + 1.0)


def ceiling_alpha(beta: float, ceiling: float = CEILING) -> float:
    """The largest alpha whose centre stays at or under ``ceiling`` for this beta."""
    return ceiling / (1.0 - ceiling) * beta


@dataclass(frozen=True, slots=True)
class StochasticWeight:
    """Beta(alpha, beta): how much a memory matters and how sure mnemo is of that."""

    alpha: float = 1.0
    beta: float = 4.0
    anchored: bool = False

    def __post_init__(self) -> None:
        if not (self.alpha > 0 and self.beta > 0) or not (math.isfinite(self.alpha) and math.isfinite(self.beta)):
            raise ValueError(f"alpha and beta must be finite and > 0, not ({self.alpha}, {self.beta})")

    def observe(self, rng: random.Random) -> float:
        """One draw from Beta(alpha, beta); ``rng`` carries the seed."""
        return rng.betavariate(self.alpha, self.beta)

    @property
    def center(self) -> float:
        """The mean alpha / (alpha + beta): the deterministic weight."""
        return self.alpha / (self.alpha + self.beta)

    @property
    def variance(self) -> float:
        total = self.alpha + self.beta
        return (self.alpha * self.beta) / (total**2 * (total + 1.0))

    @property
    def evidence(self) -> float:
        """alpha + beta."""
        return self.alpha + self.beta

    @property
    def is_contested(self) -> bool:
        """Much evidence on both sides (productive tension)."""
        return self.alpha > 5 and self.beta > 5

    @property
    def is_uninformed(self) -> bool:
        """Little evidence either way."""
        return self.alpha < 2 and self.beta < 2

    def reinforce(self, gain: float = 1.0, *, ceiling: float | None = CEILING) -> StochasticWeight:
        """Evidence for: alpha grows by the diminished gain, capped so the centre stays <= ``ceiling``.

        Anchored weights ignore the ceiling. ``ceiling=None`` applies no cap (used to learn
        what a disabled ceiling would have blocked).
        """
        alpha = self.alpha + diminished(gain, self.evidence)
        if ceiling is not None and not self.anchored:
            alpha = min(alpha, max(self.alpha, ceiling_alpha(self.beta, ceiling)))
        return StochasticWeight(alpha, self.beta, self.anchored)

    def contradict(self, gain: float = 0.5) -> StochasticWeight:
        """Evidence against: beta grows by the diminished gain. Anchored weights do not move."""
        if self.anchored:
            return self
        return StochasticWeight(self.alpha, self.beta + diminished(gain, self.evidence), self.anchored)


DEFAULT = StochasticWeight(1.0, 4.0)
ANCHORED = StochasticWeight(50.0, 1.0, anchored=True)
