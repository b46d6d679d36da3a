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

from dataclasses import dataclass
from typing import Literal

from mnemo.cognition.weights import CEILING, StochasticWeight

__all__ = ["Change", "Policy", "Violation", "propose"]

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
