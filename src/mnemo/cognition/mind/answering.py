"""How the offline agent answers a question from what it recalled: the current statement, when it
was said, or that it does not know.

Seed: cognitive-plan §3.4 (offline, System 1 answers from memory); issue 40 item 8 ("the offline
agent answers with the current value ('you moved to <city> last week') and says it does not know
a never-said thing").

* :func:`supports`: whether a recalled statement speaks of what the question asks about: one of
  the question's focus words (:func:`~mnemo.cognition.scoring.refusal.focus_words`, possessives kept:
  "my brother's name" is about a brother) is in the statement, lightly stemmed, or in the slot
  the statement claims (:func:`~mnemo.cognition.consolidation.extraction.extract`: "We've relocated to Porto"
  claims where the speaker *lives*), or a word of the same everyday slot (:data:`SLOT_WORDS`: a
  *job* is where one *works*, a *home* where one *lives*). A name alone is no support: "Ana's
  blood type" is not answered by "Ana works at a bakery". A question with no focus but names is
  supported by a statement that names one of them.
* :func:`said_when` and :func:`recital_when`: "You said last week that you moved to Porto the week
  before." for a statement older than a day (its own relative times told as of then); today's is
  recited as :func:`~mnemo.cognition.text.utterances.recital`.
* :func:`dont_know`: "I don't know your blood type — you haven't told me.", the question turned
  to the listener's side where that is simple, else a plain "I don't know".

Pure functions; no I/O.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from datetime import datetime

from mnemo.cognition.consolidation.extraction import TurnText, extract
from mnemo.cognition.scoring.refusal import focus_words, proper_names
from mnemo.cognition.text.phrases import word_set
from mnemo.cognition.text.utterances import recital, second_person

__all__ = ["SLOT_WORDS", "dont_know", "recital_when", "said_when", "supports"]

SLOT_WORDS: tuple[frozenset[str], ...] = (
    word_set("live home city town country address house flat apartment move relocat reside based"),
    word_set("work job employ company office career role profession occupation hire"),
    word_set("drive car vehicle"),
    word_set("partner husband wife spouse boyfriend girlfriend fiance marri"),
    word_set("study school university college"),
)
"""Everyday words for one slot (stems): a question may ask with one ("job", "home") and the
statement answer with another ("I work as", "we've relocated"). A lexicon, not fitted on data."""
_NOT_FOCUS = frozenset({"now", "remember", "recall", "know", "forget", "ever"})
_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*")
_POSSESSIVE_S = re.compile(r"['’]s\b", re.IGNORECASE)


def _fold(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", text.casefold()) if not unicodedata.combining(c))


def _stem(word: str) -> str:
    """A light stem: "lives" = "live", "moved" = "mov", "relocated" = "relocat", "working" = "work"."""
    word = _POSSESSIVE_S.sub("", _fold(word))
    for suffix in ("ing", "ed", "es", "s", "e"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _expanded(stems: set[str]) -> set[str]:
    """``stems`` with every stem of the everyday slots they belong to (a key of four letters or more
    also as a prefix: "relocat", "employ")."""
    out = set(stems)
    for group in SLOT_WORDS:
        keys = {_stem(w) for w in group}
        if any(s == k or (len(k) >= 4 and s.startswith(k)) for s in stems for k in keys):
            out |= keys
    return out


def _statement_stems(statement: str) -> set[str]:
    """The statement's word stems and those of the slots it claims ("lives in" for a move)."""
    stems = {_stem(w) for w in _WORD.findall(statement)}
    for fact in extract([TurnText("user", "user", statement)]).facts:
        stems |= {_stem(w) for w in _WORD.findall(fact.attribute)}
    return stems


def supports(question: str, statement: str) -> bool:
    """Whether ``statement`` speaks of what ``question`` asks about (the module docstring)."""
    names = {_stem(n) for n in proper_names(question)}
    focus = {_stem(w) for w in focus_words(_POSSESSIVE_S.sub("", question))} - {_stem(w) for w in _NOT_FOCUS}
    focus -= names
    said = _statement_stems(statement)
    if not focus:
        return not names or bool(names & said)
    wanted = _expanded(focus)
    return any(w == s or (len(w) >= 4 and s.startswith(w)) for w in wanted for s in said)


