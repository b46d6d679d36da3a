"""Chaos soak: writers, mutating readers and nights while the service and the worker are killed.

    .venv/bin/python benchmarks/chaos.py [--seconds 600] [--kill-every 30 90] [--writers 8]
        [--readers 8] [--retry-unacked] [--seed 0] [--json chaos.json]

As trusted databases test themselves (Jepsen's ledger of acknowledged writes): in a throw-away
``MNEMO_HOME`` on the embedded PostgreSQL, on 127.0.0.1 only, for ``--seconds``:

- ``--writers`` clients write turns and memories over HTTP, each write carrying a unique marker
  and the process tag ``chaos``; a 2xx answer is an acknowledgement. With ``--retry-unacked`` a
  writer sends a write that got no acknowledgement (a connection error, a reply cut off by a kill,
  a 5xx) again, as a careful client does, until it is acknowledged: a turn with the same
  ``Idempotency-Key`` (and ``idempotency_key`` field, where the service declares it), a memory
  with the same content (``remember`` stores a text a scope already holds once); so a write that
  was committed before its reply was lost must not be stored twice;
- ``--readers`` clients ask mutating recalls (reinforcement, co-access, near-miss suppression);
- a ``mnemo worker`` runs the night for the scope every minute (``MNEMO_NIGHT_CRON``);
- every ``--kill-every MIN MAX`` seconds (drawn from the seeded generator) the service, the
  worker or both get SIGKILL and are started again (both at once also takes the embedded server
  down with them: its watchdog stops it, and the restart brings up a new one).

Then everything is stopped with SIGTERM, and the books are checked straight in PostgreSQL: every
acknowledged write is stored exactly once; nothing is stored twice; whatever is stored is stored
whole (its vector beside it, unless the night moved it to the long-term tier); ``mnemo status``
and a recall work; no postgres process, owner entry or advisory lock is left behind. Clients may
see connection errors and 503s while a process is down (expected); a 500 is a failure. Exits
non-zero when any check fails. ``tests/integration/test_chaos.py`` runs a 60 s version.

The report also counts what the clients waited for (issue 39 item 6): every 503 by its code
(``busy``: no turn at the service's door; ``unavailable``: the database is away), those within
``RESTART_WINDOW`` seconds of the service coming back from a kill, every request that took 30 s
or more (the old pool time-out), the slowest request, and the service log's failed read index
builds and pool time-outs. The clients wait up to ``CLIENT_TIMEOUT`` seconds for an answer and
honour ``Retry-After``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psycopg
from psycopg import sql

MNEMO = str(Path(sys.executable).with_name("mnemo"))
SCOPE = ("chaos", "default")
PROCESS = "chaos"
TOPICS = ("hiking", "cooking", "chess", "the garden", "the dog", "guitar", "Lisbon", "the new job")
START_TIMEOUT = 120.0
CLIENT_TIMEOUT = 120.0  # longer than the old 30 s pool time-out, so such a wait is seen, not cut off
LONG_WAIT = 30.0
RESTART_WINDOW = 60.0  # a 503 this soon after the service came back counts as "after a restart"


@dataclass
class Ledger:
    """What the clients saw: acknowledged and unacknowledged markers, answers by kind."""

    acked: dict[str, str] = field(default_factory=dict)  # marker -> "turn" | "memory"
    unacked: dict[str, str] = field(default_factory=dict)
    answers: Counter[str] = field(default_factory=Counter)  # "write 201", "recall 200", "recall connection", ...
    failures: list[str] = field(default_factory=list)  # the first 500s, with their bodies
    retries: int = 0  # writes sent again after no acknowledgement (--retry-unacked)
    acked_on_retry: int = 0
    unavailable: Counter[str] = field(default_factory=Counter)  # 503s by error code
    after_restart: Counter[str] = field(default_factory=Counter)  # 503s within RESTART_WINDOW of a restart
    long_waits: int = 0  # requests answered (or given up) after LONG_WAIT seconds or more
    slowest: float = 0.0
    restarts: list[float] = field(default_factory=list)  # when the service answered /health again
    stop_retrying: float = float("inf")  # a write unacknowledged by then stays so

    def note(self, what: str, response: httpx.Response | None, error: str | None = None) -> None:
        key = f"{what} {error}" if response is None else f"{what} {response.status_code}"
        self.answers[key] += 1
        failed = response is not None and response.status_code >= 500 and response.status_code != 503
        if failed and response is not None and len(self.failures) < 20:
            self.failures.append(f"{what} {response.status_code}: {response.text[:300]}")
        if response is not None and response.status_code == 503:
            code = _error_code(response)
            self.unavailable[code] += 1
            now = time.monotonic()
            if any(0 <= now - at <= RESTART_WINDOW for at in self.restarts):
                self.after_restart[code] += 1

    def waited(self, seconds: float) -> None:
        self.slowest = max(self.slowest, seconds)
        self.long_waits += seconds >= LONG_WAIT


def _error_code(response: httpx.Response) -> str:
    try:
        return str(response.json()["error"]["code"])
    except (ValueError, KeyError, TypeError):
        return "not json"


class Processes:
    """``mnemo serve`` and ``mnemo worker`` on one home: started, killed and started again."""

    def __init__(self, home: Path, env: dict[str, str], port: int, logs: Path) -> None:
        self.home, self.env, self.port, self.logs = home, env, port, logs
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.kills: Counter[str] = Counter()
        self.restarts: list[float] = []  # when the service answered /health after a kill

    def _command(self, name: str) -> list[str]:
        return [MNEMO, "serve", "--port", str(self.port)] if name == "serve" else [MNEMO, "worker"]

    async def start(self, name: str) -> None:
        log = (self.logs / f"{name}.log").open("ab")
        self.procs[name] = subprocess.Popen(  # noqa: ASYNC220 (a child process, not a blocking call)
            self._command(name), env=self.env, stdout=log, stderr=log
        )
        if name == "serve":
            await self._wait_healthy()

    async def _wait_healthy(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        async with httpx.AsyncClient(timeout=2) as client:
            while time.monotonic() < deadline:
                if self.procs["serve"].poll() is not None:
                    tail = (self.logs / "serve.log").read_text(errors="replace")[-2000:]
                    raise SystemExit(f"mnemo serve exited with {self.procs['serve'].returncode}:\n{tail}")
                try:
                    if (await client.get(f"http://127.0.0.1:{self.port}/health")).status_code == 200:
                        return
                except httpx.TransportError:
                    pass
                await asyncio.sleep(0.2)
        raise SystemExit("mnemo serve did not answer /health in time")

    async def kill(self, names: tuple[str, ...]) -> None:
        for name in names:
            proc = self.procs[name]
            proc.send_signal(signal.SIGKILL)
            await asyncio.to_thread(proc.wait)
            self.kills[name] += 1
        for name in names:
            await self.start(name)
            if name == "serve":
                self.restarts.append(time.monotonic())

    async def stop(self) -> dict[str, int]:
        """SIGTERM to both; their exit statuses (0 when they stopped cleanly)."""
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        return {name: await asyncio.to_thread(proc.wait, 120) for name, proc in self.procs.items()}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MNEMO, *args], env=env, capture_output=True, text=True, timeout=300, check=False)


async def _post(
    client: httpx.AsyncClient,
    ledger: Ledger,
    what: str,
    path: str,
    body: dict[str, Any],
    headers: dict[str, str] | None = None,
) -> int | None:
    """One request: its status (None: no answer). Connection errors pause the client a little; a 503
    pauses it as long as its ``Retry-After`` says."""
    started = time.monotonic()
    try:
        response = await client.post(path, json=body, headers=headers)
    except httpx.TransportError as exc:
        ledger.waited(time.monotonic() - started)
        ledger.note(what, None, "connection" if isinstance(exc, httpx.ConnectError) else type(exc).__name__)
        await asyncio.sleep(0.2)
        return None
    ledger.waited(time.monotonic() - started)
    ledger.note(what, response)
    if response.status_code == 503:
        await asyncio.sleep(min(float(response.headers.get("retry-after", "0.2")), 5.0))
    return response.status_code


@dataclass(frozen=True)
class Writes:
    """How the writers write: whether they retry unacknowledged writes, and whether the service's
    turns take an ``idempotency_key`` field (else only the ``Idempotency-Key`` header is sent)."""

    retry: bool
    key_field: bool


async def _write(client: httpx.AsyncClient, ledger: Ledger, how: Writes, n: int, i: int, text: str) -> bool:
    """Send write ``i`` of writer ``n`` (until acknowledged, when retrying); True when acknowledged."""
    key = text.split(" ", 1)[0]  # the marker names the write: every attempt of it carries the same key
    if i % 2 == 0:
        path, body = "/v1/turns", {"session": f"s{n}", "role": "user", "content": text, "process": PROCESS}
        body |= {"idempotency_key": key} if how.key_field else {}
        headers = {"Idempotency-Key": key}
    else:
        path, body, headers = "/v1/memories", {"content": text, "process": PROCESS}, {}
    tries = 0
    while True:
        status = await _post(client, ledger, "write", path, body, headers)
        if status is not None and 200 <= status < 300:
            ledger.acked_on_retry += tries > 0
            return True
        if not how.retry or (status is not None and status < 500) or time.monotonic() >= ledger.stop_retrying:
            return False  # a 4xx is an answer: sending it again would get the same
        tries += 1
        ledger.retries += 1


async def _writer(
    client: httpx.AsyncClient, ledger: Ledger, how: Writes, n: int, deadline: float, rng: random.Random
) -> None:
    i = 0
    while time.monotonic() < deadline:
        marker = f"mark{n}x{i}x{uuid.uuid4().hex[:8]}"
        text = f"{marker} Maya talked about {rng.choice(TOPICS)} with {rng.choice(TOPICS)}"
        ok = await _write(client, ledger, how, n, i, text)
        (ledger.acked if ok else ledger.unacked)[marker] = "turn" if i % 2 == 0 else "memory"
        i += 1


async def _reader(client: httpx.AsyncClient, ledger: Ledger, deadline: float, rng: random.Random) -> None:
    while time.monotonic() < deadline:
        query = f"what did Maya say about {rng.choice(TOPICS)}?"
        await _post(client, ledger, "recall", "/v1/recall", {"query": query, "k": 8})


VICTIMS: tuple[tuple[str, ...], ...] = (("serve",), ("worker",), ("serve", "worker"))


async def _killer(procs: Processes, deadline: float, every: tuple[float, float], rng: random.Random) -> None:
    """Kill in rounds of the three choices in a seeded order: any two kills in a row take the service."""
    while True:
        for victims in rng.sample(VICTIMS, len(VICTIMS)):
            await asyncio.sleep(rng.uniform(*every))
            if time.monotonic() >= deadline:
                return
            await procs.kill(victims)


def _books(url: str, ledger: Ledger) -> dict[str, Any]:
    """The stored markers, straight from PostgreSQL: how often each is stored and whether whole."""
    with psycopg.connect(url) as conn:
        tables = [r[0] for r in conn.execute("SELECT table_name FROM vectors.spaces")]
        has_vector = sql.SQL(" OR ").join(
            sql.SQL("EXISTS (SELECT 1 FROM vectors.{} v WHERE v.entity_id = x.entity_id AND v.item_id = x.id)").format(
                sql.Identifier(t)
            )
            for t in tables
        ) if tables else sql.SQL("false")  # fmt: skip
        query = sql.SQL(
            """SELECT split_part(content, ' ', 1), 'turn', ({v}) FROM mnemo.turns x
               WHERE entity_id = %(e)s AND namespace = %(n)s AND process_id = %(p)s
               UNION ALL
               SELECT split_part(content, ' ', 1), 'memory', ({v}) OR tier = 'cortex' FROM mnemo.memories x
               WHERE entity_id = %(e)s AND namespace = %(n)s AND process_id = %(p)s"""
        ).format(v=has_vector)
        rows = conn.execute(query, {"e": SCOPE[0], "n": SCOPE[1], "p": PROCESS}).fetchall()
        nights = conn.execute(
            "SELECT count(*) FILTER (WHERE finished_at IS NOT NULL), count(*) FROM mnemo.night_runs "
            "WHERE entity_id = %s AND namespace = %s",
            SCOPE,
        ).fetchone()
        others = conn.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid <> pg_backend_pid()"
        ).fetchone()
    stored = Counter(marker for marker, _, _ in rows)
    broken = sorted({marker for marker, _, whole in rows if not whole})
    return {
        "acknowledged": len(ledger.acked),
        "acknowledged_found": sum(1 for m in ledger.acked if stored[m] >= 1),
        "acknowledged_lost": sorted(m for m in ledger.acked if stored[m] == 0)[:20],
        "lost_count": sum(1 for m in ledger.acked if stored[m] == 0),
        "duplicated": sorted(m for m, n in stored.items() if n > 1)[:20],
        "duplicated_count": sum(1 for n in stored.values() if n > 1),
        "unacknowledged": len(ledger.unacked),
        "unacknowledged_stored_whole": sum(1 for m in ledger.unacked if stored[m] == 1 and m not in broken),
        "stored_not_whole": broken[:20],
        "strangers": sorted(m for m in stored if m not in ledger.acked and m not in ledger.unacked)[:20],
        "nights_finished": nights[0] if nights else 0,
        "nights_started": nights[1] if nights else 0,
        "advisory_locks_left": others[0] if others else 0,
    }


def _verify(home: Path, env: dict[str, str], ledger: Ledger) -> dict[str, Any]:
    """After the stop: status and a recall through the command line, then the books in PostgreSQL."""
    status = _cli(env, "status", "--json")
    recall = _cli(env, "recall", "what did Maya say about chess?", "-e", SCOPE[0], "-n", SCOPE[1], "--json")
    from mnemo.store.server import embedded_url, release_embedded

    url = embedded_url(home)
    try:
        books = _books(url, ledger)
    finally:
        release_embedded()
    return books | {
        "status_ok": status.returncode == 0,
        "recall_ok": recall.returncode == 0 and bool(json.loads(recall.stdout or "{}")),
    }


def _leftovers(home: Path) -> dict[str, Any]:
    pid_file = home / "pgdata" / "postmaster.pid"
    handles = home / "pgdata" / ".handle_pids.json"
    owners = json.loads(handles.read_text() or "[]") if handles.exists() else []
    return {"postgres_left": pid_file.exists(), "owners_left": owners}


def failures(report: dict[str, Any]) -> list[str]:
    """What broke the promises (empty: the soak passed)."""
    checks = {
        "an acknowledged write is missing": report["acknowledged_lost"],
        "a write is stored more than once": report["duplicated"],
        "a stored write is not whole": report["stored_not_whole"],
        "a marker nobody wrote is stored": report["strangers"],
        "clients saw a 500": report["server_errors"],
        "a request waited 30 s or more": report["waits_30s_or_more"],
        "the service waited out its pool time-out": report["pool_timeouts_logged"],
        "mnemo status failed": not report["status_ok"],
        "a recall after the soak failed": not report["recall_ok"],
        "a postgres is left running": report["postgres_left"],
        "an owner of the embedded server is left": report["owners_left"],
        "an advisory lock is left": report["advisory_locks_left"],
        "a process did not stop cleanly on SIGTERM": [n for n, code in report["exit_codes"].items() if code != 0],
    }
    return [what for what, bad in checks.items() if bad]


async def _key_field(client: httpx.AsyncClient) -> bool:
    """Whether the service's ``POST /v1/turns`` declares an ``idempotency_key`` field (an unknown
    field is refused with 422, so it is sent only where it is declared; the header always is)."""
    spec = (await client.get("/openapi.json")).json()
    fields = spec.get("components", {}).get("schemas", {}).get("TurnIn", {}).get("properties", {})
    return "idempotency_key" in fields


def _service_log(logs: Path) -> dict[str, int]:
    """What the service's log says about connections: failed read index builds, pool time-outs."""
    text = (logs / "serve.log").read_text(errors="replace") if (logs / "serve.log").exists() else ""
    return {
        "index_builds_failed": text.count("building the read index of"),
        "pool_timeouts_logged": text.count("no connection could be had in time"),
    }


