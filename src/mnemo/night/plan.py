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

from datetime import datetime

from mnemo._runtime import Runtime
from mnemo.models import NightReport, Scope, uuid7
from mnemo.night.stage_protocol import NightPlan
from mnemo.night.stage_registry import STAGES
from mnemo.store import night_runs as run_rows

__all__ = ["plan_night"]


async def plan_night(rt: Runtime, scope: Scope, as_of: datetime, stages: tuple[str, ...]) -> NightReport:
    """The plan of :func:`mnemo.night.cycle.run_night` for ``scope`` at ``as_of`` over ``stages``:
    each stage of the registry, in its order, that the night would run (:meth:`Stage.plan
    <mnemo.night.stage_protocol.Stage.plan>`)."""
    e, ns = scope.entity_id, scope.namespace
    async with rt.store.connection() as conn, conn.transaction(force_rollback=True):
        unfinished = await run_rows.unfinished_run(conn, e, ns)
        run_id, done = (unfinished[0], unfinished[2]) if unfinished else (None, [])
        as_of = unfinished[1] if unfinished else as_of
        report = NightReport(scope=scope, run_id=run_id or uuid7(), as_of=as_of, resumed=unfinished is not None)
        report.dry_run = True
        report.skipped = tuple(s.name for s in STAGES if s.name not in stages or s.name in done)
        todo = tuple(s for s in stages if s not in report.skipped)
        report.turns = await run_rows.count_turns(conn, e, ns, as_of)
        night = NightPlan(rt=rt, conn=conn, scope=scope, run_id=run_id, todo=todo, report=report)
        for stage in STAGES:
            if stage.name in todo:
                await stage.plan(night)
    return report
