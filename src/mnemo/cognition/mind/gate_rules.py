"""Entry and exit gates: what of the stream becomes memory.

Seeds: cognitive-plan §2.9 (entry gate: fast stochastic skip rules for
trivial and mechanical content, everything else to a scratch buffer with a
TTL) and §2.8 (exit gate: relevance x novelty 3x3 matrix; contradiction
detection cheapest first: negation heuristic, embedding opposition, then an
LLM; the gate starts permissive; a stochastic noise floor in every cell,
"Drop" included).

Everything here is pure: the caller passes the similarities and a seeded
``random.Random``.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:  # numpy is imported where it is used: the command line imports this module for its types
    import numpy as np

__all__ = [
    "Cell",
    "ExitDecision",
    "GateThresholds",
    "content_words",
    "entry_decision",
    "exit_decision",
    "is_mechanical",
    "negation_conflict",
    "negation_direction",
    "novelty_band",
    "opposition",
    "relevance_band",
    "substitution_conflict",
]

EntryAction = Literal["skip", "buffer"]
ExitAction = Literal["drop", "skip", "buffer", "persist", "reinforce", "persist_flag"]
Relevance = Literal["core", "peripheral", "irrelevant"]
Novelty = Literal["confirming", "novel", "contradicting"]

_MECHANICAL = [
    re.compile(p, re.IGNORECASE)
    for p in (
        r"^\s*[\[{]",  # JSON / lists
        r"^\s*(traceback|error|warning|exception)\b",
        r"^\s*(\$|>>>|#!)",  # prompts, shebangs
        r"^\s*(ok|okay|done|thanks|thank you|k|sure|yes|no|got it|cool|great|\W+)\s*[.!]*\s*$",
        r"^[\s\d\W]+$",  # numbers and punctuation only
    )
]

_NEGATIONS = re.compile(
    r"\b(not|no|never|none|nobody|nothing|neither|nor|cannot|can't|won't|don't|doesn't|didn't|isn't|aren't|"
    r"wasn't|weren't|hasn't|haven't|hadn't|shouldn't|wouldn't|couldn't|no longer|anymore|stopped|quit)\b|n't\b",
    re.IGNORECASE,
)
_WORD = re.compile(r"[a-z0-9']+")
_STOP = frozenset(
    [
        "a",
        "an",
        "the",
        "and",
        "or",
        "but",
        "of",
        "to",
        "in",
        "on",
        "at",
        "for",
        "with",
        "by",
        "from",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "am",
        "i",
        "my",
        "me",
        "we",
        "our",
        "you",
        "your",
        "he",
        "she",
        "it",
        "its",
        "they",
        "them",
        "their",
        "this",
        "that",
        "these",
        "those",
        "as",
        "so",
        "do",
        "does",
        "did",
        "has",
        "have",
        "had",
        "will",
        "would",
        "can",
        "could",
        "should",
    ]
)


def is_mechanical(text: str) -> bool:
    """Tool output, stack traces, acknowledgements, bare numbers: content that rarely matters."""
    return any(p.search(text) for p in _MECHANICAL)


def entry_decision(text: str, rng: random.Random, *, short: int = 10) -> tuple[EntryAction, str]:
    """Seeded skip rules: very short content is skipped 95% of the time, mechanical 90%; the rest is buffered."""
    if len(text.strip()) < short:
        return ("skip" if rng.random() < 0.95 else "buffer"), "short"
    if is_mechanical(text):
        return ("skip" if rng.random() < 0.90 else "buffer"), "mechanical"
    return "buffer", "content"


@dataclass(frozen=True, slots=True)
class GateThresholds:
    core: float = 0.6  # relevance above: core
    peripheral: float = 0.3  # relevance above: peripheral, else irrelevant
    confirming: float = 0.85  # similarity to an existing memory above: confirming
    contradiction_floor: float = 0.55  # similarity needed before a contradiction counts
    noise: float = 0.05  # chance that a drop/skip is kept anyway (noise floor)


@dataclass(frozen=True, slots=True)
class Cell:
    relevance: Relevance
    novelty: Novelty


@dataclass(frozen=True, slots=True)
class ExitDecision:
    action: ExitAction
    cell: Cell
    noise: bool  # the noise floor overturned a drop or skip


_MATRIX: dict[tuple[Relevance, Novelty], ExitAction] = {
    ("core", "confirming"): "reinforce",
    ("core", "novel"): "persist",
    ("core", "contradicting"): "persist_flag",
    ("peripheral", "confirming"): "skip",
    ("peripheral", "novel"): "buffer",
    ("peripheral", "contradicting"): "persist",
    ("irrelevant", "confirming"): "drop",
    ("irrelevant", "novel"): "drop",
    ("irrelevant", "contradicting"): "drop",
}


def relevance_band(relevance: float, t: GateThresholds = GateThresholds()) -> Relevance:
    if relevance > t.core:
        return "core"
    if relevance > t.peripheral:
        return "peripheral"
    return "irrelevant"


def novelty_band(similarity: float, contradicts: bool, t: GateThresholds = GateThresholds()) -> Novelty:
    if contradicts and similarity > t.contradiction_floor:
        return "contradicting"
    if similarity > t.confirming:
        return "confirming"
    return "novel"


def exit_decision(
    relevance: float,
    similarity: float,
    contradicts: bool,
    rng: random.Random,
    t: GateThresholds = GateThresholds(),
) -> ExitDecision:
    """The 3x3 matrix, with the noise floor: a drop or skip becomes a buffer with probability ``t.noise``."""
    cell = Cell(relevance_band(relevance, t), novelty_band(similarity, contradicts, t))
    action = _MATRIX[(cell.relevance, cell.novelty)]
    if action in ("drop", "skip") and rng.random() < t.noise:
        return ExitDecision("buffer", cell, True)
    return ExitDecision(action, cell, False)


def content_words(text: str) -> list[str]:
    """The words of ``text`` that carry content: lower-cased, stop words removed."""
    return _content_words(text)


def _content_words(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower().replace("n't", " not")) if w not in _STOP]


def negation_conflict(a: str, b: str, *, overlap: float = 0.5) -> bool:
    """Layer 1 (~0 ms): one text negates what the other asserts about the same words."""
    if bool(_NEGATIONS.search(a)) == bool(_NEGATIONS.search(b)):
        return False
    wa = set(_content_words(a)) - {"not", "no", "never", "longer", "anymore"}
    wb = set(_content_words(b)) - {"not", "no", "never", "longer", "anymore"}
    if not wa or not wb:
        return False
    return len(wa & wb) / min(len(wa), len(wb)) >= overlap


def substitution_conflict(a: str, b: str, *, overlap: float = 0.6) -> bool:
    """Layer 1b: the same statement frame with a different value ("lives in Berlin" / "lives in Munich").

    True when most content words are shared but each text has a word the other lacks, and
    the texts share an opening (the frame).
    """
    wa, wb = _content_words(a), _content_words(b)
    sa, sb = set(wa), set(wb)
    if len(sa) < 2 or len(sb) < 2:
        return False
    shared = sa & sb
    if len(shared) / max(len(sa), len(sb)) < overlap or not (sa - sb) or not (sb - sa):
        return False
    return wa[0] == wb[0] or wa[:2] == wb[:2]


def opposition(a: np.ndarray, b: np.ndarray, direction: np.ndarray, *, threshold: float = 0.25) -> bool:
    """Layer 2 (~5 ms): the difference of two embeddings points along a negation direction."""
    import numpy as np

    delta = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    norm = float(np.linalg.norm(delta)) * float(np.linalg.norm(direction))
    if norm < 1e-9:
        return False
    return abs(float(delta @ direction)) / norm >= threshold


def negation_direction(pairs: Sequence[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """The mean (negated - plain) embedding difference over example pairs, normalised."""
    if not pairs:
        raise ValueError("need at least one example pair")
    import numpy as np

    diff = np.mean([np.asarray(n, dtype=float) - np.asarray(p, dtype=float) for p, n in pairs], axis=0)
    return diff / max(float(np.linalg.norm(diff)), 1e-12)
