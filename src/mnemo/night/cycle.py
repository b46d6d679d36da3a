"""The night cycle: offline consolidation of a scope's day table.

Seeds: memory-architecture §8 (pipeline stages 1-9; stages 7-8, migration to
the cortex and its RAPTOR tree, live in :mod:`mnemo.cortex`), archive-adr §9 (curator), cognitive-plan
§4.1-4.4 (decay, insights, reconsolidation). DESIGN §4: every stage commits on
its own and is idempotent; a crash at any point loses nothing and a re-run
continues where it stopped.

How that holds:

* a run is a row in ``mnemo.night_runs`` with its own ``as_of``; an unfinished
  run is resumed with that same ``as_of``, so a resumed run decides exactly as
  the interrupted one would have;
* per-turn and per-session stages (surprisal, blocks, knowledge) commit each
  batch or session together with its progress mark;
* scope-wide stages (insights, curation, decay, migrate, cluster, retention) commit their work
  together with their name in the run's ``stages_done``;
* ``dry_run`` plans instead (:mod:`mnemo.night.plan`): every stage's work, nothing written;
* one run per scope at a time (a session-level advisory lock).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import asdict, dataclass, fields
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

import psycopg

from mnemo._runtime import Runtime
from mnemo._upkeep import note_writes
from mnemo._validate import time_or_now
from mnemo.cortex.block_migration import MigrationStats, migrate
from mnemo.cortex.tree import TreeStats, build_tree
from mnemo.errors import ConfigurationError, InvalidContentError
from mnemo.models import NightReport, Scope, to_jsonable, uuid7
from mnemo.night import curator
from mnemo.night.block_building import build_blocks
from mnemo.night.decay import DecayStats, decay
from mnemo.night.fact_extraction import extract_knowledge
from mnemo.night.inner_consolidation import InnerStats, inner_stage
from mnemo.night.insights import InsightStats, derive_insights
from mnemo.night.logprobs import surprise_factory
from mnemo.night.plan import plan_night
from mnemo.night.retention import RetentionStats, describe, retain
from mnemo.night.surprise import score_turns
from mnemo.store import night_runs as run_rows
from mnemo.store import reflexes as reflex_rows
from mnemo.store import snapshots as backup_rows
from mnemo.store import turn_surprisal as surprisal_rows
from mnemo.store import vectors as vector_rows
from mnemo.store.pool import retry_conflicts
from mnemo.write.backfill import MAX_PENDING

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = ["STAGES", "NightReport", "run_night"]

S = TypeVar("S", bound="DataclassInstance")  # a stage's result: a dataclass, recorded as its JSON

CORTEX_STAGES = ("migrate", "cluster")
STAGES = (
    "surprisal", "blocks", "knowledge", "insights", "curate", "decay", "inner", "migrate", "cluster", "retention",
    "reflexes",
)  # fmt: skip

#: ``progress(stage, done, total)``: work units done so far in a stage (turns, or 1 for scope-wide ones).
Progress = Callable[[str, int, int], None]


async def run_night(
    rt: Runtime,
    scope: Scope,
    *,
    as_of: datetime | None = None,
    progress: Progress | None = None,
    stages: tuple[str, ...] = STAGES,
    dry_run: bool = False,
) -> NightReport:
    """Run (or resume) the night cycle for ``scope``; see the module docstring. ``dry_run``:
    report what it would do and write nothing (:func:`mnemo.night.plan.plan_night`)."""
    unknown = [s for s in stages if s not in STAGES]
    if unknown:
        raise InvalidContentError(f"unknown night stages {unknown}; choose from {STAGES}")
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
    """Open (or resume) the run, run its stages in order, then record its summary and finish it."""
    async with rt.store.transaction() as conn:
        run_id, as_of, done, previous, resumed = await run_rows.open_run(
            conn, scope.entity_id, scope.namespace, uuid7(), as_of
        )
    report = NightReport(scope=scope, run_id=run_id, as_of=as_of, resumed=resumed)
    describe(report, rt.settings)
    report.skipped = tuple(s for s in STAGES if s not in stages)
    run = _Run(rt, scope, run_id, as_of, stages, done, previous, progress, report)
    await _turn_stages(run)
    await _scope_stages(run)
    await run.timed("tokens", _read_tokens(rt, scope))

    async with rt.store.transaction() as conn:
        await run_rows.mark_stage(conn, scope.entity_id, run_id, "summary", to_jsonable(report) | {"seconds": None})
        await run_rows.finish_run(conn, scope.entity_id, run_id)
    return report


@dataclass(slots=True)
class _Run:
    """One run as its stages see it: what a resumed run already did, and the report being filled in."""

    rt: Runtime
    scope: Scope
    run_id: uuid.UUID
    as_of: datetime
    stages: tuple[str, ...]
    done: list[str]  # scope-wide stages already marked in this run
    previous: dict[str, Any]  # what they recorded
    progress: Progress | None
    report: NightReport

    def tick(self, stage: str, total: int) -> Callable[[int], None]:
        """A progress callback for ``stage`` that adds up the work units done."""
        count = 0

        def step(n: int) -> None:
            nonlocal count
            count += n
            if self.progress is not None:
                self.progress(stage, count, total)

        return step

    async def timed(self, stage: str, coro: Any) -> Any:
        t0 = time.perf_counter()
        result = await coro
        self.report.stage_seconds[stage] = self.report.stage_seconds.get(stage, 0.0) + time.perf_counter() - t0
        return result

    async def scope_stage(
        self, stage: str, kind: type[S], work: Callable[[psycopg.AsyncConnection], Awaitable[S]]
    ) -> S:
        """A scope-wide stage: its work and its mark commit together, once per run; a resumed run
        that already did it gets what it recorded (read back into ``kind``)."""
        if stage in self.done:
            return _restored(kind, self.previous.get(stage, {}))
        if stage not in self.stages:
            return kind()
        t0 = time.perf_counter()

        async def attempt() -> S:
            async with self.rt.store.transaction() as conn:
                if stage in CORTEX_STAGES:  # a backup copies the cortex only between such transactions
                    await backup_rows.share_cortex(conn)
                result = await work(conn)
                await run_rows.mark_stage(conn, self.scope.entity_id, self.run_id, stage, asdict(result))
            return result

        # A stage that only writes PostgreSQL runs again whole if it lost a deadlock to a recall that
        # locked the same memories; a cortex stage has written LanceDB too, so its error goes up (the
        # next run resumes it).
        result = await (attempt() if stage in CORTEX_STAGES else retry_conflicts(attempt))
        self.report.stage_seconds[stage] = time.perf_counter() - t0
        self.tick(stage, 1)(1)
        return result


def _restored(kind: type[S], recorded: Mapping[str, Any]) -> S:
    """A stage's result as a run recorded it (its JSON in ``night_runs.report``)."""
    return kind(**{f.name: recorded[f.name] for f in fields(kind) if f.name in recorded})


