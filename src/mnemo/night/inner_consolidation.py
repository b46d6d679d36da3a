"""Night stage ``inner``: the inner life's deep consolidation, in one transaction.

Seeds: cognitive-plan §4.2 (tensions), §4.3 and §5.3 (promotion with outcomes), §4.5 (self-tuning
of the blend and the gate), §5.1 (the gut axes), §3.9 phases B and C (the per-cycle rate limiter,
the Two-Gate guardrail, the entropy monitor, the circuit breaker, the coherence check, the goal
budget: each in shadow mode until ``safety_enforced`` names it), §5.2 (readiness milestones);
memory-architecture §10.6.3 (the frustration ledger's persistent failures).

Its sub-stages run in order over the scope's live memories: promotion (rolled back whole when the
coherence check is enforced and coherence fell), tensions, tuning, gut axes, the frustration
ledger, then the phase C monitors over the weights as they now are, and the milestones the traces
show. :meth:`mnemo.AsyncArchive.inner.reflect` runs this stage alone, on demand.
"""

from __future__ import annotations

import uuid
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

import psycopg

from mnemo._runtime import Runtime
from mnemo.cognition.mind import tensions as tension_rules
from mnemo.cognition.scoring import safety
from mnemo.models import NightReport, Scope
from mnemo.night.frustration import frustration
from mnemo.night.guard import Guard
from mnemo.night.gut_axes import gut_axes
from mnemo.night.promote import promote
from mnemo.night.stage_protocol import NightPlan, NightRun
from mnemo.night.tension_review import tensions
from mnemo.night.tune import tune
from mnemo.store import inner_life as inner_rows
from mnemo.store.dynamics import MemoryState

__all__ = ["STAGE", "InnerStage", "InnerStats", "inner_stage", "record_milestones"]

STRONG = 0.6
"""Memories above this centre count for coherence's epistemic axis (the goal range's floor)."""


@dataclass(slots=True)
class InnerStats:
    promotion: dict[str, Any] = field(default_factory=dict)
    tensions: dict[str, Any] = field(default_factory=dict)
    tuning: dict[str, Any] = field(default_factory=dict)
    gut: dict[str, Any] = field(default_factory=dict)
    frustration: dict[str, Any] = field(default_factory=dict)
    safety: dict[str, int] = field(default_factory=dict)
    """Safety events this stage logged, by check (enforced or shadow)."""
    entropy: float | None = None
    coherence: float | None = None
    paused: list[str] = field(default_factory=list)
    milestones: list[str] = field(default_factory=list)
    """Milestones first reached (first seen in the traces) during this stage."""


async def inner_stage(rt: Runtime, conn: psycopg.AsyncConnection, scope: Scope, as_of: datetime) -> InnerStats:
    e, ns = scope.entity_id, scope.namespace
    guard = Guard(conn, rt.settings, scope, as_of)
    stats = InnerStats()
    memories = await inner_rows.live_memories(conn, e, ns)

    async def coherence() -> float:
        return await _coherence(conn, scope, await inner_rows.live_memories(conn, e, ns, 500))

    stats.promotion = asdict(await promote(guard, memories, coherence))
    memories = await inner_rows.live_memories(conn, e, ns)
    stats.tensions = asdict(await tensions(guard, memories, rt))
    stats.tuning = asdict(await tune(guard, len(memories) >= rt.settings.blend_mature_after))
    stats.gut = asdict(await gut_axes(guard, rt))
    stats.frustration = asdict(await frustration(guard, rt))
    memories = await inner_rows.live_memories(conn, e, ns)
    stats.entropy, stats.coherence = await _monitors(guard, memories, await coherence())
    stats.paused = await _breaker(guard)
    stats.milestones = await record_milestones(conn, scope, as_of)
    stats.safety = dict(guard.events)
    return stats


async def _coherence(conn: psycopg.AsyncConnection, scope: Scope, memories: list[MemoryState]) -> float:
    """C in [0, 1] over the epistemic axis (strong memories that no other strong one opposes), the
    action axis (attempts and reflex uses that went well) and the value axis (strong values without
    an open tension)."""
    strong = [m for m in memories if m.kind != "tension" and m.alpha / (m.alpha + m.beta) >= STRONG][:100]
    pairs = [(a.id, b.id) for i, a in enumerate(strong) for b in strong[i + 1 :]
             if tension_rules.opposes(a.content, b.content)]  # fmt: skip
    opposed = {x for pair in pairs for x in pair}
    epistemic = 1.0 - len(opposed) / len(strong) if strong else 1.0
    successes, tries = await inner_rows.action_record(conn, scope.entity_id, scope.namespace)
    action = successes / tries if tries else 1.0
    values = {
        str(m.id) for m in memories if m.kind != "tension" and m.alpha / (m.alpha + m.beta) > tension_rules.STRONG
    }
    torn = {str((m.metadata or {}).get("value_id")) for m in memories
            if m.kind == "tension" and (m.metadata or {}).get("status") != "resolved"}  # fmt: skip
    value = 1.0 - len(values & torn) / len(values) if values else 1.0
    return safety.coherence(epistemic, action, value)


