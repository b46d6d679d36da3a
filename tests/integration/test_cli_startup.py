"""Start-up of the command line and of ``mnemo mcp``, in real subprocesses: commands that never
embed do not load the embedding model (torch, sentence-transformers); bad input fails before
anything starts; the MCP server answers ``initialize`` before its archive is open; piped output is
whole. No timings here: what is checked is what gets loaded and started."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

pytestmark = pytest.mark.slow

MNEMO = str(Path(sys.executable).parent / "mnemo")  # the installed console script
HEAVY = ("torch", "sentence_transformers", "transformers")

# Runs the CLI in-process for each argument list in argv[1] (JSON), then prints one last line:
# the exit statuses and which heavy modules the process imported.
PROBE = f"""
import json, sys
from mnemo.interfaces.cli import app
codes = []
for args in json.loads(sys.argv[1]):
    try:
        app(args, prog_name="mnemo")
    except SystemExit as exc:
        codes.append(exc.code or 0)
heavy = sorted(m for m in {HEAVY!r} if m in sys.modules)
print(json.dumps({{"codes": codes, "heavy": heavy, "archive": "mnemo.archive" in sys.modules}}))
"""


def _env(home: Path, database_url: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMO_") or k == "MNEMO_MODEL_CACHE"}
    env["MNEMO_HOME"] = str(home)
    if database_url is not None:
        env["MNEMO_DATABASE_URL"] = database_url
    return env


def _probe(env: dict[str, str], *commands: list[str]) -> tuple[dict[str, object], str, str]:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(commands)], env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    *lines, last = proc.stdout.strip().splitlines()
    return json.loads(last), "\n".join(lines), proc.stderr


def test_commands_that_never_embed_do_not_load_the_model(database_url: str, tmp_path: Path) -> None:
    unknown = "0190f0e2-0000-7000-8000-000000000000"
    result, out, err = _probe(
        _env(tmp_path, database_url), ["status", "--json"], ["status"], ["why", unknown], ["forget", unknown]
    )
    assert result["codes"] == [0, 0, 1, 1], err
    assert out.count("sentence-transformers:all-MiniLM-L6-v2:384") == 2  # the slug, without the model
    assert result["heavy"] == []


def test_bad_input_fails_before_anything_starts(tmp_path: Path) -> None:
    home = tmp_path / "never-created"
    env = _env(home)  # no database URL: the embedded server would start under home
    proc = subprocess.run([MNEMO, "remember", ""], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1
    assert proc.stderr.startswith("error: content is empty or whitespace only")
    assert not home.exists()
    result, _, err = _probe(
        env,
        ["remember", "   "],
        ["remember", "fine", "--kind", "gossip"],
        ["record", "hello", "--role", "narrator"],
        ["recall", ""],
        ["recall", "x", "-k", "0"],
        ["context", " "],
        ["why", "not-an-id"],
        ["forget", "not-an-id"],
        ["observe", ""],
    )
    assert result["codes"] == [1] * 9, err
    for message in (
        "content is empty",
        "unknown memory kind 'gossip'",
        "unknown role 'narrator'",
        "query is empty",
        "k must be an integer between 1 and",
        "attention text is empty",
        "memory id must be a UUID",
        "item id must be a UUID",
    ):
        assert message in err
    assert result["heavy"] == [] and result["archive"] is False  # nor was the archive imported
    assert not home.exists()


def test_version_and_help_load_nothing(tmp_path: Path) -> None:
    result, out, _ = _probe(_env(tmp_path), ["--version"], ["--help"])
    assert result == {"codes": [0, 0], "heavy": [], "archive": False}
    assert out.startswith("mnemo 0.1.0\n") and "--home" in out


def test_home_option_sets_the_data_directory(tmp_path: Path) -> None:
    home = tmp_path / "elsewhere"
    env = _env(tmp_path / "not-this-one")
    result, out, err = _probe(env, ["--home", str(home), "status", "--json"])
    assert result["codes"] == [0], err
    assert json.loads(out)["database"] == f"embedded {home / 'pgdata'}"
    assert (home / "pgdata").is_dir() and not (tmp_path / "not-this-one").exists()
    assert result["heavy"] == []


def test_piped_recall_prints_stored_text_whole_and_literally(database_url: str, tmp_path: Path) -> None:
    text = (
        "use a[/i] and [summary] tags, then [bold]nothing[/bold] bold: "
        + " ".join(f"word{i}" for i in range(60))
        + " end"
    )
    env = {**_env(tmp_path, database_url), "COLUMNS": "80"}
    stored = subprocess.run([MNEMO, "remember", text, "--json"], env=env, capture_output=True, text=True, timeout=300)
    assert stored.returncode == 0, stored.stderr
    found = subprocess.run(  # stdout is a pipe
        [MNEMO, "recall", "which tags do I use?", "-k", "1", "--threshold=-1"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert found.returncode == 0, found.stderr
    assert text in found.stdout  # on one line, brackets and all


async def test_mcp_answers_initialize_before_the_archive_opens(tmp_path: Path) -> None:
    # A database that refuses connections: the archive can never open. The server still answers
    # initialize and lists its tools; each tool call reports why the archive is not there.
    env = _env(tmp_path, "postgresql://nobody@127.0.0.1:9/mnemo?connect_timeout=5")
    async with Client(StdioServerParameters(command=MNEMO, args=["mcp"], env=env)) as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        assert tools == {
            "recall", "remember", "context", "forget", "export_packets", "record_outcome", "reflexes_for", "feedback",
            "readiness", "record_turn",
        }  # fmt: skip
        result = await client.call_tool("recall", {"query": "anything"})
        assert result.is_error and "cannot connect" in result.content[0].text
        again = await client.call_tool("remember", {"content": "something"})
        assert again.is_error and "cannot connect" in again.content[0].text
