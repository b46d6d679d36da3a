"""Offline knowledge extraction: candidate facts and triples from chat turns, no LLM.

Seeds: archive-adr §4 (ingestion extracts entities, relationships and facts;
what it extracts is first written as a *candidate* record with provenance and
confidence for later curator adjudication) and §9 (Phase A of the curator
loop: augmentation extracts candidate facts/triples from conversation
traces); DESIGN §2 "Entity / Fact / Triple" (third-normal-form knowledge with
confidence, provenance and a validity interval — a contradicted fact is
closed, not deleted).

:func:`extract` reads first-person statements ("I live in Lyon", "my sister
Anna", "I went to a support group yesterday") with careful regular
expressions — precision over recall — and attributes them to the turn's
speaker (``"user"`` / ``"assistant"`` by role when the speaker is unknown); first-person words left
in a value ("my", "me", "mine", "our") name the speaker too ("show Caroline's paintings").
Every candidate carries ``source``, the index of its turn in the input, and a
``confidence`` in (0, 1] that reflects how strong its pattern is.

Conventions the caller relies on:

* ``kind`` is ``fact`` (attributes: name, age, lives in, works at, is, …),
  ``preference`` (likes, dislikes, prefers, interested in, favourite <x>,
  hobby), ``relation`` (sister, husband, dog, … → also a triple; has, number
  of <x>) or ``event`` (the verb phrase: went to, ran, painted, going to, …).
* ``negated=True`` means "this stopped being true" ("I no longer work at Y",
  "I quit my job at Z", "I used to live in Oslo", "I stopped playing chess"):
  the caller closes the matching open fact (same :func:`fact_hash`; an empty
  ``value`` closes whatever value of that :func:`fact_key` is open). Plain
  negations ("I don't like X") never produce the positive fact; "don't like" and
  "can't stand" produce ``dislikes``.
* ``valid_from`` is an absolute time resolved from the text against the
  turn's ``at`` ("yesterday", "last week", "three years ago", "5 May 2023",
  "next month"), truncated to the start of its ``precision`` (day, week,
  month, year); for a negated candidate it is when the fact ended. ``None``
  means "not said": the caller falls back to the turn's own time.
* :func:`fact_hash` / :func:`triple_hash` (sha256 of :func:`normalise`-d parts)
  are equal for the same statement said with other casing, articles or end
  punctuation: the caller dedups with them.

The pieces live beside this module: :mod:`mnemo.cognition.text.timex` (time
expressions), :mod:`mnemo.cognition.text.phrases` (text preparation and value
cleaning), :mod:`mnemo.cognition.text.patterns` (vocabularies and regular
expressions) and :mod:`mnemo.cognition.text.statements` (the rules that turn a
clause or a sentence into hits); this module keeps the records, the hashes
and :func:`extract`, and re-exports :func:`find_times` / :func:`resolve_time`.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from mnemo.cognition.consolidation.facts import canonical_value, is_fragment
from mnemo.cognition.consolidation.state_changes import change_clause_rules, change_sentence_rules, last_relation
from mnemo.cognition.consolidation.summaries import split_sentences
from mnemo.cognition.text.patterns import (
    CLAUSE_START,
    FACT_KINDS,
    HEDGE,
    NP_START,
    OPEN_NP,
    RELATIVE,
    SKIP_PREFIX,
    SUBJECTLESS,
    FactKind,
)
from mnemo.cognition.text.phrases import CLAUSE_END, WINDOW, clause_of, prepare_text, resolve_first_person, window
from mnemo.cognition.text.statements import Hit, clause_rules, sentence_rules
from mnemo.cognition.text.timex import PRECISIONS, Precision, find_times, first_time, resolve_time, strip_times

__all__ = [
    "FACT_KINDS",
    "PRECISIONS",
    "Extraction",
    "FactCandidate",
    "FactKind",
    "Precision",
    "TripleCandidate",
    "TurnText",
    "extract",
    "fact_hash",
    "fact_key",
    "find_times",
    "normalise",
    "resolve_time",
    "single_valued",
    "speaker_entity",
    "triple_hash",
]


# ---------------------------------------------------------------- records


@dataclass(frozen=True, slots=True)
class TurnText:
    """One turn as the extractor sees it: who spoke, in which role, what, and when."""

    speaker: str | None
    role: str
    text: str
    at: datetime | None = None


def _check(confidence: float, source: int) -> None:
    if not 0.0 < confidence <= 1.0:
        raise ValueError(f"confidence must be in (0, 1], got {confidence!r}")
    if source < 0:
        raise ValueError(f"source must be a turn index >= 0, got {source!r}")


@dataclass(frozen=True, slots=True)
class FactCandidate:
    """``entity``'s ``attribute`` is ``value``, said in turn ``source`` (see the module docstring)."""

    entity: str
    attribute: str
    value: str
    confidence: float
    source: int
    kind: FactKind
    valid_from: datetime | None = None
    negated: bool = False
    precision: Precision | None = None

    def __post_init__(self) -> None:
        _check(self.confidence, self.source)
        if self.kind not in FACT_KINDS:
            raise ValueError(f"kind must be one of {sorted(FACT_KINDS)}, got {self.kind!r}")
        if self.precision is not None and self.precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {sorted(PRECISIONS)}, got {self.precision!r}")

    @property
    def key(self) -> str:
        return fact_key(self.entity, self.attribute)

    @property
    def digest(self) -> str:
        return fact_hash(self.entity, self.attribute, self.value)


