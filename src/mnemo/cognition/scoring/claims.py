"""What each turn claims about a slot, and which later claim makes an earlier one stale.

Seeds: cognitive-plan §4.4 (conflict-aware reconsolidation: a new value supersedes the old one,
which is kept), archive-adr §4 (extracted statements carry provenance); issue 40 item 2 ("a
superseded statement, turn or fact, ranks below its successor").

A *claim* is one statement a turn makes about a *slot*: an entity's attribute ("José lives in",
"Priya works at", "Tom plays"), with a value, or the end of one ("I no longer live in Madrid").
The write path reads every turn's claims with the offline extractor
(:func:`mnemo.cognition.consolidation.extraction.extract`), so what is current is known before any night runs.

A later claim *supersedes* an earlier one of the same slot (:func:`supersedes`):

* in a slot that holds one value at a time (where someone lives, works, their partner…) any
  later claim that says something else: another value, or the end of this one;
* in a slot that collects values (likes, hobbies, pets) only a later claim about the same value
  that turns it around ("I play padel" → "I gave up padel"), or an ending that names no value.

A statement's *current* one is the latest claim that supersedes it (:func:`successors`); recall
puts it right above the statement when a question asks about the present
(:func:`asks_about_now`).
"""

from __future__ import annotations

import fnmatch
import functools
import re
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from mnemo.cognition.consolidation.extraction import TurnText, extract, fact_key, normalise
from mnemo.cognition.consolidation.facts import canonical_value

__all__ = [
    "Book",
    "Claim",
    "Ending",
    "Said",
    "asks_about_now",
    "book",
    "changes_first",
    "claims_of",
    "endings",
    "functional_attribute",
    "move_above",
    "says_change",
    "stale_mentions",
    "successors",
    "supersedes",
]


@dataclass(frozen=True, slots=True)
class Claim:
    """One turn's statement about one slot."""

    turn_id: uuid.UUID
    """The turn that says it."""
    slot: str
    """The entity and attribute it is about (:func:`~mnemo.cognition.consolidation.extraction.fact_key`)."""
    value: str
    """What it says the slot holds, in canonical form (empty: an ending that names no value)."""
    negated: bool
    """The value stopped holding ("no longer", "gave up", "passed away")."""
    single: bool
    """The slot holds one value at a time."""
    said_at: datetime
    """When the turn was said."""


def claims_of(turns: Sequence[tuple[uuid.UUID, TurnText]], single: Callable[[str], bool]) -> list[Claim]:
    """The claims ``turns`` make (each turn read on its own, as the extractor reads a session);
    ``single`` says whether an attribute holds one value at a time."""
    found = extract([t for _, t in turns])
    claims: dict[tuple[uuid.UUID, str, str, bool], Claim] = {}
    for fact in found.facts:
        turn_id, turn = turns[fact.source]
        if turn.at is None:
            continue
        value = canonical_value(fact.entity, fact.value) or normalise(fact.value)
        claim = Claim(
            turn_id, fact_key(fact.entity, fact.attribute), value, fact.negated, single(fact.attribute), turn.at
        )
        claims.setdefault((turn_id, claim.slot, value, fact.negated), claim)
    return list(claims.values())


def functional_attribute(patterns: Sequence[str], attribute: str) -> bool:
    """Whether ``attribute`` matches one of ``patterns`` (``night_functional_attributes``: names or
    globs such as ``"favourite *"``), the attributes configured to hold one value at a time."""
    attr = normalise(attribute)
    return any(fnmatch.fnmatchcase(attr, normalise(p) if "*" not in p else p.lower()) for p in patterns)


def supersedes(new: Claim, old: Claim) -> bool:
    """Whether ``new`` makes ``old`` stale (the module docstring): the same slot, said later by
    another turn, and turning it around. An ending ends the value it names (or any, naming none);
    a value said again after its ending comes back; in a one-value slot another value replaces it."""
    if new.slot != old.slot or new.turn_id == old.turn_id or new.said_at <= old.said_at:
        return False
    same = _same_value(new.value, old.value)
    if new.negated:
        return not old.negated and (not new.value or same)
    if old.negated:
        return same
    return (old.single or new.single) and not same


