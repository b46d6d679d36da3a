"""Recall stage 6: the cognitive blend of the head (ACT-R activation, Beta weight, recency,
co-access spreading, noise), relevance first. Seeds: cognitive-plan §2.7, §3.1, §3.8.
"""

from __future__ import annotations

import contextlib
import random
import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np
import psycopg

from mnemo import _dynamics as dynamics
from mnemo._dynamics import history_of, weight_of
from mnemo._runtime import Runtime
from mnemo.cognition.scoring.activation import AccessHistory
from mnemo.cognition.scoring.blend_components import (
    COLD_START_ALPHAS,
    MATURE_ALPHAS,
    RELEVANCE,
    Candidate,
    Occasion,
    scores,
    with_mood,
)
from mnemo.cognition.scoring.claims import asks_about_now
from mnemo.cognition.scoring.relevance import blend as blend_score
from mnemo.cognition.scoring.relevance import blend_weights, minmax, relevance_tiers
from mnemo.cognition.scoring.spreading import spread
from mnemo.cognition.scoring.weights import DEFAULT
from mnemo.config import Settings
from mnemo.recall.rank import _head
from mnemo.recall.records import Blended, Candidates, RecallRow, Request, Scored
from mnemo.recall.retrieve import _similarities
from mnemo.store import dynamics as dynamic_rows
from mnemo.store import search as search_rows
from mnemo.store import tiers
from mnemo.store.dynamics import MemoryState


# --- 6. cognitive blend -------------------------------------------------------------------------
async def blend(rt: Runtime, conn: psycopg.AsyncConnection, request: Request, found: Candidates) -> Blended:
    """Score the head of the search ranking, plus memories reached by spreading activation, by the
    blend of search, ACT-R activation, Beta weight, recency, co-access and noise (cognitive-plan §3.1)."""
    cfg = rt.settings
    scope = request.scope
    final = found.final
    head = _head(rt, request, final)
    searched = minmax({i: final[i] for i in head})
    activated = await _spread(rt, conn, request, found, head, searched)
    await _similarities(rt, conn, request, found, [i for i in head if i not in found.similarity])
    turn_rows = await search_rows.hydrate_turns(
        conn, scope.entity_id, scope.namespace, [i for i in head if found.kind_of[i] == "turn"]
    )
    memory_rows = await dynamic_rows.memory_states(
        conn, scope.entity_id, scope.namespace, [i for i in head if found.kind_of[i] == "memory"]
    )
    line_rows = await tiers.hydrate_lines(
        conn, scope.entity_id, scope.namespace, [i for i in head if found.kind_of[i] == "line"]
    )
    mature = bool(memory_rows) and await search_rows.has_at_least(
        conn, scope.entity_id, scope.namespace, cfg.blend_mature_after
    )
    rng = _draws(rt, request)
    weights = blend_weights(
        _alphas(request, found, mature), None if rng is None else np.random.default_rng(rng.getrandbits(64))
    )
    moods = {} if request.mood is None else await found.stage.similarities(request.mood, head)
    rows: dict[uuid.UUID, RecallRow] = {**line_rows, **memory_rows, **turn_rows}
    at = occasion(cfg, request, rng)
    scored: Scored = []
    for item_id in head:
        row = rows.get(item_id)
        if row is None or _after(request, row):
            continue
        seen = candidate(
            row, request, searched=searched.get(item_id, 0.0), spread=activated.get(item_id, 0.0),
            similarity=found.similarity.get(item_id, 0.0),
            mood=None if request.mood is None else moods.get(item_id, 0.0),
        )  # fmt: skip
        parts = scores(seen, at)
        scored.append((blend_score(parts, weights), item_id, parts))
    # a question about the past or a period is answered as of then: an update does not outrank
    # what it replaced (issue 40 item 2)
    superseders = _superseders(scored, memory_rows) if asks_about_now(request.text) and not found.in_period else {}
    scored = below_superseders(scored, superseders)
    tier_of = _tiers_of(scored, superseders)
    scored.sort(key=lambda x: (tier_of[x[1]], -x[0], str(x[1])))
    return Blended(scored=scored, weights=weights, rows=rows, tiers=tier_of)


def _alphas(request: Request, found: Candidates, mature: bool) -> dict[str, float]:
    """The scope's self-tuned alphas when it has them, else the cold-start or mature set; the
    emotional component joins only when the recall has a mood (cognitive-plan §3.1, §4.5, §5.1)."""
    tuned = found.facts.alphas if found.facts is not None else None
    alphas = dict(tuned) if tuned else dict(MATURE_ALPHAS if mature else COLD_START_ALPHAS)
    return with_mood(alphas, mood=request.mood is not None, mature=mature)


def _tiers_of(scored: Scored, superseders: Mapping[uuid.UUID, Sequence[uuid.UUID]]) -> dict[uuid.UUID, int]:
    """Relevance first: the candidates' tiers of about equal search relevance
    (:func:`~mnemo.cognition.scoring.relevance.relevance_tiers`), a superseded memory at best in the tier of
    the memory that superseded it (it never outranks it)."""
    tier_of = relevance_tiers({i: parts[RELEVANCE] for _, i, parts in scored})
    for item_id, newers in superseders.items():
        tier_of[item_id] = max([tier_of[item_id], *(tier_of[n] for n in newers)])
    return tier_of


