"""Backup and restore of the whole archive: one file, one consistent snapshot of both stores.

Seeds: archive-adr §6 ("Declared Reanimation": memory, persona, queues and
tasks come back from their last committed boundaries) and "Atomic Stability"
(the whole state in one consistent snapshot); DESIGN §9 (a backup is a
database snapshot plus the cortex at the versions that snapshot names).

A backup file is an uncompressed tar (its members are compressed already)::

    manifest.json      what the file holds (:class:`~mnemo.models.BackupManifest`), with checksums
    database.dump      pg_dump of mnemo's schemas (and the extensions'), custom format
    cortex/...         the cortex directory (LanceDB) as of the same moment

How the two stores agree is explained in :mod:`mnemo.store.backup`. Restore is
all-or-nothing on the database side (one transaction) and puts the cortex in
place before it, under a name the restored database is the only one to use, so
a crash anywhere leaves an empty target and running restore again succeeds.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import os
import shutil
import tarfile
import tempfile
import uuid
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import psycopg
from pydantic import TypeAdapter, ValidationError

from mnemo._runtime import Runtime
from mnemo.config import Settings
from mnemo.errors import BackupError, CortexError, InvalidContentError
from mnemo.models import BackupManifest, to_jsonable
from mnemo.store import backup as backup_rows
from mnemo.store.migrate import load_migrations
from mnemo.store.pool import redact, wrap_exceptions
from mnemo.store.server import check_pgvector, embedded_url

__all__ = ["backup", "restore", "verify"]

FORMAT = 1
MANIFEST = "manifest.json"
DATABASE = "database.dump"
CORTEX = "cortex"

Stage = Callable[[str], None]
_manifest_adapter = TypeAdapter(BackupManifest)


# --- backup ------------------------------------------------------------------------------------


async def backup(
    rt: Runtime, path: str | os.PathLike[str], *, compression: int = 1, progress: Stage | None = None
) -> BackupManifest:
    """Write a backup of the whole archive to ``path`` (replaced atomically when complete);
    ``compression``: the database dump's gzip level, 0 (none) to 9."""
    if not isinstance(compression, int) or isinstance(compression, bool) or not 0 <= compression <= 9:
        raise InvalidContentError(f"compression must be an integer from 0 to 9, not {compression!r}")
    target = _backup_target(path)
    say = progress or (lambda _: None)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".mnemo-backup-") as tmp:
        staging = Path(tmp)
        facts, counts, names = await _snapshot(rt, staging, say, compression)
        say("checksums")
        versions, rows = await asyncio.to_thread(_lance_facts, staging / CORTEX)
        files = await asyncio.to_thread(_checksums, staging)
        manifest = BackupManifest(
            format=FORMAT,
            mnemo_version=_version(),
            created_at=datetime.now(UTC),
            last_migration=int(facts["last_migration"]),
            schemas=tuple(names),
            spaces=tuple(facts["spaces"]),
            active_slug=rt.slug,
            cortex_id=facts["cortex_id"],
            cortex_versions=versions,
            cortex_rows=rows,
            counts=counts,
            files=files,
            database_bytes=(staging / DATABASE).stat().st_size,
        )
        say("writing")
        await asyncio.to_thread(_write_file, staging, manifest, target)
    return manifest


def _backup_target(path: str | os.PathLike[str]) -> Path:
    target = Path(path).expanduser().absolute()
    if target.is_dir():
        raise BackupError(f"{target} is a directory; give the backup a file name, e.g. {target / 'mnemo.backup'}")
    if not target.parent.is_dir():
        raise BackupError(f"cannot write {target}: directory {target.parent} does not exist")
    return target


async def _snapshot(
    rt: Runtime, staging: Path, say: Stage, compression: int
) -> tuple[dict[str, Any], dict[str, int], list[str]]:
    """Export a database snapshot and copy the cortex while no cortex writer runs; then dump the
    database as of that snapshot (writes to PostgreSQL go on meanwhile)."""
    cortex_dir = await _cortex_dir(rt)
    url = rt.store.url
    with wrap_exceptions(url):
        snap = await psycopg.AsyncConnection.connect(url, autocommit=True)
        try:
            async with rt.store.connection() as lock:
                say("snapshot")
                async with backup_rows.exclusive_cortex(lock):
                    snapshot = await backup_rows.export_snapshot(snap)
                    if cortex_dir is not None:
                        await asyncio.to_thread(shutil.copytree, cortex_dir, staging / CORTEX)
            facts = await backup_rows.snapshot_facts(snap)
            names = await backup_rows.schemas(snap)
            counts = await backup_rows.table_counts(snap, names)
            say("database")
            await backup_rows.dump(url, snapshot, names, staging / DATABASE, compression=compression)
            await snap.rollback()
        finally:
            await snap.close()
    return facts, counts, names


