"""Portability (archive-adr §6): backup and restore, bifocal packets, forks and merges, in one home.

:class:`Portability` is ``archive.portability`` (issue 41 item 1). :meth:`Portability.restore`
and :meth:`Portability.verify_backup` need no open archive: ``AsyncArchive.portability.restore(...)``.

Inside: :mod:`.backup` (one file, one consistent snapshot of both stores; its staging and undo log
in the private ``_staging`` and ``_restore_disk``), :mod:`.packet_format` (packets as JSON lines:
parse, encode, export), :mod:`.packet_import` (all of them or none), :mod:`.packet_state` and
:mod:`.packet_copy` (the consolidated state a whole copy carries), :mod:`.forks` (branch, discard,
merge). The rows are in ``store/packets.py``, ``store/copy_state.py`` and ``store/snapshots.py``.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterable, Sequence
from pathlib import Path
from typing import Any, TextIO

from mnemo._runtime import Runtime
from mnemo._validate import check_id, check_process
from mnemo.admin import startup
from mnemo.config import Settings
from mnemo.errors import MalformedImportError
from mnemo.models import BackupManifest, PacketImport, Scope
from mnemo.portability import backup as backup_path
from mnemo.portability import forks as forks_path
from mnemo.portability import packet_format as packets_path
from mnemo.portability import packet_import

__all__ = ["BackupProgress", "Portability"]

BackupProgress = backup_path.Stage


class Portability:
    """Backups, bifocal packets and forks of an open archive: ``archive.portability``."""

    PACKET: type[packets_path.PacketIn] = packets_path.PacketIn
    """The bifocal packet's model (memory-architecture §6.2): what :meth:`packets` yields, as JSON."""

    def __init__(self, runtime: Runtime) -> None:
        self._rt = runtime

    async def backup(
        self, path: str | Path, *, compression: int = 1, progress: BackupProgress | None = None
    ) -> BackupManifest:
        """Write the whole archive (database and cortex, one consistent snapshot) to the file ``path``
        while writes go on; the file appears only when complete (``mnemo backup``). ``compression``:
        the database dump's gzip level, 0 (none, fastest) to 9; ``progress`` is called with each
        stage's name."""
        return await backup_path.backup(self._rt, path, compression=compression, progress=progress)

    @staticmethod
    async def restore(
        path: str | Path,
        settings: Settings | None = None,
        *,
        force: bool = False,
        progress: BackupProgress | None = None,
        force_hint: str = backup_path.FORCE_HINT,
        **overrides: Any,
    ) -> BackupManifest:
        """Restore a backup into the home or database of ``settings`` (and ``overrides``), which must
        hold no mnemo data unless ``force``; all or nothing, checked against the manifest before it
        commits, so a failed restore leaves the target as it was (``mnemo restore``). Open the
        archive afterwards as usual. ``force_hint``: how the caller's user asks for ``force``, in
        the refusal's words."""
        target = startup.settings_of(settings, overrides)
        return await backup_path.restore(path, target, force=force, progress=progress, force_hint=force_hint)

    @staticmethod
    def verify_backup(path: str | Path) -> BackupManifest:
        """Check a backup file (manifest, checksums, schema version) without restoring it."""
        return backup_path.verify(path)

    def packets(
        self, scope: Scope, *, as_entity: str | None = None, ids: Sequence[uuid.UUID | str] | None = None
    ) -> AsyncIterator[dict[str, Any]]:
        """``scope``'s turns and memories as bifocal packets (JSON-ready dicts), or only memories ``ids``.
        Needs the owner, or a grant with ``export`` for ``as_entity``."""
        chosen = None if ids is None else [check_id(i, label="memory id") for i in ids]
        return packets_path.export_packets(self._rt, scope, as_entity or scope.entity_id, ids=chosen)

    async def export_packets(self, scope: Scope, file: str | Path | TextIO, *, as_entity: str | None = None) -> int:
        """Write ``scope``'s packets to ``file`` (a path, or an open text file such as stdout), one
        JSON line each (``mnemo export``); returns how many."""
        packets = self.packets(scope, as_entity=as_entity)
        first = await anext(packets, None)  # access and existence are checked here, before a file is made
        if isinstance(file, str | Path):
            with await asyncio.to_thread(Path(file).open, "w", encoding="utf-8") as handle:
                return await _write_packets(first, packets, handle)
        return await _write_packets(first, packets, file)

    async def import_packets(
        self, scope: Scope, source: str | Path | Iterable[str], *, strict: bool = False, process: str = "import"
    ) -> PacketImport:
        """Import bifocal packets (a JSONL file, or its lines) into ``scope`` (``mnemo import-packets``).
        Every packet is checked first; packets this scope imported before are skipped (idempotent);
        a packet without a vector of the active model is embedded again, or refused with ``strict``."""
        limit, skew = self._rt.settings.max_content_chars, self._rt.settings.clock_skew_hours
        if isinstance(source, str | Path):
            text = await asyncio.to_thread(_read_text, Path(source))
            parsed = packets_path.parse_packets(text.splitlines(), source=str(source), max_chars=limit, skew_hours=skew)
        else:
            parsed = packets_path.parse_packets(source, max_chars=limit, skew_hours=skew)
        process = check_process(process)
        return await packet_import.import_packets(self._rt, scope, parsed, strict=strict, process=process)

    async def fork(self, scope: Scope, into: str) -> Scope:
        """Branch ``scope`` into the new namespace ``into`` (a speculative timeline): a copy with its
        provenance, whose writes are attributed to ``fork:<into>`` and never reach ``scope``."""
        branch, _ = await forks_path.fork(self._rt, scope, into)
        return branch

    async def discard(self, fork: Scope) -> dict[str, int]:
        """Drop a fork and everything in it; rows removed per place."""
        return await forks_path.discard(self._rt, fork)

    async def merge(self, fork: Scope, memory_ids: Sequence[uuid.UUID | str]) -> PacketImport:
        """Bring chosen memories of a fork back into the scope it branched from, with their provenance."""
        return await forks_path.merge(self._rt, fork, memory_ids)


async def _write_packets(first: dict[str, Any] | None, rest: AsyncIterator[dict[str, Any]], file: TextIO) -> int:
    """Write ``first`` and then ``rest`` as JSON lines to ``file``; returns how many."""
    if first is None:
        return 0
    count, lines = 1, [packets_path.dumps(first) + "\n"]
    async for packet in rest:
        lines.append(packets_path.dumps(packet) + "\n")
        count += 1
        if len(lines) >= 500:
            await asyncio.to_thread(file.writelines, lines)
            lines = []
    await asyncio.to_thread(file.writelines, lines)
    return count


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise MalformedImportError(f"cannot read packets from {path}: {exc}") from exc
