"""Safety ceilings on weight changes, enforced or in shadow mode.

Seed: cognitive-plan §3.9 (hard ceiling: no weight centre above 0.95 unless
immutable; diminishing returns; a rate limiter of 10% per change; every
mechanism built now, disabled ones run in shadow mode: they never block, but
the audit log records what they would have blocked).

:func:`propose` is the single pure function behind every weight change: it
applies the change with diminishing returns, checks each ceiling, and returns
the weight to store plus every violation (enforced or shadow).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from mnemo.cognition.scoring.weights import CEILING, StochasticWeight

__all__ = [
    "SAFETY_CHECKS",
    "Change",
    "Policy",
    "Violation",
    "breaker",
    "coherence",
    "coherence_drop",
    "cycle_rate",
    "entropy_drop",
    "goal_budget",
    "propose",
    "two_gate",
    "weight_entropy",
]

Operation = Literal["reinforce", "contradict"]


@dataclass(frozen=True, slots=True)
class Policy:
    """Which ceilings are enforced (the others run in shadow mode)."""

    ceiling: float = CEILING
    ceiling_enforced: bool = True
    max_step: float = 0.10  # largest relative change of the centre in one step
    rate_limit_enforced: bool = False


@dataclass(frozen=True, slots=True)
class Violation:
    ceiling: str
    enforced: bool
    detail: str


@dataclass(frozen=True, slots=True)
class Change:
    old: StochasticWeight
    new: StochasticWeight
    requested: StochasticWeight  # what the change would have been with no ceiling at all
    violations: tuple[Violation, ...]

    @property
    def blocked(self) -> bool:
        return any(v.enforced for v in self.violations)


def propose(old: StochasticWeight, op: Operation, gain: float, policy: Policy = Policy()) -> Change:
    """Apply ``op`` with ``gain`` to ``old`` under ``policy``.

    Anchored weights never lose weight and are exempt from the ceiling.
    """
    if gain < 0:
        raise ValueError("gain must be >= 0")
    requested = old.reinforce(gain, ceiling=None) if op == "reinforce" else old.contradict(gain)
    new = requested
    violations: list[Violation] = []
    if op == "reinforce" and not old.anchored and requested.center > policy.ceiling + 1e-12:
        violations.append(
            Violation(
                "ceiling",
                policy.ceiling_enforced,
                f"centre {requested.center:.4f} would exceed {policy.ceiling:.2f}",
            )
        )
        if policy.ceiling_enforced:
            new = old.reinforce(gain, ceiling=policy.ceiling)
    step = abs(requested.center - old.center) / old.center
    if step > policy.max_step + 1e-12:
        violations.append(
            Violation(
                "rate_limit",
                policy.rate_limit_enforced,
                f"centre would move {step:.1%} in one step (limit {policy.max_step:.0%})",
            )
        )
        if policy.rate_limit_enforced:
            new = old
    return Change(old, new, requested, tuple(violations))


# --- phases B and C (cognitive-plan §3.9): checks on cycles, parameters and patterns ---------------
SAFETY_CHECKS = ("cycle_rate", "two_gate", "entropy", "circuit_breaker", "coherence", "goal_budget")
"""The phase B and C mechanisms, each in shadow mode (logged, never blocking) until enforced."""


def cycle_rate(before: float, after: float, max_step: float = 0.10) -> str | None:
    """Phase B rate limiter: a weight's centre may move at most ``max_step`` (relative) in one
    consolidation cycle, whatever the number of steps."""
    step = abs(after - before) / max(before, 1e-9)
    return None if step <= max_step + 1e-12 else f"centre moved {step:.1%} in one cycle (limit {max_step:.0%})"


def two_gate(before: float, after: float, margin: float, over: Sequence[str]) -> list[str]:
    """Phase B Two-Gate guardrail before a parameter change: (1) the validation margin: the change
    must do better than the current parameters on held-out outcomes by more than ``margin``;
    (2) the capacity cap (``over``: what the change would push past its capacity; empty: within it)."""
    failed = []
    if not after > before + margin:
        failed.append(f"validation: {after:.3f} against {before:.3f} (margin {margin:.3f})")
    if over:
        failed.append(f"capacity: {', '.join(over)} beyond the cap")
    return failed


def weight_entropy(centres: Sequence[float]) -> float:
    """Phase C: Shannon entropy of the weight distribution (the centres as shares), normalised to
    [0, 1] (1: all equal; toward 0: a few memories hold the weight)."""
    total = sum(c for c in centres if c > 0)
    if len(centres) < 2 or total <= 0:
        return 1.0
    shares = [p for p in (c / total for c in centres if c > 0) if p > 0]  # a share may underflow to 0
    return -sum(p * math.log(p) for p in shares) / math.log(len(centres))


def entropy_drop(previous: float | None, current: float, tolerance: float = 0.05) -> str | None:
    """Phase C entropy monitor: a drop of more than ``tolerance`` since the last cycle."""
    if previous is None or previous - current <= tolerance:
        return None
    return f"weight entropy fell from {previous:.3f} to {current:.3f}"


def breaker(
    counts: Mapping[str, int], reinforced: Mapping[str, bool], limit: int = 3
) -> tuple[dict[str, int], list[str]]:
    """Phase C circuit breaker: per pattern (memory), the consecutive cycles it was reinforced
    without new evidence (``reinforced``: pattern -> whether new evidence came with it this cycle).
    A cycle with new evidence, or without reinforcement, resets the count. Returns the counts and
    the patterns at or past ``limit``."""
    out = {p: c for p, c in counts.items() if p in reinforced and not reinforced[p]}
    for p, evidence in reinforced.items():
        out[p] = 0 if evidence else counts.get(p, 0) + 1
    out = {p: c for p, c in out.items() if c > 0}
    return out, sorted(p for p, c in out.items() if c >= limit)


def coherence(epistemic: float, action: float, value: float) -> float:
    """Phase C coherence C in [0, 1]: the mean of the epistemic (strong beliefs that do not
    contradict each other), action (attempts that succeed) and value (values without an open
    tension) axes, each in [0, 1]."""
    return (epistemic + action + value) / 3.0


def coherence_drop(before: float, after: float, tolerance: float = 0.02) -> str | None:
    return None if before - after <= tolerance else f"coherence fell from {before:.3f} to {after:.3f}"


def goal_budget(centres: Mapping[str, float], share: float = 0.40, least: int = 3) -> list[str]:
    """The ceiling on goal-like memory: none may hold more than ``share`` of the goal-weight budget
    (the sum of the goal-like centres); checked once there are ``least`` goal-like memories (with
    fewer, one of them always holds more)."""
    total = sum(centres.values())
    if len(centres) < least or total <= 0:
        return []
    return sorted(m for m, c in centres.items() if c / total > share + 1e-12)
