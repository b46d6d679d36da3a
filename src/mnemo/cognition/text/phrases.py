"""Text preparation and phrase cleaning for offline extraction: what a candidate's value may be.

Seeds: archive-adr §4 (ingestion extracts entities, relationships and facts as
candidate records) and §9 (Phase A of the curator loop: augmentation extracts
candidate facts/triples from conversation traces). Precision over recall: a
value that is empty, too long or context-dependent ("it", "that") is dropped.

:func:`prepare_text` normalises a turn (quotes, contractions, "[photo]"
annotations); :func:`clean_value` and :func:`clean_name` turn the raw text
after a pattern into an object phrase or a person's name; :func:`clause_of`,
:func:`clip` and :func:`window` bound how much of a sentence is read.
"""

from __future__ import annotations

import re
import unicodedata

from mnemo.cognition.text.timex import strip_times

__all__ = [
    "CLAUSE_END",
    "LEAD",
    "WINDOW",
    "clause_of",
    "clean_name",
    "clean_value",
    "clip",
    "fold_accents",
    "is_proper",
    "prepare_text",
    "resolve_first_person",
    "window",
    "word_set",
]

_SPACE = re.compile(r"\s+")


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


def prepare_text(text: str) -> str:
    text = unicodedata.normalize("NFKC", text)
    text = text.translate({0x2018: "'", 0x2019: "'", 0x201C: '"', 0x201D: '"'})
    text = re.sub(r"\[[^\]]*\]", " ", text)  # "[shares a photo: …]" annotations
    for pattern, replacement in _CONTRACTIONS:
        text = pattern.sub(replacement, text)
    return _SPACE.sub(" ", text).strip()


# ---------------------------------------------------------------- value cleaning


def word_set(text: str) -> frozenset[str]:
    return frozenset(text.split())


CLAUSE_END = re.compile(r"[,;:!?()\"]|\.(?![^\W_])|\s[-–—]+\s|\s[–—]|[–—]\s|(?<=\w)-\s|\s-$")
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
_DANGLING = re.compile(  # words that cannot end an object phrase: what followed them was cut (a time, a clause)
    r"(?:\s+(?:every|each|last|next|this|that|these|those|other|another|some|any|a|an|the|of|to|at|for|with|from|"
    r"by|and|or|but|my|our|his|her|their|its|your|than|as|into|onto|during|until|since|per|via))+$",
    re.IGNORECASE,
)
_ORPHAN = re.compile(r"\b(?:every|each)\s+(?=(?:with|for|at|in|on|and|from|to|since)\b)", re.IGNORECASE)
LEAD = re.compile(r"^(?:(?:a|an|the|some|that|this|these|those|to)\s+)+", re.IGNORECASE)
_PREPOSITION = re.compile(r"\s(?:with|for|at|in|on|from|about|after|during|near|by|around|because)\s", re.IGNORECASE)
_BAD_LEAD = word_set(
    "it its it's that this these those them they you your yours him her hers us me myself he she we i how what "
    "when where why who whom which whatever so too very lot lots bit all both any each every here there up out "
    "off down over something anything everything nothing someone anyone everyone one seeing hearing knowing "
    "thinking feeling not no of his their"
)
_CONTEXT_FREE = word_set("you your it them")  # a value with these words means nothing out of context
_FUNCTION_WORDS = word_set("a an the of to in on at for with and or but by from as is are was were be")
_WORD = re.compile(r"[^\W_][\w'’-]*")


def clean_value(raw: str, *, max_words: int = 8) -> str | None:
    """A cleaned object phrase, or ``None`` when it is empty, too long, or context-dependent ("it", "that")."""
    text = _ORPHAN.sub("", strip_times(_VALUE_CUT.sub("", raw)))  # "padel every with …" (Sunday was a time)
    for _ in range(3):
        text = _FILLER.sub("", text).strip(" '\"-–—&,;:")
        text = LEAD.sub("", text).strip(" '\"-–—&,;:")
        text = _DANGLING.sub("", text).strip(" '\"-–—&,;:")
    while len(text.split()) > max_words:  # drop trailing prepositional phrases
        cuts = [m.start() for m in _PREPOSITION.finditer(text) if len(text[: m.start()].split()) >= 2]
        if not cuts:
            return None
        text = _FILLER.sub("", text[: cuts[-1]]).strip()
    text = _DANGLING.sub("", text).strip(" '\"-–—&,;:")  # "a gym called Pulse every" (Tuesday was a time)
    words = [w if len(w) > 1 and w.isupper() else w.lower() for w in _WORD.findall(text)]  # "US" is not "us"
    if not words or words[0] in _BAD_LEAD or not _CONTEXT_FREE.isdisjoint(words):
        return None
    if all(w in _FUNCTION_WORDS for w in words):
        return None
    return text


_NAME_STOP = word_set(
    "i me my mine we our you your he him his she her they them it this that these those the a an and or but so "
    "if then there here what who which when where why how yes no not oh hey hi hello thanks thank well yeah "
    "today tomorrow yesterday tonight everyone everything someone something nothing god lord family life "
    "love home work school mom dad mum mother father sister brother guess also just"
    " monday tuesday wednesday thursday friday saturday sunday january february march april may june july "
    "august september october november december christmas easter"
    " american british english french german dutch swedish spanish italian chinese japanese indian canadian "
    "mexican irish scottish australian korean russian polish brazilian christian catholic jewish muslim"
)


def clean_name(raw: str) -> str | None:
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


def fold_accents(text: str) -> str:
    """``text`` casefolded with its accents dropped: "José" and "jose" fold alike (issue 40 item 3)."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return unicodedata.normalize("NFC", "".join(ch for ch in decomposed if not unicodedata.combining(ch)))


def is_proper(value: str | None) -> bool:
    """Whether ``value`` starts with a capital: a named entity, worth a triple."""
    return value is not None and value[:1].isupper()


# ---------------------------------------------------------------- who "I" is

# "I", "me", "myself", "my", "mine", and "our" / "ours" (the speaker's own, shared or not: "our kids" are the
# speaker's kids). "we" / "us" / "ourselves" name a group, not the speaker, and stay as they are ("we" also
# ends a value, see ``_VALUE_CUT``).
_FIRST_PERSON = re.compile(r"\b(?:(?P<own>my|mine|our|ours)|(?P<self>me|myself)|(?-i:(?P<i>I)))\b", re.IGNORECASE)


def resolve_first_person(text: str, speaker: str) -> str:
    """``text`` with the speaker's first-person words replaced by ``speaker``'s name: "show my paintings" ->
    "show Caroline's paintings", "took me camping" -> "took Caroline camping" (a fact's value is read
    outside its turn, where "my" means nobody)."""
    name = speaker.strip()
    if not name:
        return text
    return _FIRST_PERSON.sub(lambda m: f"{name}'s" if m.group("own") else name, text)


# ---------------------------------------------------------------- how much of a sentence is read


def clip(raw: str) -> str:
    """``raw`` without the clause that follows it (", because I …", "and went …")."""
    return _VALUE_CUT.sub("", raw).strip()


def clause_of(text: str) -> str:
    """``text`` up to its first clause end (punctuation, a dash)."""
    m = CLAUSE_END.search(text)
    return text[: m.start()] if m else text


WINDOW = 240  # characters of a clause worth reading: values are a few words, longer text only costs time


def window(sentence: str, start: int) -> str:
    """``sentence`` from ``start``, at most ``WINDOW`` characters, cut at a space."""
    if len(sentence) - start <= WINDOW:
        return sentence[start:]
    text = sentence[start : start + WINDOW]
    return text[: text.rfind(" ")] if " " in text else text
