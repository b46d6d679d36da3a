"""``mnemo night --dry-run``: what each stage of the next night would do, with nothing written.

Everything runs in one transaction that is always rolled back, so nothing of it is ever
kept; no advisory lock is taken, no run is opened, no LLM is asked for surprisal, summaries,
facts or insights (the curator's plan may ask it to check a new candidate against an
anchored memory, as ``mnemo curate --dry-run`` does), nothing is embedded and the cortex is
not touched. The inner-life stage runs as the run would, inside that transaction: a tension or a
persistent failure it finds is embedded, then rolled back with the rest.

The plan is what the run then does. The turn stages are counted exactly: the turns to
score, the sessions and turns to cut into blocks or mine for facts. The scope-wide stages
follow one another as in the run, each planned with the run's own function over what the
ones before it leave: curation is staged and applied (:func:`mnemo.night.curator.night_stage`),
the blocks migration takes are marked as in the cortex
(:func:`mnemo.cortex.block_migration.plan_migration`), and only then are decay and retention
counted, so a block the curator archives or migration moves is not counted again as
archived by retention. What a night makes itself (blocks, facts, insights) cannot be in
those counts without running the stages that make them: they are over the memories and
blocks there are before the night. The turns and blocks retention lets go of are exact
either way (a night never lets go of turns that only its own blocks cover, nor archives the
blocks it made); the turns it keeps for a later night are those covered now. An unfinished run
is planned as it would resume: with its own ``as_of``, without the scope-wide stages it
already did.
"""

from __future__ import annotations

import uuid
from dataclasses import asdict
from datetime import datetime

import psycopg

from mnemo._runtime import Runtime
from mnemo.cortex.block_migration import plan_migration
from mnemo.models import NightReport, Scope, uuid7
from mnemo.night import curator
from mnemo.night.decay import decay
from mnemo.night.inner_consolidation import inner_stage
from mnemo.night.insights import plan_insights
from mnemo.night.retention import retain
from mnemo.store import night_runs as run_rows
from mnemo.store import reflexes as reflex_rows
from mnemo.store import turn_surprisal as surprisal_rows

__all__ = ["plan_night"]

_SCOPE_STAGES = ("insights", "curate", "decay", "inner", "migrate", "cluster", "retention", "reflexes")


async def plan_night(rt: Runtime, scope: Scope, as_of: datetime, stages: tuple[str, ...]) -> NightReport:
    """The plan of :func:`mnemo.night.cycle.run_night` for ``scope`` at ``as_of`` over ``stages``."""
    e, ns = scope.entity_id, scope.namespace
    async with rt.store.connection() as conn, conn.transaction(force_rollback=True):
        unfinished = await run_rows.unfinished_run(conn, e, ns)
        run_id, done = (unfinished[0], unfinished[2]) if unfinished else (None, [])
        as_of = unfinished[1] if unfinished else as_of
        report = NightReport(scope=scope, run_id=run_id or uuid7(), as_of=as_of, resumed=unfinished is not None)
        report.dry_run = True
        report.skipped = tuple(s for s in ("surprisal", "blocks", "knowledge") if s not in stages) + tuple(
            s for s in _SCOPE_STAGES if s not in stages or s in done
        )
        todo = [s for s in stages if s not in report.skipped]
        report.turns = await run_rows.count_turns(conn, e, ns, as_of)
        await _plan_turn_stages(conn, scope, as_of, todo, report)
        await _plan_scope_stages(rt, conn, scope, run_id, todo, report)
    return report


async def _plan_turn_stages(
    conn: psycopg.AsyncConnection, scope: Scope, as_of: datetime, todo: list[str], report: NightReport
) -> None:
    """The turns to score, and the sessions and turns to cut into blocks and to mine for facts."""
    e, ns = scope.entity_id, scope.namespace
    scored_only = "surprisal" not in todo  # the stages score first, then cut and mine what was scored
    if "surprisal" in todo:
        report.turns_scored = await surprisal_rows.count_unscored(conn, e, ns, as_of)
    if "blocks" in todo:
        sessions, turns = await run_rows.pending_work(conn, e, ns, as_of, "blocks_through", scored_only=scored_only)
        report.plan |= {"sessions_to_cut": sessions, "turns_to_cut": turns}
    if "knowledge" in todo:
        sessions, turns = await run_rows.pending_work(conn, e, ns, as_of, "facts_through", scored_only=scored_only)
        report.plan |= {"sessions_to_mine": sessions, "turns_to_mine": turns}


async def _plan_scope_stages(
    rt: Runtime,
    conn: psycopg.AsyncConnection,
    scope: Scope,
    run_id: uuid.UUID | None,
    todo: list[str],
    report: NightReport,
) -> None:
    """The scope-wide stages in the run's order, each over what the ones before it leave (their
    writes are rolled back with the plan's transaction)."""
    as_of = report.as_of
    if "insights" in todo:
        insights = await plan_insights(rt, conn, scope)
        report.insights, report.narratives = insights.insights, insights.narratives
    if "curate" in todo:
        curated = await curator.night_stage(rt, conn, scope, as_of, run_id)
        report.verdicts = curated.verdicts
        report.plan["memories_to_judge"] = sum(report.verdicts.values())
    if "decay" in todo:
        decayed = await decay(rt, conn, scope, as_of, dry_run=True)
        report.decayed_light, report.decayed_deep = decayed.light, decayed.deep
    if "inner" in todo:
        report.inner = asdict(await inner_stage(rt, conn, scope, as_of))
    if "migrate" in todo and rt.settings.cortex:
        report.plan["blocks_to_migrate"] = await plan_migration(rt, conn, scope, as_of)
    if "retention" in todo:
        kept = await retain(conn, rt.settings, scope, as_of, run_id, dry_run=True)
        report.turns_removed, report.blocks_archived, report.turns_kept = (
            kept.turns_removed,
            kept.blocks_archived,
            kept.turns_kept,
        )
        report.retention_next = datetime.fromisoformat(kept.next_due) if kept.next_due else None
    if "reflexes" in todo:
        report.plan["reflexes_to_prune"] = await reflex_rows.prunable(conn, scope.entity_id, scope.namespace, as_of)
