"""Backup and restore (issue 16 item 1) on real PostgreSQL and a real LanceDB cortex: a busy
archive round-trips to identical rows, bit-identical vectors and the same cortex tables; a backup
taken while writes go on is one consistent snapshot; a damaged file is refused; a non-empty
target is refused unless forced; a restore killed half-way leaves the target empty and a re-run
succeeds. Issue 27: the manifest is sealed by a digest of its own, so any edit of any member fails
verify; a restore whose checks fail leaves the target (database and cortex directory) exactly as it
was, so a retry works; the command line speaks of --force, not force=True."""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import os
import signal
import socket
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import lancedb
import numpy as np
import psycopg
import pytest
from pgvector.psycopg import register_vector

from mnemo import AsyncArchive, BackupError, InvalidInputError, Scope, Settings
from mnemo.embed import Embeddings
from mnemo.portability._restore_disk import Swap, journal
from mnemo.portability.backup import MANIFEST, MANIFEST_DIGEST
from mnemo.store import snapshots as backup_rows
from tests.conftest import snapshot
from tests.integration.test_cortex import QUESTION, a_week_of, cortex_dir

pytestmark = pytest.mark.future_nights  # a busy archive has had a week of nights

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
    await archive.access.create_token("alice", label="laptop")
    await archive.access.grant(ME, "bob")
    await archive.recall(ME, QUESTION)
    assert await archive.maintenance.defer_reembed() is not None


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


def rewritten(
    good: Path,
    out: Path,
    edit: Callable[[dict[str, Any]], dict[str, Any]],
    seal: Literal["keep", "reseal", "drop", "zero"] = "keep",
) -> Path:
    """A copy of ``good`` whose manifest ``edit`` changed. ``seal``: the manifest's digest member
    kept as it was (a plain edit), recomputed (as a newer mnemo, or a forger, would write it),
    dropped (as the previous format had none), or edited itself (zeros)."""
    manifest = b""
    with tarfile.open(good) as src, tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as dst:
        for member in src:
            payload = src.extractfile(member).read()  # type: ignore[union-attr]
            if member.name == MANIFEST:
                payload = manifest = json.dumps(edit(json.loads(payload)), indent=2, sort_keys=True).encode()
            elif member.name == MANIFEST_DIGEST and seal == "drop":
                continue
            elif member.name == MANIFEST_DIGEST and seal in ("reseal", "zero"):
                digest = hashlib.sha256(manifest).hexdigest() if seal == "reseal" else "0" * 64
                payload = f"{digest}  {MANIFEST}\n".encode()
            member.size = len(payload)
            dst.addfile(member, io.BytesIO(payload))
    return out


def files_under(directory: Path) -> list[str]:
    """Every path under ``directory`` (none when it does not exist), relative, sorted."""
    return sorted(str(p.relative_to(directory)) for p in directory.rglob("*")) if directory.exists() else []


