"""``mnemo quickstart`` (issue 30 item 8): the demo for a user who installed the wheel and has no
checkout and no archive yet. Real ``mnemo`` processes with no test database: each starts its own
embedded PostgreSQL, in a temporary home that is stopped and deleted at the end, or in the home
``--home`` names, which keeps the data for a second run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

MNEMO = str(Path(sys.executable).parent / "mnemo")
# Were it used, every command would fail: nothing listens there.
UNREACHABLE = "postgresql://nobody@127.0.0.1:9/nothing"

pytestmark = pytest.mark.slow


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """A user's environment: a configured home and database quickstart must leave alone."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMO_") or k == "MNEMO_MODEL_CACHE"}
    return env | {"MNEMO_HOME": str(tmp_path / "users-home"), "MNEMO_DATABASE_URL": UNREACHABLE}


def quickstart(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MNEMO, *args], env=env, capture_output=True, text=True, timeout=600, cwd="/")


def processes_naming(path: Path) -> list[int]:
    """The live PostgreSQL processes whose command line names ``path`` (a postmaster has it in
    ``-D``); the data directory's watchdog (``_owners.py``) is :func:`watchdogs_gone`'s."""
    return [pid for pid, cmdline in _naming(path) if not any(part.endswith("_owners.py") for part in cmdline)]


def watchdogs_gone(path: Path, seconds: float = 15.0) -> bool:
    """Whether the watchdog of ``path``'s server exits once the server is gone (it looks every
    ``_owners.INTERVAL`` seconds, so it may outlive the directory by that much)."""
    deadline = time.monotonic() + seconds
    while any(part.endswith("_owners.py") for _, cmdline in _naming(path) for part in cmdline):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def _naming(path: Path) -> list[tuple[int, list[str]]]:
    found = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        cmdline = proc.info["cmdline"] or []
        if any(str(path) in part for part in cmdline):
            found.append((proc.info["pid"], cmdline))
    return found


def check_demo_content(data: dict) -> None:
    recalls = data["recalls"]
    assert [r["query"] for r in recalls[:2]] == ["What is Maya allergic to?", "How is the dog coping with the noise?"]
    assert "shellfish" in recalls[0]["hits"][0]["content"]
    assert "Pixel" in recalls[1]["hits"][0]["content"]
    assert recalls[-1]["refused"] is True  # the capital of Australia is not in the sample
    night = data["night"]
    assert night["scope"] == "demo/sample" and night["turns"] == 30
    assert night["blocks"] > 0 and night["facts_new"] > 0
    context = data["context"]
    assert context["tokens"] <= context["budget"] == 160
    assert "Never share Maya's home address" in context["text"] and "vegetarian" in context["text"]


def test_quickstart_runs_in_a_temporary_home_and_deletes_it(env: dict[str, str], tmp_path: Path) -> None:
    done = quickstart(env, "quickstart", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    check_demo_content(data)
    home = Path(data["home"])
    assert data["kept"] is False and home.name.startswith("mnemo-quickstart-")
    assert f"working in a temporary home, {home}" in done.stderr
    assert f"stopped the embedded PostgreSQL and deleted {home}" in done.stderr
    assert "does not use MNEMO_DATABASE_URL" in done.stderr
    assert not home.exists()
    assert processes_naming(home) == []  # its PostgreSQL stopped before the directory went
    assert watchdogs_gone(home)
    assert not (tmp_path / "users-home").exists()  # MNEMO_HOME alone does not choose the home


def test_quickstart_with_home_keeps_the_data(env: dict[str, str], tmp_path: Path) -> None:
    home = tmp_path / "kept"
    first = quickstart(env, "--home", str(home), "quickstart", "--json")  # the global option chooses it too
    assert first.returncode == 0, first.stderr
    data = json.loads(first.stdout)
    check_demo_content(data)
    assert data["home"] == str(home) and data["kept"] is True
    assert f"the data stays in {home}" in first.stderr and "deleted" not in first.stderr
    assert (home / "pgdata" / "PG_VERSION").is_file()
    assert not (home / "pgdata" / "postmaster.pid").exists()  # stopped, not left running
    second = quickstart(env, "quickstart", "--home", str(home))
    assert second.returncode == 0, second.stderr
    assert "the sample conversation is already in demo/sample" in second.stdout
    assert "context block" in second.stdout and "shellfish" in second.stdout
    assert processes_naming(home) == []
