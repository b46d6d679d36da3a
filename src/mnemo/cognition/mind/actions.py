"""The action check of the agent's loop (cognitive-plan §3.4, "Output pipeline" and "Hard safety").

Seed: after the model call, the output is checked for an action. A communication action (a message
that leaves the agent) is delivered only after a check of the source tag of the input that led to
it; an internal action (updating the agent's own state, queueing a thought) runs; no action leaves
the output in working memory. Self-generated impulses need a higher confidence than user-prompted
ones. Every input carries a source tag with a confidence (soft metadata). Pure functions; no I/O.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "SELF_GENERATED",
    "SOURCE_CONFIDENCE",
    "SOURCE_FLOOR",
    "USER",
    "ActionCheck",
    "ActionKind",
    "SourceTag",
    "check_action",
    "required",
]

ActionKind = Literal["communication", "internal", "none"]
USER = "external_user"

SOURCE_CONFIDENCE = {USER: 1.0, "scheduled_task": 0.9, "consolidation_alert": 0.8, "internal_gut": 0.6,
                     "internal_dmn": 0.6}  # fmt: skip
"""How far an input of each source is taken at its word when no confidence is given: the user's own
message fully, the agent's spontaneous thoughts least (the seed names the tags, not these values)."""
SOURCE_FLOOR = 0.5
"""A communication whose input's source is trusted less than this is never delivered."""
SELF_GENERATED = 0.8
"""The answer confidence a communication the agent started itself needs; one answering the user
needs none beyond the escalation rules (the seed asks for "higher" for self-generated impulses; the
values are not fitted to anything)."""


@dataclass(frozen=True, slots=True)
class SourceTag:
    """Where an input came from, and how far it is trusted (0-1)."""

    source: str
    confidence: float

    @classmethod
    def of(cls, source: str, confidence: float | None = None) -> SourceTag:
        if source not in SOURCE_CONFIDENCE:
            raise ValueError(f"source must be one of {', '.join(SOURCE_CONFIDENCE)}, not {source!r}")
        value = SOURCE_CONFIDENCE[source] if confidence is None else confidence
        if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value) \
                or not 0.0 <= value <= 1.0:  # fmt: skip
            raise ValueError(f"source confidence must be within [0, 1], not {confidence!r}")
        return cls(source, float(value))

    @property
    def self_generated(self) -> bool:
        return self.source != USER


@dataclass(frozen=True, slots=True)
class ActionCheck:
    """One action the output implies, and whether it may happen."""

    kind: ActionKind
    text: str
    allowed: bool
    reason: str


def required(tag: SourceTag) -> float:
    """The answer confidence a communication started by an input with this tag needs."""
    return SELF_GENERATED if tag.self_generated else 0.0


def check_action(kind: ActionKind, text: str, tag: SourceTag, confidence: float | None) -> ActionCheck:
    """May this action happen? Internal actions and no action always may (they stay inside the
    agent). A communication needs its source tag trusted at least :data:`SOURCE_FLOOR`; answering the
    user needs nothing more (how sure the answer is was the escalation's business), while a message
    the agent starts on its own needs the answer's confidence at :data:`SELF_GENERATED`."""
    if kind != "communication":
        return ActionCheck(kind, text, True, "stays inside the agent")
    if tag.confidence < SOURCE_FLOOR:
        return ActionCheck(kind, text, False, f"source {tag.source} trusted {tag.confidence:.2f} < {SOURCE_FLOOR:.2f}")
    bar = required(tag)
    if (confidence is None and bar > 0) or (confidence is not None and confidence < bar):
        shown = "unknown" if confidence is None else f"{confidence:.2f}"
        return ActionCheck(kind, text, False, f"self-generated, confidence {shown} < {bar:.2f}")
    return ActionCheck(kind, text, True, f"source {tag.source} checked")