def said_when(said_at: datetime, now: datetime) -> str | None:
    """How long before ``now`` a statement was made, as a person says it ("yesterday", "3 days
    ago", "last week", "3 weeks ago", "2 months ago", "over a year ago"); None within a day."""
    days = (now - said_at).total_seconds() / 86400
    if days < 1:
        return None
    if days < 2:
        return "yesterday"
    if days < 7:
        return f"{int(days)} days ago"
    if days < 14:
        return "last week"
    if days < 60:
        return f"{int(days // 7)} weeks ago"
    if days < 365:
        return f"{max(2, round(days / 30.44))} months ago"
    return "over a year ago" if days < 730 else f"{int(days // 365)} years ago"


def recital_when(statement: str, said_at: datetime | None, now: datetime, *, theirs: bool = True) -> str:
    """The answer from a recalled statement: "You said last week that you moved to Porto." for the
    user's own words (``theirs``), "From memory (as of last week): ..." for a memory, and the plain
    :func:`~mnemo.cognition.text.utterances.recital` for what was said within a day."""
    plain = recital(statement)
    when = None if said_at is None else said_when(said_at, now)
    if when is None:
        return plain
    restated = _as_of_then(plain.removeprefix("From memory: "))
    if not theirs:
        return f"From memory (as of {when}): {restated}"
    if restated.startswith('you said "'):
        return f"You said {when}: {restated.removeprefix('you said ')}"
    return f"You said {when} that {restated}"


_THEN = {
    "yesterday": "the day before", "today": "that day", "tonight": "that night", "tomorrow": "the day after",
    "last week": "the week before", "last month": "the month before", "last year": "the year before",
    "this week": "that week", "this month": "that month", "next week": "the week after",
    "next month": "the month after", "ago": "before",
}  # fmt: skip
_RELATIVE = re.compile(r"\b(?:" + "|".join(k.replace(" ", r"\s+") for k in _THEN) + r")\b", re.IGNORECASE)


def _as_of_then(restated: str) -> str:
    """A time said relative to its day, told later: "last week" -> "the week before", "3 days
    ago" -> "3 days before", so "You said last week that you moved the week before" stays true."""
    return _RELATIVE.sub(lambda m: _THEN[" ".join(m.group().lower().split())], restated)


_COPULA = re.compile(r"^(what|who|when|where|which)\s+(is|are|was|were)\s+(.+?)[\s?.!]*$", re.IGNORECASE)
_DO = re.compile(
    r"^((?:what|which|where|who|how|when)(?:\s+[^\W\d_]+){0,3}?)\s+do\s+(?:I|we)\s+(.+?)[\s?.!]*$", re.IGNORECASE
)
_ADDRESSED = re.compile(r"\b(?:I|me|my|mine|we|us|our|ours)\b", re.IGNORECASE)


def _topic(question: str) -> str | None:
    """The question as the object of "I don't know": "What is my blood type?" -> "your blood
    type", "Who is my dentist?" -> "who your dentist is", "Which team do I support?" -> "which
    team you support"; None when that is not simple."""
    text = re.sub(r"^(what|who|where|when)['’]s\b", r"\1 is", question.strip(), flags=re.IGNORECASE)
    copula = _COPULA.match(text)
    if copula and _ADDRESSED.search(copula.group(3)):
        wh, verb, subject = copula.group(1).lower(), copula.group(2).lower(), second_person(copula.group(3))
        if subject is not None:
            return subject if wh == "what" else f"{wh} {subject} {verb}"
    do = _DO.match(text)
    if do:
        rest = second_person(do.group(2))
        if rest is not None:
            return f"{do.group(1)[:1].lower()}{do.group(1)[1:]} you {rest}"
    return None


def dont_know(question: str, missing: Sequence[str] = ()) -> str | None:
    """What the agent says when nothing it remembers answers a question about the user: "I don't
    know your blood type — you haven't told me."; with the names nothing mentions (``missing``)
    when the question cannot simply be turned around; None for a question not about the user."""
    if not _ADDRESSED.search(question):
        return None
    topic = _topic(question)
    if topic is not None:
        return f"I don't know {topic} — you haven't told me."
    if missing:
        return f"I don't know — you haven't told me anything about {', '.join(missing)}."
    return "I don't know — you haven't told me that."
