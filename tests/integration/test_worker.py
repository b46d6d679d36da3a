"""Background labor (issue 6, part 4): asynchronous ingestion through the ``queue`` chamber,
``mnemo worker`` (a real subprocess, SIGKILLed mid-job), re-embed jobs, queue depth, the night
schedule. All against the real embedded PostgreSQL."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest
from procrastinate.periodic import PeriodicDeferrer
from typer.testing import CliRunner

from mnemo import AsyncArchive, DatabaseError, RecallResult, Refusal, Scope, Settings
from mnemo.embed import Embeddings, load_embedder
from mnemo.interfaces.cli import app
from mnemo.interfaces.worker import NIGHT_PERIODIC_ID, STALLED_PERIODIC_ID, create_app, run_worker
from mnemo.models import to_jsonable
from mnemo.store import queue as queue_rows
from mnemo.store.pool import redact
from mnemo.write import ingest
from tests.conftest import snapshot

SCOPE = Scope("worker", "test")
MNEMO = str(Path(sys.executable).parent / "mnemo")  # the installed console script
runner = CliRunner()


def quiet_cron() -> str:
    """A daily schedule twelve hours away, so no worker in a test defers a night by chance
    (procrastinate defers a run missed by up to 10 minutes when a worker starts)."""
    return f"0 {(datetime.now(UTC).hour + 12) % 24} * * *"


def jobs(url: str, task: str | None = None) -> list[dict[str, object]]:
    """Queued jobs (of ``task``), without the workers' own periodic stalled-job checks."""
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            """SELECT id, task_name, status::text, args, worker_id, attempts FROM queue.procrastinate_jobs
               WHERE (%(t)s::text IS NULL AND task_name <> %(check)s) OR task_name = %(t)s ORDER BY id""",
            {"t": task, "check": queue_rows.RETRY_STALLED},
        ).fetchall()
    return [dict(zip(("id", "task", "status", "args", "worker_id", "attempts"), r, strict=True)) for r in rows]


def has_vector(url: str, item_id: object) -> bool:
    with psycopg.connect(url) as conn:
        return conn.execute("SELECT 1 FROM vectors.universal_384 WHERE item_id = %s", (item_id,)).fetchone() is not None


def wait_for(check: Callable[[], object], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.1)


@pytest.fixture
def async_settings(database_url: str) -> Settings:
    return Settings(database_url=database_url, ingest_mode="async", night_cron=quiet_cron())


@pytest.fixture
def worker_env(database_url: str, tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "MNEMO_DATABASE_URL": database_url,
        "MNEMO_HOME": str(tmp_path),
        "MNEMO_NIGHT_CRON": quiet_cron(),
    }


