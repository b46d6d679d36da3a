"""The hard refusal: answering "I don't know" when the scope holds nothing about the question.

Seed: archive-adr §7 ("The Mentat Refusal": below the threshold the caller gets a refusal, not
a guess). Two kinds of evidence, checked in order:

1. **Names the scope never heard of.** A question about someone or something (a capitalised word
   inside a sentence: "When did *Melanie* paint a sunrise?", "What did I say about *Tokyo*?")
   that appears nowhere in the scope cannot be answered from it, however similar some stored
   chit-chat sounds. When a name the question asks about is unknown to the scope, the recall is
   refused and the refusal says which names were missing — also when the question names someone
   known beside it ("When did *Aiko* visit *Brazil*?": in personal memory the person's own name
   is in almost every question, issue 40 item 6). A hypothetical question may name something new
   beside someone known ("Would Caroline like *Dr. Seuss*?": an inference, not a recollection),
   and a match that agrees strongly in meaning, at least half-way from the threshold to an exact
   match (``(1 + threshold) / 2``), answers: a question may name the country ("who moved to
   *Portugal*?") where the memory names the city ("... moved to Lisbon").
2. **Nothing similar enough.** Otherwise the best cosine similarity among the hits must reach
   ``refusal_threshold``, the one knob (``mnemo bench locomo`` reports own and foreign questions
   refused at a range of thresholds, the curve to set it by).

Which words are names is decided here (:func:`proper_names`); whether the scope knows one is a
lookup in its lexical postings (:func:`mnemo.store.lexicon.known_words`), the same stemmed
terms BM25 searches.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from mnemo.cognition.mind.gate_rules import content_words
from mnemo.cognition.scoring.late import TokenVectors
from mnemo.cognition.text.patterns import RELATIONS
from mnemo.cognition.text.phrases import word_set
from mnemo.cognition.text.timex import CALENDAR_WORDS

__all__ = [
    "Verdict",
    "asked_about",
    "asks",
    "focus_words",
    "hypothetical",
    "judge",
    "literal_focus",
    "proper_names",
    "question_words",
    "relation_forms",
    "unsupported",
    "word_hit_support",
    "word_support",
]

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
    best_similarity: float | None,
    threshold: float,
    known: Mapping[str, bool],
    missing: Sequence[str] = (),
    *,
    hypothetical: bool = False,
) -> Verdict:
    """Refuse when a name the question asks about is unknown to the scope (``known``: each name that
    is a searchable word, and whether the scope mentions it) and no match is strong (under
    ``(1 + threshold) / 2``): "When did Aiko visit *Brazil*?" names Aiko, whom the scope knows, and
    Brazil, which it never mentions. One known name is enough only for a ``hypothetical`` question
    ("Would Caroline like *Dr. Seuss*?": what she would do, not what was said). Else refuse when a
    word it is about is unsupported (``missing``, :func:`unsupported`); else when the best
    similarity is missing or under ``threshold``."""
    unknown = tuple(n for n, held in known.items() if not held)
    strong = best_similarity is not None and best_similarity >= (1.0 + threshold) / 2
    if unknown and not strong and not (hypothetical and len(unknown) < len(known)):
        return Verdict(True, "unknown names", unknown)
    if missing:
        return Verdict(True, "unsupported", tuple(missing))
    if best_similarity is None or best_similarity < threshold:
        return Verdict(True, "dissimilar")
    return Verdict(False)


_HYPOTHETICAL = re.compile(r"\b(?:would|likely|might|could|probably|possibly|if)\b", re.IGNORECASE)
_ASKS = re.compile(
    r"^\W*(?:what|when|where|who|whom|whose|which|why|how|is|are|was|were|do|does|did|has|have|had|can|"
    r"will|shall|am)\b|\?\W*$",
    re.IGNORECASE,
)


def hypothetical(question: str) -> bool:
    """Whether ``question`` asks what someone would do or like ("Would Melanie enjoy …?", "What
    might Jon …?"), an inference from what was said rather than something said; or is not a
    question at all ("Plan a dinner for Maya."): a request wants what is relevant, not a fact."""
    return _HYPOTHETICAL.search(question) is not None or not asks(question)


def asks(text: str) -> bool:
    """Whether ``text`` is a question (a question mark at its end, or a question word first)."""
    return _ASKS.search(text.strip()) is not None


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


def _fold(text: str) -> str:
    """Lower-cased, accents dropped ("José" → "jose"): the words' searchable form."""
    return "".join(c for c in unicodedata.normalize("NFKD", text.casefold()) if not unicodedata.combining(c))


def question_words(text: str) -> list[str]:
    """The words of a question that carry what it is about: lower-cased, three letters or more,
    without stop words, the words of asking (:data:`_ASKING`), months and weekdays, and the names
    (:func:`proper_names`: the unknown-names rule judges those), each once."""
    names = {_fold(n) for n in proper_names(text)}  # the names rule's to judge
    words = [w.strip("'") for w in content_words(_fold(text))]
    kept = (
        w
        for w in words
        if len(w) >= 3 and w.isalpha() and w not in _ASKING and w not in CALENDAR_WORDS and w not in names
    )
    return list(dict.fromkeys(kept))


# what a question says about its focus, not the focus itself: when, how often, which of several,
# and how it was said
_MODIFIERS = frozenset(
    [
        "currently",
        "moment",
        "originally",
        "main",
        "usually",
        "often",
        "really",
        "actually",
        "anymore",
        "lately",
        "nowadays",
        "mostly",
        "exactly",
        "generally",
        "first",
        "last",
        "next",
        "new",
        "old",
        "current",
        "recent",
        "favourite",
        "favorite",
        "best",
        "usual",
        "days",
        "today",
        "week",
        "year",
        "month",
        "lot",
        # how it was said, not what: the verbs of asking and telling the asking words leave out
        "ask",
        "asks",
        "asked",
        "asking",
        "share",
        "shares",
        "shared",
        "discuss",
        "discussed",
        "speak",
        "spoke",
    ]
)


def focus_words(text: str) -> list[str]:
    """What the question asks about (issue 40 item 6): its :func:`question_words` less the words
    that qualify the focus rather than name it ("currently", "main", "favourite", "these days")."""
    return [w for w in question_words(text) if w not in _MODIFIERS]


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
    one hit at a time; 1 for a word the query does not hold, 0 against a hit without tokens). One
    matrix product over every hit's tokens, the best per hit read off by segment."""
    asked = np.asarray(query.vectors, dtype=np.float32) * np.float32(query.scale)
    ids = [int(t) for t in query.ids]
    at = [[n for n, t in enumerate(ids) if t in {int(p) for p in word}] for word in pieces]
    out = np.ones((len(pieces), len(hits)), dtype=np.float64)
    found = [w for w, positions in enumerate(at) if positions]
    if not found:
        return out
    out[found, :] = 0.0
    filled = [h for h, hit in enumerate(hits) if len(hit.ids)]
    if not filled or not len(asked):
        return out
    sizes = [len(hits[h].ids) for h in filled]
    tokens = np.concatenate([hits[h].vectors for h in filled]).astype(np.float32)  # int8 codes at rest
    scales = np.repeat(np.asarray([hits[h].scale for h in filled], dtype=np.float32), sizes)
    starts = np.cumsum([0, *sizes[:-1]])
    best = np.maximum.reduceat((asked @ tokens.T) * scales, starts, axis=1)  # (query tokens, hits)
    for w in found:
        out[w, filled] = best[at[w]].mean(axis=0)
    return out


