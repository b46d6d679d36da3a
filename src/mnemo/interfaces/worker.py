"""Background work: procrastinate workers on mnemo's own database (``mnemo worker``).

Seeds: archive-adr §0 ("Asynchronous Ingestion"), §2 (the ``queue`` chamber: background
labor is transactional with state changes), §4 (the learning ritual runs in the
background), §8 (re-embed after a model change); memory-architecture's night cycle
(run on a schedule); DESIGN §7 (workers scale out by running more of them against
the same database).

Tasks (names and queues in :mod:`mnemo.store.queue`):

- ``mnemo.embed_turns`` (queue ``ingest``): embeds turns written with
  ``ingest_mode = "async"`` (:mod:`mnemo.write.ingest`); idempotent, retried on failure.
- ``mnemo.reembed`` (queue ``maintenance``): :meth:`AsyncArchive.maintenance.reembed`, queued by
  ``mnemo reembed --background``; one at a time (lock), at most one waiting.
- ``mnemo.night_cycle`` (queue ``night``): periodic, cron ``Settings.night_cron``
  (UTC, default 03:00); queues one ``mnemo.night_scope`` job per scope with turns or memories.
- ``mnemo.retry_stalled`` (queue ``maintenance``): periodic, every ``stalled_after``
  seconds; re-queues the jobs of workers whose heartbeat stopped.
- ``mnemo.night_scope(entity_id, namespace)`` (queue ``night``):
  :meth:`AsyncArchive.night_cycle` for one scope; a lock and a queueing lock per
  scope, so two runs for one scope never overlap and never pile up.

**Where procrastinate's schema comes from.** Its tables, types and functions are a
versioned mnemo migration (``store/migrations/0007_queue.sql``: procrastinate's own
``schema.sql`` for the pinned version, created in the ``queue`` schema), not a
separate "apply procrastinate's schema" step. A fresh database gets it with every
other chamber, in the same locked, recorded, all-or-nothing migration run; the
canonical-schema test covers it; and there is a single answer to "which schema is
this database on". procrastinate's own applier is not idempotent (it creates
types and tables unconditionally) and records nothing, so it could not run at
every start-up anyway. The price: procrastinate is pinned to that version in
``pyproject.toml``, and an upgrade ships a new migration with procrastinate's
``sql/migrations`` files for the versions in between (``tests/unit/test_worker.py``
fails if the installed package's schema differs from the frozen copy).

procrastinate names its objects unqualified, so its connections (this module)
use ``search_path=queue``; mnemo's write path enqueues through
``queue.mnemo_defer_job``, which pins the search_path itself.

**Crash safety.** A job is a row committed with the write that caused it. A
worker that dies mid-job leaves the job ``doing`` under a worker row whose
heartbeat stops; every ``mnemo worker`` re-queues such stalled jobs when it
starts, and the periodic task ``mnemo.retry_stalled`` (queue ``maintenance``,
every ``stalled_after`` seconds, procrastinate's own periodic scheduler, one
run per tick however many workers) does it while workers run, so the job runs
again (every task is idempotent). A worker started with ``--queue`` lists
without ``maintenance`` leaves that check to the workers that have it.

**What a worker reports** (issue 12, "the worker reports what it did"). At start, one
line names the database (password redacted, :func:`mnemo.store.pool.redact`), the
queues and the periodic schedules (:func:`startup_lines`). Every task returns a
:class:`JobSummary` built from what the archive call gave back, and the worker
middleware :func:`report_job` logs one line per finished job on ``mnemo.worker``
(INFO): job id, task, scope, the summary and the duration, e.g. ``job 7
mnemo.embed_turns ana/work: embedded 12 turns in 0.41 s``. A failed job logs its error
message instead: WARNING when it will be retried, ERROR when it stays failed; the
traceback only for errors that are not mnemo's own (a :class:`~mnemo.errors.MnemoError`
is an expected refusal, its message says it all). The periodic stalled-job check
logs at DEBUG when it found nothing, so an idle worker stays quiet.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import procrastinate
import psycopg
from procrastinate import JobContext, exceptions
from procrastinate.worker import Worker

from mnemo.archive import AsyncArchive
from mnemo.config import Settings, load_settings
from mnemo.embed import Embeddings
from mnemo.errors import ConfigurationError, MnemoError, WorkerError
from mnemo.models import NightReport, Scope

__all__ = [
    "JobSummary",
    "create_app",
    "report_job",
    "retry_stalled",
    "run_worker",
    "startup_lines",
]

_log = logging.getLogger("mnemo.worker")

NIGHT_PERIODIC_ID = "night"
STALLED_PERIODIC_ID = "stalled"
EMBED_RETRY = procrastinate.RetryStrategy(max_attempts=5, exponential_wait=2)
JOBS = AsyncArchive.maintenance.JOBS


def _procrastinate_conninfo(url: str) -> str:
    """``url`` with ``search_path=queue`` added to any server options it already has."""
    options = psycopg.conninfo.conninfo_to_dict(url).get("options") or ""
    return psycopg.conninfo.make_conninfo(url, options=f"{options} -c search_path=queue".strip())


def create_app(
    settings: Settings, database_url: str, *, pool_max_size: int = 4, stalled_after: float = 30.0
) -> procrastinate.App:
    """A procrastinate app bound to mnemo's database (``database_url``: the resolved URL, embedded
    or ``MNEMO_DATABASE_URL``) with mnemo's tasks and the night schedule of ``settings``.

    Tasks find the open archive in the job context (``run_worker`` provides it).
    """
    connector = procrastinate.PsycopgConnector(
        conninfo=_procrastinate_conninfo(database_url), min_size=1, max_size=pool_max_size, name="mnemo-queue"
    )
    app = procrastinate.App(connector=connector)
    app.task(name=JOBS.embed_turns, queue=JOBS.ingest, pass_context=True, retry=EMBED_RETRY)(embed_turns)
    app.task(name=JOBS.reembed, queue=JOBS.maintenance, pass_context=True)(reembed)
    app.task(name=JOBS.night_scope, queue=JOBS.night, pass_context=True)(night_scope)
    night = app.task(name=JOBS.night_cycle, queue=JOBS.night, pass_context=True, queueing_lock=JOBS.night_cycle)(
        night_cycle
    )
    app.periodic(cron=settings.night_cron, periodic_id=NIGHT_PERIODIC_ID)(night)
    stalled = app.task(
        name=JOBS.retry_stalled,
        queue=JOBS.maintenance,
        pass_context=True,
        queueing_lock=JOBS.retry_stalled,
    )(retry_stalled_jobs)
    app.periodic(cron=every(stalled_after), periodic_id=STALLED_PERIODIC_ID)(stalled)
    return app


def every(seconds: float) -> str:
    """A cron schedule (procrastinate's six-field form under a minute) firing about every ``seconds``."""
    if seconds < 60:
        return f"*/{max(1, int(seconds))} * * * * *"
    return f"*/{max(1, min(59, int(seconds // 60)))} * * * *"


# --- tasks ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class JobSummary:
    """What one job did, in words (``embedded 12 turns``): a task's return value, which
    :func:`report_job` logs. ``quiet``: nothing worth an INFO line happened (logged at DEBUG)."""

    text: str
    quiet: bool = False

    def __str__(self) -> str:
        return self.text


def _archive(context: JobContext) -> AsyncArchive:
    archive = context.additional_context.get("archive")
    if not isinstance(archive, AsyncArchive):
        raise WorkerError(
            "mnemo tasks run inside `mnemo worker` (mnemo.interfaces.worker.run_worker), which opens the archive"
        )
    return archive


def _plural(n: int, word: str, words: str | None = None) -> str:
    return f"{n} {word if n == 1 else (words or word + 's')}"


async def embed_turns(context: JobContext, entity_id: str, namespace: str, turn_ids: list[str]) -> JobSummary:
    """Embed turns stored by asynchronous ingestion (those still lacking a vector)."""
    done = await _archive(context).maintenance.embed_turns(
        Scope(entity_id, namespace), [uuid.UUID(i) for i in turn_ids]
    )
    skipped = len(turn_ids) - done
    return JobSummary(
        f"embedded {_plural(done, 'turn')}" + (f" ({skipped} already embedded or forgotten)" if skipped else "")
    )


async def reembed(context: JobContext) -> JobSummary:
    """Embed every item lacking a vector of the active model (after a model change)."""
    archive = _archive(context)
    done = await archive.maintenance.reembed()
    return JobSummary(f"embedded {_plural(done, 'item')} with {archive.embeddings.slug}")


async def night_cycle(context: JobContext, timestamp: int) -> JobSummary:
    """The scheduled night: queue one ``night_scope`` job per scope with turns or memories."""
    queued = await _archive(context).maintenance.defer_nights()
    return JobSummary(f"queued the night of {_plural(queued, 'scope')}")


async def night_scope(context: JobContext, entity_id: str, namespace: str) -> JobSummary:
    """Run the night cycle of one scope."""
    report = await _archive(context).night_cycle(Scope(entity_id, namespace))
    return JobSummary(night_summary(report))


def night_summary(report: NightReport) -> str:
    """One line for a night's report: the stages that ran and what they made and removed."""
    ran = [s for s in report.stage_seconds if s not in report.skipped]
    made = report.facts_new + report.insights + report.narratives
    text = (
        f"night ran: {_plural(len(ran), 'stage')}, {_plural(report.turns, 'turn')}, "
        f"{_plural(report.blocks, 'block')}, {_plural(made, 'memory', 'memories')} "
        f"({report.facts_new} facts, {report.insights} insights, {report.narratives} narratives), "
        f"{report.turns_removed} raw turns removed"
    )
    return text + (" (resumed an unfinished run)" if report.resumed else "")


# --- reports -------------------------------------------------------------------------------


def _job_scope(kwargs: dict[str, Any]) -> str:
    """The scope a job works on, as given (a job with bad arguments is still named), or ``all scopes``."""
    if "entity_id" in kwargs:
        return f"{kwargs['entity_id']}/{kwargs.get('namespace', 'default')}"
    return "all scopes"


async def report_job(call_next: Callable[[], Awaitable[Any]], context: JobContext, worker: Worker) -> Any:
    """procrastinate worker middleware: one ``mnemo.worker`` log line per finished job (see the
    module's "What a worker reports"). The job's outcome is procrastinate's as before: an error
    is logged here and raised on."""
    job = context.job
    where = f"job {job.id} {job.task_name} {_job_scope(job.task_kwargs)}"
    started = time.perf_counter()
    try:
        result = await call_next()
    except asyncio.CancelledError:  # aborted (procrastinate's abort, or a stop that ran out of time)
        _log.warning("%s: interrupted after %.2f s", where, time.perf_counter() - started)
        raise
    except Exception as exc:
        _log_failure(context, where, exc, time.perf_counter() - started)
        raise
    seconds = time.perf_counter() - started
    quiet = isinstance(result, JobSummary) and result.quiet
    _log.log(logging.DEBUG if quiet else logging.INFO, "%s: %s in %.2f s", where, result, seconds)
    return result


def _log_failure(context: JobContext, where: str, exc: Exception, seconds: float) -> None:
    """WARNING when the job will run again, ERROR when it stays failed; a traceback only for an
    error that is not mnemo's own."""
    task = context.app.tasks.get(context.job.task_name) if context.app else None
    retry = task is not None and task.get_retry_exception(exception=exc, job=context.job) is not None
    expected = isinstance(exc, MnemoError)
    message = str(exc) if expected else f"{type(exc).__name__}: {exc}"
    again = f" (attempt {context.job.attempts + 1}, it runs again)" if retry else ""
    _log.log(
        logging.WARNING if retry else logging.ERROR,
        "%s: failed after %.2f s%s: %s",
        where,
        seconds,
        again,
        message,
        exc_info=None if expected else exc,
    )


def startup_lines(
    app: procrastinate.App, url: str, *, embedded: bool, queues: Sequence[str] | None, concurrency: int = 1
) -> list[str]:
    """What a starting worker says: the database it uses (password never shown), its queues, and
    the periodic schedules it defers (every worker defers them; a worker of their queue runs them)."""
    mine = list(queues) if queues else list(JOBS.queues)
    source = "embedded PostgreSQL" if embedded else "MNEMO_DATABASE_URL"
    shown = AsyncArchive.maintenance.redact_url(url)
    lines = [f"worker on {shown} ({source}); queues: {', '.join(mine)}; {_plural(concurrency, 'job')} at once"]
    for periodic in sorted(app.periodic_registry.periodic_tasks.values(), key=lambda p: p.task.name):
        runs = "" if periodic.task.queue in mine else f"; run by a worker of queue {periodic.task.queue}, not this one"
        lines.append(
            f"periodic: {periodic.task.name} at cron '{periodic.cron}' (UTC) into queue {periodic.task.queue}{runs}"
        )
    return lines


# --- the worker ------------------------------------------------------------------------------


async def retry_stalled(app: procrastinate.App, stalled_after: float) -> int:
    """Put back in the queue the jobs of workers silent for ``stalled_after`` seconds (crashed or
    killed mid-job); how many."""
    retried = 0
    for job in await app.job_manager.get_stalled_jobs(seconds_since_heartbeat=stalled_after):
        try:
            await app.job_manager.retry_job(job)
        except exceptions.ConnectorException:  # another worker got there first, or it just finished
            continue
        retried += 1
        _log.warning("re-queued job %s (%s) of a worker that stopped without finishing it", job.id, job.task_name)
    return retried


async def retry_stalled_jobs(context: JobContext, timestamp: int) -> JobSummary:
    """The periodic check: re-queue the jobs of workers silent for ``stalled_after`` seconds."""
    stalled_after = float(context.additional_context.get("stalled_after", 30.0))
    retried = await retry_stalled(context.app, stalled_after)
    return JobSummary(f"re-queued {_plural(retried, 'stalled job')}", quiet=retried == 0)


async def run_worker(
    settings: Settings | None = None,
    *,
    queues: Sequence[str] | None = None,
    concurrency: int = 1,
    wait: bool = True,
    heartbeat: float = 10.0,
    stalled_after: float = 30.0,
    embeddings: Embeddings | None = None,
    install_signal_handlers: bool = True,
    listen_notify: bool = True,
) -> int:
    """Run a worker until stopped (SIGINT/SIGTERM: finish the running jobs, then stop), or with
    ``wait=False`` until the queues are empty. Returns how many stalled jobs it re-queued at start.

    ``queues``: some of ``ingest``, ``maintenance``, ``night`` (default all). ``heartbeat``: seconds
    between liveness updates; a worker silent for ``stalled_after`` seconds is presumed dead and its
    jobs run again. Start more workers (here or on other machines) to scale out.
    """
    if queues is not None:
        unknown = sorted(set(queues) - set(JOBS.queues))
        if unknown or not queues:
            raise ConfigurationError(f"unknown queues {unknown}; choose from {', '.join(JOBS.queues)}")
    if not 1 <= concurrency <= 64:
        raise ConfigurationError("concurrency must be between 1 and 64")
    if not 0 < heartbeat * 2 <= stalled_after:
        raise ConfigurationError("stalled_after must be at least twice the heartbeat (and both positive)")
    settings = settings or load_settings()
    archive = await AsyncArchive.open(
        settings, embeddings=embeddings, pool_max_size=max(settings.pool_max_size, concurrency + 1)
    )
    try:
        db = archive.inspect.database
        app = create_app(archive.settings, db.url, pool_max_size=concurrency + 3, stalled_after=stalled_after)
        for line in startup_lines(app, db.url, embedded=db.embedded, queues=queues, concurrency=concurrency):
            _log.info("%s", line)
        async with app.open_async():
            recovered = await retry_stalled(app, stalled_after)
            options: dict[str, Any] = {
                "queues": list(queues) if queues else None,
                "concurrency": concurrency,
                "wait": wait,
                "update_heartbeat_interval": heartbeat,
                "stalled_worker_timeout": stalled_after,
                "delete_jobs": "successful",  # failed jobs stay for inspection (`mnemo status`)
                "additional_context": {"archive": archive, "stalled_after": stalled_after},
                "install_signal_handlers": install_signal_handlers,
                "listen_notify": listen_notify,
                "worker_middleware": [report_job],
            }
            await app.run_worker_async(**options)
    finally:
        await archive.close()
    return recovered
