"""Backup and restore of the whole archive: one file, one consistent snapshot of both stores.

Seeds: archive-adr §6 ("Declared Reanimation": memory, persona, queues and
tasks come back from their last committed boundaries) and "Atomic Stability"
(the whole state in one consistent snapshot); DESIGN §9 (a backup is a
database snapshot plus the cortex at the versions that snapshot names).

A backup file is an uncompressed tar (its members are compressed already)::

    manifest.json      what the file holds (:class:`~mnemo.models.BackupManifest`), with checksums
    manifest.sha256    the manifest's own sha256 (``sha256sum -c`` reads it): its seal
    database.dump      pg_dump of mnemo's schemas (and the extensions'), custom format
    cortex/...         the cortex directory (LanceDB) as of the same moment

So an edit of any member, the manifest included, fails :func:`verify` (format 1,
still read, had no seal). How the two stores agree is explained in
:mod:`mnemo.store.snapshots`. Restore is all-or-nothing: the database part is one
transaction that checks every row count against the manifest before it commits;
the cortex is checked before it is placed, under a name only the restored
database uses (or, for ``cortex_uri``, with what was there kept aside). What a
restore does on disk is written down first (:mod:`mnemo.portability._restore_disk`), so a
failed restore is undone at once and one killed half-way is undone (or, if its
database part committed, finished) by the next attempt.
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
from mnemo.errors import BackupError, CortexError, InvalidContentError, MnemoError
from mnemo.models import BackupManifest, to_jsonable
from mnemo.portability import _staging
from mnemo.portability._restore_disk import Swap, journal, plan
from mnemo.store import snapshots as backup_rows
from mnemo.store.migrate import load_migrations
from mnemo.store.pool import redact, wrap_exceptions
from mnemo.store.server import check_pgvector, embedded_url

__all__ = ["backup", "restore", "verify"]

FORMAT = 2
"""2: the manifest is sealed by :data:`MANIFEST_DIGEST`; 1 (still read): it was not."""
MANIFEST = "manifest.json"
MANIFEST_DIGEST = "manifest.sha256"
DATABASE = "database.dump"
CORTEX = "cortex"
FORCE_HINT = "pass force=True"
"""How a library caller replaces a non-empty target; the command line says ``use --force``."""

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
    _swept(target.parent, say)
    with _staging.staging(target.parent, _staging.BACKUP) as staging:
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


def _swept(parent: Path, say: Stage) -> None:
    """Remove what a killed backup or restore left in ``parent`` (issue 39 item 8), and say so."""
    for removed in _staging.sweep(parent, (_staging.BACKUP, _staging.RESTORE)):
        say(f"removed stale staging {removed}")


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
                seal = f"{hashlib.sha256(data).hexdigest()}  {MANIFEST}\n".encode()
                mtime = int(manifest.created_at.timestamp())
                _add_bytes(tar, MANIFEST, data, mtime)
                _add_bytes(tar, MANIFEST_DIGEST, seal, mtime)
                for name, path in _members(staging):
                    tar.add(path, arcname=name, recursive=False)
            raw.flush()
            os.fsync(raw.fileno())
        os.replace(partial, target)
        _sync_dir(target.parent)
    finally:
        partial.unlink(missing_ok=True)


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes, mtime: int) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mtime = len(data), mtime
    tar.addfile(info, io.BytesIO(data))


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
    """Check a backup file without restoring it: its manifest against its seal, every member's
    checksum, nothing missing or extra, a schema this mnemo can open. Returns the manifest."""
    source = Path(path).expanduser()
    if not source.is_file():
        raise BackupError(f"no backup file at {source}")
    try:
        with tarfile.open(source, mode="r:") as tar:
            manifest, header = _read_manifest(tar, source)
            seen = _check_members(tar, manifest, source, header)
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


def _read_manifest(tar: tarfile.TarFile, source: Path) -> tuple[BackupManifest, int]:
    """The manifest, checked against its seal; and how many members come before the described ones
    (2: the manifest and its seal; 1: a format 1 file, made before manifests were sealed)."""
    first = tar.next()
    if first is None or first.name != MANIFEST or not first.isfile():
        raise BackupError(f"{source} is not a mnemo backup (it does not start with {MANIFEST})")
    data = _read_member(tar, first)
    second = tar.next()
    sealed = second is not None and second.name == MANIFEST_DIGEST and second.isfile()
    if second is not None and sealed:
        _check_seal(data, _read_member(tar, second), source)
    manifest = _parse_manifest(data, source)
    if not sealed and manifest.format != 1:
        raise BackupError(f"{source} is damaged: {MANIFEST_DIGEST} is missing, so its manifest cannot be trusted")
    return manifest, 2 if sealed else 1


def _read_member(tar: tarfile.TarFile, member: tarfile.TarInfo) -> bytes:
    handle = tar.extractfile(member)
    assert handle is not None
    return handle.read()


def _check_seal(manifest: bytes, seal: bytes, source: Path) -> None:
    recorded = seal.decode("ascii", "replace").split()[:1]
    if recorded != [hashlib.sha256(manifest).hexdigest()]:
        raise BackupError(
            f"{source} cannot be trusted: {MANIFEST} was edited or damaged (its sha256 is not the one "
            f"{MANIFEST_DIGEST} records)"
        )


def _parse_manifest(data: bytes, source: Path) -> BackupManifest:
    try:
        manifest = _manifest_adapter.validate_json(data)
    except ValidationError as exc:
        raise BackupError(f"{source} has a damaged manifest: {exc.errors()[0]['msg']}") from exc
    if manifest.format > FORMAT:
        raise BackupError(
            f"{source} was made by a newer mnemo (backup format {manifest.format}, this one reads formats 1 to "
            f"{FORMAT}): upgrade mnemo to restore it"
        )
    if manifest.format < 1:
        raise BackupError(f"{source} has backup format {manifest.format}, which no mnemo writes")
    return manifest


def _check_members(tar: tarfile.TarFile, manifest: BackupManifest, source: Path, header: int) -> set[str]:
    seen: set[str] = set()
    for index, member in enumerate(tar):
        if index < header:
            continue
        name = member.name
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
    path: str | os.PathLike[str],
    settings: Settings,
    *,
    force: bool = False,
    progress: Stage | None = None,
    force_hint: str = FORCE_HINT,
) -> BackupManifest:
    """Restore a backup into the home/database of ``settings``, which must hold no mnemo data
    unless ``force`` (then it is replaced). All or nothing: checked against the manifest before
    it commits; a failure leaves the target as it was. ``force_hint``: how the caller's user asks
    for ``force``, in the refusal's words."""
    say = progress or (lambda _: None)
    say("verifying")
    source = Path(path)
    manifest = await asyncio.to_thread(verify, source)
    url = settings.database_url
    if url is None:
        url = await asyncio.to_thread(embedded_url, settings.home)
    parent = settings.home if settings.database_url is None else Path(tempfile.gettempdir())
    parent.mkdir(parents=True, exist_ok=True)
    _swept(parent, say)
    with _staging.staging(parent, _staging.RESTORE) as staging:
        say("reading")
        await asyncio.to_thread(_extract, source, staging)
        await asyncio.to_thread(_check_cortex, staging / CORTEX, manifest)
        existing, old = await _check_target(url, settings, force, force_hint)
        swap = plan(settings, url, manifest, old)
        await _apply(swap, staging, url, sorted({*existing, *manifest.schemas}), manifest, say)
    return manifest


