"""Staging directories of backups and restores, and the stale ones a killed process left behind.

A backup stages its snapshot in ``.mnemo-backup-…`` beside its target, a restore the backup's
contents in ``.mnemo-restore-…`` in the home; both are removed when the run ends, but a SIGKILL
leaves them (a backup's database dump and cortex copy: as large as the archive). Each directory's
name carries its owner (a digest of the host name and the process id), so the next backup, restore
or ``mnemo status`` can tell a dead owner's leftovers from a run in progress, remove them and say so
(issue 39 item 8). A directory without an owner in its name (an older mnemo) is stale once it has
not changed for :data:`ORPHAN_AGE` seconds.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import socket
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

__all__ = ["BACKUP", "ORPHAN_AGE", "RESTORE", "staging", "sweep"]

BACKUP = ".mnemo-backup-"
RESTORE = ".mnemo-restore-"
ORPHAN_AGE = 3600
_log = logging.getLogger("mnemo")
_OWNED = re.compile(r"^\.mnemo-(?:backup|restore)-([0-9a-f]{8})-(\d+)-")


def _host() -> str:
    return hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]


@contextmanager
def staging(parent: Path, prefix: str) -> Iterator[Path]:
    """A fresh staging directory in ``parent`` named for this process; removed when the block ends."""
    with tempfile.TemporaryDirectory(dir=parent, prefix=f"{prefix}{_host()}-{os.getpid()}-") as tmp:
        yield Path(tmp)


def sweep(parent: Path, prefixes: Sequence[str]) -> list[str]:
    """Remove the staging directories in ``parent`` whose owner is dead; returns what it removed,
    each as ``"<path> (<size>)"``, and logs each one."""
    if not parent.is_dir():
        return []
    removed = []
    for path in sorted(parent.iterdir()):
        if path.name.startswith(tuple(prefixes)) and path.is_dir() and not path.is_symlink() and _stale(path):
            size = _size(path)
            shutil.rmtree(path, ignore_errors=True)
            if not path.exists():
                removed.append(f"{path} ({size / 1e6:.1f} MB)")
                _log.warning("removed %s (%.1f MB), staging left by a backup or restore that died", path, size / 1e6)
    return removed


def _stale(path: Path) -> bool:
    owned = _OWNED.match(path.name)
    if owned is None:  # no owner in the name: stale once nothing has touched it for a while
        return time.time() - path.stat().st_mtime > ORPHAN_AGE
    host, pid = owned.group(1), int(owned.group(2))
    return host == _host() and not _alive(pid)  # another host's run is its own to clean


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())
