"""The hard refusal: answering "I don't know" when the scope holds nothing about the question.

Seed: archive-adr §7 ("The Mentat Refusal": below the threshold the caller gets a refusal, not
a guess). Two kinds of evidence, checked in order:

1. **Names the scope never heard of.** A question about someone or something (a capitalised word
   inside a sentence: "When did *Melanie* paint a sunrise?", "What did I say about *Tokyo*?")
   that appears nowhere in the scope cannot be answered from it, however similar some stored
   chit-chat sounds. When the question names things and *none* of them is known to the scope,
   the recall is refused and the refusal says which names were missing. One known name is
   enough to answer: a question may well mention something new beside someone known ("Would
   Caroline like *Dr. Seuss*?"). So is a match that agrees strongly in meaning, at least half-way
   from the threshold to an exact match (``(1 + threshold) / 2``): a question may name the
   country ("who moved to *Portugal*?") where the memory names the city ("... moved to Lisbon").
2. **Nothing similar enough.** Otherwise the best cosine similarity among the hits must reach
   ``refusal_threshold``, the one knob (``mnemo bench locomo`` reports own and foreign questions
   refused at a range of thresholds, the curve to set it by).

Which words are names is decided here (:func:`proper_names`); whether the scope knows one is a
lookup in its lexical postings (:func:`mnemo.store.lexicon.known_words`), the same stemmed
terms BM25 searches.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from mnemo.cognition.timex import CALENDAR_WORDS

__all__ = ["Verdict", "judge", "proper_names"]

_TOKEN = re.compile(r"[^\W\d_][\w'’.-]*|[.!?;:\"“”()]+")
_SENTENCE_END = re.compile(r"[.!?;:\"“”(]")
_POSSESSIVE = re.compile(r"(?:['’]s?|\.)+$")


def proper_names(text: str) -> list[str]:
    """The capitalised words of ``text`` that are not the first word of a sentence (nor ``I``, a
    month or a weekday), possessives stripped, in order, each once: the names a question is about."""
    names: list[str] = []
    start = True  # the next word begins a sentence
    for token in _TOKEN.findall(text):
        if _SENTENCE_END.match(token):
            start = True
            continue
        word = _POSSESSIVE.sub("", token)
        if not start and word[:1].isupper() and _nameable(word) and word not in names:
            names.append(word)
        start = token.endswith((".", "?", "!")) and not _is_initial(token)
    return names


_TITLES = frozenset({"Dr", "Mr", "Mrs", "Ms", "Mx", "Prof", "St", "Jr", "Sr", "Mt", "vs", "etc"})


def _nameable(word: str) -> bool:
    """Not ``I``, nor a month or weekday ("in May" names a time, not a thing)."""
    return word != "I" and word.lower() not in CALENDAR_WORDS


def _is_initial(token: str) -> bool:
    """``Dr.``, ``J.``, ``U.S.``: a full stop that ends an abbreviation, not a sentence."""
    stem = token.rstrip(".")
    return len(stem) == 1 or "." in stem or stem in _TITLES


@dataclass(frozen=True, slots=True)
class Verdict:
    """Whether to refuse a recall, and why."""

    refused: bool
    reason: Literal["unknown names", "dissimilar"] | None = None
    """``"unknown names"``: the question names only things the scope never mentions;
    ``"dissimilar"``: nothing reaches the similarity threshold."""
    unknown: tuple[str, ...] = ()
    """The names the scope never mentions (only when refused for them)."""


def judge(best_similarity: float | None, threshold: float, known: Mapping[str, bool]) -> Verdict:
    """Refuse when the question names things (``known``: each name that is a searchable word, and
    whether the scope mentions it), none is known and no match is strong (under ``(1 + threshold) / 2``),
    else when the best similarity is missing or under ``threshold``."""
    names = list(known)
    strong = best_similarity is not None and best_similarity >= (1.0 + threshold) / 2
    if names and not any(known.values()) and not strong:
        return Verdict(True, "unknown names", tuple(names))
    if best_similarity is None or best_similarity < threshold:
        return Verdict(True, "dissimilar")
    return Verdict(False)
