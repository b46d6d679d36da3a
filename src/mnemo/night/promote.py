"""Night stage (inner life): promotion with outcomes, demotion, and the checks around them.

Seeds: cognitive-plan §4.3 (a pattern seen 5+ times over 14+ days: ``reinforce(2.0)``; 10+ times
over 30+ days: ``reinforce(5.0)``; operator approval past 0.85 at low trust; the Two-Gate guardrail
before every promotion; the coherence check after, with rollback; demotion by decay, dormant and
never deleted), §5.3 (utility from the outcomes of the recalls that used the memory), §3.9 (the
per-cycle rate limiter; no goal-like memory above 40% of the goal-weight budget).

A pattern's sightings are the reinforcements that brought new evidence (the exit gate confirming
it, or it being remembered again), each counting as far as its source is trusted: the agent's
own statements count half by default, so the agent cannot promote its own beliefs alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from mnemo import _dynamics as dynamics
from mnemo.cognition.mind import promotion as rules
from mnemo.cognition.scoring import safety
from mnemo.cognition.scoring.weights import StochasticWeight
from mnemo.night.guard import Guard
from mnemo.store import inner_life as inner_rows
from mnemo.store.dynamics import MemoryState

__all__ = ["PromotionStats", "approve", "promote"]


@dataclass(slots=True)
class PromotionStats:
    goal: int = 0
    identity: int = 0
    awaiting_approval: int = 0
    demoted: int = 0
    held: dict[str, int] = field(default_factory=dict)
    """Promotions a check held back, by check."""


class _RolledBack(Exception):
    """Raised inside the promotions' savepoint to undo them (the coherence check, enforced)."""


async def promote(guard: Guard, memories: list[MemoryState], coherence: Any) -> PromotionStats:
    """Promote, hold for approval, demote; then the coherence check (``coherence``: an async callable
    giving the scope's coherence now), rolling the promotions back when it fell and is enforced."""
    stats = PromotionStats()
    before = await coherence()
    try:
        async with guard.conn.transaction():  # a savepoint: the rollback undoes only the promotions
            await _promote_all(guard, memories, stats)
            after = await coherence()
            drop = safety.coherence_drop(before, after)
            evidence = {"before": before, "after": after}
            if (
                drop
                and (stats.goal or stats.identity)
                and await guard.fired("coherence", drop, subject="promotion", evidence=evidence)
            ):
                raise _RolledBack
    except _RolledBack:
        stats.held["coherence"] = stats.goal + stats.identity
        stats.goal = stats.identity = 0
    return stats


async def _promote_all(guard: Guard, memories: list[MemoryState], stats: PromotionStats) -> None:
    e, ns = guard.scope.entity_id, guard.scope.namespace
    live = [m for m in memories if not m.anchored]
    seen = await inner_rows.sightings(guard.conn, e, ns, [m.id for m in live])
    used = await inner_rows.uses(guard.conn, e, ns, [m.id for m in live])
    budget = {str(m.id): m.alpha / (m.alpha + m.beta) for m in memories if _level(m)}
    requests, patches = [], {}
    for m in live:
        level = _level(m)
        times = _trusted_times(seen.get(m.id, []))
        step = rules.next_step(level, times)
        if step is None:
            fallen = rules.demoted(level, max((t for t, _ in seen.get(m.id, [])), default=None), guard.at)
            if fallen is not False:
                requests.append(dynamics.WeightRequest(m.id, "contradict", 1.0, "demotion", {"from": level}))
                patches[m.id] = {"promotion": fallen}
                stats.demoted += 1
            continue
        request, patch = await _promotion(guard, m, step, used.get(m.id, []), budget, stats)
        if request is not None:
            requests.append(request)
        if patch:
            patches[m.id] = patch
    if requests:
        await dynamics.change_weights(guard.conn, guard.settings, guard.scope, requests, at=guard.at)
    if patches:
        await inner_rows.patch_metadata(guard.conn, e, patches)


