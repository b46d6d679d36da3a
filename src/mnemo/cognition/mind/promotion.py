"""Promotion: experiences that keep coming back grow into goals, then into identity.

Seeds: cognitive-plan §4.3 (in unified memory a promotion is a large ``reinforce``, not a move:
a pattern seen 5+ times over 14+ days gets ``reinforce(2.0)``, toward the goal range; 10+ times
over 30+ days ``reinforce(5.0)``, toward identity; operator approval above a centre of 0.85 at a
trust level under 3; memories no longer reinforced are demoted by decay, dormant, never deleted)
and §5.3 (utility from outcomes guards the way: a pattern whose uses went badly is not promoted).

Pure functions over observation times; no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

__all__ = ["LEVELS", "Level", "Step", "demoted", "needs_approval", "next_step", "utility"]

Level = Literal["goal", "identity"]


@dataclass(frozen=True, slots=True)
class Step:
    """One rung of the promotion pathway."""

    level: Level
    times: int
    days: float
    gain: float
    centre: float
    """The rung's range begins here: the promotion lifts the centre at least this far (diminishing
    returns alone would leave a well-evidenced memory short of it)."""


LEVELS = (Step("goal", 5, 14.0, 2.0, 0.65), Step("identity", 10, 30.0, 5.0, 0.9))
"""The seed's two rungs: goal-equivalent weight (centre about 0.6-0.7) and identity-equivalent weight
(0.8 and up; 0.9 puts it past the operator's approval line at low trust)."""
APPROVAL_CENTRE = 0.85
APPROVAL_TRUST = 3
DORMANT_DAYS = 30.0
"""A promoted memory not reinforced for this long steps down a rung (the seed says "gradual"; the
span is the identity rung's)."""


def next_step(current: Level | None, seen: Sequence[datetime]) -> Step | None:
    """The rung a pattern seen at ``seen`` (its observation times) reaches beyond ``current``."""
    if not seen:
        return None
    span = (max(seen) - min(seen)).total_seconds() / 86400
    reached = [s for s in LEVELS if len(seen) >= s.times and span >= s.days]
    order = [s.level for s in LEVELS]
    floor = -1 if current is None else order.index(current)
    better = [s for s in reached if order.index(s.level) > floor]
    return better[-1] if better else None


def needs_approval(centre_after: float, trust: int) -> bool:
    """The operator must approve a promotion that lifts a centre above 0.85 at trust under 3."""
    return centre_after > APPROVAL_CENTRE and trust < APPROVAL_TRUST


def demoted(current: Level | None, last_seen: datetime | None, now: datetime) -> Level | Literal[False] | None:
    """The rung a promoted memory falls to after :data:`DORMANT_DAYS` without reinforcement
    (identity -> goal -> none), or False when it stays."""
    if current is None or last_seen is None or now - last_seen < timedelta(days=DORMANT_DAYS):
        return False
    return "goal" if current == "identity" else None


def utility(values: Sequence[float], prior: float = 0.0, weight: float = 1.0) -> float:
    """A memory's utility from the outcomes of the recalls that used it: their mean shrunk toward
    ``prior`` by ``weight`` pseudo-outcomes (a Q-value's running mean with a prior)."""
    return (sum(values) + prior * weight) / (len(values) + weight)
