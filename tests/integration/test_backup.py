"""Backup and restore (issue 16 item 1) on real PostgreSQL and a real LanceDB cortex: a busy
archive round-trips to identical rows, bit-identical vectors and the same cortex tables; a backup
taken while writes go on is one consistent snapshot; a damaged file is refused; a non-empty
target is refused unless forced; a restore killed half-way leaves the target empty and a re-run
succeeds."""

from __future__ import annotations

import asyncio
import io
import json
import os
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import lancedb
import numpy as np
import psycopg
import pytest
from pgvector.psycopg import register_vector

from mnemo import AsyncArchive, BackupError, InvalidInputError, Scope, Settings
from mnemo._backup import MANIFEST
from mnemo.embed import Embeddings
from mnemo.store import backup as backup_rows
from tests.conftest import snapshot
from tests.integration.test_cortex import QUESTION, a_week_of, cortex_dir

ME = Scope("alice", "history")
NOTES = [
    "Maya is allergic to peanuts and carries an epipen.",
    "The staging cluster runs PostgreSQL 18 with pgvector 0.8.",
    "Lena visits in March and eats no meat.",
]
SCHEMAS = ("mnemo", "vectors", "traces", "queue")
MNEMO = str(Path(sys.executable).parent / "mnemo")


async def busy(archive: AsyncArchive) -> None:
    """Turns, blocks in the cortex, facts, memories, tokens, a grant, traces and a queued job."""
    _, migrated = await a_week_of(archive, ME)
    assert migrated > 0
    for note in NOTES:
        await archive.remember(ME, note)
    await archive.record_turn(ME, "today", "user", "My sister Lena moved to Porto last spring.")
    await archive.create_token("alice", label="laptop")
    await archive.grant(ME, "bob")
    await archive.recall(ME, QUESTION)
    assert await archive.defer_reembed() is not None


def partials(directory: Path) -> list[Path]:
    return list(directory.glob("*.partial"))


def rows_of(url: str, skip: tuple[str, ...] = ("mnemo.cortex",)) -> dict[str, list[str]]:
    """Every row of every table in mnemo's chambers, as text, sorted."""
    with psycopg.connect(url) as conn:
        tables = conn.execute(
            "SELECT schemaname, tablename FROM pg_tables WHERE schemaname = ANY(%s) ORDER BY 1, 2", (list(SCHEMAS),)
        ).fetchall()
        return {
            f"{s}.{t}": [r[0] for r in conn.execute(f'SELECT x::text FROM "{s}"."{t}" x ORDER BY 1').fetchall()]  # noqa: S608
            for s, t in tables
            if f"{s}.{t}" not in skip
        }


def vectors_of(url: str) -> dict[str, bytes]:
    """Every stored vector's exact bytes (halfvec as float16), and every token-vector blob."""
    with psycopg.connect(url) as conn:
        register_vector(conn)
        found: dict[str, bytes] = {}
        for (table,) in conn.execute("SELECT table_name FROM vectors.spaces").fetchall():
            for item, vec in conn.execute(f'SELECT item_id, embedding FROM vectors."{table}"').fetchall():  # noqa: S608
                found[f"{table}/{item}"] = np.asarray(vec.to_numpy(), dtype=np.float16).tobytes()
        for item, slug, blob in conn.execute("SELECT item_id, slug, vectors FROM mnemo.token_vectors").fetchall():
            found[f"tokens/{item}/{slug}"] = bytes(blob)
        return found


def lance_tables(directory: Path) -> dict[str, list[dict[str, object]]]:
    db = lancedb.connect(str(directory))
    listed = db.list_tables()
    out = {}
    for name in getattr(listed, "tables", listed):
        rows = db.open_table(name).to_arrow().to_pylist()
        out[name] = sorted(rows, key=lambda r: str(r["id"]))
    return out


def cortex_id(url: str) -> str:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT id FROM mnemo.cortex").fetchone()
        assert row is not None
        return str(row[0])


async def test_a_busy_archive_round_trips_to_identical_rows_vectors_and_cortex(
    archive: AsyncArchive, database_url: str, empty_database_url: str, embeddings: Embeddings, tmp_path: Path
) -> None:
    await busy(archive)
    file = tmp_path / "mind.backup"
    manifest = await archive.backup(file)
    assert file.is_file() and not partials(tmp_path)
    assert manifest.cortex_rows and all(manifest.cortex_rows.values())
    assert manifest.active_slug == str(embeddings.slug)
    assert manifest.counts["mnemo.memories"] == snapshot(database_url)["mnemo.memories"]
    for table in (
        "mnemo.turns",
        "mnemo.blocks",
        "mnemo.block_lines",
        "mnemo.facts",
        "mnemo.tokens",
        "mnemo.grants",
        "mnemo.token_vectors",
        "traces.retrievals",
        "traces.weight_changes",
        "queue.procrastinate_jobs",
    ):
        assert manifest.counts[table] > 0, f"{table} should hold rows in a busy archive"  # fmt: skip
    assert AsyncArchive.verify_backup(file) == manifest

    target = Settings(database_url=empty_database_url)
    restored = await AsyncArchive.restore(file, target)
    assert restored == manifest
    assert rows_of(empty_database_url) == rows_of(database_url)
    assert vectors_of(empty_database_url) == vectors_of(database_url)
    # the copy has its own cortex directory, holding the same tables at the same versions
    assert cortex_id(empty_database_url) != cortex_id(database_url)
    copy = await AsyncArchive.open(target, embeddings=embeddings)
    try:
        original = cortex_dir(archive)
        assert lance_tables(Path(target.home) / "cortex" / cortex_id(empty_database_url)) == lance_tables(original)
        first, second = (
            await archive.recall(ME, QUESTION, read_only=True),
            await copy.recall(ME, QUESTION, read_only=True),
        )
        assert [h.id for h in first.hits] == [h.id for h in second.hits] and first.hits  # type: ignore[union-attr]
        assert any(h.tier == "cortex" for h in second.hits)  # type: ignore[union-attr]
    finally:
        await copy.close()


