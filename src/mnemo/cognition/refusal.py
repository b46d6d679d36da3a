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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from mnemo.cognition.gates import content_words
from mnemo.cognition.late import TokenVectors
from mnemo.cognition.timex import CALENDAR_WORDS

__all__ = ["Verdict", "judge", "proper_names", "question_words", "unsupported", "word_hit_support", "word_support"]

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
    reason: Literal["unknown names", "unsupported", "dissimilar"] | None = None
    """``"unknown names"``: the question names only things the scope never mentions;
    ``"unsupported"``: a word the question is about is rare in the scope and nothing returned
    matches it; ``"dissimilar"``: nothing reaches the similarity threshold."""
    unknown: tuple[str, ...] = ()
    """The names the scope never mentions, or the words nothing supports (only when refused for them)."""


def judge(
    best_similarity: float | None, threshold: float, known: Mapping[str, bool], missing: Sequence[str] = ()
) -> Verdict:
    """Refuse when the question names things (``known``: each name that is a searchable word, and
    whether the scope mentions it), none is known and no match is strong (under ``(1 + threshold) / 2``);
    else when a word it is about is unsupported (``missing``, :func:`unsupported`); else when the
    best similarity is missing or under ``threshold``."""
    names = list(known)
    strong = best_similarity is not None and best_similarity >= (1.0 + threshold) / 2
    if names and not any(known.values()) and not strong:
        return Verdict(True, "unknown names", tuple(names))
    if missing:
        return Verdict(True, "unsupported", tuple(missing))
    if best_similarity is None or best_similarity < threshold:
        return Verdict(True, "dissimilar")
    return Verdict(False)


# what a question asks with, not about: interrogatives, auxiliaries, the verbs of asking and telling
_ASKING = frozenset(
    [
        "what",
        "when",
        "where",
        "who",
        "whom",
        "whose",
        "which",
        "why",
        "how",
        "was",
        "were",
        "been",
        "being",
        "does",
        "did",
        "doing",
        "done",
        "is",
        "are",
        "would",
        "could",
        "should",
        "might",
        "must",
        "may",
        "shall",
        "will",
        "can",
        "kind",
        "type",
        "sort",
        "sorts",
        "kinds",
        "types",
        "likely",
        "think",
        "thinks",
        "thought",
        "feel",
        "feels",
        "felt",
        "mention",
        "mentioned",
        "mentions",
        "say",
        "says",
        "said",
        "tell",
        "tells",
        "told",
        "talk",
        "talked",
        "talks",
        "ever",
        "also",
        "still",
        "recently",
        "yet",
        "about",
        "many",
        "much",
        "some",
        "any",
        "one",
        "ones",
        "thing",
        "things",
        "time",
        "times",
        "there",
        "here",
        "then",
        "than",
        "not",
        "all",
        "both",
        "each",
        "other",
        "others",
        "own",
        "same",
        "such",
        "only",
        "just",
        "very",
        "more",
        "most",
        "less",
        "least",
        "after",
        "before",
        "during",
        "since",
        "until",
        "while",
        "into",
        "onto",
        "over",
        "under",
        "again",
        "get",
        "gets",
        "got",
        "name",
        "names",
        "named",
        "called",
        "her",
        "his",
        "him",
        "hers",
        "us",
        "ours",
        "theirs",
        "yours",
        "mine",
        "myself",
        "herself",
        "himself",
        "themselves",
    ]
)


def question_words(text: str) -> list[str]:
    """The words of a question that carry what it is about: lower-cased, three letters or more,
    without stop words, the words of asking (:data:`_ASKING`), months and weekdays, and the names
    (:func:`proper_names`: the unknown-names rule judges those), each once."""
    names = {n.lower() for n in proper_names(text)}  # the names rule's to judge
    words = [w.strip("'") for w in content_words(text)]
    kept = (
        w
        for w in words
        if len(w) >= 3 and w.isalpha() and w not in _ASKING and w not in CALENDAR_WORDS and w not in names
    )
    return list(dict.fromkeys(kept))


def word_support(query: TokenVectors, pieces: Sequence[Sequence[int]], hits: Sequence[TokenVectors]) -> list[float]:
    """For each word of the question (its token ids, ``pieces``), how well the hits' tokens match it:
    the mean over its tokens in the query of their best cosine among every token of ``hits``
    (MaxSim, token by token). 1 for a word whose tokens the query does not hold (nothing to judge);
    0 for every word when there are no hits."""
    if not hits or not any(len(h.ids) for h in hits):
        return [0.0] * len(pieces)
    return word_hit_support(query, pieces, hits).max(axis=1).tolist()


def word_hit_support(query: TokenVectors, pieces: Sequence[Sequence[int]], hits: Sequence[TokenVectors]) -> np.ndarray:
    """``(words, hits)``: how well each hit's tokens match each question word (as :func:`word_support`,
    one hit at a time; 1 for a word the query does not hold, 0 against a hit without tokens)."""
    asked = np.asarray(query.vectors, dtype=np.float32) * np.float32(query.scale)
    ids = [int(t) for t in query.ids]
    at = [[n for n, t in enumerate(ids) if t in {int(p) for p in word}] for word in pieces]
    out = np.ones((len(pieces), len(hits)), dtype=np.float64)
    for h, hit in enumerate(hits):
        if not len(hit.ids) or not len(asked):
            out[[w for w, found in enumerate(at) if found], h] = 0.0
            continue
        best = (asked @ (np.asarray(hit.vectors, dtype=np.float32) * np.float32(hit.scale)).T).max(axis=1)
        for w, found in enumerate(at):
            if found:
                out[w, h] = float(best[found].mean())
    return out


def unsupported(support: Mapping[str, tuple[int, float]], threshold: float, rarity: int) -> list[str]:
    """The question words (``support``: word -> (items of the scope holding it, its match among the
    hits)) that at most ``rarity`` items hold and whose match is under ``threshold``: what the
    question is about that the scope, as far as its hits show, never said."""
    return [w for w, (held, match) in support.items() if 0 <= held <= rarity and match < threshold]
