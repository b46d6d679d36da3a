"""The command line through a running ``mnemo serve`` (issue 15 item 5), real processes: the service
announces itself in MNEMO_HOME, commands send their requests there (its access log shows them)
and print what they print without it; the credential is local and withdrawn with the service; a
stale announcement or MNEMO_USE_SERVICE=0 sends commands back to the archive."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

pytestmark = pytest.mark.slow

MNEMO = str(Path(sys.executable).parent / "mnemo")


def _env(home: Path, database_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMO_") or k == "MNEMO_MODEL_CACHE"}
    return env | {"MNEMO_HOME": str(home), "MNEMO_DATABASE_URL": database_url, "MNEMO_SCORING": "deterministic"}


def _run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MNEMO, *args], env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture
def served(database_url: str, tmp_path: Path) -> Iterator[tuple[dict[str, str], Path, Path]]:
    """A running service on a free port: (env, home, its log file)."""
    home = tmp_path / "home"
    env = _env(home, database_url)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = tmp_path / "serve.log"
    with log.open("w") as sink:
        server = subprocess.Popen([MNEMO, "serve", "--port", str(port)], env=env, stdout=sink, stderr=sink)
    try:
        deadline = time.monotonic() + 120
        while not (home / "service.json").exists():
            assert server.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        yield env, home, log
    finally:
        server.terminate()
        server.wait(timeout=60)
    assert not (home / "service.json").exists(), "the announcement goes with the service"


def test_commands_go_through_the_running_service_and_print_the_same(
    served: tuple[dict[str, str], Path, Path],
) -> None:
    env, home, log = served
    announced = json.loads((home / "service.json").read_text())
    assert (home / "service.json").stat().st_mode & 0o077 == 0  # the owner's only
    assert announced["pid"] > 0 and announced["credential"].startswith("mnemo-local.")

    stored = _run(env, "remember", "Ana adopted a greyhound called Pixel", "--entity", "ana", "--json")
    assert stored.returncode == 0, stored.stderr
    memory = json.loads(stored.stdout)
    turn = _run(env, "record", "Pixel loves the beach", "--speaker", "Ana", "--entity", "ana", "--json")
    assert turn.returncode == 0, turn.stderr
    assert json.loads(turn.stdout)["content"] == "Pixel loves the beach"
    keyed = ["record", "Pixel naps at noon", "--entity", "ana", "--key", "k-1"]  # a retry stores once
    assert _run(env, *keyed).returncode == 0
    again = _run(env, *keyed)
    assert again.returncode == 0 and "already recorded (a repeat: nothing stored)" in again.stdout, again.stderr
    asked = ["recall", "what dog did Ana adopt?", "--entity", "ana", "--read-only", "--json"]
    through = _run(env, *asked)
    direct = _run(env | {"MNEMO_USE_SERVICE": "0"}, *asked)
    assert through.returncode == direct.returncode == 0, through.stderr + direct.stderr
    got, expected = json.loads(through.stdout), json.loads(direct.stdout)
    assert [h["id"] for h in got["hits"]] == [h["id"] for h in expected["hits"]]
    assert got["hits"][0]["id"] == memory["id"]
    table = _run(env, "recall", "what dog did Ana adopt?", "--entity", "ana", "--read-only")
    assert "Pixel" in table.stdout and "greyhound" in table.stdout
    status = json.loads(_run(env, "status", "--json").stdout)
    assert status["counts"] == json.loads(_run(env | {"MNEMO_USE_SERVICE": "0"}, "status", "--json").stdout)["counts"]

    served_log = log.read_text()
    for line in ("POST /v1/memories", "POST /v1/turns", "POST /v1/recall", "GET /v1/local/status"):
        assert line in served_log, served_log
    assert served_log.count("POST /v1/recall") == 2  # the direct recall never reached the service

    bad = _run(env, "recall", "x", "--entity", "ana", "--as-entity", "bob")  # no grant: refused as usual
    assert bad.returncode == 1 and "may not read scope" in bad.stderr
    # the service's answer to the command line names the command, not the HTTP request or the Python call
    assert "`mnemo grant bob -e ana -n default`" in bad.stderr and "POST" not in bad.stderr, bad.stderr


def test_the_local_credential_is_for_this_machines_commands_only(
    served: tuple[dict[str, str], Path, Path],
) -> None:
    env, home, _ = served
    announced = json.loads((home / "service.json").read_text())
    url, credential = announced["url"], announced["credential"]
    no_entity = httpx.post(
        f"{url}/v1/recall", json={"query": "x"}, headers={"Authorization": f"Bearer {credential}"}, timeout=30
    )
    assert no_entity.status_code == 401 and "X-Mnemo-Entity" in no_entity.json()["error"]["message"]
    created = _run(env, "token", "create", "ana", "--json")
    assert created.returncode == 0, created.stderr
    token = json.loads(created.stdout)["token"]
    whole = httpx.get(f"{url}/v1/local/status", headers={"Authorization": f"Bearer {token}"}, timeout=30)
    assert whole.status_code == 403  # an entity's token never sees the whole archive
    forged = httpx.get(
        f"{url}/v1/local/status",
        headers={"Authorization": f"Bearer {credential[:-2]}xx", "X-Mnemo-Entity": "ana"},
        timeout=30,
    )
    assert forged.status_code == 401


def test_without_a_live_service_commands_open_the_archive(database_url: str, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = _env(home, database_url)
    # a service that died without withdrawing its announcement: its process is gone
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = {"url": "http://127.0.0.1:9", "pid": int(dead.stdout), "credential": "mnemo-local.x"}
    (home / "service.json").write_text(json.dumps(stale | {"database": database_url}))
    stored = _run(env, "remember", "Ben paints on Sundays", "--entity", "ben")
    assert stored.returncode == 0, stored.stderr
    # a live process that does not listen there (a dead service's pid, reused) is no service either
    unheard = {"url": "http://127.0.0.1:9", "pid": os.getpid(), "credential": "mnemo-local.x"}
    (home / "service.json").write_text(json.dumps(unheard | {"database": database_url}))
    assert _run(env, "remember", "Ben sketches on Mondays", "--entity", "ben").returncode == 0
    # a live process announcing another database is not this command's service either
    other = {"url": "http://127.0.0.1:9", "pid": os.getpid(), "credential": "mnemo-local.x", "database": "elsewhere"}
    (home / "service.json").write_text(json.dumps(other))
    found = _run(env, "recall", "when does Ben paint?", "--entity", "ben", "--read-only", "--json")
    assert found.returncode == 0, found.stderr
    assert "Sundays" in json.loads(found.stdout)["hits"][0]["content"]
