"""Requests for advice about a person, and the stated preferences they depend on (issue 43, item 4).

Seeds: cognitive-plan §4.6 (contextual retrieval), memory-architecture §2.4 (identity and
preference memories shape how the agent serves its user). "Suggest a restaurant for Maya" shares
no words with "I can't stand spicy food", said months before; what ties them is that a request
for advice about someone depends on what that someone prefers. :func:`asks_for_advice` tells such
a request from a question about what was said; :func:`preferences_in_reach` picks, among the
preference memories of the person asked about, those the recall lifts: the first relevance tier of
their similarities to the request (no constant).
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

from mnemo.cognition.scoring.relevance import relevance_tiers

__all__ = ["asks_for_advice", "preferences_in_reach"]

K = TypeVar("K", bound=Hashable)

_WHO = r"(?:i|we|you|he|she|they)"
_ADVICE = re.compile(
    r"\b(?:recommend|suggest|advise|propose)\b"
    r"|\b(?:any|some|good)\s+(?:ideas?|suggestions?|recommendations?|tips?|advice)\b"
    rf"|\b(?:what|which|where|how)\s+(?:\w+\s+){{0,3}}(?:should|could|can|would|shall)\s+{_WHO}\s+"
    r"(?:make|cook|bake|buy|get|give|bring|order|pick|choose|plan|book|serve|prepare|take|gift|do|keep|avoid|consider)\b"
    r"|^\s*(?:plan|pick|choose|find)\s+(?:a|an|some|the)\b",
    re.IGNORECASE,
)
_ASKS_WHAT_WAS_SAID = re.compile(
    r"\b(?:does|do|did|has|have|had|was|were)\s+\w+\s+(?:say|said|mention|tell|recommend|suggest|advise|propose)"
    r"(?:s|ed)?\b|\bwhat\s+did\b",
    re.IGNORECASE,
)


def asks_for_advice(question: str) -> bool:
    """Whether ``question`` asks for advice, a choice or a plan (recommend, suggest, "what should I
    cook", "plan a dinner"), rather than about what was said ("what did Maya recommend?")."""
    return bool(_ADVICE.search(question)) and not _ASKS_WHAT_WAS_SAID.search(question)


def preferences_in_reach(similarity: Mapping[K, float], texts: Mapping[K, str], names: Sequence[str]) -> list[K]:
    """The preference memories a request for advice lifts, best first: those naming one of ``names``
    (the people it is about) when any does, else all; of them, the first relevance tier of their
    similarities to the request."""
    about = [k for k in similarity if any(_names(texts.get(k, ""), n) for n in names)] if names else []
    pool = {k: similarity[k] for k in (about or list(similarity))}
    tiers = relevance_tiers(pool)
    return sorted((k for k in pool if tiers[k] == 0), key=lambda k: -pool[k])


def _names(text: str, name: str) -> bool:
    return re.search(rf"\b{re.escape(name)}\b", text, re.IGNORECASE) is not None
