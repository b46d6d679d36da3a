"""Composite confidence of an answer (cognitive-plan §2.11).

Seed: C = 0.5 objective + 0.35 feeling-of-knowing + 0.15 verbalised, where the objective signal is
the answer's token probabilities when the provider returns them and structural heuristics otherwise
(hedging, self-correction, question rate, length anomaly). Missing signals are left out and the
remaining weights renormalised. Pure functions; no I/O.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["SEED_WEIGHTS", "Structural", "composite", "from_logprobs", "structural"]

SEED_WEIGHTS = (0.5, 0.35, 0.15)
"""objective, feeling of knowing, verbalised (the seed's)."""
# How much each structural sign lowers confidence. Not the seed's numbers (it names the signs only)
# and not fitted to anything: hedging counts most, a long or short outlier least.
_PENALTY = {"hedging": 0.4, "self_correction": 0.25, "questions": 0.2, "length": 0.15}
_HEDGES = re.compile(
    r"\b(i think|i believe|i guess|maybe|perhaps|possibly|probably|might|not sure|it seems|i'm not certain|"
    r"i am not certain|if i recall|as far as i know)\b",
    re.IGNORECASE,
)
_CORRECTIONS = re.compile(r"\b(actually|wait|i mean|correction|scratch that|on second thought)\b", re.IGNORECASE)
_SENTENCES = re.compile(r"[^.!?]+[.!?]*")


@dataclass(frozen=True, slots=True)
class Structural:
    """The structural signs of an answer, each in [0, 1], and the confidence they leave."""

    hedging: float
    self_correction: float
    questions: float
    length: float
    score: float


def structural(text: str, typical_words: float | None = None) -> Structural:
    """Confidence from the answer's form alone: hedges and self-corrections per sentence, the share
    of sentences that are questions, and how far its length is from ``typical_words`` (a factor of
    4 either way counts fully)."""
    sentences = [s for s in _SENTENCES.findall(text) if s.strip()] or [text]
    n = len(sentences)
    hedging = min(1.0, len(_HEDGES.findall(text)) / n)
    correcting = min(1.0, len(_CORRECTIONS.findall(text)) / n)
    questions = sum(1 for s in sentences if s.strip().endswith("?")) / n
    words = max(1, len(text.split()))
    length = 0.0
    if typical_words and typical_words > 0:
        length = min(1.0, abs(math.log(words / typical_words)) / math.log(4))
    signs = {"hedging": hedging, "self_correction": correcting, "questions": questions, "length": length}
    score = 1.0 - sum(_PENALTY[k] * v for k, v in signs.items())
    return Structural(hedging, correcting, questions, length, max(0.0, min(1.0, score)))


def from_logprobs(logprobs: Sequence[float]) -> float:
    """The objective signal from token log-probabilities: their geometric-mean probability."""
    if not logprobs:
        raise ValueError("no log-probabilities")
    return float(math.exp(sum(logprobs) / len(logprobs)))


def composite(objective: float | None, feeling_of_knowing: float | None, verbalised: float | None) -> float | None:
    """The seed's weighted sum over the signals present (weights renormalised); None with none."""
    present = [(w, v) for w, v in zip(SEED_WEIGHTS, (objective, feeling_of_knowing, verbalised), strict=True)
               if v is not None]  # fmt: skip
    if not present:
        return None
    total = sum(w for w, _ in present)
    return sum(w * min(1.0, max(0.0, v)) for w, v in present) / total