def _after(request: Request, row: RecallRow) -> bool:
    """Whether an item happened after the point in time the recall is made at (``as_of``), by its event
    time (DESIGN §2 "Time"): a turn's own time, a memory's ``event_time`` (a derived memory's: its
    sources'), else when it was written. A night that ran later still leaves its work visible at the
    time of what it was made from."""
    when = (row.event_time if isinstance(row, MemoryState) else None) or row.created_at
    return request.as_of is not None and isinstance(when, datetime) and when > request.as_of


def _draws(rt: Runtime, request: Request) -> random.Random | None:
    """This recall's generator (``scoring="stochastic"``), or None for expected values."""
    if rt.settings.scoring != "stochastic":
        return None
    return random.Random(request.seed) if request.seed is not None else rt.child_rng()


async def _spread(
    rt: Runtime,
    conn: psycopg.AsyncConnection,
    request: Request,
    found: Candidates,
    head: list[uuid.UUID],
    searched: Mapping[Any, float],
) -> dict[uuid.UUID, float]:
    """Co-access activation spread from the best memories; memories it reaches join ``head``."""
    cfg = rt.settings
    memory_head = [i for i in head if found.kind_of[i] == "memory"]
    if not memory_head or not cfg.coaccess_seeds:
        return {}
    seeds = memory_head[: cfg.coaccess_seeds]
    links = await dynamics.neighbours(conn, cfg, request.scope, seeds, request.now, hops=request.hops)
    if not links:
        return {}
    activated = spread({i: searched[i] for i in seeds}, links, hops=request.hops)
    for extra in activated:
        if extra not in found.kind_of:
            found.kind_of[extra] = "memory"
            head.append(extra)
    return activated


def _superseders(scored: Scored, memory_rows: Mapping[uuid.UUID, MemoryState]) -> dict[uuid.UUID, list[uuid.UUID]]:
    """Per superseded candidate, the candidates that superseded it."""
    present = {i for _, i, _ in scored}
    superseders: dict[uuid.UUID, list[uuid.UUID]] = {}
    for item_id, row in memory_rows.items():
        for text in (row.metadata or {}).get("superseded_by") or ():
            with contextlib.suppress(ValueError, TypeError):
                newer = uuid.UUID(str(text))
                if newer in present and item_id in present:
                    superseders.setdefault(item_id, []).append(newer)
    return superseders


def below_superseders(scored: Scored, superseders: Mapping[uuid.UUID, Sequence[uuid.UUID]]) -> Scored:
    """A superseded memory never outranks a memory that superseded it when both are candidates
    (it keeps its own score when its superseder did not come up: still recallable);
    ``superseders``: per superseded candidate, the candidates that superseded it."""
    score = {i: sc for sc, i, _ in scored}
    for _ in range(len(superseders)):  # chains A <- B <- C settle in at most this many passes
        changed = False
        for item_id, newers in superseders.items():
            cap = min(score[n] for n in newers) - 1e-6
            if score[item_id] > cap:
                score[item_id], changed = cap, True
        if not changed:
            break
    return [(score[i], i, parts) for _, i, parts in scored]


def _trust(row: RecallRow) -> float:
    return float(row.source_confidence) if isinstance(row, MemoryState) else 1.0


def occasion(cfg: Settings, request: Request, rng: random.Random | None) -> Occasion:
    """What the blend's components know of this recall: its time, cues and draws, the ACT-R settings."""
    return Occasion(
        now=request.now.timestamp(), cues=request.cues or {}, rng=rng, decay=cfg.actr_decay,
        spreading=cfg.actr_spreading, mismatch=cfg.actr_mismatch, noise=cfg.actr_noise, tau=cfg.actr_tau,
        half_life=cfg.recency_half_life_days * 86400,
    )  # fmt: skip


def candidate(
    row: RecallRow, request: Request, *, searched: float, spread: float, similarity: float, mood: float | None = None
) -> Candidate:
    """What the blend's components know of one candidate (turns have the prior weight and a single
    trace at their time); ``searched``, ``spread``, ``similarity`` and ``mood`` as in :class:`Candidate`."""
    if isinstance(row, MemoryState):
        weight = weight_of(row)
        history = history_of(row)
        last = row.last_accessed or row.event_time or row.created_at
        attributes: dict[str, object] = {**(row.metadata or {}), "kind": row.kind}
    else:
        weight = DEFAULT
        history = AccessHistory(row.created_at.timestamp())
        last = row.created_at
        attributes = {
            **(row.metadata or {}),
            "kind": "turn",
            "role": row.role,
            "speaker": row.speaker,
        }
    return Candidate(
        searched=searched, spread=spread, similarity=similarity, history=history, weight=weight,
        trust=_trust(row), attributes=attributes, age=(request.now - last).total_seconds(), mood=mood,
    )  # fmt: skip
