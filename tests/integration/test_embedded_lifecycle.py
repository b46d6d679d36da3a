"""The embedded PostgreSQL never outlives its owners (issue 12).

Every test runs real ``mnemo`` processes against their own ``MNEMO_HOME`` with no
``MNEMO_DATABASE_URL``, so each starts (and must stop) its own embedded server:
SIGTERM and SIGINT stop ``serve``, ``worker`` and ``mcp`` cleanly (exit 0, server
stopped by its last owner); an owner killed with SIGKILL is pruned from the handle
file by the next start, which then stops the server when it exits; the watchdog
stops a server whose last owner was killed without any further start; concurrent
first starts share one server. One fast test checks the pruning rule on a fake
data directory.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

MNEMO = str(Path(sys.executable).parent / "mnemo")
START_TIMEOUT = 45.0


def alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie waiting to be reaped counts as dead)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state not in ("Z", "X")


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    home = tmp_path / "home"
    yield home
    pid = server_left(home)
    if pid is not None:  # a failed test must not leave its server behind
        os.kill(pid, signal.SIGQUIT)


@pytest.fixture
def env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMO_") or k == "MNEMO_MODEL_CACHE"}
    env["MNEMO_HOME"] = str(home)
    return env


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def postmaster_pid(home: Path) -> int | None:
    try:
        return int((home / "pgdata" / "postmaster.pid").read_text().split()[0])
    except (OSError, IndexError, ValueError):
        return None


def handle_pids(home: Path) -> list[int]:
    path = home / "pgdata" / ".handle_pids.json"
    text = path.read_text().strip() if path.exists() else ""
    return list(json.loads(text)) if text else []


def server_left(home: Path) -> int | None:
    """The pid of a postgres still running for ``home``, or None."""
    pid = postmaster_pid(home)
    return pid if pid is not None and alive(pid) else None


def wait_until(predicate: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return
        time.sleep(0.2)
    pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}")


def healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as resp:
            return bool(resp.status == 200)
    except OSError:
        return False


@pytest.fixture
def procs() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Processes a test starts; any still running at the end are killed (and the server with them)."""
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for stream in (proc.stdin, proc.stderr):
            if stream is not None:
                stream.close()