async def _turn_stages(run: _Run) -> None:
    """The per-turn and per-session stages (surprisal, blocks, knowledge): each commits with its progress marks."""
    rt, scope, as_of, report = run.rt, run.scope, run.as_of, run.report
    async with rt.store.connection() as conn:
        pending = await surprisal_rows.count_unscored(conn, scope.entity_id, scope.namespace, as_of)
        total_turns = await run_rows.count_turns(conn, scope.entity_id, scope.namespace, as_of)
    report.turns = total_turns

    if "surprisal" in run.stages:
        report.turns_scored = await run.timed("surprisal", _score(rt, scope, as_of, run.tick("surprisal", pending)))
    if "blocks" in run.stages:
        stats = await run.timed(
            "blocks", build_blocks(rt, scope, run.run_id, as_of, progress=run.tick("blocks", total_turns))
        )
        report.sessions, report.blocks, report.arcs = stats.sessions, stats.blocks, stats.arcs
        report.open_arcs, report.continuations, report.live_turns = (
            stats.open_arcs,
            stats.continuations,
            stats.live_turns,
        )
    if "knowledge" in run.stages:
        k = await run.timed(
            "knowledge", extract_knowledge(rt, scope, as_of, progress=run.tick("knowledge", total_turns))
        )
        report.facts_new, report.facts_repeated, report.facts_closed = k.facts_new, k.facts_repeated, k.facts_closed
        report.triples_new, report.llm_fallbacks = k.triples_new, k.llm_fallbacks


async def _score(rt: Runtime, scope: Scope, as_of: datetime, progress: Callable[[int], None]) -> int:
    """Stage 1a; with a surprisal endpoint, one HTTP client serves the whole stage and is closed after it."""
    factory = surprise_factory(rt.settings)
    try:
        return await score_turns(rt, scope, as_of, model_factory=factory, progress=progress)
    finally:
        if factory is not None:
            factory.close()


async def _scope_stages(run: _Run) -> None:
    """The scope-wide stages (insights, curation, decay, retention), each committed with its mark."""
    rt, scope, as_of, report = run.rt, run.scope, run.as_of, run.report
    i = await run.scope_stage("insights", InsightStats, lambda conn: derive_insights(rt, conn, scope, run.run_id))
    report.insights, report.narratives = i.insights, i.narratives
    c = await run.scope_stage(
        "curate", curator.CurationStats, lambda conn: curator.night_stage(rt, conn, scope, as_of, run.run_id)
    )
    report.curation_version, report.verdicts = c.version, dict(c.verdicts)
    report.curation_applied = bool(c.applied)
    d = await run.scope_stage("decay", DecayStats, lambda conn: decay(rt, conn, scope, as_of))
    report.decayed_light, report.decayed_deep = d.light, d.deep
    inner = await run.scope_stage("inner", InnerStats, lambda conn: inner_stage(rt, conn, scope, as_of))
    report.inner = asdict(inner)
    m = await run.scope_stage("migrate", MigrationStats, lambda conn: migrate(rt, conn, scope, run.run_id, as_of))
    report.blocks_migrated, report.lines_migrated = m.migrated, m.lines
    report.cortex_versions = dict(m.versions)
    t = await run.scope_stage("cluster", TreeStats, lambda conn: build_tree(rt, conn, scope, run.run_id, as_of))
    report.tree_nodes = t.nodes
    report.cortex_versions |= dict(t.versions)
    r = await run.scope_stage(
        "retention", RetentionStats, lambda conn: retain(conn, rt.settings, scope, as_of, run.run_id)
    )
    report.turns_removed, report.blocks_archived = r.turns_removed, r.blocks_archived
    report.turns_kept = r.turns_kept
    report.retention_next = datetime.fromisoformat(r.next_due) if r.next_due else None
    x = await run.scope_stage(
        "reflexes",
        reflex_rows.PruneStats,
        lambda conn: reflex_rows.prune(conn, scope.entity_id, scope.namespace, as_of),
    )
    report.reflexes_pruned, report.edges_weakened = x.pruned, x.weakened
    report.edges_dropped = x.edges_dropped


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
