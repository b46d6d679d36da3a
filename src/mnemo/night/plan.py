"""``mnemo night --dry-run``: what each stage of the next night would do, with nothing written.

Everything runs in one READ ONLY transaction, so a write by mistake fails instead of
changing the database; no advisory lock is taken, no run is opened, no LLM is asked for
surprisal, summaries, facts or insights (the curator's plan may ask it to check a new
candidate against an anchored memory, as ``mnemo curate --dry-run`` does).

Exact: the turns to score, the sessions and turns to cut into blocks or mine for facts, and
retention (a night never lets go of turns that only its own blocks cover, so the blocks
this night will make do not change what it removes). Over what exists now, before the
night adds to it: insights, curation verdicts and decay. An unfinished run is planned as it
would resume: with its own ``as_of``, without the scope-wide stages it already did.
"""

from __future__ import annotations

from datetime import datetime

from mnemo._runtime import Runtime
from mnemo.cortex.migrate import migration_plan
from mnemo.models import NightReport, Scope, uuid7
from mnemo.night import curator
from mnemo.night.decay import decay
from mnemo.night.insights import plan_insights
from mnemo.night.retention import retain
from mnemo.store import night as night_rows
from mnemo.store import reflexes as reflex_rows

__all__ = ["plan_night"]


async def plan_night(rt: Runtime, scope: Scope, as_of: datetime, stages: tuple[str, ...]) -> NightReport:
    """The plan of :func:`mnemo.night.cycle.run_night` for ``scope`` at ``as_of`` over ``stages``."""
    e, ns = scope.entity_id, scope.namespace
    async with rt.store.transaction() as conn:
        await conn.execute("SET TRANSACTION READ ONLY")
        unfinished = await night_rows.unfinished_run(conn, e, ns)
        run_id, done = (unfinished[0], unfinished[2]) if unfinished else (None, [])
        as_of = unfinished[1] if unfinished else as_of
        report = NightReport(scope=scope, run_id=run_id or uuid7(), as_of=as_of, resumed=unfinished is not None)
        report.dry_run = True
        report.skipped = tuple(s for s in ("surprisal", "blocks", "knowledge") if s not in stages) + tuple(
            s
            for s in ("insights", "curate", "decay", "migrate", "cluster", "retention", "reflexes")
            if s not in stages or s in done
        )
        todo = [s for s in stages if s not in report.skipped]
        report.turns = await night_rows.count_turns(conn, e, ns, as_of)
        scored_only = "surprisal" not in todo  # the stages score first, then cut and mine what was scored
        plan: dict[str, int] = {}
        if "surprisal" in todo:
            report.turns_scored = await night_rows.count_unscored(conn, e, ns, as_of)
        if "blocks" in todo:
            sessions, turns = await night_rows.pending_work(
                conn, e, ns, as_of, "blocks_through", scored_only=scored_only
            )
            plan |= {"sessions_to_cut": sessions, "turns_to_cut": turns}
        if "knowledge" in todo:
            sessions, turns = await night_rows.pending_work(
                conn, e, ns, as_of, "facts_through", scored_only=scored_only
            )
            plan |= {"sessions_to_mine": sessions, "turns_to_mine": turns}
        if "insights" in todo:
            insights = await plan_insights(rt, conn, scope)
            report.insights, report.narratives = insights.insights, insights.narratives
        if "curate" in todo:
            verdicts = await curator.plan(rt, conn, scope, as_of)
            report.verdicts = curator.counts(verdicts)
            plan["memories_to_judge"] = len(verdicts)
        if "decay" in todo:
            decayed = await decay(rt, conn, scope, as_of, dry_run=True)
            report.decayed_light, report.decayed_deep = decayed.light, decayed.deep
        if "migrate" in todo and rt.settings.cortex:
            plan["blocks_to_migrate"] = len(await migration_plan(rt, conn, scope, as_of))
        if "retention" in todo:
            kept = await retain(conn, rt.settings, scope, as_of, run_id, dry_run=True)
            report.turns_removed, report.blocks_archived, report.turns_kept = (
                kept.turns_removed,
                kept.blocks_archived,
                kept.turns_kept,
            )
            report.retention_next = datetime.fromisoformat(kept.next_due) if kept.next_due else None
        if "reflexes" in todo:
            plan["reflexes_to_prune"] = await reflex_rows.prunable(conn, e, ns, as_of)
        report.plan = plan
    return report
