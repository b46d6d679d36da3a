"""Night stage (inner life): self-tuning of the blend's alphas and the exit gate, from outcomes.

Seed: cognitive-plan §4.5: the Dirichlet alpha of the component that contributed most to each
retrieval outcome moves (:func:`mnemo.cognition.consolidation.tuning.evolve`); the gate loosens when dropped
content was needed later and tightens when persisted content is never retrieved
(:func:`mnemo.cognition.consolidation.tuning.gate_step`); pathological Beta weights are flagged; every change,
applied or not, goes to ``traces.tuning_history``. §3.9 phase B: the Two-Gate guardrail stands
before each parameter change: the validation margin (the new alphas must rank the used hits of
held-out outcomes better than the current ones) and the capacity cap (no alpha beyond three times,
or under a third of, its starting value).

Gate outcomes link back here: an exit-gate decision a week old gets a ``reaccess`` outcome (its
memory retrieved since: +1, never: -1; a dropped item asked or said again since: -1, not: +1).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from mnemo.cognition.consolidation import tuning as rules
from mnemo.cognition.mind.gate_rules import content_words
from mnemo.cognition.scoring import safety
from mnemo.cognition.scoring.blend_components import BLEND, COLD_START_ALPHAS, MATURE_ALPHAS
from mnemo.night.guard import Guard
from mnemo.store import inner_life as inner_rows

__all__ = ["REVIEW_AFTER", "TuneStats", "tune"]

REVIEW_AFTER = timedelta(days=7)
"""A gate decision is judged once it is this old (its memory had time to be needed)."""
HOLD_OUT = 0.25
"""The newest quarter of the outcomes validates a change fitted on the rest."""
CAP = 3.0
"""The capacity cap: alphas stay within a factor of three of their start (not fitted)."""
MASS = 0.5
"""The capacity cap on one night's change: at most half the alphas' total moves (not fitted)."""


@dataclass(slots=True)
class TuneStats:
    samples: int = 0
    alphas_applied: bool = False
    alphas: dict[str, float] = field(default_factory=dict)
    quality_before: float | None = None
    quality_after: float | None = None
    gate_reviewed: int = 0
    gate_applied: bool = False
    pathological: int = 0


async def tune(guard: Guard, mature: bool) -> TuneStats:
    stats = TuneStats()
    await _review_gate_decisions(guard, stats)
    if guard.settings.self_tuning:
        await _tune_alphas(guard, mature, stats)
        await _tune_gate(guard, stats)
    for memory_id, alpha, beta in await inner_rows.pathological_weights(
        guard.conn, guard.scope.entity_id, guard.scope.namespace, 500.0
    ):
        reason = rules.pathological(alpha, beta)
        if reason:
            await guard.fired("pathological_beta", reason, subject="weight", memory_id=memory_id, enforced=False)
            stats.pathological += 1
    return stats


async def _tune_alphas(guard: Guard, mature: bool, stats: TuneStats) -> None:
    e, ns = guard.scope.entity_id, guard.scope.namespace
    current = await inner_rows.tuning(guard.conn, e, ns, "blend")
    start = dict(MATURE_ALPHAS if mature else COLD_START_ALPHAS)
    alphas = dict(current["alphas"]) if current else dict(start)
    samples = [_sample(s) for s in await inner_rows.outcome_samples(guard.conn, e, ns, None)]
    samples = [s for s in samples if s.parts]
    stats.samples = len(samples)
    if len(samples) < guard.settings.tuning_min_outcomes:
        return
    for c in BLEND:  # a component that needs a mood is tuned once recalls had one
        if c.needs_mood and any(abs(p.get(c.name, c.absent) - c.absent) > 1e-9 for s in samples for p in s.parts):
            alphas.setdefault(c.name, c.alpha(mature))
            start.setdefault(c.name, c.alpha(mature))
    cut = max(1, int(len(samples) * (1 - HOLD_OUT)))
    fitted, held_out = samples[:cut], samples[cut:]
    proposed, held = rules.capped(rules.evolve(alphas, fitted), start, CAP)
    if max(abs(proposed[c] - alphas.get(c, 0.0)) for c in proposed) < 1e-6:
        return  # the outcomes ask for no change (the alphas sit where they lead, or at their caps)
    before, after = rules.quality(alphas, held_out), rules.quality(proposed, held_out)
    stats.quality_before, stats.quality_after = before, after
    # capacity: each alpha is cut to its bounds (``held`` notes which); the change as a whole may move at
    # most half the alphas' mass in one night
    moved = sum(abs(proposed[c] - alphas.get(c, 0.0)) for c in proposed) / sum(alphas.values())
    failed = safety.two_gate(before, after, 0.0, [f"{moved:.0%} of the alphas' mass"] if moved > MASS else [])
    applied = True
    if failed:
        applied = not await guard.fired("two_gate", "; ".join(failed), subject="blend alphas",
                                         evidence={"before": before, "after": after, "held": held})  # fmt: skip
    reason = f"{len(fitted)} outcomes fitted, {len(held_out)} held out: {before:.3f} -> {after:.3f}"
    await inner_rows.save_tuning(
        guard.conn, e, ns, "blend", {"alphas": proposed}, previous={"alphas": alphas}, applied=applied,
        reason=reason, evidence={"samples": len(samples), "failed": failed, "at_bounds": held}, at=guard.at,
    )  # fmt: skip
    stats.alphas_applied, stats.alphas = applied, proposed if applied else alphas


def _sample(row: inner_rows.OutcomeSample) -> rules.Sample:
    index = {h: i for i, h in enumerate(row.hit_ids)}
    used = frozenset(index[u] for u in row.used if u in index)
    return rules.Sample(tuple(row.parts or ()), used, float(row.value))


async def _review_gate_decisions(guard: Guard, stats: TuneStats) -> None:
    """Link a ``reaccess`` outcome to every exit-gate decision old enough to judge."""
    e, ns = guard.scope.entity_id, guard.scope.namespace
    due = await inner_rows.unreviewed_gate_decisions(guard.conn, e, ns, guard.at - REVIEW_AFTER)
    if not due:
        return
    later = await inner_rows.texts_since(guard.conn, e, ns, min(d.at for d in due))
    for d in due:
        if d.action in ("persist", "persist_flag"):
            value, detail = (1.0, "retrieved since") if d.retrieved else (-1.0, "never retrieved")
        else:
            needed = _needed(d.content, [t for at, t in later if at > d.at])
            value, detail = (-1.0, "needed later") if needed else (1.0, "not needed since")
        await inner_rows.insert_outcome(guard.conn, e, ns, d.outcome_id, "reaccess", value, (), detail, guard.at)
    stats.gate_reviewed = len(due)


def _needed(dropped: str, later: list[str]) -> bool:
    """Whether a dropped item came back: a later question or statement holding most of its words."""
    words = set(content_words(dropped))
    if len(words) < 2:
        return False
    return any(len(words & set(content_words(t))) / len(words) >= 0.6 for t in later)


async def _tune_gate(guard: Guard, stats: TuneStats) -> None:
    e, ns = guard.scope.entity_id, guard.scope.namespace
    counts = await inner_rows.gate_counts(guard.conn, e, ns)
    cfg = guard.settings
    current = await inner_rows.tuning(guard.conn, e, ns, "gate") or {}
    params = rules.GateParams(
        float(current.get("core", cfg.gate_core)), float(current.get("peripheral", cfg.gate_peripheral)),
        float(current.get("noise", cfg.gate_noise)),
    )  # fmt: skip
    moved, reason = rules.gate_step(params, **counts)
    if reason is None:
        return
    new: dict[str, Any] = {"core": moved.core, "peripheral": moved.peripheral, "noise": moved.noise}
    await inner_rows.save_tuning(
        guard.conn, e, ns, "gate", new, previous={"core": params.core, "peripheral": params.peripheral,
                                                  "noise": params.noise},
        applied=True, reason=reason, evidence=counts, at=guard.at,
    )  # fmt: skip
    stats.gate_applied = True
