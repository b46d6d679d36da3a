"""The CLI in-process with typer's runner, against a real test database."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mnemo.interfaces.cli import app
from tests.conftest import snapshot

runner = CliRunner()


@pytest.fixture
def env(database_url: str, tmp_path: Path) -> dict[str, str]:
    return {"MNEMO_DATABASE_URL": database_url, "MNEMO_HOME": str(tmp_path), "MNEMO_ENTITY": "cli"}


def run(env: dict[str, str], *args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args), env=env)
    return result.exit_code, result.stdout, result.stderr


def test_remember_record_recall_status_json(env: dict[str, str]) -> None:
    code, out, _ = run(env, "remember", "The spare key is under the blue flowerpot", "--kind", "semantic", "--json")
    assert code == 0 and json.loads(out)["scope"] == "cli/default"
    code, out, _ = run(env, "record", "I water the ferns on Sundays", "--session", "s1", "--json")
    turn = json.loads(out)  # the whole Turn record, as POST /v1/turns answers
    assert code == 0 and (turn["session_id"], turn["turn_number"], turn["scope"]) == ("s1", 0, "cli/default")
    code, out, _ = run(env, "recall", "where is the spare key?", "-k", "2", "--json")
    data = json.loads(out)
    assert code == 0 and data["refused"] is False
    assert data["hits"][0]["content"] == "The spare key is under the blue flowerpot"
    assert {"score", "similarity", "vector_rank", "lexical_rank"} <= set(data["hits"][0])
    code, out, _ = run(env, "recall", "orbital mechanics of Jupiter's moons", "--json")
    assert code == 0 and json.loads(out)["refused"] is True
    code, out, _ = run(env, "status", "--json")
    status = json.loads(out)
    assert code == 0 and status["counts"]["memories"] == 1 and status["counts"]["turns"] == 1
    assert status["embedder"] == "sentence-transformers:all-MiniLM-L6-v2:384"
    assert status["pending_reembed"] == 0


def test_import_and_table_output(env: dict[str, str], tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"session": "x", "content": "Our wedding anniversary is on June 12"}\n')
    code, out, _ = run(env, "import", str(path), "--namespace", "home")
    assert code == 0 and "imported 1 turns in 1 sessions (jsonl) into cli/home" in out
    code, out, _ = run(env, "recall", "anniversary date", "--namespace", "home")
    assert code == 0 and "June 12" in out and "score" in out and "sim" in out


def test_errors_are_one_line_and_exit_nonzero(env: dict[str, str], tmp_path: Path) -> None:
    code, _, err = run(env, "remember", "   ")
    assert code == 1 and err.startswith("error: content is empty") and err.count("\n") <= 2
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"content": "ok"}\n{oops\n')
    code, _, err = run(env, "import", str(bad))
    assert code == 1 and "bad.jsonl:2: invalid JSON" in err
    code, out, _ = run(env, "recall", "anything", "--entity", "ghost")  # holds nothing: a refusal, not an error
    assert code == 0 and "nothing reliable" in out
    code, _, err = run(env, "recall", "anything", "--entity", "bad entity")
    assert code == 1 and "invalid entity_id" in err
    code, _, err = run({**env, "MNEMO_REFUSAL_THRESHOLD": "seven"}, "status")
    assert code == 1 and "refusal_threshold" in err


def test_an_empty_question_and_control_characters_are_clear_errors(env: dict[str, str], database_url: str) -> None:
    """Issue 27: ``recall ""`` said "there is nothing to remember"; content with a control character
    was stored. Both are one clear error line, and nothing is written."""
    assert run(env, "remember", "Maya prefers window seats")[0] == 0
    before = snapshot(database_url)
    for query in ("", "  "):
        code, _, err = run(env, "recall", query)
        assert code == 1 and "the question is empty" in err and "remember" not in err, err
    code, _, err = run(env, "context", "")
    assert code == 1 and "the question is empty: attention text" in err, err
    for command in (("remember", "bad\x01content"), ("record", "bad\x01content"), ("remember", "ansi \x1b[31mred")):
        code, _, err = run(env, *command)
        assert code == 1 and "content contains the control character U+00" in err, (command, err)
    assert snapshot(database_url) == before
    code, _, _ = run(env, "remember", "line one\n\tline two\r\n")  # tab and line breaks are text
    assert code == 0


def test_reembed_with_nothing_pending(env: dict[str, str]) -> None:
    run(env, "remember", "something")
    code, out, _ = run(env, "reembed", "--json")
    assert code == 0 and json.loads(out) == {"reembedded": 0, "pending": 0}


def test_demo_imports_and_recalls(env: dict[str, str]) -> None:
    code, out, _ = run(env, "demo", "--json")
    data = json.loads(out)
    results = data["recalls"]
    assert code == 0 and len(results) == 5
    allergy = results[0]
    assert allergy["query"] == "What is Maya allergic to?"
    assert "shellfish" in allergy["hits"][0]["content"]
    assert results[-1]["refused"] is True  # an off-topic question is refused, not guessed
    block = data["context"]
    assert block["tokens"] <= block["budget"] == 160
    assert block["items"][0]["track"] == "anchored"
    assert "Never share Maya's home address" in block["text"] and "Lena" in block["text"]
    code, out, _ = run(env, "demo")  # second run reuses the imported sample
    assert code == 0 and "already in demo/sample" in out and "context block" in out


def test_forget_and_purge(env: dict[str, str]) -> None:
    code, out, _ = run(env, "remember", "The alarm code is 4242", "--json")
    memory_id = json.loads(out)["id"]
    code, out, _ = run(env, "forget", memory_id, "--json")
    assert code == 0 and json.loads(out)["removed"]["memories"] == 1
    code, _, err = run(env, "forget", memory_id)
    assert code == 1 and "no turn or memory" in err
    code, _, err = run(env, "purge")
    assert code != 0 and "--yes" in err
    code, out, _ = run(env, "purge", "--yes", "--json")
    assert code == 0 and json.loads(out)["removed"]["scopes"] == 1
    code, out, _ = run(env, "recall", "alarm")  # the purged scope holds nothing: a refusal
    assert code == 0 and "nothing reliable" in out


BRACKETED = "use a[/i] and [summary] tags in [bold]release notes[/bold]"


def test_bracketed_text_is_printed_literally(env: dict[str, str]) -> None:
    code, out, err = run(env, "remember", BRACKETED, "--json")
    assert code == 0, err
    memory_id = json.loads(out)["id"]
    code, out, err = run(env, "recall", "which tags go in release notes?", "--threshold=-1")
    assert code == 0 and BRACKETED in out, err
    code, out, _ = run(env, "recall", "which tags go in release notes?", "--threshold=-1", "--json")
    assert code == 0 and json.loads(out)["hits"][0]["content"] == BRACKETED
    code, out, err = run(env, "why", memory_id)
    assert code == 0 and BRACKETED in out, err
    code, out, _ = run(env, "why", memory_id, "--json")
    assert code == 0 and json.loads(out)["content"] == BRACKETED
    code, out, err = run(env, "context", "writing the [summary] of the release notes")
    assert code == 0 and BRACKETED in out, err
    code, out, _ = run(env, "context", "writing the [summary] of the release notes", "--json")
    assert code == 0 and BRACKETED in json.loads(out)["text"]
    code, _, err = run(env, "remember", "x", "--kind", "[red]gossip")  # user text inside an error message
    assert code == 1 and "unknown memory kind '[red]gossip'" in err


def test_piped_output_prints_whole_values(env: dict[str, str]) -> None:
    # The runner's stdout is not a terminal, like `mnemo recall ... > file` or `| less`.
    text = "The greenhouse checklist: " + ", ".join(f"item {i}" for i in range(40)) + "; done."
    code, _, err = run(env, "remember", text)
    assert code == 0, err
    code, out, err = run({**env, "COLUMNS": "80"}, "recall", "greenhouse checklist", "-k", "1")
    assert code == 0 and text in out, err  # one unbroken line, not folded into a narrow column


def test_version(env: dict[str, str]) -> None:
    code, out, _ = run(env, "--version")
    assert code == 0 and out == "mnemo 0.1.0\n"


def test_night_stages_match_the_cycle() -> None:
    from mnemo.interfaces.cli.night import STAGES as CLI_STAGES
    from mnemo.night.stage_registry import STAGE_NAMES as STAGES

    assert CLI_STAGES == STAGES


def test_observe_and_curate_json_are_their_records(env: dict[str, str]) -> None:
    from dataclasses import fields

    from mnemo.models import Curation, FlushReport, GateOutcome, Observation

    code, out, err = run(env, "observe", "My daughter's school play is on Friday evening", "--flush", "--json")
    seen = json.loads(out)
    assert code == 0 and set(seen) == {f.name for f in fields(Observation)}, err
    flushed = seen["flushed"]  # --flush ran the exit gate: its report is the observation's
    assert set(flushed) == {f.name for f in fields(FlushReport)} and flushed["scope"] == "cli/default"
    assert flushed["outcomes"] and all(set(o) == {f.name for f in fields(GateOutcome)} for o in flushed["outcomes"])
    assert seen["item_id"] in {o["item_id"] for o in flushed["outcomes"]}
    assert run(env, "remember", "The ferns need water on Sundays", "--candidate")[0] == 0
    code, out, err = run(env, "curate", "--dry-run", "--json")
    plan = json.loads(out)
    assert code == 0 and set(plan) == {f.name for f in fields(Curation)}, err
    change = plan["changes"][0]  # the candidate: the curator decides about it
    assert change["content"] == "The ferns need water on Sundays" and change["from_status"] == "candidate"
    assert {"verdict", "score", "reasons"} == set(change["classification"])


def test_bench_locomo_refuses_a_bad_ask_at_before_any_work(env: dict[str, str], tmp_path: Path) -> None:
    from tests.bench_data import tiny

    data = tiny(tmp_path / "tiny.json")
    code, _, err = run(env, "bench", "locomo", str(data), "--ask-at", "soon")
    assert code == 2 and "must be 'now' or 'end'" in err
    code, _, err = run(env, "bench", "locomo", str(data), "--ask-at", "end", "--night")
    assert code == 2 and "--night runs its nights now" in err


def test_reimport_and_a_retried_record_store_once_and_say_so(
    env: dict[str, str], tmp_path: Path, database_url: str
) -> None:
    # issue 39 item 3: repeats are skipped, counted and reported.
    path = tmp_path / "chat.jsonl"
    path.write_text(
        '{"session": "x", "content": "Our anniversary is on June 12", "created_at": "2024-01-01T10:00:00Z"}\n'
        '{"session": "x", "role": "assistant", "content": "Noted", "created_at": "2024-01-01T10:00:05Z"}\n'
    )
    code, out, _ = run(env, "import", str(path))
    assert code == 0 and "imported 2 turns" in out and "already stored" not in out
    code, out, _ = run(env, "import", str(path))
    assert code == 0 and "imported 0 turns" in out and "skipped 2 already stored (repeats)" in out
    code, out, _ = run(env, "import", str(path), "--json")
    assert code == 0 and (json.loads(out)["turns"], json.loads(out)["skipped_repeats"]) == (0, 2)
    code, out, _ = run(env, "record", "Book the table", "--session", "x", "--key", "m-1", "--json")
    first = json.loads(out)
    assert code == 0 and first["repeat"] is False and first["turn_number"] == 2
    code, out, _ = run(env, "record", "Book the table", "--session", "x", "--key", "m-1")
    assert code == 0 and "already recorded (a repeat: nothing stored): turn 2 of session 'x'" in out
    code, _, err = run(env, "record", "Cancel it", "--session", "x", "--key", "m-1")
    assert code != 0 and "already names turn 2" in err
    code, _, err = run(env, "record", "Hi", "--key", " ")
    assert code != 0 and "--key is empty" in err
    assert snapshot(database_url)["mnemo.turns"] == 3