def names_in(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


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
    manifest = await archive.portability.backup(file)
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
    assert AsyncArchive.portability.verify_backup(file) == manifest

    target = Settings(database_url=empty_database_url)
    restored = await AsyncArchive.portability.restore(file, target)
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
    manifest = await archive.portability.backup(tmp_path / "live.backup")
    await asyncio.sleep(0.3)
    stop.set()
    await task
    await AsyncArchive.portability.restore(tmp_path / "live.backup", Settings(database_url=empty_database_url))
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
        backup = asyncio.create_task(archive.portability.backup(tmp_path / "waited.backup"))
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
    await archive.portability.backup(good)
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
    newer = rewritten(good, tmp_path / "newer.backup", lambda m: m | {"last_migration": 9999}, seal="reseal")
    newer_format = rewritten(good, tmp_path / "format.backup", lambda m: m | {"format": 99}, seal="reseal")
    before = snapshot(empty_database_url)
    for bad, says in [
        (flipped, "checksum"),
        (truncated, "not a readable mnemo backup"),
        (foreign, "not a mnemo backup"),
        (newer, "newer mnemo"),
        (newer_format, "newer mnemo"),
        (tmp_path / "missing.backup", "no backup file"),
    ]:
        with pytest.raises(BackupError, match=says):
            AsyncArchive.portability.verify_backup(bad)
        with pytest.raises(BackupError, match=says):
            await AsyncArchive.portability.restore(bad, Settings(database_url=empty_database_url))
    assert snapshot(empty_database_url) == before == {}


async def test_a_non_empty_target_is_refused_unless_forced(
    archive: AsyncArchive, database_url: str, tmp_path: Path
) -> None:
    await archive.remember(ME, NOTES[0])
    file = tmp_path / "one.backup"
    manifest = await archive.portability.backup(file)
    memory = (await archive.remember(ME, NOTES[1])).id  # after the backup
    before = rows_of(database_url)
    with pytest.raises(BackupError, match="already holds") as refused:
        await AsyncArchive.portability.restore(file, Settings(database_url=database_url))
    assert "force=True" in str(refused.value) and "--force" not in str(refused.value)  # the library's words
    assert rows_of(database_url) == before
    await AsyncArchive.portability.restore(file, Settings(database_url=database_url), force=True)
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
    manifest = await archive.portability.backup(file)
    env = _env(empty_database_url, tmp_path / "home")
    await asyncio.to_thread(_kill_half_way, file, env, empty_database_url)
    with psycopg.connect(empty_database_url) as conn:
        left = conn.execute("SELECT nspname FROM pg_namespace WHERE nspname = ANY(%s)", (list(SCHEMAS),)).fetchall()
    assert left == []
    assert any(n.startswith(".mnemo-restore-") for n in names_in(tmp_path / "home" / "cortex"))  # its plan, on disk
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
    assert "--force" in refused.stderr and "force=True" not in refused.stderr  # the command line's words
    wrong = subprocess.run([MNEMO, "backup", "check", str(file)], env=env, capture_output=True, text=True)
    assert wrong.returncode != 0 and "verify" in wrong.stderr


@pytest.mark.parametrize("level", [-1, 10, 1.5, True])
async def test_a_bad_compression_level_is_refused_before_anything_is_written(
    archive: AsyncArchive, tmp_path: Path, level: object
) -> None:
    with pytest.raises(InvalidInputError, match="compression"):
        await archive.portability.backup(tmp_path / "x.backup", compression=level)  # type: ignore[arg-type]
    assert not partials(tmp_path) and not (tmp_path / "x.backup").exists()


# --- issue 27: the manifest is sealed; a failed restore leaves nothing behind ------------------

MANIFEST_EDITS: dict[str, tuple[Callable[[dict[str, Any]], dict[str, Any]], Literal["keep", "zero"]]] = {
    "a row count": (lambda m: m | {"counts": m["counts"] | {"mnemo.memories": 99}}, "keep"),
    "a member's digest": (lambda m: m | {"files": m["files"] | {"database.dump": "0" * 64}}, "keep"),
    "the format": (lambda m: m | {"format": 1}, "keep"),
    "the manifest's own digest": (lambda m: m, "zero"),
}
FORGED: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "row counts": lambda m: m | {"counts": m["counts"] | {"mnemo.turns": 99}},
    "cortex rows": lambda m: m | {"cortex_rows": {k: v + 1 for k, v in m["cortex_rows"].items()}},
}


@pytest.mark.parametrize("what", sorted(MANIFEST_EDITS))
async def test_any_edit_of_the_manifest_fails_verify_and_restore_before_anything_is_written(
    archive: AsyncArchive, empty_database_url: str, tmp_path: Path, what: str
) -> None:
    await archive.remember(ME, NOTES[0])
    good = tmp_path / "good.backup"
    await archive.portability.backup(good)
    edit, seal = MANIFEST_EDITS[what]
    edited = rewritten(good, tmp_path / "edited.backup", edit, seal=seal)
    says = f"{MANIFEST} was edited or damaged"
    with pytest.raises(BackupError, match=says):
        AsyncArchive.portability.verify_backup(edited)
    home = tmp_path / "home"
    with pytest.raises(BackupError, match=says):
        await AsyncArchive.portability.restore(edited, Settings(database_url=empty_database_url, home=home))
    assert snapshot(empty_database_url) == {} and files_under(home) == []
    assert AsyncArchive.portability.verify_backup(good).format == 2


async def test_a_backup_made_before_manifests_were_sealed_is_still_read(
    archive: AsyncArchive, empty_database_url: str, tmp_path: Path
) -> None:
    await archive.remember(ME, NOTES[0])
    good = tmp_path / "good.backup"
    manifest = await archive.portability.backup(good)
    older = rewritten(good, tmp_path / "older.backup", lambda m: m | {"format": 1}, seal="drop")
    assert AsyncArchive.portability.verify_backup(older).format == 1
    checked = await asyncio.to_thread(_cli, _env(empty_database_url, tmp_path / "home"), "backup", "verify", str(older))
    assert checked.returncode == 0 and "verified" in checked.stdout and "no seal" in checked.stderr
    await AsyncArchive.portability.restore(older, Settings(database_url=empty_database_url))
    assert snapshot(empty_database_url)["mnemo.memories"] == manifest.counts["mnemo.memories"] == 1


