"""Reads of the inner life: readiness, the inspector's inner-life page, persistent failures, the
idle loop's wandering, and the memory layer of the subconscious centroid.

Seeds: cognitive-plan §5.2 (``/readiness``), §4.7 (the idle loop samples the store, biased toward
neglected important memories, tensions, distant and self-related ones, and follows co-access links
two hops), §5.1 (L2 of the subconscious centroid: the importance-weighted average of the memories),
§4.2, §4.5, §3.9 (what the inspector shows); memory-architecture §10.6.3.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import numpy as np

from mnemo import _dynamics as dynamics
from mnemo._runtime import Runtime
from mnemo.cognition.mind import idle_sampling
from mnemo.cognition.mind.gut import weighted_centroid
from mnemo.cognition.mind.ledger import Attempt, failure_patterns, reflection
from mnemo.cognition.mind.readiness import MILESTONES
from mnemo.cognition.scoring.blend_components import COLD_START_ALPHAS, MATURE_ALPHAS
from mnemo.errors import InvalidContentError
from mnemo.models import (
    FailurePatternRecord,
    GutAxis,
    InnerLife,
    Milestone,
    Readiness,
    SafetyRecord,
    Scope,
    Tension,
    TuningStep,
    Wandering,
)
from mnemo.store import inner_life as inner_rows
from mnemo.store import vectors as vector_rows
from mnemo.store.dynamics import MemoryState

__all__ = ["failures", "inner_life", "memory_centroid", "readiness", "wander"]

SELF_KINDS = frozenset({"reflection", "narrative", "tension", "insight"})
POOL = 2000
"""The idle loop samples among the scope's strongest this many memories."""


async def readiness(rt: Runtime, scope: Scope) -> Readiness:
    """The ten milestones: those stored (by the night, which records what the owner's traces show,
    and by writes) and those the owner's own traces already show, read without writing, so no read
    (a grantee's included) ever dates one (issue 39 item 7)."""
    async with rt.store.connection() as conn:
        held = await inner_rows.milestones(conn, scope.entity_id, scope.namespace)
        seen = await inner_rows.detect_milestones(conn, scope.entity_id, scope.namespace)
    shown = seen | held  # a stored milestone keeps its date
    return Readiness(
        scope,
        tuple(Milestone(n, d, *shown.get(n, (None, {}))) for n, d in MILESTONES.items()),
    )


async def failures(rt: Runtime, scope: Scope) -> list[FailurePatternRecord]:
    async with rt.store.connection() as conn:
        rows = await inner_rows.attempts(conn, scope.entity_id, scope.namespace)
    found = failure_patterns([Attempt(r.task, r.lineage, r.generation, r.success, r.failure_mode, r.propagated)
                              for r in rows])  # fmt: skip
    return [
        FailurePatternRecord(
            p.task,
            p.lineages,
            p.generations,
            p.attempts,
            p.failures,
            dict(p.modes),
            p.propagated_failures,
            reflection(p),
        )
        for p in found
    ]


async def inner_life(rt: Runtime, scope: Scope) -> InnerLife:
    ready = await readiness(rt, scope)
    e, ns = scope.entity_id, scope.namespace
    async with rt.store.connection() as conn:
        axes = await inner_rows.gut_axes(conn, e, ns)
        memories = await inner_rows.live_memories(conn, e, ns)
        tuned = await inner_rows.tuning(conn, e, ns, "blend")
        history = await inner_rows.tuning_history(conn, e, ns)
        events = await inner_rows.safety_events(conn, e, ns)
    found = await failures(rt, scope)
    mature = len(memories) >= rt.settings.blend_mature_after
    return InnerLife(
        scope=scope,
        readiness=ready,
        axes=tuple(GutAxis(r, name, var, corr, n, at, tuple(v)) for r, v, var, corr, name, n, at in axes),
        tensions=tuple(_tension(m) for m in memories if m.kind == "tension"),
        alphas=dict(tuned["alphas"]) if tuned else dict(MATURE_ALPHAS if mature else COLD_START_ALPHAS),
        tuned=tuned is not None,
        history=tuple(_step(*row[:5]) for row in history),
        safety=tuple(SafetyRecord(at, check, on, subject, detail, m) for at, check, on, subject, detail, m in events),
        awaiting_approval=tuple(m.id for m in memories if (m.metadata or {}).get("approval")),
        failures=tuple(found),
    )


