"""What the agent reads off its own answers: confidence signals and escalation triggers.

Seeds: cognitive-plan §2.11 (composite confidence: token log-probabilities when the provider returns
them, structural heuristics otherwise, and verbalised confidence from an isolated meta-context call:
a separate call with no history and no identity, discarded after the number is read) and §3.6 (the
escalation triggers: low confidence, a detected contradiction, complexity, novelty). The weighting
and the decisions are pure (:mod:`mnemo.cognition.mind.confidence`, :mod:`mnemo.cognition.mind.escalation`);
this module extracts the signals from model messages and texts.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelResponse

from mnemo.cognition.mind.gate_rules import negation_conflict, substitution_conflict

__all__ = ["META", "SYSTEM2", "SecondOpinion", "contradicts", "logprobs_of", "parse_verbalised", "signals"]

META = (
    "You rate answers. Given a request and an answer to it, reply with one number between 0 and 1: "
    "the probability that the answer is correct and complete. Reply with the number only."
)
SYSTEM2 = (
    "You are System 2: System 1 answered the request below and its answer triggered a review. Give the "
    "right answer, explain briefly what was wrong, and state the correction as a rule System 1 can follow "
    "next time in a similar situation."
)
_NUMBER = re.compile(r"(?<![\d.])(0(?:\.\d+)?|1(?:\.0+)?|\.\d+)(?!\d|\.\d)")
_PERCENT = re.compile(r"(\d{1,3}(?:\.\d+)?)\s*%")
_STEPS = re.compile(r"\b(then|after that|first|second|finally|step)\b", re.IGNORECASE)


@dataclass(frozen=True)
class SecondOpinion:
    """What System 2 returns (§3.6): its answer, why, and the correction pattern."""

    answer: str
    explanation: str
    correction: str


def parse_verbalised(text: str) -> float | None:
    """The confidence a meta-context call stated: the first number in [0, 1] or percentage; None
    when there is none (the signal is then left out, not guessed)."""
    if found := _PERCENT.search(text):
        value = float(found.group(1)) / 100
        return value if 0.0 <= value <= 1.0 else None
    if found := _NUMBER.search(text):
        return float(found.group(1))
    return None


def logprobs_of(messages: Sequence[ModelMessage]) -> list[float] | None:
    """The token log-probabilities of the last response, when the provider returned them: OpenAI's
    per-token list (on the response or its text parts), Gemini's chosen candidates or its mean."""
    response = next((m for m in reversed(messages) if isinstance(m, ModelResponse)), None)
    if response is None:
        return None
    details: list[dict[str, Any]] = [response.provider_details or {}]
    details += [getattr(p, "provider_details", None) or {} for p in response.parts]
    for found in details:
        if values := _values(found.get("logprobs")):
            return values
    for found in details:
        if isinstance(mean := found.get("avg_logprobs"), (int, float)):
            return [float(mean)]
    return None


def _values(raw: object) -> list[float]:
    if isinstance(raw, dict):  # Gemini: {"chosen_candidates": [{"log_probability": ...}, ...], ...}
        raw = raw.get("chosen_candidates") or []
    if not isinstance(raw, list):
        return []
    keys = ("logprob", "log_probability")
    return [float(v) for item in raw if isinstance(item, dict)
            for k in keys if isinstance(v := item.get(k), (int, float))]  # fmt: skip


def contradicts(texts: Iterable[str], evidence: Iterable[str]) -> bool:
    """Whether any of ``texts`` (the request, the answer) contradicts what memory put in context:
    the exit gate's cheap layers, negation and substitution."""
    known = [e for e in evidence if e.strip()]
    return any(negation_conflict(t, e) or substitution_conflict(t, e) for t in texts if t.strip() for e in known)


def signals(text: str, *, unsure: bool, unknown: bool, contradiction: bool, flags: Sequence[str]) -> list[str]:
    """The §3.6 triggers this exchange shows: low confidence, novelty (memory knows nothing),
    contradiction, and complexity (several sentences or step words); the always-escalate ones
    (irreversible, identity, goals) come from the caller."""
    fired = list(flags)
    if unsure:
        fired.append("low_confidence")
    if unknown:
        fired.append("novelty")
    if contradiction:
        fired.append("contradiction")
    if len(re.findall(r"[.!?](\s|$)", text)) >= 3 or len(_STEPS.findall(text)) >= 2:
        fired.append("complexity")
    return fired