@pytest.mark.parametrize("what", sorted(FORGED))
async def test_a_restore_whose_check_fails_leaves_the_target_empty_and_a_retry_succeeds(
    archive: AsyncArchive, database_url: str, empty_database_url: str, tmp_path: Path, what: str
) -> None:
    await busy(archive)
    good = tmp_path / "mind.backup"
    await archive.portability.backup(good)
    forged = rewritten(good, tmp_path / "forged.backup", FORGED[what], seal="reseal")
    assert AsyncArchive.portability.verify_backup(forged)  # a whole file: only the restore's own check can tell
    home = tmp_path / "home"
    target = Settings(database_url=empty_database_url, home=home)
    with pytest.raises(BackupError, match=f"does not match its manifest: {what} differ"):
        await AsyncArchive.portability.restore(forged, target)
    assert snapshot(empty_database_url) == {}
    assert files_under(home / "cortex") == []
    await AsyncArchive.portability.restore(good, target)
    assert rows_of(empty_database_url) == rows_of(database_url)
    assert names_in(home / "cortex") == [cortex_id(empty_database_url)]


async def test_a_forced_restore_whose_check_fails_leaves_the_target_and_its_cortex_as_they_were(
    archive: AsyncArchive, database_url: str, tmp_path: Path
) -> None:
    await busy(archive)
    good = tmp_path / "mind.backup"
    await archive.portability.backup(good)
    await archive.remember(ME, "Written after the backup: the boiler is serviced in October.")
    forged = rewritten(good, tmp_path / "forged.backup", FORGED["row counts"], seal="reseal")
    cortex = cortex_dir(archive)
    rows, tables, own, beside = (
        rows_of(database_url),
        lance_tables(cortex),
        cortex_id(database_url),
        files_under(cortex.parent),
    )
    with pytest.raises(BackupError, match="does not match its manifest"):
        await AsyncArchive.portability.restore(forged, Settings(database_url=database_url), force=True)
    assert rows_of(database_url) == rows and cortex_id(database_url) == own
    assert lance_tables(cortex) == tables and files_under(cortex.parent) == beside


async def test_a_failed_restore_into_a_cortex_directory_puts_what_was_there_back(
    archive: AsyncArchive, database_url: str, empty_database_url: str, tmp_path: Path
) -> None:
    await busy(archive)
    good = tmp_path / "mind.backup"
    await archive.portability.backup(good)
    forged = rewritten(good, tmp_path / "forged.backup", FORGED["row counts"], seal="reseal")
    lance = tmp_path / "lance"
    lance.mkdir()
    (lance / "keep.txt").write_text("what the target held")
    target = Settings(database_url=empty_database_url, cortex_uri=str(lance))
    with pytest.raises(BackupError, match="does not match its manifest"):
        await AsyncArchive.portability.restore(forged, target)
    assert files_under(tmp_path) == ["forged.backup", "lance", "lance/keep.txt", "mind.backup"]
    assert snapshot(empty_database_url) == {}
    await AsyncArchive.portability.restore(good, target)
    assert lance_tables(lance) == lance_tables(cortex_dir(archive))
    assert names_in(tmp_path) == ["forged.backup", "lance", "mind.backup"]  # no leftovers


async def test_the_next_restore_finishes_or_undoes_what_an_interrupted_one_left_on_disk(
    archive: AsyncArchive, empty_database_url: str, tmp_path: Path
) -> None:
    await busy(archive)
    good = tmp_path / "mind.backup"
    await archive.portability.backup(good)
    lance = tmp_path / "lance"
    target = Settings(database_url=empty_database_url, cortex_uri=str(lance))
    await AsyncArchive.portability.restore(good, target)
    restored = lance_tables(lance)
    plan = journal(target, empty_database_url)
    # killed after its database part committed: what it had set aside goes, its cortex stays
    aside = tmp_path / "lance.replaced-1"
    aside.mkdir()
    Swap(plan, cortex_id(empty_database_url), lance, aside, None).write()
    with pytest.raises(BackupError, match="already holds"):
        await AsyncArchive.portability.restore(good, target)
    assert lance_tables(lance) == restored and not aside.exists() and not plan.exists()
    # killed before it committed: what was at the cortex directory comes back
    aside.mkdir()
    (aside / "keep.txt").write_text("what the target held")
    Swap(plan, "0190b7c4-0000-7000-8000-000000000000", lance, aside, None).write()
    with pytest.raises(BackupError, match="already holds"):
        await AsyncArchive.portability.restore(good, target)
    assert files_under(lance) == ["keep.txt"] and not aside.exists() and not plan.exists()