def _level(m: MemoryState) -> rules.Level | None:
    found = (m.metadata or {}).get("promotion")
    return found if found in ("goal", "identity") else None


def _trusted_times(seen: list[tuple[datetime, float]]) -> list[datetime]:
    """Sightings as whole observations: trust-weighted counts, rounded down (two of the agent's own at
    0.5 make one)."""
    out, credit = [], 0.0
    for at, trust in seen:
        credit += trust
        while credit >= 1.0 - 1e-9:
            out.append(at)
            credit -= 1.0
    return out


async def _promotion(
    guard: Guard, m: MemoryState, step: rules.Step, outcomes: list[float], budget: dict[str, float],
    stats: PromotionStats,
) -> tuple[dynamics.WeightRequest | None, dict[str, Any]]:  # fmt: skip
    """One promotion through its checks: the Two-Gate guardrail (utility from outcomes not below 0:
    the validation margin; the identity rung's capacity), the goal budget, the per-cycle rate
    limiter, operator approval."""
    weight = StochasticWeight(m.alpha, m.beta, m.anchored)
    gain = max(step.gain, _gain_for(weight, step.centre))
    after = weight.reinforce(gain)
    utility = rules.utility(outcomes)
    failed = [] if utility >= 0 else [f"validation: utility {utility:.2f} from {len(outcomes)} outcomes"]
    if failed and await guard.fired("two_gate", "; ".join(failed), subject="promotion", memory_id=m.id):
        stats.held["two_gate"] = stats.held.get("two_gate", 0) + 1
        return None, {}
    share = dict(budget) | {str(m.id): after.center}
    if str(m.id) in safety.goal_budget(share):
        detail = f"{after.center / sum(share.values()):.0%} of the goal-weight budget (ceiling 40%)"
        if await guard.fired("goal_budget", detail, subject="promotion", memory_id=m.id):
            stats.held["goal_budget"] = stats.held.get("goal_budget", 0) + 1
            return None, {}
    limit = safety.cycle_rate(weight.center, after.center, guard.settings.rate_limit)
    if limit and await guard.fired("cycle_rate", limit, subject="promotion", memory_id=m.id):
        gain = _gain_for(weight, weight.center * (1 + guard.settings.rate_limit))
        after = weight.reinforce(gain)
    if rules.needs_approval(after.center, guard.settings.operator_trust):
        stats.awaiting_approval += 1
        return None, {"approval": {"level": step.level, "gain": gain, "asked_at": guard.at.isoformat()}}
    budget[str(m.id)] = after.center
    setattr(stats, step.level, getattr(stats, step.level) + 1)
    evidence = {"sightings": step.times, "days": step.days, "utility": utility}
    return dynamics.WeightRequest(m.id, "reinforce", gain, f"promotion: {step.level}", evidence), {
        "promotion": step.level, "utility": utility,
    }  # fmt: skip


def _gain_for(weight: StochasticWeight, centre: float) -> float:
    """The gain that moves ``weight``'s centre to ``centre`` (the inverse of diminished returns)."""
    alpha = centre * weight.beta / (1 - centre)
    return max(0.0, (alpha - weight.alpha) * math.log2(max(weight.evidence, 1.0) + 1.0))


async def approve(guard: Guard, m: MemoryState) -> bool:
    """Apply a promotion that waits for approval; False when none waits."""
    waiting = (m.metadata or {}).get("approval")
    if not waiting:
        return False
    level, gain = waiting["level"], float(waiting["gain"])
    request = dynamics.WeightRequest(m.id, "reinforce", gain, f"promotion: {level}", {"approved": True})
    await dynamics.change_weights(guard.conn, guard.settings, guard.scope, [request], at=guard.at)
    await inner_rows.patch_metadata(guard.conn, guard.scope.entity_id, {m.id: {"promotion": level}}, drop=["approval"])
    return True
