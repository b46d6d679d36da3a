"""Background work: procrastinate workers on mnemo's own database (``mnemo worker``).

Seeds: archive-adr §0 ("Asynchronous Ingestion"), §2 (the ``queue`` chamber: background
labor is transactional with state changes), §4 (the learning ritual runs in the
background), §8 (re-embed after a model change); memory-architecture's night cycle
(run on a schedule); DESIGN §7 (workers scale out by running more of them against
the same database).

Tasks (names and queues in :mod:`mnemo.store.queue`):

- ``mnemo.embed_turns`` (queue ``ingest``): embeds turns written with
  ``ingest_mode = "async"`` (:mod:`mnemo.write.ingest`); idempotent, retried on failure.
- ``mnemo.reembed`` (queue ``maintenance``): :meth:`AsyncArchive.reembed`, queued by
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
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Sequence
from typing import Any

import procrastinate
import psycopg
from procrastinate import JobContext, exceptions

from mnemo._runtime import Runtime
from mnemo.archive import AsyncArchive
from mnemo.config import Settings, load_settings
from mnemo.embed import Embeddings
from mnemo.errors import ConfigurationError, WorkerError
from mnemo.models import Scope
from mnemo.store import queue as queue_rows
from mnemo.write import ingest

__all__ = ["create_app", "defer_night", "defer_night_scope", "retry_stalled", "run_worker"]

_log = logging.getLogger("mnemo.worker")

NIGHT_PERIODIC_ID = "night"
STALLED_PERIODIC_ID = "stalled"
EMBED_RETRY = procrastinate.RetryStrategy(max_attempts=5, exponential_wait=2)


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
    app.task(name=queue_rows.EMBED_TURNS, queue=queue_rows.INGEST, pass_context=True, retry=EMBED_RETRY)(embed_turns)
    app.task(name=queue_rows.REEMBED, queue=queue_rows.MAINTENANCE, pass_context=True)(reembed)
    app.task(name=queue_rows.NIGHT_SCOPE, queue=queue_rows.NIGHT, pass_context=True)(night_scope)
    night = app.task(
        name=queue_rows.NIGHT_CYCLE, queue=queue_rows.NIGHT, pass_context=True, queueing_lock=queue_rows.NIGHT_CYCLE
    )(night_cycle)
    app.periodic(cron=settings.night_cron, periodic_id=NIGHT_PERIODIC_ID)(night)
    stalled = app.task(
        name=queue_rows.RETRY_STALLED,
        queue=queue_rows.MAINTENANCE,
        pass_context=True,
        queueing_lock=queue_rows.RETRY_STALLED,
    )(retry_stalled_jobs)
    app.periodic(cron=every(stalled_after), periodic_id=STALLED_PERIODIC_ID)(stalled)
    return app


def every(seconds: float) -> str:
    """A cron schedule (procrastinate's six-field form under a minute) firing about every ``seconds``."""
    if seconds < 60:
        return f"*/{max(1, int(seconds))} * * * * *"
    return f"*/{max(1, min(59, int(seconds // 60)))} * * * *"


# --- tasks ---------------------------------------------------------------------------------


def _archive(context: JobContext) -> AsyncArchive:
    archive = context.additional_context.get("archive")
    if not isinstance(archive, AsyncArchive):
        raise WorkerError(
            "mnemo tasks run inside `mnemo worker` (mnemo.interfaces.worker.run_worker), which opens the archive"
        )
    return archive


async def embed_turns(context: JobContext, entity_id: str, namespace: str, turn_ids: list[str]) -> int:
    """Embed turns stored by asynchronous ingestion; how many needed it."""
    rt = _archive(context).runtime
    return await ingest.embed_turns(rt, Scope(entity_id, namespace), [uuid.UUID(i) for i in turn_ids])


async def reembed(context: JobContext) -> int:
    """Embed every item lacking a vector of the active model (after a model change)."""
    return await _archive(context).reembed()


async def night_cycle(context: JobContext, timestamp: int) -> int:
    """The scheduled night: queue one ``night_scope`` job per scope with turns or memories; how many."""
    queued = await defer_night(_archive(context).runtime)
    _log.info("night cycle %s: queued %d scopes", timestamp, queued)
    return queued


async def defer_night(rt: Runtime) -> int:
    """Queue the night cycle of every scope with turns or memories (skipping those whose job still waits);
    how many were queued."""
    queued = 0
    async with rt.store.transaction() as conn:
        for entity_id, namespace in await queue_rows.night_scopes(conn):
            if await defer_night_scope(conn, Scope(entity_id, namespace)) is not None:
                queued += 1
    return queued


async def defer_night_scope(conn: psycopg.AsyncConnection, scope: Scope) -> int | None:
    """Queue the night cycle of one scope; None when one is already waiting for it."""
    lock = "night " + json.dumps([scope.entity_id, scope.namespace])
    args = {"entity_id": scope.entity_id, "namespace": scope.namespace}
    return await queue_rows.enqueue(conn, queue_rows.NIGHT, queue_rows.NIGHT_SCOPE, args, lock=lock, queueing_lock=lock)


async def night_scope(context: JobContext, entity_id: str, namespace: str) -> str:
    """Run the night cycle of one scope."""
    report = await _archive(context).night_cycle(Scope(entity_id, namespace))
    return str(report)


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


async def retry_stalled_jobs(context: JobContext, timestamp: int) -> int:
    """The periodic check: re-queue the jobs of workers silent for ``stalled_after`` seconds."""
    stalled_after = context.additional_context.get("stalled_after", 30.0)
    return await retry_stalled(context.app, float(stalled_after))


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
        unknown = sorted(set(queues) - set(queue_rows.QUEUES))
        if unknown or not queues:
            raise ConfigurationError(f"unknown queues {unknown}; choose from {', '.join(queue_rows.QUEUES)}")
    if not 1 <= concurrency <= 64:
        raise ConfigurationError("concurrency must be between 1 and 64")
    if not 0 < heartbeat * 2 <= stalled_after:
        raise ConfigurationError("stalled_after must be at least twice the heartbeat (and both positive)")
    settings = settings or load_settings()
    archive = await AsyncArchive.open(
        settings, embeddings=embeddings, pool_max_size=max(settings.pool_max_size, concurrency + 1)
    )
    try:
        app = create_app(
            archive.settings, archive.runtime.store.url, pool_max_size=concurrency + 3, stalled_after=stalled_after
        )
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
            }
            await app.run_worker_async(**options)
    finally:
        await archive.close()
    return recovered
