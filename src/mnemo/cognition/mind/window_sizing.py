"""The adaptive context window: how much conversation an agent keeps in view (cognitive-plan §3.3).

Seed: the conversation is a token-budgeted FIFO; its size follows an intensity signal (the mean of
the gate score, System 2 recency, goal relevance and emotional charge): above 0.7 about 90% of the
maximum (deep focus, expensive), below 0.3 about 30-40% (relaxed, cheap), normal in between; the
oldest messages leave first, each through the exit gate, at most one embedding per 5 seconds during
a burst. Pure functions; the window itself is :class:`mnemo.agent.window.ContextWindow`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "DEEP",
    "NORMAL",
    "RELAXED",
    "Intensity",
    "RateLimit",
    "intensity",
    "prune_count",
    "system2_recency",
    "window_share",
]

DEEP = 0.9
"""Share of the maximum kept above intensity 0.7 (the seed's ~90%)."""
RELAXED = 0.35
"""Share kept below intensity 0.3 (the seed's 30-40%)."""
NORMAL = 0.6
"""Share kept in between. The seed says only "normal"; 0.6 sits between its two bands and is not
fitted to anything."""


@dataclass(frozen=True, slots=True)
class Intensity:
    """The four signals of the seed, each in [0, 1], and their mean."""

    gate: float
    """How much of what is in view the entry gate kept (not skipped as chatter)."""
    system2: float
    """System 2 recency: 1 right after an escalation, halving with each cycle since; 0 if never."""
    goals: float
    """The attended input's relevance to the goals."""
    charge: float
    """Its emotional charge."""
    value: float


def _unit(name: str, value: float) -> float:
    if not isinstance(value, (int, float)) or math.isnan(value) or not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be a number within [0, 1], not {value!r}")
    return float(value)


def intensity(gate: float, system2: float, goals: float, charge: float) -> Intensity:
    """The seed's intensity signal: the mean of its four parts."""
    g, s, r, c = (_unit(n, v) for n, v in (("gate", gate), ("system2", system2), ("goals", goals), ("charge", charge)))
    return Intensity(g, s, r, c, (g + s + r + c) / 4)


def system2_recency(cycles_since: int | None) -> float:
    """1 in the cycle of an escalation, halving with each cycle after it; 0 when none happened."""
    if cycles_since is None:
        return 0.0
    if cycles_since < 0:
        raise ValueError("cycles_since must be >= 0")
    return 0.5**cycles_since


def window_share(value: float) -> float:
    """The share of the maximum context the agent keeps at this intensity (the seed's three bands)."""
    value = _unit("intensity", value)
    if value > 0.7:
        return DEEP
    if value < 0.3:
        return RELAXED
    return NORMAL


def prune_count(tokens: Sequence[int], limit: int) -> int:
    """How many of the oldest messages (``tokens`` oldest first) must leave so the rest fit in
    ``limit``; the newest message always stays, even alone over the limit."""
    if limit < 0 or any(t < 0 for t in tokens):
        raise ValueError("limit and token counts must be >= 0")
    total = sum(tokens)
    dropped = 0
    while total > limit and dropped < len(tokens) - 1:
        total -= tokens[dropped]
        dropped += 1
    return dropped


@dataclass
class RateLimit:
    """At most one event per ``interval`` seconds (the seed's one embedding per 5 s while pruning)."""

    interval: float = 5.0
    last: float | None = None

    def ready(self, now: float) -> bool:
        return self.last is None or now - self.last >= self.interval

    def take(self, now: float) -> bool:
        """True (and counted) when an event may happen at ``now``."""
        if not self.ready(now):
            return False
        self.last = now
        return True
