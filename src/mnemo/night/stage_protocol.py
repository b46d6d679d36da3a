"""What a night stage is (issue 41 item 2): the :class:`Stage` protocol, and what a stage sees of
the run that drives it (:class:`NightRun`) or of the dry run that plans it (:class:`NightPlan`).

Seeds: memory-architecture §8 (the pipeline's stages), DESIGN §4 (every stage commits on its own
and is idempotent). The stages themselves, in the order a night runs them, are declared once in
:mod:`mnemo.night.stage_registry`; :mod:`mnemo.night.cycle` runs them, :mod:`mnemo.night.plan`
plans them, and the command line and the inspector show them from there.

Two kinds of stage share the protocol. A *per-turn* stage (surprisal, blocks, knowledge) commits
each batch or session with its own progress mark, and runs only when chosen
(:meth:`NightRun.per_turn`). A *scope-wide* stage commits its work together with its name in the
run's ``stages_done``, once per run (:meth:`NightRun.scope_wide`); when it is not chosen, or a
resumed run already did it, it still fills its part of the report (with its result's defaults, or
with what the earlier attempt recorded).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import asdict, dataclass, fields
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import psycopg

from mnemo._runtime import Runtime
from mnemo.models import NightReport, Scope
from mnemo.store import night_runs as run_rows
from mnemo.store import snapshots as backup_rows
from mnemo.store.pool import retry_conflicts

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = ["NightPlan", "NightRun", "Progress", "Stage", "count_of", "restored"]

S = TypeVar("S", bound="DataclassInstance")  # a scope-wide stage's result: a dataclass, recorded as its JSON
T = TypeVar("T")

#: ``progress(stage, done, total)``: work units done so far in a stage (turns, or 1 for scope-wide ones).
Progress = Callable[[str, int, int], None]


class Stage(Protocol):
    """One stage of the night cycle: one module holds it, one line of
    :data:`mnemo.night.stage_registry.STAGES` puts it in the night."""

    @property
    def name(self) -> str:
        """How the run records it, ``--stages`` chooses it and the report shows it."""
        ...

    @property
    def report_fields(self) -> tuple[str, ...]:
        """The :class:`~mnemo.models.NightReport` attributes the stage fills (a test checks that
        every attribute is a stage's or the run's)."""
        ...

    async def run(self, night: NightRun) -> None:
        """Do the stage's work for the run and fill its part of ``night.report``."""
        ...

    async def plan(self, night: NightPlan) -> None:
        """Fill ``night.report`` with what the stage would do (a dry run: its writes are rolled back)."""
        ...

    def row(self, report: NightReport) -> str | None:
        """The stage's row of the report table: what it did, or with ``report.dry_run`` what it
        would do; None: no row."""
        ...


@dataclass(frozen=True, kw_only=True, slots=True)
class NightRun:
    """One run as its stages see it: what a resumed run already did, and the report being filled in."""

    rt: Runtime
    """The archive's runtime (store, settings, embeddings, LLM)."""
    scope: Scope
    """The scope the night consolidates."""
    run_id: uuid.UUID
    """The run's row in ``mnemo.night_runs``."""
    as_of: datetime
    """The run's time: a resumed run keeps the interrupted one's."""
    stages: tuple[str, ...]
    """The stages chosen for this run (``--stages``)."""
    done: list[str]
    """The scope-wide stages already marked in this run (by an earlier attempt)."""
    previous: dict[str, Any]
    """What they recorded."""
    progress: Progress | None
    """The caller's progress callback."""
    report: NightReport
    """The report the stages fill in (``report.turns``, the scope's turns up to ``as_of``, is read
    before the first stage: the per-turn stages' progress total)."""

    def tick(self, stage: str, total: int) -> Callable[[int], None]:
        """A progress callback for ``stage`` that adds up the work units done."""
        count = 0

        def step(n: int) -> None:
            nonlocal count
            count += n
            if self.progress is not None:
                self.progress(stage, count, total)

        return step

    async def timed(self, stage: str, coro: Awaitable[T]) -> T:
        """Await ``coro``, adding its seconds to ``stage``'s in the report."""
        t0 = time.perf_counter()
        result = await coro
        self.report.stage_seconds[stage] = self.report.stage_seconds.get(stage, 0.0) + time.perf_counter() - t0
        return result

    async def per_turn(self, stage: str, work: Callable[[], Awaitable[T]]) -> T | None:
        """A per-turn stage, timed; None when it was not chosen (it commits its own batches and marks)."""
        if stage not in self.stages:
            return None
        return await self.timed(stage, work())

    async def scope_wide(
        self,
        stage: str,
        kind: type[S],
        work: Callable[[psycopg.AsyncConnection], Awaitable[S]],
        *,
        cortex: bool = False,
    ) -> S:
        """A scope-wide stage: its work and its mark commit together, once per run; a resumed run
        that already did it gets what it recorded (read back into ``kind``), a stage not chosen
        ``kind()``. ``cortex``: the stage writes LanceDB too (see below)."""
        if stage in self.done:
            return restored(kind, self.previous.get(stage, {}))
        if stage not in self.stages:
            return kind()
        t0 = time.perf_counter()

        async def attempt() -> S:
            async with self.rt.store.transaction() as conn:
                if cortex:  # a backup copies the cortex only between such transactions
                    await backup_rows.share_cortex(conn)
                result = await work(conn)
                await run_rows.mark_stage(conn, self.scope.entity_id, self.run_id, stage, asdict(result))
            return result

        # A stage that only writes PostgreSQL runs again whole if it lost a deadlock to a recall that
        # locked the same memories; a cortex stage has written LanceDB too, so its error goes up (the
        # next run resumes it).
        result = await (attempt() if cortex else retry_conflicts(attempt))
        self.report.stage_seconds[stage] = time.perf_counter() - t0
        self.tick(stage, 1)(1)
        return result


@dataclass(frozen=True, kw_only=True, slots=True)
class NightPlan:
    """A dry run as its stages see it: one transaction that is always rolled back."""

    rt: Runtime
    """The archive's runtime."""
    conn: psycopg.AsyncConnection
    """The plan's connection, inside its rolled-back transaction."""
    scope: Scope
    """The scope the night would consolidate."""
    run_id: uuid.UUID | None
    """The unfinished run the night would resume, if any."""
    todo: tuple[str, ...]
    """The stages the night would run (chosen, and not done by an unfinished run)."""
    report: NightReport
    """The plan being filled in (``report.as_of`` is the night's time)."""


def restored(kind: type[S], recorded: Mapping[str, Any]) -> S:
    """A stage's result as a run recorded it (its JSON in ``night_runs.report``)."""
    return kind(**{f.name: recorded[f.name] for f in fields(kind) if f.name in recorded})


def count_of(count: int, noun: str, plural: str | None = None) -> str:
    """``1 block``, ``2 blocks``, ``3 memories``: a count for a report row."""
    return f"{count} {noun}" if count == 1 else f"{count} {plural or noun + 's'}"
