"""Recall stage 6a: what is current comes first (issue 40 items 2 and 5).

Seeds: cognitive-plan §4.4 (conflict-aware reconsolidation: a new value supersedes the old one,
which is kept and still recallable) and §3.8 (retrieval-induced mutation: what a recall
returns is strengthened, so a stale statement must not be).

When a question asks about the present (:func:`~mnemo.cognition.scoring.claims.asks_about_now`: "where
does she live", "still", "now"), each stale statement among the blended head — a turn whose claim
about a slot a later turn superseded, or a fact memory read from such a turn — gets its latest
successor above it, first in its relevance tier (:func:`~mnemo.cognition.scoring.claims.move_above`), read from the
claims the write path stored (:mod:`mnemo.store.turn_claims`). A recall made ``as_of`` a time knows only what was
said by then; a question about the past or a period the time stage found is answered as of then:
nothing moves. Either way the stale
items are marked, and a recall never reinforces them (:attr:`Candidates.stale`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import uuid
from collections.abc import Mapping
from typing import cast

import psycopg

from mnemo._runtime import Runtime
from mnemo.cognition.consolidation.facts import canonical_value
from mnemo.cognition.scoring.blend_components import RELEVANCE, scores
from mnemo.cognition.scoring.claims import (
    Book,
    Ending,
    Said,
    asks_about_now,
    book,
    changes_first,
    endings,
    move_above,
    stale_mentions,
    successors,
)
from mnemo.recall.blend import candidate, occasion
from mnemo.recall.records import Blended, Candidates, RecallRow, Request, Scored
from mnemo.recall.retrieve import _similarities
from mnemo.store import search as search_rows
from mnemo.store import tiers as tier_rows
from mnemo.store import turn_claims as claim_rows
from mnemo.store.dynamics import MemoryState

__all__ = ["current"]

_WINDOW = 5
"""How far down a recall's hits a later statement of change is compared with what it speaks of:
the first screen a person reads (:func:`~mnemo.cognition.scoring.claims.changes_first`)."""


async def current(
    rt: Runtime, conn: psycopg.AsyncConnection, request: Request, found: Candidates, blended: Blended
) -> Blended:
    """Mark the head's stale statements; for a question about the present, put each one's current
    statement right above it (the module docstring)."""
    if not rt.settings.current_first or not blended.scored:
        return blended
    said = _statements(blended.rows, found)
    found.stale |= {i for i, row in blended.rows.items() if _superseded_memory(row)}
    turns = list(dict.fromkeys(t for ts in said.values() for t in ts))
    claims, ended = await _claims(rt, conn, request, found)
    stale = _named_stale(blended, ended, _SHOWN) | _claimed_stale(said, successors(turns, claims))
    found.stale |= set(stale)
    if not asks_about_now(request.text) or found.in_period:
        return blended
    facts = _fact_for(said, blended.rows, found.stale)
    return await _reorder(rt, conn, request, found, blended, {old: facts.get(new, new) for old, new in stale.items()})


def _fact_for(
    said: Mapping[uuid.UUID, list[uuid.UUID]], rows: Mapping[uuid.UUID, RecallRow], stale: set[uuid.UUID]
) -> dict[uuid.UUID, uuid.UUID]:
    """Per turn a live fact memory of the head was read from, that memory: the current statement is
    shown as its fact ("Dana lives in Porto") when the night made one, not as the raw turn."""
    out: dict[uuid.UUID, uuid.UUID] = {}
    for item_id, turns in said.items():
        if isinstance(rows.get(item_id), MemoryState) and item_id not in stale:
            for turn_id in turns:
                out.setdefault(turn_id, item_id)
    return out


_SHOWN = 50
"""How far down the blended head a statement of what holds now counts as shown for the question
(:func:`_named_stale`): fixed, not the k asked, so the first hits are the same whatever k a caller
asks for (issue 42); 50 is what a k=50 caller (``mnemo bench locomo``) was shown before."""

_CACHED_SCOPES = 1024


async def _claims(
    rt: Runtime, conn: psycopg.AsyncConnection, request: Request, found: Candidates
) -> tuple[Book, list[Ending]]:
    """The scope's claims that can make a statement stale, and the values that ended: read once per
    version of the scope and its epoch (a scope purged and written again counts its versions from 1
    again, migration 0023; a recall made ``as_of`` a time reads what was said by then)."""
    e, ns = request.scope.entity_id, request.scope.namespace
    version = found.facts.version if found.facts is not None and request.as_of is None else 0
    epoch = found.facts.epoch if found.facts is not None else None
    cached = rt.claims_cache.get((e, ns)) if version else None
    if cached is not None and cached[0] == (version, epoch):
        return cast("tuple[Book, list[Ending]]", cached[1])
    claims = await claim_rows.changeable(conn, e, ns)
    if request.as_of is not None:  # asked as of a point in time: what was said after it is not known yet
        claims = [c for c in claims if c.said_at <= request.as_of]
    laid_out = book(claims)  # each slot's live claims, once per version (not per recall)
    read = (laid_out, endings(laid_out))
    if version:
        if len(rt.claims_cache) >= _CACHED_SCOPES:
            rt.claims_cache.clear()
        rt.claims_cache[(e, ns)] = ((version, epoch), read)
    return read


def _claimed_stale(
    said: Mapping[uuid.UUID, list[uuid.UUID]], newer: Mapping[uuid.UUID, uuid.UUID]
) -> dict[uuid.UUID, uuid.UUID]:
    """Head items whose claims a later turn superseded, with that turn (read in if need be)."""
    return {item: newer[t] for item, ts in said.items() for t in ts if t in newer and newer[t] not in ts}


def _named_stale(blended: Blended, ended: list[Ending], k: int) -> dict[uuid.UUID, uuid.UUID]:
    """Head items that name a value that ended, with the statement of what holds now, when that
    statement is among the first ``k`` of the head (:data:`_SHOWN`): naming a value is weaker
    evidence than claiming it ("Ren took me to that udon place" is about food, not about Ren), so
    only a statement the recall shows for this question anyway moves up."""
    if not ended:
        return {}
    firsts = {e.value.split()[0] for e in ended}
    texts = {  # only an item that holds an ended value's first word can name it
        i: canonical_value("", row.content)
        for i, row in blended.rows.items()
        if any(w in row.content.casefold() for w in firsts)
    }
    shown = {i for _, i, _ in blended.scored[:k]}
    named = stale_mentions(texts, ended)
    return {item: now for item, now in named.items() if now in shown}


def _statements(rows: Mapping[uuid.UUID, RecallRow], found: Candidates) -> dict[uuid.UUID, list[uuid.UUID]]:
    """Per head item, the turns whose claims it states: a turn (or a block's line, which keeps its
    turn's id) itself; a fact memory, the turns it was read from."""
    out: dict[uuid.UUID, list[uuid.UUID]] = {}
    for item_id, row in rows.items():
        if found.kind_of.get(item_id) in ("turn", "line"):
            out[item_id] = [item_id]
        elif isinstance(row, MemoryState) and "fact_id" in (row.metadata or {}):
            with contextlib.suppress(ValueError, TypeError):
                out[item_id] = [uuid.UUID(str(t)) for t in row.provenance or ()]
    return out


def _superseded_memory(row: RecallRow) -> bool:
    """A memory a later one superseded, or that is closed (the night's facts, an explicit update)."""
    if not isinstance(row, MemoryState):
        return False
    return row.status == "superseded" or bool((row.metadata or {}).get("superseded_by"))


async def _reorder(
    rt: Runtime,
    conn: psycopg.AsyncConnection,
    request: Request,
    found: Candidates,
    blended: Blended,
    stale: Mapping[uuid.UUID, uuid.UUID],
) -> Blended:
    """The blended head with each successor right above its stale statement, read in when the head
    did not hold it; a successor that moved takes the score and tier of the item it now precedes."""
    before = [i for _, i, _ in blended.scored]
    order = move_above(before, stale, blended.tiers)
    entries = {i: (score, parts) for score, i, parts in blended.scored}
    missing = [i for i in order if i not in entries]
    rows = dict(blended.rows)
    if missing:
        e, ns = request.scope.entity_id, request.scope.namespace
        turns = await search_rows.hydrate_turns(conn, e, ns, missing)
        lines = await tier_rows.hydrate_lines(conn, e, ns, [i for i in missing if i not in turns])  # retention kept
        rows.update(lines)
        rows.update(turns)
        found.kind_of |= {i: "line" if i in lines else "turn" for i in missing if i not in found.kind_of}
        await _similarities(rt, conn, request, found, [i for i in missing if i not in found.similarity])
    order = [i for i in order if i in rows]  # a successor forgotten meanwhile: nothing to put above
    order = changes_first([_said(i, rows[i], found) for i in order], min(request.k, _WINDOW))
    if order == before:
        return blended
    return _rescored(rt, request, found, blended, order, rows)


def _said(item_id: uuid.UUID, row: RecallRow, found: Candidates) -> Said:
    if isinstance(row, MemoryState):
        return Said(item_id, row.content, row.event_time or row.created_at, own=False)
    own = found.kind_of.get(item_id) in ("turn", "line") and getattr(row, "role", None) == "user"
    return Said(item_id, row.content, row.created_at, own=own, speaker=getattr(row, "speaker", None))


def _rescored(
    rt: Runtime,
    request: Request,
    found: Candidates,
    blended: Blended,
    order: list[uuid.UUID],
    rows: dict[uuid.UUID, RecallRow],
) -> Blended:
    """``blended`` in ``order``: an item that moved up takes the score and tier of the item
    it now precedes (one it replaces), a hair above; every other item keeps its own."""
    entries = {i: (score, parts) for score, i, parts in blended.scored}
    was = {i: n for n, i in enumerate(i for _, i, _ in blended.scored)}
    tiers = dict(blended.tiers)
    scored: Scored = []
    for n, i in enumerate(order):
        if i in entries and was[i] <= n:
            scored.append((entries[i][0], i, entries[i][1]))
            continue
        below = next(j for j in order[n + 1 :] if j in entries)
        score, parts = entries[below]
        own = entries[i][1] if i in entries else _parts(rt, request, found, rows[i], parts)
        scored.append((score + 1e-6, i, own))
        tiers[i] = min(tiers.get(i, 1 << 30), tiers.get(below, 0))
    return dataclasses.replace(blended, scored=scored, rows=rows, tiers=tiers)


def _parts(
    rt: Runtime, request: Request, found: Candidates, row: RecallRow, beside: Mapping[str, float]
) -> dict[str, float]:
    """A successor read in: its own components, the search share of the statement it replaces (no
    co-access spread reached it; no draws, no mood)."""
    seen = candidate(
        row, request, searched=beside.get(RELEVANCE, 0.0), spread=0.0, similarity=found.similarity.get(row.id, 0.0)
    )
    return scores(seen, occasion(rt.settings, request, None))