@dataclass(frozen=True, slots=True)
class TripleCandidate:
    """``subject`` —``predicate``→ ``object``, said in turn ``source``; ``negated``: it stopped holding."""

    subject: str
    predicate: str
    object: str
    confidence: float
    source: int
    valid_from: datetime | None = None
    negated: bool = False

    def __post_init__(self) -> None:
        _check(self.confidence, self.source)

    @property
    def digest(self) -> str:
        return triple_hash(self.subject, self.predicate, self.object)


@dataclass(frozen=True, slots=True)
class Extraction:
    facts: tuple[FactCandidate, ...] = ()
    triples: tuple[TripleCandidate, ...] = ()


# ---------------------------------------------------------------- normalisation and hashes

_SPACE = re.compile(r"\s+")
_EDGE_PUNCT = re.compile(r"^[\W_]+|[\W_]+$")
_ARTICLE = re.compile(r"^(?:a|an|the)\s+")


def normalise(text: str) -> str:
    """Casefolded, whitespace collapsed, punctuation stripped at both ends, leading article dropped."""
    out = _SPACE.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()
    while True:
        before = out
        out = _ARTICLE.sub("", _EDGE_PUNCT.sub("", out)).strip()
        if out == before:
            return out


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(normalise(p) for p in parts).encode("utf-8")).hexdigest()


def fact_key(entity: str, attribute: str) -> str:
    """sha256 hex of the normalised ``entity`` and ``attribute``: facts that may supersede each other."""
    return _digest(entity, attribute)


def fact_hash(entity: str, attribute: str, value: str) -> str:
    """sha256 hex of the normalised parts joined by ``\\x1f``, the value in its
    :func:`~mnemo.cognition.consolidation.facts.canonical_value` form: the same fact, however it was written
    ("went to the LGBTQ support groups" = "went to LGBTQ support group"), is counted, not copied."""
    return _digest(entity, attribute, canonical_value(entity, value) or value)


def triple_hash(subject: str, predicate: str, obj: str) -> str:
    """sha256 hex of the normalised parts joined by ``\\x1f``."""
    return _digest(subject, predicate, obj)


_SINGLE = frozenset(
    {"name", "age", "lives in", "works at", "works as", "from", "relationship status", "husband", "wife"}
    | {"mother", "father", "spouse", "boyfriend", "girlfriend", "fiance", "partner"}
)


def single_valued(attribute: str) -> bool:
    """Whether a new value of ``attribute`` replaces the old one (name, age, lives in, favourite x, number of x…);
    other attributes (likes, sister, went to…) accumulate values."""
    a = normalise(attribute)
    return a in _SINGLE or a.startswith(("favourite ", "number of "))


def speaker_entity(turn: TurnText) -> str:
    """Who "I" is in ``turn``: the speaker's name, else ``"user"`` / ``"assistant"`` (or the role) by role."""
    if turn.speaker and turn.speaker.strip():
        return _SPACE.sub(" ", turn.speaker.strip())
    role = (turn.role or "").strip().lower()
    return role or "user"


# ---------------------------------------------------------------- the extractor


_NOWADAYS = re.compile(r"\b(?:these|those)\s+days\b", re.IGNORECASE)  # "These days I …": a time, not a noun