@functools.lru_cache(maxsize=65_536)
def _same_value(a: str, b: str) -> bool:
    """Whether two canonical values name the same thing: equal, or one's words all in the other
    ("padel" and "padel every saturday")."""
    if a == b:
        return True
    wa, wb = set(a.split()), set(b.split())
    return bool(wa and wb) and (wa <= wb or wb <= wa)


@dataclass(frozen=True, slots=True)
class Ending:
    """A value that stopped holding: what it was, and the statement that says what holds now."""

    value: str
    """The ended value, in canonical form ("osaka", "daifuku", "padel")."""
    successor: uuid.UUID
    """The turn of the current statement: the value that replaced it, else the ending itself."""


def _by_slot(claims: Iterable[Claim]) -> dict[str, list[Claim]]:
    slots: dict[str, list[Claim]] = {}
    for claim in claims:
        slots.setdefault(claim.slot, []).append(claim)
    return slots


def _live(slot: Sequence[Claim]) -> list[Claim]:
    """The claims of one slot that nothing later supersedes, in their order.

    Whether a later claim supersedes another depends only on its statement (value, ending, one-value
    slot), its turn and its time: so each claim is checked against the latest claim of every distinct
    statement of the slot said by another turn, not against every claim (a large scope says the same
    things many times: a slot of n claims costs n times its distinct statements, not n squared)."""
    latest: dict[tuple[str, bool, bool], list[Claim]] = {}  # per statement: its latest two of distinct turns
    for claim in slot:
        top = latest.setdefault((claim.value, claim.negated, claim.single), [])
        _keep_latest(top, claim)
    statements = list(latest.values())
    return [c for c in slot if not any(_superseded_by(c, top) for top in statements)]


def _keep_latest(top: list[Claim], claim: Claim) -> None:
    """Keep in ``top`` the latest claim and the latest of another turn (the first said wins a tie)."""
    if not top or claim.said_at > top[0].said_at:
        if top and top[0].turn_id != claim.turn_id:
            top[1:] = [top[0]]
        top[0:1] = [claim]
    elif claim.turn_id != top[0].turn_id and (len(top) < 2 or claim.said_at > top[1].said_at):
        top[1:] = [claim]


def _superseded_by(claim: Claim, top: Sequence[Claim]) -> bool:
    """Whether a claim of the statement whose latest (of distinct turns) are ``top`` supersedes ``claim``:
    the latest said by another turn than ``claim``'s is the one to ask (any other is earlier)."""
    other = top[0] if top[0].turn_id != claim.turn_id else (top[1] if len(top) > 1 else None)
    return other is not None and supersedes(other, claim)


def _current(old: Sequence[Claim], live: Sequence[Claim]) -> Claim | None:
    """Of the live claims that supersede one of ``old``, the current statement: one that states a
    value before a bare ending ("we're in Dublin now" before "no longer in Madrid"), the latest."""
    after = [n for n in live if any(supersedes(n, o) for o in old)]
    return max(after, key=lambda c: (not c.negated, c.said_at)) if after else None


@dataclass(frozen=True, slots=True)
class Book:
    """A scope's claims laid out once (recall keeps one per version of the scope): by slot, and
    which of each slot's are live (nothing later supersedes them)."""

    claims: tuple[Claim, ...]
    """Every claim, in the order read."""
    slots: Mapping[str, list[Claim]]
    """Each slot's claims."""
    live: Mapping[str, list[Claim]]
    """Each slot's live claims, in order."""
    live_set: Mapping[str, frozenset[Claim]]
    """The same, as sets."""


def book(claims: Sequence[Claim] | Book) -> Book:
    """``claims`` laid out (:class:`Book`); a book is returned as it is."""
    if isinstance(claims, Book):
        return claims
    slots = _by_slot(claims)
    live = {slot: _live(cs) for slot, cs in slots.items()}
    return Book(tuple(claims), slots, live, {slot: frozenset(cs) for slot, cs in live.items()})