async def _monitors(guard: Guard, memories: list[MemoryState], coherence: float) -> tuple[float, float]:
    """Phase C: the entropy monitor (enforced: the idle loop samples more broadly until the entropy
    recovers) and the coherence trend, each against the last night's value."""
    e, ns = guard.scope.entity_id, guard.scope.namespace
    last = await inner_rows.tuning(guard.conn, e, ns, "coherence") or {}
    entropy = safety.weight_entropy([m.alpha / (m.alpha + m.beta) for m in memories])
    previous = last.get("entropy")
    broaden = False
    if fell := safety.entropy_drop(previous, entropy):
        broaden = await guard.fired("entropy", fell, subject="weights", evidence={"entropy": entropy})
    if worse := safety.coherence_drop(last.get("coherence", coherence), coherence):
        await guard.fired("coherence", worse, subject="scope", enforced=False)
    sampling = await inner_rows.tuning(guard.conn, e, ns, "sampling") or {"temperature": 1.0}
    recovered = previous is not None and entropy >= previous
    wanted = 2.0 if broaden else 1.0 if recovered else float(sampling.get("temperature", 1.0))
    if wanted != sampling.get("temperature"):
        await inner_rows.save_tuning(
            guard.conn, e, ns, "sampling", {"temperature": wanted}, previous=sampling, applied=True,
            reason="entropy fell: broaden" if broaden else "entropy recovered", evidence={"entropy": entropy},
            at=guard.at,
        )  # fmt: skip
    await inner_rows.save_tuning(
        guard.conn, e, ns, "coherence", {"entropy": entropy, "coherence": coherence}, previous=None, applied=True,
        reason="", evidence={}, at=guard.at,
    )  # fmt: skip
    return entropy, coherence


async def _breaker(guard: Guard) -> list[str]:
    """Phase C circuit breaker: memories reinforced night after night without new evidence. Enforced,
    they are paused (no reinforcement but new evidence) until new evidence comes."""
    e, ns = guard.scope.entity_id, guard.scope.namespace
    book = await inner_rows.tuning(guard.conn, e, ns, "breaker") or {}
    since = datetime.fromisoformat(book["until"]) if book.get("until") else None
    reinforced = await inner_rows.reinforced_since(guard.conn, e, ns, since, guard.at)
    counts, tripped = safety.breaker(book.get("counts", {}), {str(k): v for k, v in reinforced.items()},
                                     guard.settings.circuit_breaker_cycles)  # fmt: skip
    paused = {}
    for memory in tripped:
        detail = f"reinforced {counts[memory]} nights in a row without new evidence"
        if await guard.fired("circuit_breaker", detail, subject="pattern", memory_id=uuid.UUID(memory)):
            paused[uuid.UUID(memory)] = {"paused": {"since": guard.at.isoformat(), "reason": detail}}
    if paused:
        await inner_rows.patch_metadata(guard.conn, e, paused)
    freed = [m for m, evidence in reinforced.items() if evidence]
    if freed:
        await inner_rows.patch_metadata(guard.conn, e, {m: {} for m in freed}, drop=["paused"])
    await inner_rows.save_tuning(
        guard.conn, e, ns, "breaker", {"counts": counts, "until": guard.at.isoformat()}, previous=None,
        applied=True, reason="", evidence={}, at=guard.at,
    )  # fmt: skip
    return [str(m) for m in paused]


async def record_milestones(conn: psycopg.AsyncConnection, scope: Scope, at: datetime | None = None) -> list[str]:
    """Store the milestones the traces show and no row holds yet; the names first reached.

    ``at``: the clock of the night that looks (its ``as_of``). A milestone is dated when its trace
    says, but never after the night that saw it: a trace stamped by the wall clock (a recall, a
    night's own record) is not dated past a simulated or replayed night's clock (issue 39 item 13)."""
    e, ns = scope.entity_id, scope.namespace
    held = await inner_rows.milestones(conn, e, ns)
    reached = []
    for name, (seen, evidence) in (await inner_rows.detect_milestones(conn, e, ns)).items():
        when = seen if at is None else min(seen, at)
        if name not in held and await inner_rows.reach(conn, e, ns, name, when, evidence):
            reached.append(name)
    return reached


class InnerStage:
    """Night stage ``inner`` (scope-wide; issue 31): promotion, tensions, tuning, gut axes,
    persistent failures, the safety monitors and milestones, in one transaction
    (:func:`inner_stage`; each part in its own module of ``mnemo.night``)."""

    name = "inner"
    report_fields = ("inner",)

    async def run(self, night: NightRun) -> None:
        inner = await night.scope_wide(
            self.name, InnerStats, lambda conn: inner_stage(night.rt, conn, night.scope, night.as_of)
        )
        night.report.inner = asdict(inner)

    async def plan(self, night: NightPlan) -> None:
        night.report.inner = asdict(await inner_stage(night.rt, night.conn, night.scope, night.report.as_of))

    def row(self, report: NightReport) -> str:
        """The inner-life stage in one line."""
        inner = report.inner
        if not inner:
            return "nothing to do"
        p, t, tu = inner.get("promotion", {}), inner.get("tensions", {}), inner.get("tuning", {})
        events = ", ".join(f"{k} {v}" for k, v in sorted(inner.get("safety", {}).items())) or "no safety events"
        return (
            f"{p.get('goal', 0)} goal and {p.get('identity', 0)} identity promotions, {p.get('awaiting_approval', 0)} "
            f"awaiting approval; {t.get('found', 0)} new tensions, {t.get('resolved', 0)} resolved; alphas "
            f"{'tuned' if tu.get('alphas_applied') else 'unchanged'}; {inner.get('gut', {}).get('axes', 0)} gut axes; "
            f"{inner.get('frustration', {}).get('surfaced', 0)} failures surfaced; {events}"
        )


STAGE = InnerStage()