def test_the_command_line_refuses_an_edited_manifest_and_retries_a_failed_restore(
    database_url: str, empty_database_url: str, tmp_path: Path
) -> None:
    env = _env(database_url, tmp_path / "home")
    assert _cli(env, "remember", NOTES[2]).returncode == 0
    good = tmp_path / "cli.backup"
    assert _cli(env, "backup", str(good)).returncode == 0
    edited = rewritten(good, tmp_path / "edited.backup", MANIFEST_EDITS["a row count"][0])
    checked = _cli(env, "backup", "verify", str(edited))
    assert checked.returncode == 1 and f"{MANIFEST} was edited or damaged" in checked.stderr
    assert "verified" not in checked.stdout
    forged = rewritten(good, tmp_path / "forged.backup", FORGED["row counts"], seal="reseal")
    target = _env(empty_database_url, tmp_path / "target")
    failed = _cli(target, "restore", str(forged))
    assert failed.returncode == 1 and "does not match its manifest" in failed.stderr
    status = json.loads(_cli(target, "status", "--json").stdout)
    assert status["counts"]["turns"] == status["counts"]["memories"] == 0  # nothing was left behind
    again = _cli(target, "restore", str(good))  # an opened, empty home is still empty
    assert again.returncode == 0, again.stderr
    assert json.loads(_cli(target, "status", "--json").stdout)["counts"]["memories"] == 1


def _dead_pid() -> int:
    done = subprocess.Popen(["true"])
    done.wait()
    return done.pid


def _kill_while_staging(target: Path, env: dict[str, str]) -> Path:
    """Start `mnemo backup`, SIGKILL it once its staging directory holds something; returns that directory."""
    proc = subprocess.Popen([MNEMO, "backup", str(target)], env=env, start_new_session=True)
    deadline = time.monotonic() + 120
    while not (staged := [p for p in target.parent.glob(".mnemo-backup-*") if any(p.iterdir())]):
        assert proc.poll() is None, "the backup ended before it could be interrupted"
        assert time.monotonic() < deadline
        time.sleep(0.005)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    return staged[0]


async def test_staging_left_by_a_killed_backup_or_restore_is_removed_next_time_and_said(
    archive: AsyncArchive, database_url: str, tmp_path: Path
) -> None:
    """Issue 39 item 8: the next backup removes a killed backup's staging, `mnemo status` a killed
    restore's in the home; a live run's staging (this process's) is left alone."""
    await busy(archive)
    out = tmp_path / "backups"
    out.mkdir()
    env = _env(database_url, tmp_path / "home")
    left = await asyncio.to_thread(_kill_while_staging, out / "mind.backup", env)
    assert left.is_dir()
    again = await asyncio.to_thread(_cli, env, "backup", str(out / "mind.backup"))
    assert again.returncode == 0, again.stderr
    assert not left.exists() and [p.name for p in out.iterdir() if p.name.startswith(".mnemo-")] == []
    assert "removed" in again.stderr and left.name in again.stderr
    home = tmp_path / "home"
    host = hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]
    dead = home / f".mnemo-restore-{host}-{_dead_pid()}-abc123"
    live = home / f".mnemo-restore-{host}-{os.getpid()}-def456"
    for staged in (dead, live):
        (staged / "cortex").mkdir(parents=True)
        (staged / "database.dump").write_bytes(b"x" * 1000)
    journal_file = home / ".mnemo-restore-0123456789abcdef.json"  # a restore's plan: a file, kept
    journal_file.write_text("{}")
    shown = await asyncio.to_thread(_cli, env, "status")
    assert shown.returncode == 0, shown.stderr
    assert "removed stale staging" in shown.stdout and dead.name in shown.stdout.replace("\n", "")
    assert not dead.exists() and live.is_dir() and journal_file.is_file()