def _waits(ledger: Ledger) -> dict[str, Any]:
    """What the clients waited for: 500s, 503s (by code, and after a restart), long waits, retries."""
    statuses = Counter(key.split()[-1] for key in ledger.answers.elements())
    return {
        "http_500": sum(n for status, n in statuses.items() if status.isdigit() and status.startswith("5"))
        - statuses["503"],
        "http_503": dict(ledger.unavailable),
        "http_503_after_restart": dict(ledger.after_restart),
        "waits_30s_or_more": ledger.long_waits,
        "slowest_request_s": round(ledger.slowest, 2),
        "retries": ledger.retries,
        "acknowledged_on_retry": ledger.acked_on_retry,
    }


async def soak(args: argparse.Namespace, base: Path) -> dict[str, Any]:
    home, logs = base / "home", base / "logs"
    logs.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMO_") or k == "MNEMO_MODEL_CACHE"}
    env |= {"MNEMO_HOME": str(home), "MNEMO_NIGHT_CRON": "* * * * *"}
    made = _cli(env, "token", "create", SCOPE[0], "--json")
    if made.returncode != 0:
        raise SystemExit(f"mnemo token create failed: {made.stderr}")
    token = json.loads(made.stdout)["token"]
    procs = Processes(home, env, _free_port(), logs)
    await procs.start("serve")
    await procs.start("worker")
    rng = random.Random(args.seed)
    ledger = Ledger(restarts=procs.restarts)
    started = time.monotonic()
    deadline = started + args.seconds
    ledger.stop_retrying = deadline + START_TIMEOUT
    headers = {"Authorization": f"Bearer {token}"}
    url = f"http://127.0.0.1:{procs.port}"
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=CLIENT_TIMEOUT) as client:
        how = Writes(retry=args.retry_unacked, key_field=await _key_field(client))
        await asyncio.gather(
            *(_writer(client, ledger, how, n, deadline, random.Random(rng.random())) for n in range(args.writers)),
            *(_reader(client, ledger, deadline, random.Random(rng.random())) for _ in range(args.readers)),
            _killer(procs, deadline, tuple(args.kill_every), random.Random(rng.random())),
        )
    exit_codes = await procs.stop()
    report: dict[str, Any] = {
        "seconds": round(time.monotonic() - started, 1),
        "clients": {"writers": args.writers, "readers": args.readers},
        "writes": {"retry_unacked": how.retry, "idempotency_key_field": how.key_field},
        "kills": dict(procs.kills),
        "answers": dict(sorted(ledger.answers.items())),
        "server_errors": ledger.failures,
        "exit_codes": exit_codes,
    }
    report |= _waits(ledger) | _service_log(logs)
    report |= _verify(home, env, ledger)
    report |= _leftovers(home)
    report["failures"] = failures(report)
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=600.0, help="how long the clients run (default 600)")
    parser.add_argument("--kill-every", type=float, nargs=2, default=(30.0, 90.0), metavar=("MIN", "MAX"))
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--readers", type=int, default=8)
    parser.add_argument(
        "--retry-unacked",
        action="store_true",
        help="writers send an unacknowledged write again (same idempotency key) until it is acknowledged",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="also write the report here")
    parser.add_argument("--keep", action="store_true", help="keep the home and the processes' logs")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="mnemo-chaos-"))
    try:
        report = asyncio.run(soak(args, base))
    finally:
        if args.keep:
            print(f"kept {base} (home/ and logs/)", file=sys.stderr)
        else:
            shutil.rmtree(base, ignore_errors=True)
    text = json.dumps(report, indent=2, default=str)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")
    if report["failures"]:
        print("chaos soak FAILED: " + "; ".join(report["failures"]), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