@contextlib.contextmanager
def worker_process(env: dict[str, str], *args: str) -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen(
        [MNEMO, "worker", "--heartbeat", "0.5", "--stalled-after", "2", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=30)


async def test_async_turn_is_stored_with_its_job_and_found_lexically(
    async_settings: Settings, embeddings: Embeddings, database_url: str
) -> None:
    async with await AsyncArchive.open(async_settings, embeddings=embeddings) as archive:
        await archive.remember(SCOPE, "Our garden fence is painted dark green")  # remember() stays synchronous
        turn = await archive.record_turn(SCOPE, "s1", "user", "I repaired the garden fence with new cedar boards")
        assert not has_vector(database_url, turn.id)
        [job] = jobs(database_url)
        assert job["task"] == queue_rows.EMBED_TURNS and job["status"] == "todo"
        assert job["args"] == {"entity_id": "worker", "namespace": "test", "turn_ids": [str(turn.id)]}
        status = await archive.status()
        assert status.queue == {"todo": 1, "doing": 0, "failed": 0}
        assert to_jsonable(status)["queue"]["todo"] == 1
        lone_scope = Scope("worker", "lone")
        lone = await archive.record_turn(lone_scope, "s1", "user", "A grey heron stood in the shallow pond")

        # Before the worker runs, the lexical retriever already finds the turn (without a similarity).
        found = await archive.recall(SCOPE, "cedar boards fence", read_only=True)
        assert isinstance(found, RecallResult)
        [pending] = [h for h in found.hits if h.id == turn.id]
        assert pending.lexical_rank is not None and pending.similarity is None and pending.vector_rank is None
        # Alone in its scope, it cannot pass the similarity threshold: a refusal that lists it as a candidate.
        alone = await archive.recall(lone_scope, "heron pond", read_only=True, threshold=-1.0)
        assert isinstance(alone, Refusal) and [c.id for c in alone.candidates] == [lone.id]

        await run_worker(async_settings, embeddings=embeddings, wait=False, install_signal_handlers=False)
        assert jobs(database_url) == []  # done (succeeded jobs are deleted)
        assert has_vector(database_url, turn.id) and has_vector(database_url, lone.id)
        assert (await archive.status()).queue == {"todo": 0, "doing": 0, "failed": 0}
        semantic = await archive.recall(SCOPE, "woodwork mending outdoors", k=3, read_only=True, threshold=0.0)
        assert isinstance(semantic, RecallResult)
        assert any(h.id == turn.id and h.vector_rank is not None for h in semantic.hits)
        # idempotent: running the job again for an embedded turn writes nothing
        assert await archive.maintenance.embed_turns(SCOPE, [turn.id]) == 0


async def test_a_failed_write_transaction_leaves_neither_turn_nor_job(
    async_settings: Settings, embeddings: Embeddings, database_url: str
) -> None:
    # The commit itself fails (a deferred constraint trigger on the jobs table), after the turn,
    # its postings and its job were all inserted: the rollback must take all of them.
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(
            """CREATE FUNCTION public.fail_at_commit() RETURNS trigger LANGUAGE plpgsql AS
               $$ BEGIN RAISE EXCEPTION 'simulated failure at commit'; END $$"""
        )
        conn.execute(
            """CREATE CONSTRAINT TRIGGER fail_at_commit AFTER INSERT ON queue.procrastinate_jobs
               DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION public.fail_at_commit()"""
        )
    async with await AsyncArchive.open(async_settings, embeddings=embeddings) as archive:
        await archive.access.create_scope(SCOPE)
        before = snapshot(database_url)
        with pytest.raises(DatabaseError, match="simulated failure at commit") as failed:
            await archive.record_turn(SCOPE, "s1", "user", "This turn must not survive")
        assert isinstance(failed.value.__cause__, psycopg.errors.RaiseException)  # converted, not raw
        assert snapshot(database_url) == before
        with psycopg.connect(database_url, autocommit=True) as conn:
            conn.execute("DROP TRIGGER fail_at_commit ON queue.procrastinate_jobs")
        turn = await archive.record_turn(SCOPE, "s1", "user", "This turn survives")
    after = snapshot(database_url)
    assert after["mnemo.turns"] == 1 and after["queue.procrastinate_jobs"] == 1
    assert jobs(database_url)[0]["args"]["turn_ids"] == [str(turn.id)]  # type: ignore[index]


async def test_async_import_queues_one_job_per_batch(
    async_settings: Settings, embeddings: Embeddings, database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ingest, "JOB_BATCH", 2)
    path = tmp_path / "chat.jsonl"
    lines = [json.dumps({"session": "s", "content": f"turn number {i} about kites"}) for i in range(5)]
    path.write_text("\n".join(lines) + "\n")
    async with await AsyncArchive.open(async_settings, embeddings=embeddings) as archive:
        report = await archive.import_file(SCOPE, path)
        assert report.turns == 5
        queued = jobs(database_url)
        assert [len(j["args"]["turn_ids"]) for j in queued] == [2, 2, 1]  # type: ignore[index]
        assert snapshot(database_url)["vectors.universal_384"] == 0
        await run_worker(async_settings, embeddings=embeddings, wait=False, install_signal_handlers=False)
        assert jobs(database_url) == [] and snapshot(database_url)["vectors.universal_384"] == 5
        assert (await archive.status()).pending_reembed == 0


@pytest.mark.slow
def test_worker_killed_mid_job_loses_nothing(
    async_settings: Settings, embeddings: Embeddings, database_url: str, worker_env: dict[str, str]
) -> None:
    started = time.monotonic()

    async def write() -> str:
        async with await AsyncArchive.open(async_settings, embeddings=embeddings) as archive:
            turn = await archive.record_turn(SCOPE, "s1", "user", "My sister Ines moved to Lisbon in March")
        return str(turn.id)

    turn_id = asyncio.run(write())
    # No worker has run: the turn is stored, unembedded, its job waiting.
    [job] = jobs(database_url)
    assert job["status"] == "todo" and not has_vector(database_url, turn_id)

    # Hold the vectors table so the worker's write blocks mid-job, then kill the worker there.
    holder = psycopg.connect(database_url)
    holder.execute("LOCK TABLE vectors.universal_384 IN SHARE MODE")
    try:
        with worker_process(worker_env) as proc:

            def blocked_mid_job() -> bool:
                if proc.poll() is not None:
                    raise AssertionError(f"worker exited early: {proc.communicate()[0]}")
                with psycopg.connect(database_url) as conn:
                    waiting = conn.execute(
                        """SELECT count(*) FROM pg_locks
                           WHERE relation = 'vectors.universal_384'::regclass AND NOT granted"""
                    ).fetchone()
                return jobs(database_url)[0]["status"] == "doing" and bool(waiting and waiting[0])

            wait_for(blocked_mid_job, 90, "the worker to block while writing the vector")
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
    finally:
        holder.rollback()
        holder.close()
    time.sleep(0.5)  # the dead worker's backend notices its client is gone and rolls back
    [job] = jobs(database_url)
    assert job["status"] == "doing" and not has_vector(database_url, turn_id)  # stalled, nothing half-written
    dead_worker = job["worker_id"]

    def heartbeat_stale() -> bool:
        with psycopg.connect(database_url) as conn:
            row = conn.execute(
                "SELECT now() - last_heartbeat > interval '2 seconds' FROM queue.procrastinate_workers WHERE id = %s",
                (dead_worker,),
            ).fetchone()
        return row is None or bool(row[0])

    wait_for(heartbeat_stale, 10, "the dead worker's heartbeat to go stale")

    # A new worker re-queues the stalled job at start-up and finishes it; SIGTERM then stops it cleanly.
    with worker_process(worker_env, "--verbose") as proc:
        wait_for(lambda: not jobs(database_url) or proc.poll() is not None, 90, "the restarted worker to finish")
        assert proc.poll() is None, proc.communicate()[0]
        proc.send_signal(signal.SIGTERM)
        output = proc.communicate(timeout=30)[0]
        assert proc.returncode == 0, output
    assert "re-queued job" in output and "worker stopped (re-queued 1 stalled jobs at start)" in output
    assert jobs(database_url) == [] and has_vector(database_url, turn_id)
    with psycopg.connect(database_url) as conn:
        assert conn.execute("SELECT count(*) FROM queue.procrastinate_workers").fetchone() == (0,)

    async def recall() -> RecallResult | Refusal:
        async with await AsyncArchive.open(async_settings, embeddings=embeddings) as archive:
            return await archive.recall(SCOPE, "relative relocating to Portugal", k=1, read_only=True)

    result = asyncio.run(recall())
    assert isinstance(result, RecallResult) and str(result[0].id) == turn_id and result[0].vector_rank == 1
    print(f"crash-recovery test: {time.monotonic() - started:.1f}s")


def test_cli_queue_depth_background_reembed_and_draining_worker(
    async_settings: Settings, embeddings: Embeddings, worker_env: dict[str, str]
) -> None:
    async def write() -> None:
        async with await AsyncArchive.open(async_settings, embeddings=embeddings) as archive:
            await archive.record_turn(SCOPE, "s1", "user", "The boiler service is booked for Thursday")

    asyncio.run(write())
    env = {k: v for k, v in worker_env.items() if k.startswith("MNEMO_")}

    def cli(*args: str) -> tuple[int, dict[str, object], str]:
        done = runner.invoke(app, list(args), env=env)
        return done.exit_code, json.loads(done.stdout) if "--json" in args else {}, done.stderr

    code, queued, _ = cli("reembed", "--background", "--json")
    assert code == 0 and queued["queued"] is True and isinstance(queued["job"], int)
    assert cli("reembed", "--background", "--json")[1] == {"job": None, "queued": False}  # one waiting at a time
    code, status, _ = cli("status", "--json")
    assert code == 0 and status["queue"] == {"todo": 2, "doing": 0, "failed": 0}
    assert status["pending_reembed"] == 1  # the turn has no vector yet
    code, _, err = cli("status")
    assert code == 0
    code, _, err = cli("worker", "--no-wait", "--queue", "ingest", "--queue", "maintenance")
    assert code == 0 and "worker stopped" in err
    code, status, _ = cli("status", "--json")
    assert status["queue"] == {"todo": 0, "doing": 0, "failed": 0} and status["pending_reembed"] == 0

    code, _, err = cli("worker", "--queue", "nightly")
    assert code == 1 and "unknown queues ['nightly']" in err
    code, _, err = cli("worker", "--heartbeat", "10", "--stalled-after", "5")
    assert code == 1 and "at least twice the heartbeat" in err


async def test_reembed_job_after_a_model_change(settings: Settings, embeddings: Embeddings, database_url: str) -> None:
    first = await AsyncArchive.open(settings, embeddings=embeddings)
    await first.remember(SCOPE, "Marie Curie won two Nobel prizes")
    await first.record_turn(SCOPE, "s", "user", "I repaired the garden fence with new cedar boards")
    await first.close()

    small = load_embedder(truncate_dim=128)  # the bundled MiniLM truncated: a real, different model slug
    async with await AsyncArchive.open(settings, embeddings=small) as second:
        assert second.pending_reembed == 2
        job = await second.maintenance.defer_reembed()
        assert job is not None and await second.maintenance.defer_reembed() is None
        [queued] = jobs(database_url)
        assert queued["task"] == queue_rows.REEMBED and queued["id"] == job
        await run_worker(
            settings.model_copy(update={"night_cron": quiet_cron()}),
            embeddings=small,
            queues=["maintenance"],
            wait=False,
            install_signal_handlers=False,
        )
        assert jobs(database_url) == []
        assert (await second.status()).pending_reembed == 0
        result = await second.recall(SCOPE, "physicist awards", k=1, threshold=0.0, read_only=True)
        assert isinstance(result, RecallResult) and result[0].content.startswith("Marie Curie")
        assert result[0].vector_rank == 1


async def test_night_schedule_is_registered_and_fans_out_per_scope(
    settings: Settings, embeddings: Embeddings, database_url: str
) -> None:
    procrastinate_app = create_app(
        settings.model_copy(update={"night_cron": "30 2 * * 1-5"}), database_url, stalled_after=20
    )
    schedules = {p.periodic_id: p for p in procrastinate_app.periodic_registry.periodic_tasks.values()}
    assert set(schedules) == {NIGHT_PERIODIC_ID, STALLED_PERIODIC_ID}
    periodic = schedules[NIGHT_PERIODIC_ID]
    stalled = schedules[STALLED_PERIODIC_ID]
    assert stalled.cron == "*/20 * * * * *" and stalled.task.name == queue_rows.RETRY_STALLED
    assert stalled.task.queue == queue_rows.MAINTENANCE
    assert periodic.cron == "30 2 * * 1-5" and periodic.periodic_id == NIGHT_PERIODIC_ID
    assert periodic.task.name == queue_rows.NIGHT_CYCLE and periodic.task.queue == queue_rows.NIGHT
    assert set(procrastinate_app.tasks) >= {
        queue_rows.EMBED_TURNS,
        queue_rows.REEMBED,
        queue_rows.NIGHT_CYCLE,
        queue_rows.NIGHT_SCOPE,
    }
    default = create_app(settings, database_url).periodic_registry.periodic_tasks.values()
    assert sorted(p.cron for p in default) == ["*/30 * * * * *", "0 3 * * *"]

    # The schedule's deferral, as a worker's periodic deferrer does it: once per tick, however many workers.
    tick = 1_700_000_000
    async with procrastinate_app.open_async():
        for _ in range(2):
            await PeriodicDeferrer(registry=procrastinate_app.periodic_registry).defer_jobs([(periodic, tick)])
    [night] = jobs(database_url)
    assert (
        night["task"] == queue_rows.NIGHT_CYCLE and night["status"] == "todo" and night["args"] == {"timestamp": tick}
    )

    async with await AsyncArchive.open(settings, embeddings=embeddings) as archive:
        for scope in (Scope("ana"), Scope("ana", "work"), Scope("ben")):
            await archive.record_turn(scope, "s", "user", f"a day in the life of {scope}")
        await archive.remember(Scope("cleo"), "memories only, no turns")  # still curated and decayed
        await archive.access.create_scope(Scope("dora"))  # nothing at all: no night
        assert await archive.maintenance.defer_nights() == 4
        assert await archive.maintenance.defer_nights() == 0  # each scope's night is already waiting
    scopes = [j["args"] for j in jobs(database_url, queue_rows.NIGHT_SCOPE)]
    assert scopes == [
        {"entity_id": "ana", "namespace": "default"},
        {"entity_id": "ana", "namespace": "work"},
        {"entity_id": "ben", "namespace": "default"},
        {"entity_id": "cleo", "namespace": "default"},
    ]
    await run_worker(
        settings.model_copy(update={"night_cron": quiet_cron()}),
        embeddings=embeddings,
        queues=["night"],
        wait=False,
        install_signal_handlers=False,
    )
    assert jobs(database_url) == []  # finished jobs are deleted; a failed one would stay
    with psycopg.connect(database_url) as conn:
        done = conn.execute(
            "SELECT entity_id, namespace FROM mnemo.night_runs WHERE finished_at IS NOT NULL ORDER BY 1, 2"
        ).fetchall()
    assert done == [("ana", "default"), ("ana", "work"), ("ben", "default"), ("cleo", "default")]


# --- what the worker reports (issue 12: "the worker reports what it did") ---------------------


def worker_lines(caplog: pytest.LogCaptureFixture, level: int = logging.INFO) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "mnemo.worker" and r.levelno >= level]