def _subject_clauses(sentence: str) -> list[tuple[str, str]]:
    """(prefix within the clause, clause from the subject to the clause end) for every "I" / "we".

    A subject inside a relative clause ("These figurines I bought …") is left out.
    """
    out = []
    if SUBJECTLESS.match(sentence):  # chat ellipsis: "Just got back from a road trip yesterday!"
        out.append(("", "I " + clause_of(window(sentence, 0))))
    for m in re.finditer(r"\b(?:I|we)\b", sentence, re.IGNORECASE):
        start = m.start()
        clause = window(sentence, start)
        end = len(clause)
        for end_match in CLAUSE_END.finditer(clause, m.end() - start):
            end = end_match.start()
            if not (clause[end] == "," and OPEN_NP.search(clause[:end]) and not NP_START.match(clause[end:])):
                break  # "a safe, inviting place": a comma inside a noun phrase does not end the clause
            end = len(clause)
        before = sentence[max(0, start - WINDOW) : start]
        boundaries = list(CLAUSE_START.finditer(before))
        prefix = before[boundaries[-1].end() :] if boundaries else before
        tail = " ".join(prefix.split()[-6:]) + " "
        if RELATIVE.search(tail) and RELATIVE.search(strip_times(_NOWADAYS.sub(" ", tail)) + " "):
            continue  # ("Last week I …" is fine: the time is not a noun phrase)
        out.append((prefix, clause[:end].strip()))
    return out


def _timed(hit: Hit, text: str, sentence: str, at: datetime | None) -> tuple[datetime | None, Precision | None]:
    if hit.direction is None:
        return None, None
    resolved = first_time(text, at, hit.direction) or first_time(sentence, at, hit.direction)
    return resolved if resolved is not None else (None, None)


def extract(turns: Sequence[TurnText]) -> Extraction:
    """Candidate facts and triples stated in the first person in ``turns`` (see the module docstring)."""
    facts: dict[tuple[int, str, bool], FactCandidate] = {}
    triples: dict[tuple[int, str, bool], TripleCandidate] = {}
    for index, turn in enumerate(turns):
        speaker = speaker_entity(turn)
        context: str | None = None  # the relation a "she" / "he" is about ("my mom … She moved …")
        for sentence in split_sentences(prepare_text(turn.text or "")):
            if sentence.endswith("?"):
                continue  # questions assert nothing
            found: list[tuple[Hit, str]] = [(h, sentence) for h in sentence_rules(sentence)]
            found += [(h, sentence) for h in change_sentence_rules(sentence, context)]
            context = last_relation(sentence) or context
            for prefix, clause in _subject_clauses(sentence):
                if SKIP_PREFIX.search(prefix):
                    continue
                penalty = 0.15 if HEDGE.search(prefix) else 0.0
                hits = clause_rules(clause, sentence) + change_clause_rules(clause)
                found += [(replace(h, confidence=h.confidence - penalty), clause) for h in hits]
            for hit, text in _without_ended(found):
                confidence = hit.confidence - 0.1 * hit.subject_we - 0.1 * (len(hit.value.split()) > 5)
                confidence = round(min(1.0, max(0.05, confidence)), 3)
                entity = f"{speaker}'s {hit.about}" if hit.about else speaker
                valid_from, precision = _timed(hit, text, sentence, turn.at)
                value = resolve_first_person(hit.value, speaker)  # "my paintings" -> "Caroline's paintings"
                if not hit.negated and is_fragment(hit.attribute, value):
                    continue  # "works at" with its object cut off says nothing (an ending closes any value)
                fact = FactCandidate(
                    entity, hit.attribute, value, confidence, index, hit.kind, valid_from, hit.negated, precision
                )
                key = (index, fact.digest, hit.negated)
                if key not in facts or facts[key].confidence < confidence:
                    facts[key] = fact
                if hit.triple and value:
                    triple = TripleCandidate(entity, hit.attribute, value, confidence, index, valid_from, hit.negated)
                    tkey = (index, triple.digest, hit.negated)
                    if tkey not in triples or triples[tkey].confidence < confidence:
                        triples[tkey] = triple
    return Extraction(_without_implied(facts.values()), tuple(triples.values()))


def _without_ended(found: list[tuple[Hit, str]]) -> list[tuple[Hit, str]]:
    """Less the positive hits a sentence's own ending takes back ("our dog Luna passed away" states no
    dog Luna; "we lost our dog" no "has a dog"): issue 40 item 3."""
    ended = {normalise(h.value) for h, _ in found if h.negated and h.value.strip()}
    return [(h, t) for h, t in found if h.negated or normalise(h.value) not in ended]


def _without_implied(facts: Iterable[FactCandidate]) -> tuple[FactCandidate, ...]:
    """Less "X has a sister" where the same turn says who the sister is ("my sister Lena")."""
    kept = list(facts)
    named = {(f.source, normalise(f.attribute)) for f in kept if f.kind == "relation" and f.attribute != "has"}
    return tuple(f for f in kept if not (f.attribute == "has" and (f.source, normalise(f.value)) in named))
