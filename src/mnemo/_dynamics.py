"""Orchestration of memory dynamics: audited weight changes, retrieval-induced mutation, co-access.

Seeds: cognitive-plan §3.8 (retrieval strengthens: access count, timestamps,
``reinforce(0.1)``, co-access; near misses ranked 6-20 get ``contradict(0.05)``),
§3.9 (every weight change goes through one function that enforces the
ceilings and diminishing returns and writes an audit row; disabled ceilings
log what they would have blocked), §3.1 (co-access updated on every
co-retrieval, weak and old links pruned) and §4.1 (light decay).

The pure math is in :mod:`mnemo.cognition`; this module reads and writes rows
through :mod:`mnemo.store.dynamics` inside the caller's transaction.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import psycopg

from mnemo.cognition.scoring.activation import AccessHistory, record_access
from mnemo.cognition.scoring.safety import Change, Operation, Policy, Violation, propose
from mnemo.cognition.scoring.spreading import edge_strength, pairs, prune
from mnemo.cognition.scoring.weights import StochasticWeight
from mnemo.config import Settings
from mnemo.errors import UnknownItemError
from mnemo.models import Scope, uuid7
from mnemo.store import dynamics as rows

__all__ = [
    "WeightRequest",
    "change_weights",
    "history_of",
    "mutate_after_recall",
    "neighbours",
    "policy",
    "weight_of",
]


@dataclass(frozen=True, slots=True)
class WeightRequest:
    """One requested weight change and why."""

    memory_id: uuid.UUID
    operation: Operation
    gain: float
    reason: str
    evidence: Mapping[str, Any] | None = None


def policy(settings: Settings) -> Policy:
    return Policy(
        ceiling=settings.weight_ceiling,
        ceiling_enforced=settings.ceiling_enforced,
        max_step=settings.rate_limit,
        rate_limit_enforced=settings.rate_limit_enforced,
    )


def weight_of(row: rows.MemoryState) -> StochasticWeight:
    return StochasticWeight(float(row.alpha), float(row.beta), bool(row.anchored))


def history_of(row: rows.MemoryState) -> AccessHistory:
    """The ACT-R access history of a memory row (first trace: event_time, else created_at)."""
    first: datetime = row.event_time or row.created_at
    recent = tuple(sorted(t.timestamp() for t in row.access_timestamps or ()))
    oldest = row.oldest_access
    return AccessHistory(
        first.timestamp(), recent, int(row.older_access_count or 0), oldest.timestamp() if oldest else None
    )


async def change_weights(
    conn: psycopg.AsyncConnection,
    settings: Settings,
    scope: Scope,
    requests: Sequence[WeightRequest],
    *,
    at: datetime | None = None,
    missing_ok: bool = False,
    locked: Mapping[uuid.UUID, rows.MemoryState] | None = None,
) -> list[Change]:
    """The one way weights change: lock the rows, apply each request under the safety policy,
    store the new weights, and write an audit row per request and a safety event per violation.

    Requests for the same memory apply in order. Must run inside a transaction. ``locked``: the
    rows' states, already read and locked in this transaction (no second read).
    """
    if not requests:
        return []
    when = at or datetime.now(UTC)
    ids = list(dict.fromkeys(r.memory_id for r in requests))
    if locked is None:
        states = await rows.memory_states(conn, scope.entity_id, scope.namespace, ids, lock=True, live_only=False)
    else:
        states = {i: locked[i] for i in ids if i in locked}
    missing = [i for i in ids if i not in states]
    if missing and not missing_ok:
        raise UnknownItemError(f"no memory {missing[0]} in scope {scope}")
    pol = policy(settings)
    current = {i: weight_of(s) for i, s in states.items()}
    changes: list[Change] = []
    audits: list[dict[str, Any]] = []
    events: list[dict[str, Any]] = []
    for req in requests:
        if req.memory_id not in current:
            continue
        change = propose(current[req.memory_id], req.operation, req.gain, pol)
        if _paused(states[req.memory_id], req):
            change = Change(change.old, change.old, change.requested, (*change.violations, _PAUSED))
        current[req.memory_id] = change.new
        change_id = uuid7()
        audits.append(
            {
                "id": change_id,
                "entity_id": scope.entity_id,
                "namespace": scope.namespace,
                "memory_id": req.memory_id,
                "at": when,
                "operation": req.operation,
                "gain": req.gain,
                "old_alpha": change.old.alpha,
                "old_beta": change.old.beta,
                "new_alpha": change.new.alpha,
                "new_beta": change.new.beta,
                "reason": req.reason,
                "evidence": dict(req.evidence or {}) | {"requested": [change.requested.alpha, change.requested.beta]},
                "blocked": change.blocked,
            }
        )
        events.extend(
            {
                "id": uuid7(),
                "entity_id": scope.entity_id,
                "namespace": scope.namespace,
                "memory_id": req.memory_id,
                "at": when,
                "ceiling": v.ceiling,
                "enforced": v.enforced,
                "detail": v.detail,
                "change_id": change_id,
            }
            for v in change.violations
        )
        changes.append(change)
    await rows.save_weights(
        conn, scope.entity_id, [(i, w.alpha, w.beta) for i, w in current.items() if w != weight_of(states[i])]
    )
    await rows.insert_weight_changes(conn, audits)
    await rows.insert_safety_events(conn, events)
    return changes


_PAUSED = Violation("circuit_breaker", True, "paused by the circuit breaker: reinforced without new evidence")
_EVIDENCE = ("confirmed", "remembered again")


def _paused(state: rows.MemoryState, req: WeightRequest) -> bool:
    """A memory the circuit breaker paused (cognitive-plan §3.9 phase C, enforced) takes no
    reinforcement but new evidence (the gate confirming it, or it being remembered again)."""
    return req.operation == "reinforce" and bool((state.metadata or {}).get("paused")) and req.reason not in _EVIDENCE


async def neighbours(
    conn: psycopg.AsyncConnection,
    settings: Settings,
    scope: Scope,
    ids: Sequence[uuid.UUID],
    now: datetime,
    *,
    hops: int | None = None,
) -> dict[uuid.UUID, list[tuple[uuid.UUID, float]]]:
    """Co-access partners of ``ids`` (and of their partners, for spreading) with link strengths."""
    found: dict[uuid.UUID, list[tuple[uuid.UUID, float]]] = {}
    frontier = list(ids)
    seen: set[uuid.UUID] = set()
    for _ in range((settings.spreading_hops if hops is None else hops) + 1):
        todo = [i for i in frontier if i not in seen]
        if not todo:
            break
        seen.update(todo)
        nxt: dict[uuid.UUID, float] = {}
        for a, b, count, last in await rows.co_access_edges(conn, scope.entity_id, scope.namespace, todo):
            strength = edge_strength(
                count,
                (now - last).total_seconds(),
                half_life_seconds=settings.coaccess_half_life_days * 86400,
            )
            for x, y in ((a, b), (b, a)):
                if x in todo and all(p != y for p, _ in found.get(x, [])):
                    found.setdefault(x, []).append((y, strength))
                    nxt[y] = max(nxt.get(y, 0.0), strength)
        # Only the strongest partners spread further (spreading follows 3 partners per memory anyway).
        frontier = sorted(nxt, key=lambda i: (-nxt[i], str(i)))[: 3 * max(len(ids), 1)]
    return found


def _after_bump(
    edges: Sequence[tuple[uuid.UUID, uuid.UUID, int, datetime]],
    ids: Sequence[uuid.UUID],
    bumped: Sequence[tuple[uuid.UUID, uuid.UUID]],
    now: datetime,
) -> list[tuple[uuid.UUID, uuid.UUID, int, datetime]]:
    """The links touching ``ids`` as :func:`~mnemo.store.dynamics.bump_co_access` leaves them, from
    the links read before it (under the same locks): each bumped pair one use more, last used
    ``now`` at the latest."""
    wanted = set(ids)
    after = {(a, b): (count, last) for a, b, count, last in edges if a in wanted or b in wanted}
    for pair in bumped:
        count, last = after.get(pair, (0, now))
        after[pair] = (count + 1, max(last, now))
    return [(a, b, count, last) for (a, b), (count, last) in after.items()]


async def _prune_links(
    conn: psycopg.AsyncConnection,
    settings: Settings,
    scope: Scope,
    ids: Sequence[uuid.UUID],
    now: datetime,
    known: Sequence[tuple[uuid.UUID, uuid.UUID, int, datetime]],
) -> int:
    """Delete the links of ``ids`` that :func:`~mnemo.cognition.scoring.spreading.prune` dooms; ``known``:
    every link touching them as it stands."""
    edges = {
        (a, b): edge_strength(
            count, (now - last).total_seconds(), half_life_seconds=settings.coaccess_half_life_days * 86400
        )
        for a, b, count, last in known
    }
    # Every edge of ``ids`` was read, so their rankings are complete; a partner outside ``ids`` sees only
    # part of its list, which can only make an edge look stronger there, never doom it wrongly.
    doomed = prune(edges, max_edges=settings.coaccess_max_edges, min_strength=settings.coaccess_min_strength)
    return await rows.delete_co_access(conn, scope.entity_id, sorted(doomed, key=str))


async def mutate_after_recall(
    conn: psycopg.AsyncConnection,
    settings: Settings,
    scope: Scope,
    hits: Sequence[uuid.UUID],
    near_misses: Sequence[uuid.UUID],
    *,
    query: str,
    now: datetime,
    link_top: int | None = None,
) -> None:
    """Retrieval-induced mutation (must run inside a transaction): recalled memories gain an access
    and ``reinforce(reinforce_gain)`` and are linked to each other (only the first ``link_top`` of
    them, in the order given, when set: a context's best placed, issue 42 decision 4); near misses
    ``contradict(suppress_gain)``. The statements sent do not grow with the number of memories."""
    if not hits and not near_misses:
        return
    # Every row this recall changes is locked here, in one statement, in id order: hits and near
    # misses together. Two recalls whose hits are each other's near misses then queue on their
    # first common memory instead of each holding what the other waits for (a deadlock).
    locked, edges = await rows.lock_with_edges(conn, scope.entity_id, scope.namespace, [*hits, *near_misses])
    wanted = set(hits)
    states = {i: s for i, s in locked.items() if i in wanted and s.status in ("candidate", "active")}
    # A superseded memory is dormant: still recallable, never strengthened by being recalled
    # (otherwise every look-up of the update, which retrieves the old fact beside it, would prop it up).
    hits = [i for i in hits if i in states and not (states[i].metadata or {}).get("superseded_by")]
    accesses = []
    for item_id in hits:
        state = states.get(item_id)
        if state is None:
            continue
        h = record_access(history_of(state), now.timestamp(), keep=settings.access_history)
        accesses.append(
            (
                item_id,
                [datetime.fromtimestamp(t, UTC) for t in h.recent],
                h.older_count,
                None if h.oldest is None else datetime.fromtimestamp(h.oldest, UTC),
                now,
            )
        )
    await rows.save_accesses(conn, scope.entity_id, accesses)
    evidence = {"query": query[:200]}
    requests = [WeightRequest(i, "reinforce", settings.reinforce_gain, "recalled", evidence) for i in hits]
    requests += [WeightRequest(i, "contradict", settings.suppress_gain, "near miss", evidence) for i in near_misses]
    await change_weights(conn, settings, scope, requests, at=now, missing_ok=True, locked=locked)
    linked = [i for i in hits if i in states][:link_top]
    if len(linked) > 1:
        bumped = pairs(linked)
        await rows.bump_co_access(conn, scope.entity_id, scope.namespace, bumped, now)
        await _prune_links(conn, settings, scope, linked, now, _after_bump(edges, linked, bumped, now))