def block_count(url: str, scope: Scope) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT count(*) FROM mnemo.blocks WHERE entity_id = %s AND namespace = %s",
            (scope.entity_id, scope.namespace),
        ).fetchone()
    assert row is not None
    return int(row[0])


async def test_worker_reports_each_job_it_finishes(
    async_settings: Settings,
    embeddings: Embeddings,
    database_url: str,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="mnemo.worker")
    other = Scope("worker", "other")
    path = tmp_path / "chat.jsonl"
    lines = [
        {"session": "s", "role": "user", "content": "We planted three apple trees along the north wall"},
        {"session": "s", "role": "assistant", "content": "Apple trees need a sunny spot and some shelter"},
        {"session": "s", "role": "user", "content": "The north wall gets the afternoon sun"},
    ]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    async with await AsyncArchive.open(async_settings, embeddings=embeddings) as archive:
        await archive.record_turn(SCOPE, "s1", "user", "The boiler service is booked for Thursday")
        assert (await archive.import_file(other, path)).turns == 3  # one job for the three turns
        await run_worker(async_settings, embeddings=embeddings, wait=False, install_signal_handlers=False)

        banner, schedules = worker_lines(caplog)[0].getMessage(), worker_lines(caplog)[1:3]
        assert banner.startswith(f"worker on {redact(database_url)} (MNEMO_DATABASE_URL); ")
        assert "queues: ingest, maintenance, night; 1 job at once" in banner
        assert [r.getMessage().split(" at cron")[0] for r in schedules] == [
            "periodic: mnemo.night_cycle",
            "periodic: mnemo.retry_stalled",
        ]
        jobs_done = [r.getMessage() for r in worker_lines(caplog) if r.getMessage().startswith("job ")]
        assert len(jobs_done) == 2  # one line per job; an idle stalled-job check says nothing at INFO
        assert re.fullmatch(r"job \d+ mnemo\.embed_turns worker/test: embedded 1 turn in \d+\.\d\d s", jobs_done[0])
        assert re.fullmatch(r"job \d+ mnemo\.embed_turns worker/other: embedded 3 turns in \d+\.\d\d s", jobs_done[1])

        caplog.clear()
        assert await archive.maintenance.defer_nights() == 2
        await run_worker(
            async_settings, embeddings=embeddings, queues=["night"], wait=False, install_signal_handlers=False
        )
    nights = {
        r.getMessage().split(":")[0]: r.getMessage() for r in worker_lines(caplog) if "night_scope" in r.getMessage()
    }
    assert len(nights) == 2 and jobs(database_url) == []
    for scope, turns in ((SCOPE, "1 turn"), (other, "3 turns")):
        [line] = [v for k, v in nights.items() if k.endswith(f"mnemo.night_scope {scope}")]
        blocks = block_count(database_url, scope)
        assert re.search(rf"night ran: \d+ stages, {turns}, {blocks} blocks?, \d+ memor", line), line
    # the queue-only banner names the one queue, and the schedules it leaves to other workers
    banner = worker_lines(caplog)[0].getMessage()
    assert "queues: night;" in banner
    assert "run by a worker of queue maintenance, not this one" in worker_lines(caplog)[2].getMessage()


