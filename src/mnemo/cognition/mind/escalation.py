"""When System 1 hands a question to System 2 (cognitive-plan §3.5-3.6): pure decisions, no I/O.

Seed §3.5 ("Loop Before Escalate"): below an escalation threshold System 1 retries once with
targeted feedback, then escalates; the threshold adapts to the agent's maturity (memory count,
saturating at 1,000, and identity density: the mean weight centre of the memories above 0.7).
The seed's docstring says a young agent should escalate *more*, but its formula (0.3 + 0.5 x
maturity, escalating below it) would make a newborn escalate least; this module follows the stated
intent and the same range: 0.8 at bootstrap down to 0.3 at maturity.

Seed §3.6: escalate on two or more of low confidence, a detected contradiction, high complexity
and novelty (nothing known), and always on an irreversible action or a change to identity or goals.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["ALWAYS", "TRIGGERS", "Decision", "decide", "escalation_threshold", "maturity"]

TRIGGERS = ("low_confidence", "contradiction", "complexity", "novelty")
ALWAYS = ("irreversible", "identity", "goals")


def maturity(memory_count: int, identity_density: float) -> float:
    """0 (newborn) to 1 (mature): the mean of min(1, memories / 1,000) and the identity density."""
    if memory_count < 0 or not 0.0 <= identity_density <= 1.0:
        raise ValueError("memory_count must be >= 0 and identity_density within [0, 1]")
    return (min(1.0, memory_count / 1000) + identity_density) / 2


def escalation_threshold(memory_count: int, identity_density: float) -> float:
    """The confidence below which System 1 retries, then escalates: 0.8 newborn, 0.3 mature."""
    return 0.8 - 0.5 * maturity(memory_count, identity_density)


@dataclass(frozen=True, slots=True)
class Decision:
    escalate: bool
    reasons: tuple[str, ...]
    """The signals that fired, always-escalate ones first."""


def decide(signals: Iterable[str]) -> Decision:
    """The seed's rule over the signals present (names from :data:`TRIGGERS` and :data:`ALWAYS`)."""
    fired = set(signals)
    unknown = fired - set(TRIGGERS) - set(ALWAYS)
    if unknown:
        raise ValueError(f"unknown escalation signals {sorted(unknown)}")
    always = tuple(s for s in ALWAYS if s in fired)
    triggers = tuple(s for s in TRIGGERS if s in fired)
    return Decision(bool(always) or len(triggers) >= 2, always + triggers)
