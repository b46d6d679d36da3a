"""What each turn claims about a slot, and which later claim makes an earlier one stale.

Seeds: cognitive-plan §4.4 (conflict-aware reconsolidation: a new value supersedes the old one,
which is kept), archive-adr §4 (extracted statements carry provenance); issue 40 item 2 ("a
superseded statement, turn or fact, ranks below its successor").

A *claim* is one statement a turn makes about a *slot*: an entity's attribute ("José lives in",
"Priya works at", "Tom plays"), with a value, or the end of one ("I no longer live in Madrid").
The write path reads every turn's claims with the offline extractor
(:func:`mnemo.cognition.extraction.extract`), so what is current is known before any night runs.

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
import re
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from mnemo.cognition.extraction import TurnText, extract, fact_key, normalise
from mnemo.cognition.facts import canonical_value

__all__ = [
    "Claim",
    "asks_about_now",
    "claims_of",
    "functional_attribute",
    "move_above",
    "successors",
    "supersedes",
]


@dataclass(frozen=True, slots=True)
class Claim:
    """One turn's statement about one slot."""

    turn_id: uuid.UUID
    """The turn that says it."""
    slot: str
    """The entity and attribute it is about (:func:`~mnemo.cognition.extraction.fact_key`)."""
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


def _same_value(a: str, b: str) -> bool:
    """Whether two canonical values name the same thing: equal, or one's words all in the other
    ("padel" and "padel every saturday")."""
    if a == b:
        return True
    wa, wb = set(a.split()), set(b.split())
    return bool(wa and wb) and (wa <= wb or wb <= wa)


def successors(of: Iterable[uuid.UUID], claims: Sequence[Claim]) -> dict[uuid.UUID, uuid.UUID]:
    """Per turn of ``of`` whose claims something later supersedes, the turn of its current
    statement: among the claims that supersede it and that nothing supersedes in turn, one that
    states a value before a bare ending ("we're in Dublin now" before "no longer in Madrid"), the
    latest first. A turn that also states what is current in that slot is not stale in it."""
    by_turn: dict[uuid.UUID, list[Claim]] = {}
    for claim in claims:
        by_turn.setdefault(claim.turn_id, []).append(claim)
    live = [c for c in claims if not any(supersedes(n, c) for n in claims)]
    out: dict[uuid.UUID, uuid.UUID] = {}
    for turn_id in of:
        own = by_turn.get(turn_id, ())
        current_slots = {c.slot for c in own if c in live}
        stale = [c for c in own if c not in live and c.slot not in current_slots]
        after = [n for n in live if any(supersedes(n, old) for old in stale)]
        if after:
            out[turn_id] = max(after, key=lambda c: (not c.negated, c.said_at)).turn_id
    return out


def move_above(order: Sequence[uuid.UUID], current: Mapping[uuid.UUID, uuid.UUID]) -> list[uuid.UUID]:
    """``order`` with each item's current statement (``current``: stale item -> its successor)
    placed right above the first stale item it replaces, when it is not above already; an item
    is moved at most once, and nothing else changes order."""
    out = list(order)
    placed: set[uuid.UUID] = set()
    for stale in list(order):
        newer = current.get(stale)
        if newer is None or newer in placed or newer == stale:
            continue
        at = out.index(stale)
        if newer in out and out.index(newer) < at:
            placed.add(newer)
            continue
        if newer in out:
            out.remove(newer)
            at = out.index(stale)
        out.insert(at, newer)
        placed.add(newer)
    return out


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