async def test_a_failing_job_logs_its_error(
    async_settings: Settings, embeddings: Embeddings, database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="mnemo.worker")
    archive = await AsyncArchive.open(async_settings, embeddings=embeddings)
    try:
        async with archive._rt.store.transaction() as conn:
            # a night for an entity id mnemo refuses (mnemo's own error), and a job with a broken argument
            bad_scope = {"entity_id": "bad entity", "namespace": "default"}
            await queue_rows.enqueue(conn, queue_rows.NIGHT, queue_rows.NIGHT_SCOPE, bad_scope)
            broken = {"entity_id": "worker", "namespace": "test", "turn_ids": ["not-a-uuid"]}
            await queue_rows.enqueue(conn, queue_rows.INGEST, queue_rows.EMBED_TURNS, broken)
    finally:
        await archive.close()
    await run_worker(async_settings, embeddings=embeddings, wait=False, install_signal_handlers=False)

    [night] = [r for r in worker_lines(caplog) if queue_rows.NIGHT_SCOPE in r.getMessage()]
    assert night.levelno == logging.ERROR and night.exc_info is None  # an expected error: no traceback
    assert "mnemo.night_scope bad entity/default: failed after " in night.getMessage()
    assert "invalid entity_id 'bad entity'" in night.getMessage()
    embed = [r for r in worker_lines(caplog) if queue_rows.EMBED_TURNS in r.getMessage()]
    assert embed and embed[0].levelno == logging.WARNING  # retried later (EMBED_RETRY)
    assert re.search(
        r"mnemo\.embed_turns worker/test: failed after \S+ s \(attempt 1, it runs again\)", embed[0].getMessage()
    )
    assert "ValueError: badly formed hexadecimal UUID string" in embed[0].getMessage()
    assert embed[0].exc_info is not None  # not mnemo's own error: the traceback helps
    statuses = {j["task"]: j["status"] for j in jobs(database_url)}
    assert statuses == {queue_rows.NIGHT_SCOPE: "failed", queue_rows.EMBED_TURNS: "todo"}


