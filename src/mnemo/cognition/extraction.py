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
speaker (``"user"`` / ``"assistant"`` by role when the speaker is unknown).
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
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Literal

from mnemo.cognition.summaries import split_sentences

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

FactKind = Literal["fact", "preference", "relation", "event"]
Precision = Literal["day", "week", "month", "year"]
Direction = Literal["past", "future"]
FACT_KINDS: frozenset[str] = frozenset({"fact", "preference", "relation", "event"})
PRECISIONS: frozenset[str] = frozenset({"day", "week", "month", "year"})


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
    """sha256 hex of the normalised parts joined by ``\\x1f``: the same fact, however it was written."""
    return _digest(entity, attribute, value)


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


# ---------------------------------------------------------------- time expressions

_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "couple": 2, "few": 3, "several": 3,
}  # fmt: skip
_MONTHS = {
    "january": 1, "february": 2, "march": 3, "april": 4, "may": 5, "june": 6, "july": 7, "august": 8,
    "september": 9, "october": 10, "november": 11, "december": 12, "jan": 1, "feb": 2, "mar": 3,
    "apr": 4, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "sept": 9, "oct": 10, "nov": 11, "dec": 12,
}  # fmt: skip
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_N = (
    r"(?P<n>\d{1,3}|a\s+couple(?:\s+of)?|couple\s+of|a\s+few|few|several|an?|one|two|three|four|five|six|seven|"
    r"eight|nine|ten|eleven|twelve)"
)
# Month names only capitalised ("may" is a verb); weekday names in any case.
_MON = (
    r"(?-i:(?P<mon>January|February|March|April|May|June|July|August|September|October|November|December|"
    r"Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept|Sep|Oct|Nov|Dec))\.?"
)
_WD_NAMES = "monday|tuesday|wednesday|thursday|friday|saturday|sunday|mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun"
_TIME_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(pattern, re.IGNORECASE))
    for name, pattern in (
        ("iso", r"\b(?:on\s+)?(?P<y>\d{4})-(?P<m>\d{1,2})-(?P<d>\d{1,2})\b"),
        ("dmy", r"\b(?:on\s+)?(?:the\s+)?(?P<d>\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?" + _MON
                + r",?(?:\s+(?P<y>\d{4}))?\b"),
        ("mdy", r"\b(?:on\s+)?" + _MON + r"\s+(?P<d>\d{1,2})(?:st|nd|rd|th)?\b(?!\d)(?:,?\s+(?P<y>\d{4})\b)?"),
        ("my", r"\b(?:in\s+|back\s+in\s+)?" + _MON + r",?\s+(?P<y>\d{4})\b"),
        ("month", r"\b(?P<rel>last|next|this|in|since|back\s+in|early|late|in\s+early|in\s+late)\s+" + _MON
                  + r"(?!\s*\d)"),
        ("year", r"\b(?:in|since|back\s+in|during|around)\s+(?P<y>(?:19|20)\d{2})\b(?!\s*-)"),
        ("ago", r"\b(?:(?:about|around|almost|nearly|over|roughly|like|just|only)\s+)?" + _N
                + r"\s+(?P<u>day|week|month|year)s?\s+ago\b"),
        ("ahead", r"\b(?:in\s+" + _N + r"\s+(?P<u>day|week|month|year)s?|(?P<n2>\d{1,3}|a|an|one|two|three)\s+"
                  r"(?P<u2>day|week|month|year)s?\s+from\s+now)\b"),
        ("rel", r"\b(?P<rel>last|next|this|past|previous|the\s+past|the\s+previous)\s+"
                r"(?P<u>week|month|year|weekend|" + _WD_NAMES + r")\b\.?"),
        ("word", r"\b(?P<w>the\s+day\s+before\s+yesterday|the\s+day\s+after\s+tomorrow|yesterday|last\s+night|"
                 r"earlier\s+today|this\s+(?:morning|afternoon|evening)|today|tonight|tomorrow|the\s+other\s+day)\b"),
        ("weekday", r"\b(?:on\s+)?(?-i:(?P<wd>Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday))\b"),
    )
)  # fmt: skip


def _count(text: str) -> int:
    """ "3" -> 3, "three" -> 3, "a couple of" -> 2, "a few" -> 3, "a" -> 1."""
    words = text.lower().split() or ["1"]
    for word in words:
        if word.isdigit():
            return int(word)
    for word in reversed(words):
        if word in _NUMBERS:
            return _NUMBERS[word]
    return 1


def find_times(text: str) -> list[tuple[int, int, str, re.Match[str]]]:
    """Non-overlapping time expressions in ``text`` as (start, end, kind, match), in text order."""
    found = [(m.start(), m.end(), name, m) for name, pattern in _TIME_PATTERNS for m in pattern.finditer(text)]
    found.sort(key=lambda f: (f[0], -(f[1] - f[0])))
    out: list[tuple[int, int, str, re.Match[str]]] = []
    for item in found:
        if not out or item[0] >= out[-1][1]:
            out.append(item)
    return out


def _at(at: datetime, year: int, month: int, day: int) -> datetime | None:
    try:
        return datetime(year, month, day, tzinfo=at.tzinfo)
    except ValueError:
        return None


def _midnight(at: datetime, days: int) -> datetime:
    return (at + timedelta(days=days)).replace(hour=0, minute=0, second=0, microsecond=0)