_OWNER = re.compile(
    r"\b([A-Z][\w'’.-]*)['’]s\s+((?:[a-z][\w-]*\s+){0,3}?[a-z][\w-]*)\s*(?:\?|$|\b(?:is|are|was|were|does|do|did|has|have|now|called|named)\b)"
)


def asked_about(question: str, words: Sequence[str]) -> str:
    """How a refusal names what was missing: the question's own phrase when it has one ("José's
    blood type"), else its unsupported ``words``."""
    if (m := _OWNER.search(question)) is not None and any(w in _fold(m.group(2)) for w in words):
        return f"{m.group(1)}'s {m.group(2)}"
    return ", ".join(words[:-1]) + (" or " if len(words) > 1 else "") + words[-1]


def unsupported(
    support: Mapping[str, tuple[int, float]], threshold: float, rarity: int, literal: Collection[str] = ()
) -> list[str]:
    """The question words (``support``: word -> (items of the scope holding it, its match among the
    hits)) that at most ``rarity`` items hold and whose match is under ``threshold``, and the
    ``literal`` words no item holds: what the question is about that the scope, as far as its hits
    show, never said."""
    return [
        w
        for w, (held, match) in support.items()
        if (0 <= held <= rarity and match < threshold) or (held == 0 and w in literal)
    ]


# a relation a person names by its word when they speak of it (a sister is called a sister, a
# mother a mother or a mum): kin. The words for a kind of relation (partner, sibling, child) may be
# said as one of its members ("my husband"), a role as a name ("I report to Aoife"), an animal as
# its breed ("my greyhound"): none of them is named literally
_KIN = word_set(
    "aunt brother cousin daughter father grandfather grandmother granddaughter grandson husband wife mother "
    "nephew niece sister son uncle boyfriend girlfriend fiance"
)
_LITERAL = {k: v for k, v in RELATIONS.items() if v in _KIN}


def relation_forms(word: str) -> tuple[str, ...]:
    """The words that name the relation ``word`` names ("mother": mom, mum, mother, …), when it is
    one a person names literally; else none."""
    kind = _LITERAL.get(word)
    return tuple(k for k, v in _LITERAL.items() if v == kind) if kind else ()


def literal_focus(question: str, words: Sequence[str]) -> list[str]:
    """The ``words`` of ``question`` that name a relation literally (:func:`relation_forms`) and are
    its focus, not a description of someone it names ("José's *mother*", not "his son *Jakub*")."""
    return [w for w in words if relation_forms(w) and not re.search(rf"\b{re.escape(w)}s?,?\s+[A-Z]", question)]