async def test_a_backup_taken_while_writes_go_on_is_one_consistent_snapshot(
    archive: AsyncArchive, empty_database_url: str, tmp_path: Path
) -> None:
    await archive.remember(ME, NOTES[0])
    stop = asyncio.Event()
    written: list[str] = []

    async def writer() -> None:
        n = 0
        while not stop.is_set():
            n += 1
            written.append(str(await archive.remember(ME, f"note number {n} about the weather in Lisbon")))

    task = asyncio.create_task(writer())
    await asyncio.sleep(0.5)
    manifest = await archive.backup(tmp_path / "live.backup")
    await asyncio.sleep(0.3)
    stop.set()
    await task
    await AsyncArchive.restore(tmp_path / "live.backup", Settings(database_url=empty_database_url))
    restored = rows_of(empty_database_url)
    assert 0 < manifest.counts["mnemo.memories"] < len(written) + 1  # writes went on before and after
    # every memory in the snapshot came whole: its vector, its postings, its token embeddings
    with psycopg.connect(empty_database_url) as conn:
        orphans = conn.execute(
            """SELECT count(*) FROM mnemo.memories m
               WHERE NOT EXISTS (SELECT 1 FROM vectors.universal_384 v WHERE v.item_id = m.id)
                  OR NOT EXISTS (SELECT 1 FROM mnemo.postings p WHERE p.item_id = m.id)"""
        ).fetchone()
        assert orphans == (0,)
    assert len(restored["mnemo.memories"]) == manifest.counts["mnemo.memories"]


async def test_a_backup_waits_for_a_cortex_writer_to_commit_and_then_sees_its_rows(
    archive: AsyncArchive, database_url: str, tmp_path: Path
) -> None:
    await archive.remember(ME, NOTES[0])
    async with await psycopg.AsyncConnection.connect(database_url) as writer:
        await backup_rows.share_cortex(writer)  # as the night's migrate stage does, mid-transaction
        await writer.execute("INSERT INTO mnemo.meta (key, value) VALUES ('written-with-the-cortex', '1')")
        backup = asyncio.create_task(archive.backup(tmp_path / "waited.backup"))
        await asyncio.sleep(1.0)
        assert not backup.done()  # no snapshot while a cortex write is half done
        await writer.commit()
        manifest = await backup
    assert manifest.counts["mnemo.meta"] == snapshot(database_url)["mnemo.meta"]
    with psycopg.connect(database_url) as conn:
        assert conn.execute("SELECT count(*) FROM mnemo.meta WHERE key = 'written-with-the-cortex'").fetchone() == (1,)