def test_cli_worker_logs_its_start_and_each_job_on_stderr(
    async_settings: Settings, embeddings: Embeddings, worker_env: dict[str, str], database_url: str
) -> None:
    async def write(text: str) -> None:
        async with await AsyncArchive.open(async_settings, embeddings=embeddings) as archive:
            await archive.record_turn(SCOPE, "s1", "user", text)

    env = {k: v for k, v in worker_env.items() if k.startswith("MNEMO_")}
    asyncio.run(write("The boiler service is booked for Thursday"))
    done = runner.invoke(app, ["worker", "--no-wait", "-q", "ingest"], env=env)
    assert done.exit_code == 0 and done.stdout == ""
    err = done.stderr
    assert f"INFO mnemo.worker: worker on {redact(database_url)}" in err
    assert "periodic: mnemo.night_cycle at cron" in err
    assert "mnemo.embed_turns worker/test: embedded 1 turn in " in err
    assert "ended with status" not in err and "Starting job" not in err  # procrastinate's own job lines
    assert err.rstrip().endswith("worker stopped")

    asyncio.run(write("The plumber comes on Friday"))
    quiet = runner.invoke(app, ["worker", "--no-wait", "--quiet"], env=env)
    assert quiet.exit_code == 0 and quiet.stderr.strip() == "worker stopped" and jobs(database_url) == []
    verbose = runner.invoke(app, ["worker", "--no-wait", "--verbose"], env=env)
    assert verbose.exit_code == 0 and "procrastinate" in verbose.stderr  # its start/stop lines too

    for args in (["--quiet", "--log-level", "info"], ["--log-level", "loud"], ["--quiet", "-v"]):
        refused = runner.invoke(app, ["worker", "--no-wait", *args], env=env)
        assert refused.exit_code == 2 and ("--log-level" in refused.stderr or "--quiet" in refused.stderr), args