def successors(of: Iterable[uuid.UUID], claims: Sequence[Claim] | Book) -> dict[uuid.UUID, uuid.UUID]:
    """Per turn of ``of`` whose claims something later supersedes, the turn of its current statement
    (:func:`_current`). A turn that also states what is current in that slot is not stale in it."""
    read = book(claims)
    wanted = set(of)
    own: dict[uuid.UUID, list[Claim]] = {}
    for claim in read.claims:
        if claim.turn_id in wanted:
            own.setdefault(claim.turn_id, []).append(claim)
    out: dict[uuid.UUID, uuid.UUID] = {}
    for turn_id, made in own.items():
        for slot, mine in _by_slot(made).items():
            if any(c in read.live_set[slot] for c in mine):
                continue  # it states what is current in this slot
            if (now := _current(mine, read.live[slot])) is not None:
                out[turn_id] = now.turn_id
                break
    return out


def endings(claims: Sequence[Claim] | Book) -> list[Ending]:
    """The values that stopped holding and were not said again since: an ending still live
    ("Daifuku died", "I'm not vegan anymore"), or a value of a one-value slot that another
    replaced ("Osaka" after "we moved to Tokyo"). Values without a word of three letters are left
    out: nothing to recognise them by."""
    read = book(claims)
    out: list[Ending] = []
    for name, slot in read.slots.items():
        live, live_set = read.live[name], read.live_set[name]
        for claim in slot:
            if not any(len(w) >= 3 for w in claim.value.split()):
                continue
            if claim.negated and claim in live_set:
                out.append(Ending(claim.value, claim.turn_id))
            elif not claim.negated and claim not in live_set and (now := _current([claim], live)) is not None:
                out.append(Ending(claim.value, now.turn_id))
    return out


def stale_mentions(texts: Mapping[uuid.UUID, str], ended: Sequence[Ending]) -> dict[uuid.UUID, uuid.UUID]:
    """Per item of ``texts`` (its words in :func:`~mnemo.cognition.consolidation.facts.canonical_value` form) that
    names an ended value, the turn of that value's current statement: the item speaks of what no
    longer holds ("my flatmates in Osaka", "Daifuku, my hamster"). The statement itself is not stale."""
    out: dict[uuid.UUID, uuid.UUID] = {}
    for item_id, text in texts.items():
        padded = f" {text} "
        for end in ended:
            if end.successor != item_id and f" {end.value} " in padded:
                out[item_id] = end.successor
                break
    return out


def move_above(
    order: Sequence[uuid.UUID], current: Mapping[uuid.UUID, uuid.UUID], tiers: Mapping[uuid.UUID, int] | None = None
) -> list[uuid.UUID]:
    """``order`` with each item's current statement (``current``: stale item -> its successor)
    placed above the first stale item it replaces, when it is not above already: at the head of
    that item's run of equal ``tiers`` (what is about as relevant is ordered by time, the latest
    first), or right above it without tiers. An item is moved at most once; nothing else changes
    order."""
    out = list(order)
    tier = tiers or {}
    placed: set[uuid.UUID] = set()
    for stale in list(order):
        newer = current.get(stale)
        if newer is None or newer in placed or newer == stale:
            continue
        placed.add(newer)
        if newer in out and out.index(newer) < out.index(stale):
            continue
        if newer in out:
            out.remove(newer)
        at = out.index(stale)
        while at > 0 and stale in tier and tier.get(out[at - 1]) == tier[stale] and out[at - 1] not in placed:
            at -= 1
        out.insert(at, newer)
    return out


@dataclass(frozen=True, slots=True)
class Said:
    """One item of a ranking, as :func:`changes_first` reads it."""

    id: uuid.UUID
    text: str
    at: datetime | None
    """When it was said (a memory: its event time)."""
    own: bool
    """A statement the person made themselves (a user's turn), not an answer or a derived memory."""
    speaker: str | None = None