async def test_damaged_or_foreign_files_are_refused_before_anything_is_written(
    archive: AsyncArchive, empty_database_url: str, tmp_path: Path
) -> None:
    await archive.remember(ME, NOTES[0])
    good = tmp_path / "good.backup"
    await archive.backup(good)
    data = bytearray(good.read_bytes())
    flipped = tmp_path / "flipped.backup"
    at = data.index(b"PGDMP") + 200  # inside the database dump
    data[at] ^= 0xFF
    flipped.write_bytes(bytes(data))
    truncated = tmp_path / "truncated.backup"
    truncated.write_bytes(good.read_bytes()[: len(data) // 2])
    foreign = tmp_path / "foreign.backup"
    with tarfile.open(foreign, "w") as tar:
        info = tarfile.TarInfo("hello.txt")
        info.size = 2
        tar.addfile(info, io.BytesIO(b"hi"))
    newer = tmp_path / "newer.backup"
    with tarfile.open(good) as src, tarfile.open(newer, "w") as dst:
        for member in src:
            payload = src.extractfile(member).read()  # type: ignore[union-attr]
            if member.name == MANIFEST:
                payload = json.dumps(json.loads(payload) | {"last_migration": 9999}).encode()
                member.size = len(payload)
            dst.addfile(member, io.BytesIO(payload))
    before = snapshot(empty_database_url)
    for bad, says in [
        (flipped, "checksum"),
        (truncated, "not a readable mnemo backup"),
        (foreign, "not a mnemo backup"),
        (newer, "newer mnemo"),
        (tmp_path / "missing.backup", "no backup file"),
    ]:
        with pytest.raises(BackupError, match=says):
            AsyncArchive.verify_backup(bad)
        with pytest.raises(BackupError, match=says):
            await AsyncArchive.restore(bad, Settings(database_url=empty_database_url))
    assert snapshot(empty_database_url) == before == {}


async def test_a_non_empty_target_is_refused_unless_forced(
    archive: AsyncArchive, database_url: str, tmp_path: Path
) -> None:
    await archive.remember(ME, NOTES[0])
    file = tmp_path / "one.backup"
    manifest = await archive.backup(file)
    memory = (await archive.remember(ME, NOTES[1])).id  # after the backup
    before = rows_of(database_url)
    with pytest.raises(BackupError, match="already holds"):
        await AsyncArchive.restore(file, Settings(database_url=database_url))
    assert rows_of(database_url) == before
    await AsyncArchive.restore(file, Settings(database_url=database_url), force=True)
    with psycopg.connect(database_url) as conn:
        assert conn.execute("SELECT count(*) FROM mnemo.memories").fetchone() == (manifest.counts["mnemo.memories"],)
        assert conn.execute("SELECT count(*) FROM mnemo.memories WHERE id = %s", (memory,)).fetchone() == (0,)


def _env(database_url: str, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMO_") or k == "MNEMO_MODEL_CACHE"}
    return env | {"MNEMO_HOME": str(home), "MNEMO_DATABASE_URL": database_url}


def _restoring(url: str) -> bool:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'psql'"
            " AND xact_start IS NOT NULL"
        ).fetchone()
        return bool(row and row[0])


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MNEMO, *args], env=env, capture_output=True, text=True, timeout=300)


def _kill_half_way(file: Path, env: dict[str, str], url: str) -> None:
    """Start `mnemo restore`, SIGKILL it (and its pg_restore and psql) inside the database's transaction."""
    proc = subprocess.Popen([MNEMO, "restore", str(file)], env=env, start_new_session=True)
    deadline = time.monotonic() + 120
    while not _restoring(url):
        assert proc.poll() is None, "the restore ended before it could be interrupted"
        assert time.monotonic() < deadline
        time.sleep(0.005)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    for _ in range(200):  # the server notices the lost client and rolls its transaction back
        if not _restoring(url):
            break
        time.sleep(0.05)


async def test_a_restore_killed_half_way_leaves_the_target_empty_and_a_rerun_succeeds(
    archive: AsyncArchive, database_url: str, empty_database_url: str, tmp_path: Path
) -> None:
    await busy(archive)
    file = tmp_path / "mind.backup"
    manifest = await archive.backup(file)
    env = _env(empty_database_url, tmp_path / "home")
    await asyncio.to_thread(_kill_half_way, file, env, empty_database_url)
    with psycopg.connect(empty_database_url) as conn:
        left = conn.execute("SELECT nspname FROM pg_namespace WHERE nspname = ANY(%s)", (list(SCHEMAS),)).fetchall()
    assert left == []
    again = await asyncio.to_thread(_cli, env, "restore", str(file))
    assert again.returncode == 0, again.stderr
    assert rows_of(empty_database_url) == rows_of(database_url)
    assert sum(snapshot(empty_database_url).values()) == sum(manifest.counts.values())
    cortex = tmp_path / "home" / "cortex"
    assert [p.name for p in cortex.iterdir()] == [cortex_id(empty_database_url)]  # no half-placed leftovers


def test_the_command_line_backs_up_verifies_and_refuses_with_one_line(database_url: str, tmp_path: Path) -> None:
    env = _env(database_url, tmp_path / "home")
    run = subprocess.run([MNEMO, "remember", NOTES[2]], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    file = tmp_path / "cli.backup"
    made = subprocess.run([MNEMO, "backup", str(file), "--json"], env=env, capture_output=True, text=True, timeout=300)
    assert made.returncode == 0, made.stderr
    report = json.loads(made.stdout)
    assert report["bytes"] == file.stat().st_size and report["manifest"]["counts"]["mnemo.memories"] == 1
    checked = subprocess.run([MNEMO, "backup", "verify", str(file)], env=env, capture_output=True, text=True)
    assert checked.returncode == 0 and "verified" in checked.stdout
    refused = subprocess.run([MNEMO, "restore", str(file)], env=env, capture_output=True, text=True, timeout=300)
    assert refused.returncode == 1 and refused.stderr.count("\n") == 1 and "already holds" in refused.stderr
    wrong = subprocess.run([MNEMO, "backup", "check", str(file)], env=env, capture_output=True, text=True)
    assert wrong.returncode != 0 and "verify" in wrong.stderr


@pytest.mark.parametrize("level", [-1, 10, 1.5, True])
async def test_a_bad_compression_level_is_refused_before_anything_is_written(
    archive: AsyncArchive, tmp_path: Path, level: object
) -> None:
    with pytest.raises(InvalidInputError, match="compression"):
        await archive.backup(tmp_path / "x.backup", compression=level)  # type: ignore[arg-type]
    assert not partials(tmp_path) and not (tmp_path / "x.backup").exists()