def _step(at: datetime, name: str, params: dict[str, Any], applied: bool, reason: str) -> TuningStep:
    return TuningStep(at, name, params, applied, reason)  # type: ignore[arg-type]  # names from the table's CHECK


def _tension(m: MemoryState) -> Tension:
    meta = m.metadata or {}
    status = meta.get("status", "open")
    return Tension(m.id, m.content, status if status in ("open", "acknowledged", "resolved") else "open",
                   m.access_count, meta.get("value_id"), m.created_at)  # fmt: skip


async def memory_centroid(rt: Runtime, scope: Scope) -> np.ndarray | None:
    """L2 of the subconscious centroid: the weight-centre-weighted average of the scope's strongest
    memories' vectors (unit; None without memories)."""
    async with rt.store.connection() as conn:
        memories = await inner_rows.live_memories(conn, scope.entity_id, scope.namespace, POOL)
        vectors = await vector_rows.vectors_of(conn, rt.table, scope.entity_id, rt.slug, [m.id for m in memories])
    kept = [m for m in memories if m.id in vectors]
    return weighted_centroid([vectors[m.id] for m in kept], [m.alpha / (m.alpha + m.beta) for m in kept])


async def wander(
    rt: Runtime, scope: Scope, n: int, *, seed: int | None, avoid: frozenset[uuid.UUID] = frozenset(),
    now: datetime | None = None,
) -> list[Wandering]:  # fmt: skip
    """``n`` memories drawn by the idle loop's biases (:func:`mnemo.cognition.mind.idle_sampling.sample`), each with
    the memories two co-access hops away; broader (temperature 2) while the entropy monitor asks."""
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 100:
        raise InvalidContentError(f"n must be an integer from 1 to 100, not {n!r}")
    when = now or datetime.now(UTC)
    e, ns = scope.entity_id, scope.namespace
    async with rt.store.connection() as conn:
        memories = await inner_rows.live_memories(conn, e, ns, POOL)
        sampling = await inner_rows.tuning(conn, e, ns, "sampling") or {}
        torn = _torn(memories)
        pool = [_pooled(m, when, torn) for m in memories]
        rng = np.random.default_rng(seed if seed is not None else rt.child_rng().getrandbits(64))
        drawn = idle_sampling.sample(
            pool, n, rng, temperature=float(sampling.get("temperature", 1.0)), avoid=frozenset(avoid)
        )
        by_id = {m.id: m for m in memories}
        picked = [(by_id[uuid.UUID(str(p.id))], p.center, biases) for p, biases in drawn]
        ids = [m.id for m, _, _ in picked]
        vectors = await vector_rows.vectors_of(conn, rt.table, e, rt.slug, ids)
        links = await dynamics.neighbours(conn, rt.settings, scope, ids, when, hops=2)
    return [
        Wandering(
            m.id,
            m.content,
            m.kind,
            centre,
            biases,
            tuple(float(x) for x in vectors.get(m.id, ())),
            tuple((o, s, by_id[o].content) for o, s in links.get(m.id, []) if o in by_id),
        )
        for m, centre, biases in picked
    ]


def _torn(memories: list[MemoryState]) -> set[str]:
    """Memories an open tension names (and the tensions)."""
    out: set[str] = set()
    for m in memories:
        meta = m.metadata or {}
        if m.kind == "tension" and meta.get("status") != "resolved":
            out |= {str(m.id), str(meta.get("value_id")), *map(str, meta.get("behaviours", []))}
    return out


def _pooled(m: MemoryState, now: datetime, torn: set[str]) -> idle_sampling.Pooled:
    last = m.last_accessed or m.created_at
    happened = m.event_time or m.created_at
    about_self = m.kind in SELF_KINDS or m.content.lstrip().lower().startswith(("i ", "i'm ", "my "))
    return idle_sampling.Pooled(
        m.id, m.alpha / (m.alpha + m.beta), (now - last).total_seconds() / 86400,
        (now - happened).total_seconds() / 86400, str(m.id) in torn, about_self,
    )  # fmt: skip