def _month_start(at: datetime, months: int) -> datetime:
    index = at.year * 12 + at.month - 1 + months
    return datetime(index // 12, index % 12 + 1, 1, tzinfo=at.tzinfo)


def _shift_years(value: datetime | None, at: datetime, direction: Direction) -> datetime | None:
    """A month/day without a year: the occurrence on the side of ``at`` that ``direction`` says."""
    if value is None:
        return None
    today = at.replace(hour=0, minute=0, second=0, microsecond=0)
    if direction == "past" and value > today:
        return _at(at, value.year - 1, value.month, value.day)
    if direction == "future" and value < today:
        return _at(at, value.year + 1, value.month, value.day)
    return value


def resolve_time(
    kind: str, match: re.Match[str], at: datetime | None, direction: Direction = "past"
) -> tuple[datetime, Precision] | None:
    """The absolute start and precision of a time expression found by :func:`find_times`.

    Relative expressions need ``at`` (the turn's time); ``None`` when it cannot be resolved
    (including dates that fall outside the calendar).
    """
    try:
        return _resolve(kind, match, at, direction)
    except (ValueError, OverflowError, KeyError, StopIteration):
        return None


def _resolve(
    kind: str, match: re.Match[str], at: datetime | None, direction: Direction
) -> tuple[datetime, Precision] | None:
    g = match.groupdict()
    if kind in ("iso", "dmy", "mdy", "my"):
        month = int(g["m"]) if kind == "iso" else _MONTHS[g["mon"].lower()]
        year = int(g["y"]) if g.get("y") else None
        day = int(g["d"]) if g.get("d") else 1
        if year is None and at is None:
            return None
        base = at if at is not None else datetime(2000, 1, 1)
        value = _at(base, year if year is not None else base.year, month, day)
        if year is None and at is not None:
            value = _shift_years(value, at, direction)
        return None if value is None else (value, "month" if kind == "my" else "day")
    if kind == "year":
        return datetime(int(g["y"]), 1, 1, tzinfo=at.tzinfo if at else None), "year"
    if at is None:
        return None
    if kind == "month":
        month = _MONTHS[g["mon"].lower()]
        rel = g["rel"].lower().split()[0]
        year = at.year
        if rel == "last" or (rel in ("in", "since", "back", "early", "late", "this") and direction == "past"):
            year -= int(month > at.month or (rel == "last" and month == at.month))
        elif rel == "next" or direction == "future":
            year += int(month < at.month or (rel == "next" and month == at.month))
        return datetime(year, month, 1, tzinfo=at.tzinfo), "month"
    if kind in ("ago", "ahead"):
        n = _count(g.get("n") or g.get("n2") or "1")
        unit = (g.get("u") or g.get("u2") or "day").lower()
        if kind == "ahead" and direction != "future":
            return None  # "in two weeks" after a past verb is a duration, not a date
        sign = -1 if kind == "ago" else 1
        if _wrong_way(sign, direction):
            return None
        if unit == "day":
            return _midnight(at, sign * n), "day"
        if unit == "week":
            return _midnight(at, sign * 7 * n), "week"
        if unit == "month":
            return _month_start(at, sign * n), "month"
        return datetime(at.year + sign * n, 1, 1, tzinfo=at.tzinfo), "year"
    if kind == "rel":
        rel = g["rel"].lower().split()[-1]
        step = {"last": -1, "past": -1, "previous": -1, "next": 1, "this": 0}[rel]
        if _wrong_way(step, direction):
            return None
        unit = g["u"].lower()
        if unit == "week":
            return _midnight(at, 7 * step), "week"
        if unit == "month":
            return _month_start(at, step), "month"
        if unit == "year":
            return datetime(at.year + step, 1, 1, tzinfo=at.tzinfo), "year"
        if unit == "weekend":  # the Saturday of last / this / next week
            return _midnight(at, -at.weekday() + 5 + 7 * step), "week"
        target = next(i for i, name in enumerate(_WEEKDAYS) if name.startswith(unit[:3]))
        return _weekday(at, target, "past" if step < 0 else "future", strict=step != 0), "day"
    if kind == "word":
        word = " ".join(g["w"].lower().split())
        offsets = {"yesterday": -1, "last night": -1, "the day before yesterday": -2, "tomorrow": 1}
        offsets |= {"the day after tomorrow": 2, "the other day": -3}
        if _wrong_way(offsets.get(word, 0), direction):
            return None
        return _midnight(at, offsets.get(word, 0)), "week" if word == "the other day" else "day"
    if kind == "weekday":
        return _weekday(at, _WEEKDAYS.index(g["wd"].lower()), direction, strict=False), "day"
    return None


def _wrong_way(step: int, direction: Direction) -> bool:
    """ "yesterday" cannot date a plan, "next week" cannot date what already happened."""
    return (step < 0 and direction == "future") or (step > 0 and direction == "past")


def _weekday(at: datetime, target: int, direction: Direction, *, strict: bool) -> datetime:
    if direction == "past":
        back = (at.weekday() - target) % 7 or (7 if strict else 0)
        return _midnight(at, -back)
    ahead = (target - at.weekday()) % 7 or (7 if strict else 0)
    return _midnight(at, ahead)


def _first_time(text: str, at: datetime | None, direction: Direction) -> tuple[datetime, Precision] | None:
    for _start, _end, kind, match in find_times(text):
        resolved = resolve_time(kind, match, at, direction)
        if resolved is not None:
            return resolved
    return None


def _strip_times(text: str) -> str:
    for start, end, _kind, _match in reversed(find_times(text)):
        text = text[:start] + " " + text[end:]
    return _SPACE.sub(" ", text).strip()


# ---------------------------------------------------------------- text preparation

_CONTRACTIONS = tuple(
    (re.compile(p, re.IGNORECASE), r)
    for p, r in (
        (r"\bI'm\b|\b(?-i:Im)\b", "I am"),
        (r"\bI've\b", "I have"),
        (r"\bI'd\b", "I would"),
        (r"\bI'll\b", "I will"),
        (r"\bwe're\b", "we are"),
        (r"\bwe've\b", "we have"),
        (r"\bwe'll\b", "we will"),
        (r"\bcan'?t\b", "cannot"),
        (r"\bwon'?t\b", "will not"),
        (r"\bain't\b", "am not"),
        (r"\b(do|does|did|is|are|was|were|have|has|had|would|should|could)n'?t\b", r"\1 not"),
        (r"\bgonna\b", "going to"),
        (r"\bwanna\b", "want to"),
    )
)


def _prepare(text: str) -> str:
    text = unicodedata.normalize("NFKC", text)
    text = text.translate({0x2018: "'", 0x2019: "'", 0x201C: '"', 0x201D: '"'})
    text = re.sub(r"\[[^\]]*\]", " ", text)  # "[shares a photo: …]" annotations
    for pattern, replacement in _CONTRACTIONS:
        text = pattern.sub(replacement, text)
    return _SPACE.sub(" ", text).strip()


# ---------------------------------------------------------------- value cleaning


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_CLAUSE_END = re.compile(r"[,;:!?.()\"]|\s[-–—]+\s|\s[–—]|[–—]\s|(?<=\w)-\s|\s-$")
_SUBJECTS = r"(?:I|we|it|he|she|they|you|that|this|there|my|our|your|his|her|their|its|me|us|them)"
_PAST = r"(?:had|got|went|made|took|saw|was|were|did|met|ran|came|felt|found|gave|left|bought|[a-z]{2,}ed)"
_VALUE_CUT = re.compile(
    r"\s+(?:"
    rf"(?:and|but|so|because|cause|since|as|while|when|whenever|which|who|where|though|although|until|unless|if|"
    rf"after|before|then|plus|or)\s+{_SUBJECTS}\b|and\s+{_PAST}\b|(?:I|we|he|she|they)\b|"
    r"(?:but|because|'?cause|although|though|which|whereas|so\s+that|and\s+then|even\s+though|just\s+to|"
    r"in\s+order\s+to)\b|to\s+(?!(?:the|a|an|my|our|his|her|their|this|that)\b|(?-i:[A-Z])))"
    r".*$",
    re.IGNORECASE,
)
_FILLER = re.compile(
    r"(?:\s+(?:so\s+much|a\s+lot|too|as\s+well|really|very\s+much|lately|recently|now|again|though|tbh|"
    r"honestly|haha+|lol|any\s?more|these\s+days|right\s+now|at\s+the\s+moment|for\s+sure|already|just|"
    r"together|with\s+(?:you|them)|for\s+(?:me|us|them)|coming\s+up|about|like|and|or|but|so|either|twice|once|before|"
    r"(?:a\s+few|many|several|two|three|\d+)\s+times))+$",
    re.IGNORECASE,
)
_LEAD = re.compile(r"^(?:(?:a|an|the|some|that|this|these|those|to)\s+)+", re.IGNORECASE)
_PREPOSITION = re.compile(r"\s(?:with|for|at|in|on|from|about|after|during|near|by|around|because)\s", re.IGNORECASE)
_BAD_LEAD = _words(
    "it its it's that this these those them they you your yours him her hers us me myself he she we i how what "
    "when where why who whom which whatever so too very lot lots bit all both any each every here there up out "
    "off down over something anything everything nothing someone anyone everyone one seeing hearing knowing "
    "thinking feeling not no of his their"
)
_CONTEXT_FREE = _words("you your it them")  # a value with these words means nothing out of context
_FUNCTION_WORDS = _words("a an the of to in on at for with and or but by from as is are was were be")
_WORD = re.compile(r"[^\W_][\w'’-]*")


def _value(raw: str, *, max_words: int = 8) -> str | None:
    """A cleaned object phrase, or ``None`` when it is empty, too long, or context-dependent ("it", "that")."""
    text = _strip_times(_VALUE_CUT.sub("", raw))
    for _ in range(3):
        text = _FILLER.sub("", text).strip(" '\"-–—&,;:")
        text = _LEAD.sub("", text).strip(" '\"-–—&,;:")
    while len(text.split()) > max_words:  # drop trailing prepositional phrases
        cuts = [m.start() for m in _PREPOSITION.finditer(text) if len(text[: m.start()].split()) >= 2]
        if not cuts:
            return None
        text = _FILLER.sub("", text[: cuts[-1]]).strip()
    words = [w if len(w) > 1 and w.isupper() else w.lower() for w in _WORD.findall(text)]  # "US" is not "us"
    if not words or words[0] in _BAD_LEAD or not _CONTEXT_FREE.isdisjoint(words):
        return None
    if all(w in _FUNCTION_WORDS for w in words):
        return None
    return text


_NAME_STOP = _words(
    "i me my mine we our you your he him his she her they them it this that these those the a an and or but so "
    "if then there here what who which when where why how yes no not oh hey hi hello thanks thank well yeah "
    "today tomorrow yesterday tonight everyone everything someone something nothing god lord family life "
    "love home work school mom dad mum mother father sister brother guess also just"
    " monday tuesday wednesday thursday friday saturday sunday january february march april may june july "
    "august september october november december christmas easter"
    " american british english french german dutch swedish spanish italian chinese japanese indian canadian "
    "mexican irish scottish australian korean russian polish brazilian christian catholic jewish muslim"
)


def _name(raw: str) -> str | None:
    """One or two capitalised words that look like a person's or pet's name (not "Monday", not "LGBTQ")."""
    out: list[str] = []
    for word in raw.split()[:2]:
        word = re.sub(r"'s$", "", word.strip(".,;:!?\"'()"))
        if not word or not word[0].isupper() or word.lower() in _NAME_STOP:
            break
        if (len(word) > 1 and word.isupper()) or not all(ch.isalpha() or ch in "'-" for ch in word):
            break
        out.append(word)
    return " ".join(out) if out else None


def _proper(value: str | None) -> bool:
    return value is not None and value[:1].isupper()


# ---------------------------------------------------------------- vocabularies

_ADV = (
    r"(?:(?:really|also|just|actually|absolutely|totally|truly|still|now|currently|mostly|usually|personally|"
    r"definitely|genuinely|honestly|recently|finally|already|even|do|kind\s+of|sort\s+of|kinda|so|very|"
    r"officially|originally|first|both|all|literally|seriously|especially|always|simply)\s+)*"
)
_RELATIONS = {
    "mom": "mother", "mum": "mother", "mother": "mother", "mommy": "mother", "mama": "mother",
    "dad": "father", "father": "father", "daddy": "father", "papa": "father", "parents": "parents",
    "sister": "sister", "sisters": "sister", "brother": "brother", "brothers": "brother",
    "sibling": "sibling", "siblings": "sibling", "son": "son", "sons": "son", "daughter": "daughter",
    "daughters": "daughter", "kid": "child", "kids": "child", "child": "child", "children": "child",
    "husband": "husband", "hubby": "husband", "wife": "wife", "partner": "partner", "spouse": "spouse",
    "boyfriend": "boyfriend", "girlfriend": "girlfriend", "fiance": "fiance", "fiancé": "fiance",
    "fiancee": "fiance", "fiancée": "fiance", "grandma": "grandmother", "grandmother": "grandmother",
    "granny": "grandmother", "nana": "grandmother", "grandpa": "grandfather", "grandfather": "grandfather",
    "granddad": "grandfather", "grandad": "grandfather", "grandson": "grandson",
    "granddaughter": "granddaughter", "grandkids": "grandchild", "grandchildren": "grandchild",
    "aunt": "aunt", "uncle": "uncle", "cousin": "cousin", "cousins": "cousin", "niece": "niece",
    "nephew": "nephew", "friend": "friend", "friends": "friend", "bff": "best friend", "buddy": "friend",
    "boss": "boss", "manager": "manager", "coworker": "colleague", "co-worker": "colleague",
    "colleague": "colleague", "colleagues": "colleague", "roommate": "roommate", "flatmate": "roommate",
    "neighbor": "neighbour", "neighbour": "neighbour", "mentor": "mentor", "teacher": "teacher",
    "therapist": "therapist", "coach": "coach", "dog": "dog", "dogs": "dog", "puppy": "dog",
    "puppies": "dog", "pup": "dog", "pups": "dog", "cat": "cat", "cats": "cat", "kitten": "cat", "kitty": "cat",
    "pet": "pet", "pets": "pet", "horse": "horse", "bird": "bird", "parrot": "parrot", "hamster": "hamster",
    "rabbit": "rabbit", "bunny": "rabbit", "turtle": "turtle", "turtles": "turtle", "snake": "snake",
    "guinea pig": "guinea pig",
}  # fmt: skip
# Relations whose mere mention ("my husband", "my kids") says the speaker has one.
_HAS = _words("husband wife partner spouse boyfriend girlfriend fiance son daughter child sister brother")
_HAS |= _words("grandchild grandson granddaughter dog cat pet horse bird parrot hamster rabbit turtle snake")
_PLURAL = {"child": "children", "grandchild": "grandchildren", "guinea pig": "guinea pigs"}
_REL = "(?P<r>" + "|".join(sorted((re.escape(k) for k in _RELATIONS), key=len, reverse=True)) + ")"
_REL_ADJ = (
    r"(?:(?:older|younger|little|big|baby|twin|oldest|youngest|eldest|dear|beloved|new|old|lovely|"
    r"amazing|sweet|awesome|wonderful|two|three|four|\d|best|close|good|childhood|furry)\s+)*"
)
_COUNT_ADJ = (
    r"(?:(?:new|little|young|younger|older|old|grown|adult|small|big|beautiful|lovely|wonderful|amazing|"
    r"cute|adorable|adopted|rescue|twin|baby|teenage|furry|awesome|sweet|grown-up)\s+)*"
)
_IDENTITY = (
    r"(?P<adj>vegan|vegetarian|pescatarian|pregnant|retired|transgender|trans|gay|lesbian|bisexual|queer|"
    r"non-?binary|autistic|diabetic|left-handed|right-handed|unemployed|self-employed|christian|catholic|"
    r"muslim|jewish|buddhist|hindu|atheist|agnostic|introverted|extroverted|an?\s+introvert|an?\s+extrovert)"
)
_STATUS = r"(?P<status>married|single|divorced|engaged|widowed|separated)"
_NOT_A_ROLE = _words(
    "bit little lot tad part kind sort type mess wreck sucker bundle ball work fan believer firm huge big total "
    "real good great bad terrible lucky hard fast slow quick long whole nervous pro natural one couple few "
    "number strong true mix combination"
)
_DULL = _words(
    "great good fun blast lot amazing wonderful nice rough hard tough bad terrible awesome incredible fantastic "
    "best time chance feeling idea thought talk conversation moment day week lovely crazy busy wild really so "
    "such sense kick laugh feeling"
)


# ---------------------------------------------------------------- hits


@dataclass(frozen=True, slots=True)
class _Hit:
    attribute: str
    value: str
    kind: FactKind
    confidence: float
    negated: bool = False
    direction: Direction | None = None  # resolve a date in this direction (None: no date)
    triple: bool = False  # also a triple (the value is a named entity)
    subject_we: bool = False


def _hit(
    attribute: str,
    value: str | None,
    kind: FactKind,
    confidence: float,
    *,
    direction: Direction | None = None,
    triple: bool = False,
    subject_we: bool = False,
) -> list[_Hit]:
    if value is None:
        return []
    return [_Hit(attribute, value, kind, confidence, False, direction, triple, subject_we)]


def _negate(hit: _Hit) -> _Hit:
    return replace(hit, negated=True, direction=hit.direction or "past")


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


_ENTITY_ATTRIBUTES = frozenset({"lives in", "works at", "studies at", "from"})
# Predicates after "I" (present tense) or "I am" (copula / progressive); "v" is the value.
_PRESENT: tuple[tuple[re.Pattern[str], str, FactKind, float], ...] = tuple(
    (_rx(p), attribute, kind, confidence)  # type: ignore[misc]
    for p, attribute, kind, confidence in (
        (r"^(?:live|am\s+living|reside|living|residing)\s+in\s+(?P<v>.+)", "lives in", "fact", 0.85),
        (r"^(?:work|am\s+working|working)\s+(?:at|for)\s+(?P<v>.+)", "works at", "fact", 0.85),
        (r"^(?:work|am\s+working|working)\s+as\s+(?P<v>.+)", "works as", "fact", 0.85),
        (r"^(?:work|am\s+working|working)\s+in\s+(?P<v>.+)", "works in", "fact", 0.7),
        (r"^(?:study|am\s+studying|studying)\s+at\s+(?P<v>.+)", "studies at", "fact", 0.8),
        (r"^(?:study|am\s+studying|studying|(?:am\s+)?majoring\s+in|major\s+in)\s+(?P<v>.+)", "studies", "fact", 0.75),
        (r"^(?:teach|am\s+teaching|teaching)\s+(?P<v>.+)", "teaches", "fact", 0.7),
        (r"^(?:play|playing)\s+(?P<v>.+)", "plays", "fact", 0.65),
        (r"^(?:go|going)\s+to\s+(?P<v>.+)", "goes to", "fact", 0.55),
        (r"^(?:love|loving|adore)\s+(?P<v>.+)", "likes", "preference", 0.8),
        (r"^(?:like|liking|enjoy|enjoying)\s+(?P<v>.+)", "likes", "preference", 0.75),
        (r"^(?:prefer|preferring)\s+(?P<v>.+)", "prefers", "preference", 0.75),
        (r"^(?:hate|hating|detest|loathe)\s+(?P<v>.+)", "dislikes", "preference", 0.8),
        (r"^(?:dislike|disliking)\s+(?P<v>.+)", "dislikes", "preference", 0.75),
        (r"^(?:am\s+|be\s+)?(?:originally\s+)?from\s+(?P<v>.+)", "from", "fact", 0.8),
        (r"^(?:am|be)\s+(?:a\s+)?(?:big\s+|huge\s+|massive\s+|great\s+|total\s+|real\s+)?fan\s+of\s+(?P<v>.+)",
         "likes", "preference", 0.75),
        (r"^(?:am|be)\s+an?\s+(?:big\s+|huge\s+|massive\s+|total\s+|real\s+|die-hard\s+)?"
         r"(?P<v>[\w'-]+(?:\s+[\w'-]+){0,2})\s+fan\s*$", "likes", "preference", 0.75),
        (r"^(?:am|be)\s+(?:really\s+|so\s+|very\s+)?(?:into|passionate\s+about|obsessed\s+with|crazy\s+about)"
         r"\s+(?P<v>.+)", "likes", "preference", 0.7),
        (r"^(?:am|be)\s+(?:really\s+|very\s+|so\s+)?(?:interested\s+in|keen\s+on)\s+(?P<v>.+)",
         "interested in", "preference", 0.65),
        (r"^(?:am|be)\s+allergic\s+to\s+(?P<v>.+)", "allergic to", "fact", 0.8),
    )
)  # fmt: skip
_AM_A = _rx(r"^(?:am|be)\s+(?:a|an)\s+(?P<v>.+)")
_AM_IDENTITY = _rx(rf"^(?:am|be)\s+{_IDENTITY}\s*$")
_AM_STATUS = _rx(rf"^(?:am|be)\s+(?:happily\s+)?{_STATUS}\s*$")
_AM_MARRIED_TO = _rx(r"^(?:am|be)\s+(?:happily\s+)?(?P<rel>married|engaged)\s+to\s+(?P<n>\S+(?:\s+\S+)?)")
_AM_AGE = _rx(r"^am\s+(?P<n>\d{1,3})(?P<yo>\s+years?\s+old|\s*yo)?\s*$")
_AM_NAME = _rx(r"^am\s+(?-i:(?P<n>[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?))\s*$")
_PREFERENCE_SPLIT = re.compile(r"\s+(?:and|or)\s+", re.IGNORECASE)


def _predicate(rest: str, base: float) -> list[_Hit]:
    """Facts from what follows "I " (``rest`` starts with a verb or with "am"); ``base`` scales confidence."""
    rest = rest.strip()
    for pattern, attribute, kind, confidence in _PRESENT:
        if m := pattern.match(rest):
            raw = m.group("v")
            if attribute == "prefers":
                raw = re.split(r"\s+(?:to|over|rather\s+than|than|instead\s+of)\s+", raw, maxsplit=1)[0]
            if kind == "preference":
                return _preferences(attribute, raw, confidence * base)
            hits: list[_Hit] = []
            if attribute in _SECONDARY:  # "work at Google as an engineer", "study biology at MIT"
                word, other = _SECONDARY[attribute]
                parts = re.split(rf"\s+{word}\s+", _clip(raw), maxsplit=1, flags=re.IGNORECASE)
                if len(parts) == 2:
                    raw = parts[0]
                    hits += _simple(other, parts[1], kind, confidence * base)
            return _simple(attribute, raw, kind, confidence * base) + hits
    if m := _AM_MARRIED_TO.match(rest):
        relation = "spouse" if m.group("rel").lower() == "married" else "fiance"
        hits = _hit(relation, _name(m.group("n")), "relation", 0.85 * base, triple=True)
        return hits + _hit("relationship status", m.group("rel").lower(), "fact", 0.85 * base)
    if m := _AM_STATUS.match(rest):
        return _hit("relationship status", m.group("status").lower(), "fact", 0.8 * base)
    if m := _AM_IDENTITY.match(rest):
        return _hit("is", _LEAD.sub("", m.group("adj").lower()), "fact", 0.75 * base)
    if m := _AM_AGE.match(rest):
        age = int(m.group("n"))
        return _hit("age", str(age), "fact", (0.85 if m.group("yo") else 0.7) * base) if 0 < age <= 120 else []
    if m := _AM_A.match(rest):
        return _role(m.group("v"), base)
    if m := _AM_NAME.match(rest):
        return _hit("name", _name(m.group("n")), "fact", 0.55 * base)
    return []


_SECONDARY = {"works at": ("as", "works as"), "works as": ("at", "works at"), "studies": ("at", "studies at")}


def _simple(attribute: str, raw: str, kind: FactKind, confidence: float) -> list[_Hit]:
    if attribute in _ENTITY_ATTRIBUTES:
        value = _value(raw, max_words=5)
        return _hit(attribute, value, kind, confidence, triple=_proper(value))
    return _hit(attribute, _value(raw, max_words=7), kind, confidence)


def _preferences(attribute: str, raw: str, confidence: float) -> list[_Hit]:
    """ "hiking" / "trying new recipes and experimenting in the kitchen" (split when every part is a phrase)."""
    raw = _clip(raw)
    if _value(raw, max_words=12) is None:
        return []  # "I love how it's …", "I love that you …"
    if re.match(r"^(?:the|this|that|these|those)\s", raw, re.IGNORECASE):
        confidence -= 0.2  # "I love the colours": about something in the conversation
    parts = _PREFERENCE_SPLIT.split(raw)
    if len(parts) == 1 or any(len(_LEAD.sub("", p).split()) < 2 for p in parts):
        parts = [raw]
    hits: list[_Hit] = []
    for part in parts:
        hits += _hit(attribute, _value(part, max_words=6), "preference", confidence)
    return hits


def _clip(raw: str) -> str:
    return _VALUE_CUT.sub("", raw).strip()


def _role(raw: str, base: float) -> list[_Hit]:
    """ "I am a nurse (at St Mary's)" -> is nurse (+ works at / studies at)."""
    words = raw.split()
    if not words or words[0].lower() in _NOT_A_ROLE or re.match(r"^(?:\S+\s+){0,2}fan\b", raw, re.IGNORECASE):
        return []
    role_raw, org_raw = raw, None
    if m := re.match(r"^(?P<role>(?:[\w-]+\s+){0,2}[\w-]+)\s+(?:at|for)\s+(?P<org>.+)$", raw, re.IGNORECASE):
        role_raw, org_raw = m.group("role"), m.group("org")
    role_raw = re.split(r"\s+(?:who|that|with|in|from|of\s+the|and)\s+", _clip(role_raw), maxsplit=1)[0]
    role = _value(role_raw, max_words=4)
    if role is None:
        return []
    hits = _hit("is", role if _proper(role) else role.lower(), "fact", 0.7 * base)
    if org_raw is not None:
        org = _value(org_raw, max_words=5)
        attribute = "studies at" if role.lower().endswith("student") else "works at"
        if _proper(org):  # "a guard for the team" says nothing about an employer
            hits += _hit(attribute, org, "fact", 0.7 * base, triple=True)
    return hits


_GERUND = {
    "playing": "play", "living": "live", "working": "work", "studying": "study", "going": "go",
    "liking": "like", "loving": "love", "enjoying": "enjoy", "teaching": "teach",
}  # fmt: skip


def _stopped(rest: str) -> list[_Hit]:
    """ "stopped playing chess" -> plays chess, negated; "stopped eating meat" -> does eating meat, negated."""
    words = rest.split()
    if not words or not words[0].lower().endswith("ing"):
        return []
    verb = _GERUND.get(words[0].lower())
    hits = _predicate(" ".join([verb, *words[1:]]), 1.0) if verb else []
    return [_negate(h) for h in hits or _hit("does", _value(rest, max_words=5), "fact", 0.7)]


# Clause rules: patterns on a clause that starts at its subject ("I …", or "we …" where noted).
_S = r"^(?P<subj>I|we)\s+"
_I = r"^(?P<subj>I)\s+"
_HAVE = r"(?:have\s+|had\s+)?"
_NO_LONGER = _rx(_I + r"(?P<am>am\s+)?no\s+longer\s+" + _ADV + r"(?P<rest>.+)")
_ANYMORE = _rx(_I + r"(?P<aux>do|did|am)\s+not\s+" + _ADV + r"(?P<rest>.+?)\s+any\s?more\b")
_USED_TO = _rx(_I + r"used\s+to\s+(?P<be>be\s+)?(?P<rest>.+)")
_STOPPED = _rx(_I + _HAVE + _ADV + r"(?:stopped|quit|gave\s+up)\s+(?P<rest>.+)")
_QUIT_JOB = _rx(
    _I + _HAVE + _ADV + r"(?:quit|left|lost)\s+my\s+(?:\w+\s+)?job(?:\s+(?:at|with)\s+(?P<v>.+)|\s+as\s+(?P<role>.+))?"
)
_FIRED = _rx(_I + _HAVE + _ADV + r"(?:got|was|been)\s+(?:fired|laid\s+off|let\s+go)(?:\s+(?:from|at|by)\s+(?P<v>.+))?")
_DISLIKE = _rx(_I + r"(?:do\s+not|never)\s+" + _ADV + r"(?:like|love|enjoy)\s+(?P<v>.+)")
_CANNOT_STAND = _rx(_I + r"(?:cannot|can\s+not)\s+" + _ADV + r"(?:stand|bear)\s+(?P<v>.+)")
_NOT_FAN = _rx(_I + r"am\s+not\s+(?:a\s+)?(?:big\s+|huge\s+)?fan\s+of\s+(?P<v>.+)")
_AM_NOT = _rx(_I + r"am\s+not\s+(?P<rest>(?:a|an)\s+.+|" + _IDENTITY + r"\s*$|" + _STATUS + r"\s*$)")
_MOVED = _rx(_S + _HAVE + _ADV + r"(?:moved|relocated)\s+(?:back\s+)?(?:from\s+(?P<old>.+?)\s+)?to\s+(?P<v>.+)")
_NEW_JOB = _rx(
    _I + r"(?:have\s+)?" + _ADV + r"(?:got|landed|started|accepted|took)\s+(?:a\s+|my\s+|the\s+)?(?:new\s+|first\s+)?"
    r"(?:job|position|role)\s+(?P<prep>at|with|as)\s+(?P<v>.+)"
)
_STARTED_WORK = _rx(_I + _HAVE + _ADV + r"(?:started|began)\s+working\s+(?P<prep>at|for|as)\s+(?P<v>.+)")
_GOT_STATUS = _rx(_S + _HAVE + _ADV + r"got\s+(?P<status>married|engaged|divorced)\b")
_TURNED = _rx(_I + _ADV + r"turned\s+(?P<n>\d{1,3})\b")
_RETIRED = _rx(_I + _HAVE + _ADV + r"retired\b")
_HAVE_COUNT = _rx(
    _S + r"(?:have|have\s+got|own|got)\s+" + _ADV
    + r"(?P<c>\d{1,2}|an?|one|two|three|four|five|six|seven|eight|nine|ten)\s+" + _COUNT_ADJ + _REL
    + r"(?=\s*$|\s+(?:named|called|and|who|that|which|too|as\s+well|now|already|at|from|in|last|this|yesterday|"
    r"recently|a\s+few|a\s+couple|two|three|\d)\b)(?:\s+(?:named|called)\s+(?P<names>.+))?"
)  # fmt: skip
_POSITIVE = _rx(_I + _ADV + r"(?P<rest>.+)")
_EVENT_STRONG = (
    r"went\s+to|attended|visited|graduated\s+from|adopted|travel?led\s+to|flew\s+to|volunteered\s+(?:at|for|with)|"
    r"participated\s+in|took\s+part\s+in|competed\s+in|signed\s+up\s+for|joined|been\s+to"
)
_EVENT_WEAK = (
    r"went(?:\s+on|\s+for|\s+out)?|started|began|finished(?:\s+up)?|completed|ran|hosted|organi[sz]ed|volunteered|"
    r"drove\s+to|took|painted|met(?:\s+up)?\s+with|met|bought|won|celebrated|performed(?:\s+(?:at|in))?|gave|made|"
    r"got\s+back\s+from|came\s+back\s+from|returned\s+from|saw|watched|read|wrote|baked|cooked|built|launched|"
    r"published|received|passed|threw|planted|tried(?:\s+out)?|checked\s+out|learned|learnt|climbed|hiked|"
    r"went\s+back\s+to|donated|graduated|competed|picked\s+up|set\s+up|opened|created|released|played(?:\s+(?:in|at))?|"
    r"got(?=\s+(?:a|an|my|our|some|new|the)\s)|had(?=\s+(?:a|an|my|our|some|the)\s)"
)
_EVENT_PAST = _rx(_S + _HAVE + _ADV + r"(?P<verb>" + _EVENT_STRONG + "|" + _EVENT_WEAK + r")\b\s*(?P<v>.*)")
_SUBJECTLESS = _rx(
    r"^(?:just\s+|also\s+|finally\s+|recently\s+)?(?:"
    + _EVENT_STRONG
    + "|"
    + _EVENT_WEAK
    + r"|(?:quit|lost)\s+my\s+job)\b"
)
_EVENT_FUTURE = _rx(
    _S + r"(?:am|are|will\s+be)\s+" + _ADV + r"(?P<verb>going\s+to|planning\s+(?:to|on)|thinking\s+(?:about|of)|"
    r"hoping\s+to|about\s+to|getting\s+ready\s+for|preparing\s+for|moving\s+to|travel?ling\s+to|flying\s+to|"
    r"heading\s+to|having|hosting|attending|organi[sz]ing|celebrating|running|performing(?:\s+(?:at|in))?|taking|"
    r"starting|visiting|leaving\s+for|meeting|joining|throwing|launching|opening|competing\s+in|playing|holding|"
    r"going)\s+(?P<v>.+)"
)
_EVENT_WILL = _rx(
    _S + r"will\s+" + _ADV + r"(?P<verb>go|visit|start|begin|attend|travel|fly|move|join|graduate|take|meet|"
    r"celebrate|run|host|perform|compete|launch|finish|have|get|see|try|open|release|throw|hold|speak|present|"
    r"teach|play|leave)\s+(?P<v>.+)"
)
_EVENT_HAVE = _rx(_S + r"(?:have|has)\s+(?:a|an|my|our)\s+(?P<v>.+)")
_INTRANSITIVE = _words("graduated hiked ran climbed volunteered performed baked cooked competed")
_UNDATED_STOP = _rx(r"^(?:bed|sleep|the\s+bathroom|the\s+toilet)\b")

# Sentence-level rules (not anchored at a subject).
_NAME_WORDS = r"(?P<n>\S+(?:\s+\S+)?)"
_MY_NAME = _rx(r"\b(?:my\s+name\s+is|my\s+name's|(?<!not\s)call\s+me|I\s+am\s+called)\s+" + _NAME_WORDS)
_FAVOURITE = _rx(
    r"\bmy\s+(?:all-time\s+|absolute\s+|personal\s+|very\s+)?fav(?:ou?rite|e)\s+(?P<x>[\w' -]{2,30}?)\s+"
    r"(?:is|are|has\s+to\s+be|would\s+(?:have\s+to\s+)?be)\s+(?:definitely\s+|probably\s+|still\s+)?(?P<v>.+)"
)
_FAVOURITE_REV = _rx(
    r"^(?P<v>[\w' -]{2,40}?)\s+(?:is|are)\s+(?:definitely\s+|probably\s+|still\s+)?my\s+(?:all-time\s+|absolute\s+)?"
    r"fav(?:ou?rite|e)(?:\s+(?P<x>[\w' -]{2,30}))?\s*$"
)
_HOBBIES = _rx(r"\bmy\s+(?:favou?rite\s+)?hobb(?:y\s+is|ies\s+are|ies\s+include)\s+(?P<v>.+)")
_NAME_LIST = r"(?P<n>\S+(?:\s+(?:and\s+)?\S+){0,2})"
_MY_REL_NAME = _rx(
    r"\b(?P<own>my|our)\s+"
    + _REL_ADJ
    + r"(?P<ex>ex-?)?"
    + _REL
    + r"(?P<comma>,)?\s+(?:(?:named|called)\s+)?"
    + _NAME_LIST
)
_MY_REL_IS = _rx(r"\b(?P<own>my|our)\s+" + _REL_ADJ + _REL + r"(?:'s\s+name)?\s+is\s+" + _NAME_WORDS)
_NAME_IS_MY_REL = _rx(
    r"(?:^|[\s,])(?P<n>[^\W\d_][\w'-]*)(?:,|\s+is)\s+(?P<own>my|our)\s+" + _REL_ADJ + _REL + r"\b(?!')"
)
_NOT_COMPOUND = (  # "my horse painting", "my dog food": not a relation
    r"\b(?!-)(?!\s+(?:\w+ing|food|toys?|bed|show|sitter|walker|park|breed|collar|leash|house|hair|print|lovers?|"
    r"person|people|owners?|costume|portrait|sculpture|figurine|mug|tattoo|shirt|group|chat|night|time|day|trip|"
    r"stuff|life)\b)"
)
_MY_REL = _rx(  # "my husband and kids": the possessive covers both
    r"\bmy\s+" + _REL_ADJ + _REL + _NOT_COMPOUND
    + r"(?:\s+(?:and|&)\s+" + _REL_ADJ + _REL.replace("?P<r>", "?P<r2>") + _NOT_COMPOUND + ")?"
)  # fmt: skip
_NOT_REAL = _rx(r"\b(?:if|wish|someday|one\s+day|future|dream|imagine|ex|late|former|would)\b")
_HOME = _rx(r"\bmy\s+home\s*(?:country|town)(?:,|\s+is|\s+of)?\s+" + _NAME_WORDS)
_SKIP_PREFIX = _rx(
    r"\b(?:if|unless|whether|wish|wished|suppose|imagine|pretend|dream|dreamed|dreamt|not|never|no|nobody|"
    r"nothing|neither|nor|cannot|hardly|barely|said|says|told|tells|asked|ask|thought|think|wonder|what|"
    r"would|could|should|might)\b"
)
_RELATIVE = _rx(
    r"(?:\b(?:the|this|that|these|those|a|an|my|your|our|his|her|their|some|every|any|each)\s+(?:\S+\s+){1,3}|"
    r"\b(?:something|anything|everything|nothing|someone|anyone|everyone|whatever|what|stuff|things?|ones?)\s+)$"
)
_HEDGE = _rx(r"\b(?:maybe|perhaps|probably|guess|suppose|believe|like|kinda|sort\s+of|kind\s+of)\b")
_CLAUSE_START = _rx(r"[,;:&]|\s[-–—]+\s|\b(?:and|but|so|because|then|also|plus|or)\b")
_OPEN_NP = _rx(r"\b(?:a|an)\s+\S+$")
_NP_START = _rx(r"^,\s*(?:a|an|the|my|our|his|her|their|this|that|some|I|we|you|he|she|they|it|and|or|but|so)\b")


# ---------------------------------------------------------------- the extractor


def _clause_rules(clause: str, sentence: str) -> list[_Hit]:
    """Hits for one clause that starts at its subject ("I …" / "we …")."""
    if m := _NO_LONGER.match(clause):
        return [_negate(h) for h in _predicate(("am " if m.group("am") else "") + m.group("rest"), 0.95)]
    if m := _ANYMORE.match(clause):
        rest = ("am " if m.group("aux").lower() == "am" else "") + m.group("rest")
        return [_negate(h) for h in _predicate(rest, 0.85)]
    if m := _USED_TO.match(clause):
        return [_negate(h) for h in _predicate(("am " if m.group("be") else "") + m.group("rest"), 0.8)]
    if (m := _QUIT_JOB.match(clause)) and m.group("role"):  # "I lost my job as a banker"
        return [_negate(h) for h in _hit("works as", _value(m.group("role"), max_words=4), "fact", 0.75)]
    if (m := _QUIT_JOB.match(clause)) or (m := _FIRED.match(clause)):
        value = _value(m.group("v"), max_words=5) if m.group("v") else ""
        return [_negate(h) for h in _hit("works at", value, "fact", 0.8, triple=_proper(value))]
    if m := _STOPPED.match(clause):
        return _stopped(m.group("rest"))
    if m := _CANNOT_STAND.match(clause):
        return _preferences("dislikes", m.group("v"), 0.8)
    if m := _DISLIKE.match(clause):
        return _preferences("dislikes", m.group("v"), 0.6)
    if m := _NOT_FAN.match(clause):
        return _preferences("dislikes", m.group("v"), 0.65)
    if m := _AM_NOT.match(clause):
        return [_negate(h) for h in _predicate("am " + m.group("rest"), 0.75) if h.attribute != "name"]
    we = clause[:2].lower() == "we"
    if m := _MOVED.match(clause):
        value = _value(m.group("v"), max_words=5)
        hits = _hit("lives in", value, "fact", 0.75, direction="past", triple=_proper(value), subject_we=we)
        if m.group("old") and hits:
            old = _value(m.group("old"), max_words=5)
            hits += [_negate(h) for h in _hit("lives in", old, "fact", 0.6, triple=_proper(old), subject_we=we)]
        return hits
    if (m := _NEW_JOB.match(clause)) or (m := _STARTED_WORK.match(clause)):
        if m.group("prep").lower() == "as":
            return _hit("works as", _value(m.group("v"), max_words=4), "fact", 0.75, direction="past")
        value = _value(m.group("v"), max_words=5)
        return _hit("works at", value, "fact", 0.75, direction="past", triple=_proper(value))
    if m := _GOT_STATUS.match(clause):
        status = m.group("status").lower()
        return _hit("relationship status", status, "fact", 0.8, direction="past", subject_we=we)
    if m := _TURNED.match(clause):
        age = int(m.group("n"))
        return _hit("age", str(age), "fact", 0.75, direction="past") if 0 < age <= 120 else []
    if _RETIRED.match(clause):
        return _hit("is", "retired", "fact", 0.75, direction="past")
    if m := _HAVE_COUNT.match(clause):
        return _have_count(m, we)
    if hits := _events(clause, sentence):
        return hits
    if m := _POSITIVE.match(clause):
        return _predicate(m.group("rest"), 1.0)
    return []


def _relation(m: re.Match[str]) -> str:
    word = m.group("r").lower()
    return _RELATIONS.get(word, word)


def _have_count(m: re.Match[str], we: bool) -> list[_Hit]:
    relation = _relation(m)
    count = _count(m.group("c"))
    if count == 1:
        hits = _hit("has", relation, "relation", 0.7, subject_we=we)
    else:
        noun = _PLURAL.get(relation, relation + "s")
        hits = _hit(f"number of {noun}", str(count), "relation", 0.75, subject_we=we)
    for name in _names(m.group("names") or "", plural=count > 1):
        hits += _hit(relation, name, "relation", 0.8, triple=True, subject_we=we)
    return hits


def _names(raw: str, *, plural: bool) -> list[str]:
    out = []
    for part in re.split(r"\s+and\s+|\s*,\s*", raw.strip())[: 4 if plural else 1]:
        name = _name(part)
        if name is None:
            break
        out.append(name)
    return out


def _events(clause: str, sentence: str) -> list[_Hit]:
    subj = clause.split()[0]
    if m := _EVENT_FUTURE.match(clause):
        return _event(m.group("verb"), m.group("v"), sentence, "future", subj, dated_only=True)
    if m := _EVENT_WILL.match(clause):
        return _event("will " + m.group("verb"), m.group("v"), sentence, "future", subj, dated_only=True)
    if m := _EVENT_PAST.match(clause):
        verb = m.group("verb")
        strong = re.fullmatch(_EVENT_STRONG, verb, re.IGNORECASE) is not None
        if strong and _UNDATED_STOP.match(m.group("v")):
            return []
        return _event(verb, m.group("v"), sentence, "past", subj, dated_only=not strong)
    if m := _EVENT_HAVE.match(clause):
        return _event("has", m.group("v"), sentence, "future", subj, dated_only=True)
    return []


def _event(verb: str, raw: str, sentence: str, direction: Direction, subj: str, *, dated_only: bool) -> list[_Hit]:
    dated = _dated(_clip(raw), direction) or _dated(sentence, direction)
    if dated_only and not dated:
        return []
    attribute = " ".join(verb.lower().split())
    value = _value(raw, max_words=8)
    if value is None and attribute in _INTRANSITIVE and not _strip_times(_clip(raw)):
        value = attribute  # "I graduated in 2019"
    if value is None or (attribute in ("had", "got", "has", "having") and value.split()[0].lower() in _DULL):
        return []
    confidence = (0.7 if dated else 0.5) - (0.1 if direction == "future" else 0.0)
    return _hit(attribute, value, "event", confidence, direction=direction, subject_we=subj.lower() == "we")


_PROBE = datetime(2000, 6, 14, 12, 0)  # any turn time: only whether a time fits the direction matters


def _dated(text: str, direction: Direction) -> bool:
    return any(resolve_time(kind, m, _PROBE, direction) for _s, _e, kind, m in find_times(text))


def _sentence_rules(sentence: str) -> list[_Hit]:
    hits: list[_Hit] = []
    for m in _MY_NAME.finditer(sentence):
        hits += _hit("name", _name(m.group("n")), "fact", 0.9)
    for m in _FAVOURITE.finditer(sentence):
        what = (_value(m.group("x"), max_words=4) or "").lower()
        attribute: str
        if re.fullmatch(r"things?\s+to\s+do", what):
            attribute = "likes"
        elif not what or what.split()[0] in ("part", "thing", "things", "bit", "moment", "memory", "one", "way"):
            continue  # "my favourite part was …": about the conversation, not a lasting preference
        else:
            attribute = f"favourite {what}"
        hits += _hit(attribute, _value(_clause_of(m.group("v")[:_WINDOW]), max_words=6), "preference", 0.85)
    for clause in re.split(r"[,;:]|\s[-–—]+\s", sentence):
        if rev := _FAVOURITE_REV.match(clause.strip(" .!")):
            what = (_value(rev.group("x") or "", max_words=4) or "").lower()
            attribute = f"favourite {what}" if what else "likes"
            hits += _hit(attribute, _value(rev.group("v"), max_words=4), "preference", 0.75)
    for m in _HOBBIES.finditer(sentence):
        for item in re.split(r"\s*,\s*(?:and\s+|or\s+)?|\s+and\s+|\s+or\s+", m.group("v")[:_WINDOW])[:8]:
            hits += _hit("hobby", _value(item, max_words=4), "preference", 0.8)
    for m in _MY_REL_NAME.finditer(sentence):
        word = m.group("r").lower()
        plural = word.endswith(("s", "ren"))
        if m.group("comma") and not plural and re.match(r"^\S+\s+and\b", m.group("n")):
            continue  # "my girlfriend, Toby and I": a list, not an apposition
        relation = ("ex-" if m.group("ex") else "") + _relation(m)
        confidence = 0.85 if m.group("own").lower() == "my" else 0.75
        for name in _names(m.group("n"), plural=plural):
            hits += _hit(relation, name, "relation", confidence, triple=True)
    for m in _MY_REL_IS.finditer(sentence):
        hits += _hit(_relation(m), _name(m.group("n")), "relation", 0.85, triple=True)
    for m in _NAME_IS_MY_REL.finditer(sentence):
        hits += _hit(_relation(m), _name(m.group("n")), "relation", 0.8, triple=True)
    if not _NOT_REAL.search(sentence):
        for m in _MY_REL.finditer(sentence):
            for word in filter(None, (m.group("r"), m.group("r2"))):
                relation = _RELATIONS.get(word.lower(), word.lower())
                if relation in _HAS:
                    hits += _hit("has", relation, "relation", 0.6)
    for m in _HOME.finditer(sentence):
        hits += _hit("from", _name(m.group("n")), "fact", 0.75, triple=True)
    return hits


def _clause_of(text: str) -> str:
    m = _CLAUSE_END.search(text)
    return text[: m.start()] if m else text


def _subject_clauses(sentence: str) -> list[tuple[str, str]]:
    """(prefix within the clause, clause from the subject to the clause end) for every "I" / "we".

    A subject inside a relative clause ("These figurines I bought …") is left out.
    """
    out = []
    if _SUBJECTLESS.match(sentence):  # chat ellipsis: "Just got back from a road trip yesterday!"
        out.append(("", "I " + _clause_of(_window(sentence, 0))))
    for m in re.finditer(r"\b(?:I|we)\b", sentence, re.IGNORECASE):
        start = m.start()
        clause = _window(sentence, start)
        end = len(clause)
        for end_match in _CLAUSE_END.finditer(clause, m.end() - start):
            end = end_match.start()
            if not (clause[end] == "," and _OPEN_NP.search(clause[:end]) and not _NP_START.match(clause[end:])):
                break  # "a safe, inviting place": a comma inside a noun phrase does not end the clause
            end = len(clause)
        before = sentence[max(0, start - _WINDOW) : start]
        boundaries = list(_CLAUSE_START.finditer(before))
        prefix = before[boundaries[-1].end() :] if boundaries else before
        tail = " ".join(prefix.split()[-6:]) + " "
        if _RELATIVE.search(tail) and _RELATIVE.search(_strip_times(tail) + " "):
            continue  # ("Last week I …" is fine: the time is not a noun phrase)
        out.append((prefix, clause[:end].strip()))
    return out


_WINDOW = 240  # characters of a clause worth reading: values are a few words, longer text only costs time


def _window(sentence: str, start: int) -> str:
    """``sentence`` from ``start``, at most ``_WINDOW`` characters, cut at a space."""
    if len(sentence) - start <= _WINDOW:
        return sentence[start:]
    text = sentence[start : start + _WINDOW]
    return text[: text.rfind(" ")] if " " in text else text


def _timed(hit: _Hit, text: str, sentence: str, at: datetime | None) -> tuple[datetime | None, Precision | None]:
    if hit.direction is None:
        return None, None
    resolved = _first_time(text, at, hit.direction) or _first_time(sentence, at, hit.direction)
    return resolved if resolved is not None else (None, None)


def extract(turns: Sequence[TurnText]) -> Extraction:
    """Candidate facts and triples stated in the first person in ``turns`` (see the module docstring)."""
    facts: dict[tuple[int, str, bool], FactCandidate] = {}
    triples: dict[tuple[int, str, bool], TripleCandidate] = {}
    for index, turn in enumerate(turns):
        entity = speaker_entity(turn)
        for sentence in split_sentences(_prepare(turn.text or "")):
            if sentence.endswith("?"):
                continue  # questions assert nothing
            found: list[tuple[_Hit, str]] = [(h, sentence) for h in _sentence_rules(sentence)]
            for prefix, clause in _subject_clauses(sentence):
                if _SKIP_PREFIX.search(prefix):
                    continue
                penalty = 0.15 if _HEDGE.search(prefix) else 0.0
                found += [
                    (replace(h, confidence=h.confidence - penalty), clause) for h in _clause_rules(clause, sentence)
                ]
            for hit, text in found:
                confidence = hit.confidence - 0.1 * hit.subject_we - 0.1 * (len(hit.value.split()) > 5)
                confidence = round(min(1.0, max(0.05, confidence)), 3)
                valid_from, precision = _timed(hit, text, sentence, turn.at)
                fact = FactCandidate(
                    entity, hit.attribute, hit.value, confidence, index, hit.kind, valid_from, hit.negated, precision
                )
                key = (index, fact.digest, hit.negated)
                if key not in facts or facts[key].confidence < confidence:
                    facts[key] = fact
                if hit.triple and hit.value:
                    triple = TripleCandidate(
                        entity, hit.attribute, hit.value, confidence, index, valid_from, hit.negated
                    )
                    tkey = (index, triple.digest, hit.negated)
                    if tkey not in triples or triples[tkey].confidence < confidence:
                        triples[tkey] = triple
    return Extraction(tuple(facts.values()), tuple(triples.values()))
