"""Tensions: a strong value contradicted by what the agent did.

Seed: cognitive-plan §4.2 ("Behavioral contradiction detection"): for each high-weight value or goal
memory (centre above 0.7), behaviour memories that contradict it make a ``tension`` memory
("Internal contradiction: ..."), with no salience bonus and no nagging; a tension surfaced more
than 5 times without resolution is "acknowledged"; later behaviour aligned with the value resolves
it. The offline check is the exit gate's cheapest one, made word-stem tolerant: one text negates
what the other asserts about the same words, or states another value in the same frame.

Pure functions; no I/O.
"""

from __future__ import annotations

import re
from typing import Literal

from mnemo.cognition.mind.gate_rules import content_words, substitution_conflict

__all__ = ["STRONG", "SURFACED", "Status", "aligned", "next_status", "opposes", "statement"]

Status = Literal["open", "acknowledged", "resolved"]
STRONG = 0.7
"""A value or goal memory counts as strong above this centre (the seed's)."""
SURFACED = 5
"""Surfaced more than this many times unresolved: acknowledged (the seed's)."""

_NEG = re.compile(
    r"\b(not|no|never|nothing|cannot|can't|won't|don't|doesn't|didn't|isn't|wasn't|hasn't|haven't|"
    r"instead|skipped|ignored|broke|failed|avoided)\b|n't\b",
    re.IGNORECASE,
)
_POLARITY = frozenset({"not", "no", "never", "nothing", "instead", "skipped", "ignored", "broke", "failed", "avoided"})


def _stem(w: str) -> str:
    """A crude English stem, the same for a word's common forms (delay, delays, delayed -> dela;
    query, queries -> quer; flag, flagged -> flag; honest, honesty -> honest)."""
    if w.endswith(("ies", "ied")) and len(w) > 4:
        w = w[:-3] + "y"
    elif w.endswith("ness") and len(w) > 6:
        w = w[:-4]
    elif w.endswith("ing") and len(w) > 5:
        w = w[:-3]
    elif w.endswith(("ed", "es")) and len(w) > 4:
        w = w[:-2]
    elif w.endswith("s") and not w.endswith("ss") and len(w) > 3:
        w = w[:-1]
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "ls":
        w = w[:-1]
    return w[:-1] if w.endswith("y") and len(w) > 3 else w


def _stems(text: str) -> set[str]:
    return {_stem(w) for w in content_words(text) if w not in _POLARITY and len(w) >= 3}


def _overlap(a: str, b: str) -> float:
    sa, sb = _stems(a), _stems(b)
    if not sa or not sb:
        return 0.0
    return len(sa & sb) / min(len(sa), len(sb))


def opposes(value: str, behaviour: str, overlap: float = 0.34) -> bool:
    """Whether ``behaviour`` contradicts ``value``: the same subject (stems shared) with opposite
    polarity (one negates or reports failing it), or another value in the same frame."""
    if bool(_NEG.search(value)) != bool(_NEG.search(behaviour)) and _overlap(value, behaviour) >= overlap:
        return True
    return substitution_conflict(value, behaviour)


def aligned(value: str, behaviour: str, overlap: float = 0.34) -> bool:
    """Whether ``behaviour`` acts on ``value``: the same subject, the same polarity."""
    return bool(_NEG.search(value)) == bool(_NEG.search(behaviour)) and _overlap(value, behaviour) >= overlap


def next_status(status: Status, surfaced: int, resolved: bool) -> Status:
    """The tension lifecycle: resolved by aligned behaviour; acknowledged once surfaced more than
    :data:`SURFACED` times unresolved; open otherwise."""
    if status == "resolved" or resolved:
        return "resolved"
    if surfaced > SURFACED:
        return "acknowledged"
    return status


def statement(value: str, behaviour: str) -> str:
    """The tension memory's text."""
    return f"Internal contradiction: I hold that {value.strip().rstrip('.')}, yet {behaviour.strip().rstrip('.')}."