def start_serve(env: dict[str, str], procs: list[subprocess.Popen[bytes]]) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    proc = subprocess.Popen(
        [MNEMO, "serve", "--port", str(port)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    procs.append(proc)

    def ready() -> bool:
        if proc.poll() is not None:
            pytest.fail(f"mnemo serve exited with {proc.returncode}: {proc.stderr.read().decode()}")  # type: ignore[union-attr]
        return healthy(port)

    wait_until(ready, START_TIMEOUT, "mnemo serve to answer /health")
    return proc, port


def assert_stopped_cleanly(proc: subprocess.Popen[bytes], home: Path) -> None:
    code = proc.wait(timeout=30)
    stderr = proc.stderr.read().decode() if proc.stderr else ""
    assert code == 0, f"exit status {code}; stderr:\n{stderr}"
    assert server_left(home) is None, f"postgres {postmaster_pid(home)} still runs for {home}"
    assert not (home / "pgdata" / "postmaster.pid").exists()
    assert handle_pids(home) == []


def kill_watchdog(home: Path) -> None:
    path = home / "pgdata" / ".mnemo_watchdog.json"
    if path.exists():
        pid = int(json.loads(path.read_text())["pid"])
        if alive(pid):
            os.kill(pid, signal.SIGKILL)
            wait_until(lambda: not alive(pid), 5, "the watchdog to die")


def run_cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MNEMO, *args], env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_serve_stops_cleanly_on_signal(
    sig: signal.Signals, env: dict[str, str], home: Path, procs: list[subprocess.Popen[bytes]]
) -> None:
    proc, port = start_serve(env, procs)
    pg = server_left(home)
    assert pg is not None and handle_pids(home) == [proc.pid]
    if sig == signal.SIGTERM:  # a second process on the same home shares the server and leaves it running
        done = run_cli(env, "status", "--json")
        assert done.returncode == 0, done.stderr
        assert server_left(home) == pg and handle_pids(home) == [proc.pid] and healthy(port)
    proc.send_signal(sig)
    assert_stopped_cleanly(proc, home)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("command", "sig"),
    [(["worker"], signal.SIGTERM), (["mcp"], signal.SIGTERM), (["mcp"], signal.SIGINT)],
    ids=["worker-SIGTERM", "mcp-SIGTERM", "mcp-SIGINT"],
)
def test_worker_and_mcp_stop_cleanly_on_signal(
    command: list[str], sig: signal.Signals, env: dict[str, str], home: Path, procs: list[subprocess.Popen[bytes]]
) -> None:
    proc = subprocess.Popen(
        [MNEMO, *command], env=env, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    procs.append(proc)

    def owns_server() -> bool:
        if proc.poll() is not None:
            pytest.fail(f"mnemo {command[0]} exited with {proc.returncode}")
        return server_left(home) is not None and proc.pid in handle_pids(home)

    wait_until(owns_server, START_TIMEOUT, f"mnemo {command[0]} to start the embedded server")
    time.sleep(3)  # let it finish opening the archive and settle into its loop
    proc.send_signal(sig)
    assert_stopped_cleanly(proc, home)


@pytest.mark.slow
def test_killed_owner_is_pruned_and_the_next_start_stops_the_server(
    env: dict[str, str], home: Path, procs: list[subprocess.Popen[bytes]]
) -> None:
    proc, _ = start_serve(env, procs)
    pg = server_left(home)
    assert pg is not None
    kill_watchdog(home)  # lost too (say, the whole machine's processes were killed): the next start must clean up
    proc.kill()
    proc.wait()
    assert server_left(home) == pg and handle_pids(home) == [proc.pid]  # the crash left both behind
    done = run_cli(env, "status", "--json")
    assert done.returncode == 0, done.stderr
    assert server_left(home) is None, "the next start did not stop the server it attached to"
    assert proc.pid not in handle_pids(home) and handle_pids(home) == []


@pytest.mark.slow
def test_watchdog_stops_the_server_after_its_last_owner_is_killed(
    env: dict[str, str], home: Path, procs: list[subprocess.Popen[bytes]]
) -> None:
    proc, _ = start_serve(env, procs)
    assert server_left(home) is not None
    proc.kill()
    proc.wait()
    wait_until(lambda: server_left(home) is None, 20, "the watchdog to stop the orphaned server")
    assert handle_pids(home) == []


def test_dead_and_recycled_owner_pids_are_pruned(tmp_path: Path) -> None:
    from mnemo.store import _owners

    pgdata = tmp_path / "pgdata"
    pgdata.mkdir()
    (pgdata / "postmaster.pid").write_text(f"{os.getpid()}\n")  # this process plays the running postmaster
    dead = _exited_pid()
    me, parent = os.getpid(), os.getppid()
    (pgdata / ".handle_pids.json").write_text(json.dumps([me, dead, parent]))
    # The parent's pid is recorded with another start time: the owner that had it died and the pid was reused.
    starts = {str(me): _owners._started(me), str(parent): 1.0}
    (pgdata / ".mnemo_owners.json").write_text(json.dumps(starts))
    with _owners.locked():
        assert _owners.live_owners(pgdata) == [me]
    assert handle_pids(pgdata.parent) == [me]
    assert json.loads((pgdata / ".mnemo_owners.json").read_text()) == {str(me): starts[str(me)]}
    (pgdata / "postmaster.pid").unlink()  # no server runs: nobody owns it
    with _owners.locked():
        assert _owners.live_owners(pgdata) == []
    assert handle_pids(pgdata.parent) == []


def _exited_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


@pytest.mark.slow
def test_concurrent_first_starts_share_one_server_and_stop_it(env: dict[str, str], home: Path) -> None:
    procs = [
        subprocess.Popen(
            [MNEMO, "status", "--json"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(3)
    ]
    results = [proc.communicate(timeout=60) for proc in procs]
    for proc, (_, stderr) in zip(procs, results, strict=True):
        assert proc.returncode == 0, stderr  # none loses the race to create the database or the extension
    assert server_left(home) is None and handle_pids(home) == []
