"""Attention allocation: which pending input the agent attends to this cycle.

Seed: cognitive-plan §3.10 ("Attention Allocation Function"): every cycle the pending candidates
(user message, internal thoughts, consolidation alerts, gut signals, scheduled tasks) compete on
salience = 0.3 novelty + 0.3 relevance to goals + 0.2 emotional charge + 0.2 urgency, with the
seed's urgencies (user 0.8, gut 0.4, DMN 0.2); the winner becomes the cycle's input, the losers
wait with decaying urgency, and a cognitive state report makes the competition visible to the
model. Pure functions over unit vectors; no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

__all__ = ["URGENCY", "WEIGHTS", "Allocation", "Candidate", "Scored", "allocate", "salience", "state_report"]

URGENCY = {"external_user": 0.8, "scheduled_task": 0.6, "consolidation_alert": 0.5, "internal_gut": 0.4,
           "internal_dmn": 0.2}  # fmt: skip
"""The seed's urgencies (user 0.8, gut 0.4, DMN 0.2); tasks and alerts between them (not in the seed)."""
WEIGHTS = {"novelty": 0.3, "relevance": 0.3, "charge": 0.2, "urgency": 0.2}
"""The seed's salience weights."""
DECAY = 0.8
"""A losing candidate's urgency is multiplied by this each cycle it waits (the seed says "decaying";
the rate is not the seed's and not fitted to anything)."""


@dataclass(frozen=True, slots=True)
class Candidate:
    """One pending input: its source kind, text, unit vector, urgency and emotional charge."""

    id: str
    source: str
    text: str
    vector: np.ndarray
    urgency: float
    charge: float = 0.0
    waited: int = 0


@dataclass(frozen=True, slots=True)
class Scored:
    candidate: Candidate
    novelty: float
    relevance: float
    charge: float
    urgency: float
    salience: float


@dataclass(frozen=True, slots=True)
class Allocation:
    winner: Scored
    scored: tuple[Scored, ...]
    """Every candidate, most salient first."""
    waiting: tuple[Candidate, ...]
    """The losers, their urgency decayed, for the next cycle."""


def _max_similarity(vector: np.ndarray, others: Sequence[np.ndarray]) -> float:
    if not others:
        return 0.0
    return float(max(float(np.dot(vector, o)) for o in others))


def salience(candidate: Candidate, recent: Sequence[np.ndarray], goals: Sequence[tuple[float, np.ndarray]]) -> Scored:
    """The seed's salience of one candidate against the recent context and the weighted goals."""
    novelty = min(1.0, max(0.0, 1.0 - _max_similarity(candidate.vector, recent)))
    relevance = max((w * float(np.dot(candidate.vector, g)) for w, g in goals), default=0.0)
    relevance = min(1.0, max(0.0, relevance))
    charge = min(1.0, max(0.0, abs(candidate.charge)))
    urgency = min(1.0, max(0.0, candidate.urgency))
    total = (WEIGHTS["novelty"] * novelty + WEIGHTS["relevance"] * relevance + WEIGHTS["charge"] * charge
             + WEIGHTS["urgency"] * urgency)  # fmt: skip
    return Scored(candidate, novelty, relevance, charge, urgency, total)


def allocate(
    candidates: Sequence[Candidate],
    recent: Sequence[np.ndarray],
    goals: Sequence[tuple[float, np.ndarray]],
    decay: float = DECAY,
) -> Allocation:
    """The most salient candidate wins (ties: the one waiting longest, then the id); the others wait."""
    if not candidates:
        raise ValueError("attention needs at least one candidate")
    scored = sorted(
        (salience(c, recent, goals) for c in candidates),
        key=lambda s: (-s.salience, -s.candidate.waited, s.candidate.id),
    )
    waiting = tuple(replace(s.candidate, urgency=s.candidate.urgency * decay, waited=s.candidate.waited + 1)
                    for s in scored[1:])  # fmt: skip
    return Allocation(scored[0], tuple(scored), waiting)


def state_report(allocation: Allocation, width: int = 80) -> str:
    """The cognitive state report injected into the model's context: candidates, scores, winner."""
    lines = ["[cognitive state] attention this cycle:"]
    for s in allocation.scored:
        mark = "->" if s is allocation.winner else "  "
        text = s.candidate.text if len(s.candidate.text) <= width else s.candidate.text[: width - 1] + "…"
        lines.append(
            f"{mark} {s.candidate.source} salience {s.salience:.2f} (novelty {s.novelty:.2f}, relevance "
            f"{s.relevance:.2f}, charge {s.charge:.2f}, urgency {s.urgency:.2f}): {text}"
        )
    waiting = len(allocation.waiting)
    lines.append(f"Attending to the {allocation.winner.candidate.source} input; {waiting} waiting.")
    return "\n".join(lines)