async def _cortex_dir(rt: Runtime) -> Path | None:
    """The local directory of this database's cortex, None when it has none yet."""
    if rt.cortex is None:
        return None
    uri = rt.settings.cortex_uri
    if uri is not None:
        if "://" in uri and not uri.startswith("file://"):
            raise CortexError(f"the cortex at {uri} is not a local directory: back it up with its store's own tools")
        path = Path(uri.removeprefix("file://"))
    else:
        async with rt.store.connection() as conn:
            cortex_id = await backup_rows.cortex_id(conn)
        if cortex_id is None:
            return None
        path = rt.settings.home / "cortex" / cortex_id
    return path if path.is_dir() else None


def _lance_facts(directory: Path) -> tuple[dict[str, int], dict[str, int]]:
    """Every LanceDB table's version and row count in ``directory`` (none when it does not exist)."""
    if not directory.is_dir():
        return {}, {}
    import lancedb

    db = lancedb.connect(str(directory))
    listed = db.list_tables() if hasattr(db, "list_tables") else db.table_names()
    names = sorted(str(n) for n in getattr(listed, "tables", listed))
    versions, rows = {}, {}
    for name in names:
        table = db.open_table(name)
        versions[name] = int(table.version)
        rows[name] = int(table.count_rows())
    return versions, rows


def _members(staging: Path) -> Iterator[tuple[str, Path]]:
    """Every file to store, with its name in the tar, in a fixed order."""
    for path in sorted(p for p in staging.rglob("*") if p.is_file()):
        yield path.relative_to(staging).as_posix(), path


def _checksums(staging: Path) -> dict[str, str]:
    return {name: _sha256(path) for name, path in _members(staging)}


def _sha256(path: Path) -> str:
    with path.open("rb") as f:
        return _stream_sha256(f)


def _stream_sha256(handle: IO[bytes]) -> str:
    digest = hashlib.sha256()
    while chunk := handle.read(1 << 20):
        digest.update(chunk)
    return digest.hexdigest()


def _write_file(staging: Path, manifest: BackupManifest, target: Path) -> None:
    """The tar, written beside ``target`` and moved into place only once it is complete and synced."""
    partial = target.with_name(target.name + ".partial")
    try:
        with partial.open("wb") as raw:
            with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
                data = json.dumps(to_jsonable(manifest), indent=2, sort_keys=True).encode()
                info = tarfile.TarInfo(MANIFEST)
                info.size, info.mtime = len(data), int(manifest.created_at.timestamp())
                tar.addfile(info, io.BytesIO(data))
                for name, path in _members(staging):
                    tar.add(path, arcname=name, recursive=False)
            raw.flush()
            os.fsync(raw.fileno())
        os.replace(partial, target)
        _sync_dir(target.parent)
    finally:
        partial.unlink(missing_ok=True)


def _sync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _version() -> str:
    from mnemo import __version__

    return __version__


# --- verify ------------------------------------------------------------------------------------


def verify(path: str | os.PathLike[str]) -> BackupManifest:
    """Check a backup file without restoring it: its manifest, every member's checksum, nothing
    missing or extra, a schema this mnemo can open. Returns the manifest."""
    source = Path(path).expanduser()
    if not source.is_file():
        raise BackupError(f"no backup file at {source}")
    try:
        with tarfile.open(source, mode="r:") as tar:
            manifest = _read_manifest(tar, source)
            seen = _check_members(tar, manifest, source)
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise BackupError(f"{source} is not a readable mnemo backup: {exc}") from exc
    missing = sorted(set(manifest.files) - seen)
    if missing:
        raise BackupError(f"{source} is incomplete: {len(missing)} members missing, e.g. {missing[0]}")
    known = max(m.version for m in load_migrations())
    if manifest.last_migration > known:
        raise BackupError(
            f"{source} was made by a newer mnemo (schema migration {manifest.last_migration}, this one knows "
            f"{known}): upgrade mnemo to restore it"
        )
    return manifest


def _read_manifest(tar: tarfile.TarFile, source: Path) -> BackupManifest:
    first = tar.next()
    if first is None or first.name != MANIFEST or not first.isfile():
        raise BackupError(f"{source} is not a mnemo backup (it does not start with {MANIFEST})")
    handle = tar.extractfile(first)
    assert handle is not None
    try:
        manifest = _manifest_adapter.validate_json(handle.read())
    except ValidationError as exc:
        raise BackupError(f"{source} has a damaged manifest: {exc.errors()[0]['msg']}") from exc
    if manifest.format != FORMAT:
        raise BackupError(f"{source} has backup format {manifest.format}; this mnemo reads format {FORMAT}")
    return manifest


def _check_members(tar: tarfile.TarFile, manifest: BackupManifest, source: Path) -> set[str]:
    seen: set[str] = set()
    for member in tar:
        name = member.name
        if name == MANIFEST and member.offset == 0:
            continue
        if name not in manifest.files or not member.isfile():
            raise BackupError(f"{source} holds a member its manifest does not describe: {name!r}")
        handle = tar.extractfile(member)
        assert handle is not None
        if _stream_sha256(handle) != manifest.files[name]:
            raise BackupError(f"{source} is damaged: the checksum of {name} does not match its manifest")
        seen.add(name)
    return seen


# --- restore -----------------------------------------------------------------------------------