# what a person says when something changed: an ending, a switch, a move, "not … anymore", "now"
_CHANGE = re.compile(
    r"\b(?:now|anymore|any\s+more|no\s+longer|these\s+days|nowadays|switched|moved|moving|stopped|quit|"
    r"gave\s+(?:\w+\s+)?up|given\s+up|died|passed\s+away|sold|broke\s+up|split\s+up|promoted|retired|resigned|"
    r"instead|is\s+off|cancel+ed|called\s+off|last\s+\w+\s+(?:at|was)|on\s+hold|paused|cut\s+out|relocated|finally)\b",
    re.IGNORECASE,
)


def says_change(text: str) -> bool:
    """Whether ``text`` says that something changed ("we moved", "I'm not vegan anymore", "Pippo died")."""
    return _CHANGE.search(text) is not None


def changes_first(order: Sequence[Said], window: int) -> list[uuid.UUID]:
    """``order`` with each later statement of change put above the earlier item it speaks of, within
    the first ``window`` items: the person's own statement that says something changed
    (:func:`says_change`) goes right above the first item ranked above it that is older and names
    the same thing (a name both hold, the speakers' own names aside) and is not itself such a
    statement. Nothing else moves."""
    out = list(order)
    speakers = {fold for s in order if s.speaker for fold in [s.speaker.casefold()]}
    for n in range(min(window, len(out))):
        later = out[n]
        if not (later.own and later.at is not None and says_change(later.text)):
            continue
        for m in range(n):
            earlier = out[m]
            if earlier.at is None or earlier.at >= later.at or (earlier.own and says_change(earlier.text)):
                continue
            if _same_name(later.text, earlier.text, speakers):
                out.insert(m, out.pop(n))
                break
    return [s.id for s in out]


_TOKEN = re.compile(r"[^\W\d_][\w'’.-]*|[.!?]")
_TITLES = frozenset({"dr", "mr", "mrs", "ms", "mx", "prof", "st", "mt"})


def _names(text: str) -> tuple[set[str], set[str]]:
    """The capitalised words of ``text`` (casefolded, possessives and full stops stripped; not
    ``I``): those inside a sentence, and all of them (a sentence may open with a name: "Ren and I
    broke up")."""
    inside: set[str] = set()
    every: set[str] = set()
    start = True
    for token in _TOKEN.findall(text):
        if token in ".!?":
            start = True
            continue
        word = re.sub(r"(?:['’]s?|\.)+$", "", token).casefold()
        if token[:1].isupper() and len(word) > 1 and not word.startswith("i'"):
            every.add(word)
            if not start:
                inside.add(word)
        start = token.endswith((".", "!", "?")) and word not in _TITLES and len(word) > 1
    return inside, every


def _same_name(a: str, b: str, aside: set[str]) -> bool:
    """Whether ``a`` and ``b`` name the same thing: a capitalised word both hold, inside a sentence
    in at least one of them, other than the names in ``aside``."""
    inside_a, every_a = _names(a)
    inside_b, every_b = _names(b)
    return bool(((inside_a & every_b) | (every_a & inside_b)) - aside)


_PAST = re.compile(
    r"\b(?:did|was|were|had|used\s+to|before|previously|formerly|originally|ago|former|earlier|back\s+then|"
    r"at\s+first|in\s+(?:19|20)\d\d|last\s+(?:year|month|week|summer|winter|spring|autumn|fall))\b",
    re.IGNORECASE,
)
_NOW = re.compile(r"\b(?:now|currently|still|these\s+days|nowadays|at\s+the\s+moment|anymore|any\s+more)\b", re.I)


def asks_about_now(question: str) -> bool:
    """Whether ``question`` asks about the present ("where does she live", "still", "now",
    "currently"), not about the past or a period ("where did he live", "before the move")."""
    return bool(_NOW.search(question)) or not _PAST.search(question)