def _extract(source: Path, staging: Path) -> None:
    with tarfile.open(source.expanduser(), mode="r:") as tar:
        tar.extractall(staging, filter="data")


def _check_cortex(directory: Path, manifest: BackupManifest) -> None:
    """The extracted cortex holds the tables, versions and rows the manifest names (before it is placed)."""
    versions, rows = _lance_facts(directory)
    _compare("cortex versions", versions, manifest.cortex_versions)
    _compare("cortex rows", rows, manifest.cortex_rows)


def _compare(what: str, found: Mapping[str, int], expected: Mapping[str, int]) -> None:
    differ = sorted(k for k in {*found, *expected} if found.get(k) != expected.get(k))
    if differ:
        k = differ[0]
        raise BackupError(
            f"the backup's cortex does not match its manifest: {what} differ for {len(differ)} tables, e.g. "
            f"{k}: {found.get(k)} in the file, {expected.get(k)} in the manifest; nothing was restored"
        )


async def _check_target(url: str, settings: Settings, force: bool, hint: str) -> tuple[list[str], str | None]:
    """The target's schemas and its cortex id, once what an interrupted restore left is settled;
    refuses a target holding data unless ``force``."""
    with wrap_exceptions(url):
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            await check_pgvector(conn)
            existing = await backup_rows.schemas(conn)
            rows = await backup_rows.target_rows(conn)
            old = await backup_rows.cortex_id(conn)
    interrupted = Swap.read(journal(settings, url))
    if interrupted is not None:
        await asyncio.to_thread(interrupted.settle, old)
    if rows and not force:
        raise BackupError(
            f"the target database {redact(url)} already holds {rows} rows of mnemo data; restore into an "
            f"empty home or database, or {hint} to replace it"
        )
    return existing, old


async def _apply(swap: Swap, staging: Path, url: str, names: list[str], manifest: BackupManifest, say: Stage) -> None:
    """Place the cortex, then load and check the database in one transaction; on any failure, put
    the disk back as it was (unless the database part committed after all)."""
    await asyncio.to_thread(swap.write)
    try:
        if swap.dest is not None:
            say("cortex")
            await asyncio.to_thread(swap.place, staging / CORTEX)
        say("database")
        before, after = backup_rows.restore_scripts(names, uuid.UUID(swap.cortex_id), manifest.counts)
        (staging / "before.sql").write_text(before)
        (staging / "after.sql").write_text(after)
        with wrap_exceptions(url):
            await backup_rows.load(url, staging / DATABASE, staging / "before.sql", staging / "after.sql")
    except BaseException:
        await _settle_after_failure(swap, url)
        raise
    await asyncio.to_thread(swap.finish)


async def _settle_after_failure(swap: Swap, url: str) -> None:
    try:
        with wrap_exceptions(url):
            async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
                current = await backup_rows.cortex_id(conn)
    except MnemoError:
        return  # the database cannot say whether it committed: the next restore settles it
    await asyncio.to_thread(swap.settle, current)
