"""The night cycle: offline consolidation of a scope's day table.

Seeds: memory-architecture §8 (pipeline stages 1-9; stages 7-8, migration to
the cortex and its RAPTOR tree, live in :mod:`mnemo.cortex`), archive-adr §9 (curator), cognitive-plan
§4.1-4.4 (decay, insights, reconsolidation). DESIGN §4: every stage commits on
its own and is idempotent; a crash at any point loses nothing and a re-run
continues where it stopped.

The stages, in the order a night runs them, are declared once in
:mod:`mnemo.night.stage_registry`; each is one module implementing
:class:`mnemo.night.stage_protocol.Stage`. How that holds:

* a run is a row in ``mnemo.night_runs`` with its own ``as_of``; an unfinished
  run is resumed with that same ``as_of``, so a resumed run decides exactly as
  the interrupted one would have;
* per-turn and per-session stages (surprisal, blocks, knowledge) commit each
  batch or session together with its progress mark;
* scope-wide stages (insights, curate, decay, inner, migrate, cluster, retention, reflexes) commit
  their work together with their name in the run's ``stages_done``
  (:meth:`mnemo.night.stage_protocol.NightRun.scope_wide`);
* ``dry_run`` plans instead (:mod:`mnemo.night.plan`): every stage's work, nothing written;
* one run per scope at a time (a session-level advisory lock).
"""

from __future__ import annotations

import time
from datetime import datetime

from mnemo._runtime import Runtime
from mnemo._upkeep import note_writes
from mnemo._validate import time_or_now
from mnemo.errors import ConfigurationError, InvalidContentError
from mnemo.models import NightReport, Scope, to_jsonable, uuid7
from mnemo.night.plan import plan_night
from mnemo.night.retention import describe
from mnemo.night.stage_protocol import NightRun, Progress
from mnemo.night.stage_registry import STAGE_NAMES, STAGES
from mnemo.store import night_runs as run_rows
from mnemo.store import vectors as vector_rows
from mnemo.write.backfill import MAX_PENDING

__all__ = ["NightReport", "Progress", "run_night"]


async def run_night(
    rt: Runtime,
    scope: Scope,
    *,
    as_of: datetime | None = None,
    progress: Progress | None = None,
    stages: tuple[str, ...] = STAGE_NAMES,
    dry_run: bool = False,
) -> NightReport:
    """Run (or resume) the night cycle for ``scope``; see the module docstring. ``dry_run``:
    report what it would do and write nothing (:func:`mnemo.night.plan.plan_night`)."""
    unknown = [s for s in stages if s not in STAGE_NAMES]
    if unknown:
        raise InvalidContentError(f"unknown night stages {unknown}; choose from {STAGE_NAMES}")
    as_of = time_or_now(as_of, skew_hours=rt.settings.clock_skew_hours)
    if dry_run:
        started = time.perf_counter()
        report = await plan_night(rt, scope, as_of, stages)
        describe(report, rt.settings)
        report.seconds = time.perf_counter() - started
        return report
    if rt.settings.pool_max_size < 2:
        raise ConfigurationError(
            "the night cycle needs pool_max_size >= 2: one connection holds the scope's lock while the stages work"
        )
    started = time.perf_counter()
    async with rt.store.connection() as lock, run_rows.held_scope(lock, scope.entity_id, scope.namespace):
        report = await _run(rt, scope, as_of, progress, stages)
    report.seconds = time.perf_counter() - started
    await note_writes(rt, 1000)  # a night rewrites a lot: refresh planner statistics
    return report


async def _run(
    rt: Runtime, scope: Scope, as_of: datetime, progress: Progress | None, stages: tuple[str, ...]
) -> NightReport:
    """Open (or resume) the run, run its stages in the registry's order, then record its summary and finish it."""
    async with rt.store.transaction() as conn:
        run_id, as_of, done, previous, resumed = await run_rows.open_run(
            conn, scope.entity_id, scope.namespace, uuid7(), as_of
        )
    report = NightReport(scope=scope, run_id=run_id, as_of=as_of, resumed=resumed)
    describe(report, rt.settings)
    report.skipped = tuple(s for s in STAGE_NAMES if s not in stages)
    night = NightRun(
        rt=rt, scope=scope, run_id=run_id, as_of=as_of, stages=stages, done=done, previous=previous,
        progress=progress, report=report,
    )  # fmt: skip
    async with rt.store.connection() as conn:
        report.turns = await run_rows.count_turns(conn, scope.entity_id, scope.namespace, as_of)
    for stage in STAGES:
        await stage.run(night)
    await night.timed("tokens", _read_tokens(rt, scope))

    async with rt.store.transaction() as conn:
        await run_rows.mark_stage(conn, scope.entity_id, run_id, "summary", to_jsonable(report) | {"seconds": None})
        await run_rows.finish_run(conn, scope.entity_id, run_id)
    return report


async def _read_tokens(rt: Runtime, scope: Scope) -> None:
    """The token embeddings of the memories the night wrote (facts, insights, blocks), read now so
    that the next recall's late interaction finds them (:mod:`mnemo.write.backfill`)."""
    if not rt.reads_tokens:
        return
    slug = str(rt.slug)
    async with rt.store.connection() as conn:
        missing = await vector_rows.without_tokens(
            conn, rt.table, scope.entity_id, scope.namespace, slug, ("memory",), MAX_PENDING
        )
    if missing:
        rt.backfill.request(rt, (scope.entity_id, scope.namespace, slug), missing)
        await rt.backfill.wait()