async def restore(
    path: str | os.PathLike[str], settings: Settings, *, force: bool = False, progress: Stage | None = None
) -> BackupManifest:
    """Restore a backup into the home/database of ``settings``, which must hold no mnemo data
    unless ``force`` (then it is replaced). All or nothing; checked against the manifest after."""
    say = progress or (lambda _: None)
    say("verifying")
    source = Path(path)
    manifest = await asyncio.to_thread(verify, source)
    url = settings.database_url
    if url is None:
        url = await asyncio.to_thread(embedded_url, settings.home)
    parent = settings.home if settings.database_url is None else Path(tempfile.gettempdir())
    parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=parent, prefix=".mnemo-restore-") as tmp:
        staging = Path(tmp)
        say("reading")
        await asyncio.to_thread(_extract, source, staging)
        existing, old_cortex = await _check_target(url, force)
        cortex_id = _restored_cortex_id(manifest, url, settings)
        dest = _cortex_target(settings, manifest, cortex_id)
        if dest is not None:
            say("cortex")
            await asyncio.to_thread(_place_cortex, staging / CORTEX, dest)
        say("database")
        before, after = backup_rows.restore_scripts(sorted({*existing, *manifest.schemas}), cortex_id)
        (staging / "before.sql").write_text(before)
        (staging / "after.sql").write_text(after)
        with wrap_exceptions(url):
            await backup_rows.load(url, staging / DATABASE, staging / "before.sql", staging / "after.sql")
    say("checking")
    await _check_restored(url, manifest, dest)
    if old_cortex is not None and old_cortex != str(cortex_id) and settings.cortex_uri is None:
        await asyncio.to_thread(shutil.rmtree, settings.home / "cortex" / old_cortex, True)
    return manifest


def _extract(source: Path, staging: Path) -> None:
    with tarfile.open(source.expanduser(), mode="r:") as tar:
        tar.extractall(staging, filter="data")


async def _check_target(url: str, force: bool) -> tuple[list[str], str | None]:
    """The target's schemas and its old cortex id; refuses a target holding data unless ``force``."""
    with wrap_exceptions(url):
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            await check_pgvector(conn)
            existing = await backup_rows.schemas(conn)
            rows = await backup_rows.target_rows(conn)
            old = await backup_rows.cortex_id(conn)
    if rows and not force:
        raise BackupError(
            f"the target database {redact(url)} already holds {rows} rows of mnemo data; restore into an "
            "empty home or database, or pass force=True (`mnemo restore --force`) to replace it"
        )
    return existing, old


def _restored_cortex_id(manifest: BackupManifest, url: str, settings: Settings) -> uuid.UUID | None:
    """The restored database's cortex id: the same for every attempt at restoring this backup into
    this target (a re-run after a crash replaces what the crashed one left), never the source's."""
    if manifest.cortex_id is None:
        return None
    return uuid.uuid5(uuid.NAMESPACE_URL, f"mnemo-restore:{manifest.cortex_id}:{settings.home}:{url}")


def _cortex_target(settings: Settings, manifest: BackupManifest, cortex_id: uuid.UUID | None) -> Path | None:
    if not manifest.cortex_rows and not manifest.cortex_versions:
        return None
    if settings.cortex_uri is not None:
        if "://" in settings.cortex_uri and not settings.cortex_uri.startswith("file://"):
            raise CortexError(f"cannot restore the cortex into {settings.cortex_uri}: not a local directory")
        return Path(settings.cortex_uri.removeprefix("file://"))
    if cortex_id is None:
        return None
    return settings.home / "cortex" / str(cortex_id)


def _place_cortex(source: Path, dest: Path) -> None:
    """Copy the cortex beside ``dest``, then swap it in: the directory is never half written.
    Whatever was at ``dest`` goes (a leftover of an interrupted restore, or a forced target)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    incoming = dest.with_name(dest.name + ".restoring")
    shutil.rmtree(incoming, ignore_errors=True)
    shutil.copytree(source, incoming)
    if dest.exists():
        old = dest.with_name(dest.name + ".replaced")
        shutil.rmtree(old, ignore_errors=True)
        os.replace(dest, old)
        os.replace(incoming, dest)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(incoming, dest)


async def _check_restored(url: str, manifest: BackupManifest, cortex: Path | None) -> None:
    with wrap_exceptions(url):
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            counts = await backup_rows.table_counts(conn, manifest.schemas)
    _compare("row counts", counts, manifest.counts)
    if cortex is not None:
        versions, rows = await asyncio.to_thread(_lance_facts, cortex)
        _compare("cortex versions", versions, manifest.cortex_versions)
        _compare("cortex rows", rows, manifest.cortex_rows)


def _compare(what: str, found: Mapping[str, int], expected: Mapping[str, int]) -> None:
    differ = sorted(k for k in {*found, *expected} if found.get(k) != expected.get(k))
    if differ:
        k = differ[0]
        raise BackupError(
            f"the restored archive does not match its manifest: {what} differ for {len(differ)} tables, e.g. "
            f"{k}: {found.get(k)} restored, {expected.get(k)} in the backup"
        )
