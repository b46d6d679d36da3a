"""Inputs the archive must refuse, on every face, changing nothing (issue 39 items 9-12): a night
or reflection dated beyond the clock-skew rule, a reflection of a scope that does not exist, loose
types and unknown fields over HTTP and MCP."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from mcp.client import Client

from mnemo import AsyncArchive, InvalidContentError, RecallResult, Scope, UnknownScopeError
from tests.conftest import snapshot
from tests.integration.test_cli import env, run  # noqa: F401 (the CLI fixture)
from tests.integration.test_cli_service import _run as _run_cli
from tests.integration.test_cli_service import served  # noqa: F401 (a running service)
from tests.integration.test_http import auth, server, tokens  # noqa: F401 (fixtures)
from tests.integration.test_mcp import _server as _mcp

ME = Scope("maya", "notes")
FAR = datetime(2999, 1, 1, tzinfo=UTC)


def _night_rows(url: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT count(*) FROM mnemo.night_runs WHERE entity_id = 'maya'").fetchone()
    return int(row[0]) if row else 0


async def test_a_night_or_reflection_far_ahead_of_the_clock_is_refused_and_writes_nothing(
    archive: AsyncArchive, database_url: str
) -> None:
    await archive.record_turn(ME, "s1", "user", "My dog is called Pixel.")
    for run_it in (
        lambda: archive.night_cycle(ME, as_of=FAR),
        lambda: archive.night_cycle(ME, as_of=FAR, dry_run=True),
        lambda: archive.inner.reflect(ME, as_of=FAR),
    ):
        with pytest.raises(InvalidContentError, match="ahead of this machine's clock"):
            await run_it()
    assert _night_rows(database_url) == 0
    report = await archive.night_cycle(ME, as_of=datetime.now(UTC) + timedelta(hours=1))  # within the skew
    assert report.turns == 1


async def test_reflecting_on_a_scope_that_does_not_exist_is_refused_and_creates_nothing(
    archive: AsyncArchive,
) -> None:
    typo = Scope("mayaa", "notse")
    with pytest.raises(UnknownScopeError, match="does not exist"):
        await archive.inner.reflect(typo)
    assert typo not in {s.scope for s in await archive.access.scopes("mayaa")}


def test_the_command_line_refuses_a_far_night_and_an_unknown_reflection(env: dict[str, str]) -> None:  # noqa: F811
    code, _, _ = run(env, "record", "My dog is called Pixel.", "-s", "s1", "-e", "maya", "-n", "notes")
    assert code == 0
    for args in (["night", "-e", "maya", "-n", "notes", "--as-of", "2999-01-01"],
                 ["reflect", "-e", "maya", "-n", "notes", "--as-of", "2999-01-01"]):  # fmt: skip
        code, out, err = run(env, *args)
        assert code != 0 and "ahead of this machine's clock" in out + err, (args, out, err)
    code, out, err = run(env, "reflect", "-e", "mayaa", "-n", "notse")
    assert code != 0 and "does not exist" in out + err
    code, out, _ = run(env, "scopes", "-e", "mayaa", "--json")
    assert "notse" not in out


# --- loose types and unknown fields (issue 39 item 9) ---------------------------------------------


def test_http_refuses_loose_types_unknown_fields_and_unknown_query_parameters(
    server: str,  # noqa: F811
    tokens: dict[str, Any],  # noqa: F811
    database_url: str,
) -> None:
    with httpx.Client(base_url=server, headers=auth(tokens["alice"]), timeout=120) as c:
        assert c.post("/v1/memories", json={"content": "Alice's tea is oolong"}).status_code == 201
        before = snapshot(database_url)
        for body in ({"query": "tea", "k": "5"}, {"query": "tea", "k": True}, {"query": "tea", "read_only": "yes"}):
            refused = c.post("/v1/recall", json=body)
            assert refused.status_code == 422 and refused.json()["error"]["code"] == "invalid_request", body
        nan = c.post("/v1/recall", content=b'{"query": "tea", "threshold": NaN}',
                     headers={"Content-Type": "application/json"})  # fmt: skip
        assert nan.status_code == 422 and "finite number" in nan.json()["error"]["message"]
        assert c.post("/v1/context", json={"text": "tea", "budget": "100"}).status_code == 422
        assert c.post("/v1/memories", json={"content": "x", "unknown": True}).status_code == 422
        page = c.get("/v1/memories", params={"owner": "maya"})
        assert page.status_code == 422 and "unknown query parameter 'owner'" in page.json()["error"]["message"]
        assert c.get("/v1/memories", params={"limit": 5}).status_code == 200  # what it takes still works
        assert snapshot(database_url) == before
        ok = c.post("/v1/recall", json={"query": "tea", "k": 5, "as_of": "2999-01-01T00:00:00Z", "threshold": 0})
        assert ok.status_code == 200  # times stay ISO text; an integer is a number


async def test_mcp_refuses_unknown_arguments_loose_types_and_an_unknown_page(database_url: str, tmp_path: Path) -> None:
    async with Client(_mcp(database_url, tmp_path, "strict")) as client:
        schema = {t.name: t.input_schema for t in (await client.list_tools()).tools}
        assert schema["remember"]["additionalProperties"] is False
        stray = await client.call_tool("remember", {"content": "x", "unknown": True})
        assert stray.is_error and "unknown" in stray.content[0].text
        assert snapshot(database_url).get("mnemo.memories", 0) == 0
        stored = await client.call_tool("remember", {"content": "Maya's bike is a green Brompton"})
        assert not stored.is_error
        for args in ({"query": "bike", "k": "5"}, {"query": "bike", "k": True}, {"query": "bike", "expand": "no"}):
            loose = await client.call_tool("recall", args)
            assert loose.is_error, args
        assert not (await client.call_tool("recall", {"query": "bike", "k": 5})).is_error
        lost = await client.call_tool("export_packets", {"after": "no-such-packet"})
        assert lost.is_error and "no packet" in lost.content[0].text


def test_a_bad_value_sent_through_the_service_is_worded_for_the_command_line(
    served: tuple[dict[str, str], Path, Path],  # noqa: F811
) -> None:
    service_env, _, _ = served
    done = _run_cli(service_env, "remember", "Alice's tea is oolong", "-e", "alice")
    assert done.returncode == 0, done.stderr
    refused = _run_cli(service_env, "context", "tea", "--budget", "-1", "-e", "alice")
    assert refused.returncode != 0
    assert "--budget" in refused.stderr and "body." not in refused.stderr, refused.stderr


# --- what HTTP can date, skip and link (issue 39 item 12) -----------------------------------------


def test_http_dates_turns_and_memories_and_skips_a_misspelt_turn_with_a_hint(
    server: str,  # noqa: F811
    tokens: dict[str, Any],  # noqa: F811
) -> None:
    with httpx.Client(base_url=server, headers=auth(tokens["alice"]), timeout=120) as c:
        said = c.post("/v1/turns", json={"session": "s1", "role": "user", "content": "We moved to Lyon.",
                                         "created_at": "2025-03-01T10:00:00Z"})  # fmt: skip
        assert said.status_code == 201 and said.json()["created_at"].startswith("2025-03-01T10:00:00")
        noted = c.post("/v1/memories", json={"content": "Alice lives in Lyon", "event_time": "2025-03-01T10:00:00"})
        assert noted.status_code == 201 and noted.json()["event_time"].startswith("2025-03-01T10:00:00")
        ahead = c.post("/v1/turns", json={"session": "s1", "role": "user", "content": "x", "created_at": "2999-01-01"})
        assert ahead.status_code == 422 and "ahead of this machine's clock" in ahead.json()["error"]["message"]
        turns = [{"content": "First line", "session": "s2"}, {"contnet": "Second line", "session": "s2"}]
        whole = c.post("/v1/import", json={"turns": turns})
        assert whole.status_code == 422 and "did you mean 'content'" in whole.json()["error"]["message"]
        some = c.post("/v1/import", json={"turns": turns, "skip_invalid": True})
        assert some.status_code == 201 and some.json()["turns"] == 1
        (skipped,) = some.json()["skipped"]
        assert skipped["index"] == 1 and "did you mean 'content'" in skipped["reason"]


def test_feedback_names_only_a_recalls_hits_and_finds_the_outcomes_namespace(
    server: str,  # noqa: F811
    tokens: dict[str, Any],  # noqa: F811
) -> None:
    with httpx.Client(base_url=server, headers=auth(tokens["alice"]), timeout=120) as c:
        tea = c.post("/v1/memories", json={"content": "Alice drinks oolong tea", "namespace": "work"}).json()
        other = c.post("/v1/memories", json={"content": "Alice's bike is red", "namespace": "work"}).json()
        found = c.post("/v1/recall", json={"query": "what tea does Alice drink?", "k": 1, "namespace": "work"}).json()
        assert [h["id"] for h in found["hits"]] == [tea["id"]]
        stray = c.post("/v1/feedback", json={"outcome_id": found["outcome_id"], "used": [other["id"]]})
        assert stray.status_code == 422 and "not a hit" in stray.json()["error"]["message"]
        linked = c.post("/v1/feedback", json={"outcome_id": found["outcome_id"], "used": [tea["id"]]})
        assert linked.status_code == 201, linked.text  # no namespace repeated: the outcome id names it
        nowhere = c.post("/v1/feedback", json={"outcome_id": "01890000-0000-7000-8000-000000000000"})
        assert nowhere.status_code == 404


def test_import_packets_on_a_conversation_file_points_to_mnemo_import(
    env: dict[str, str],  # noqa: F811
    tmp_path: Path,
) -> None:
    talk = tmp_path / "talk.jsonl"
    talk.write_text('{"session": "s1", "role": "user", "content": "We moved to Lyon."}\n')
    code, out, err = run(env, "import-packets", str(talk), "--into", "copy")
    assert code != 0 and "mnemo import" in out + err, out + err


async def test_inner_life_writes_dated_far_ahead_are_refused(archive: AsyncArchive, database_url: str) -> None:
    """The clock-skew rule for the inner life's dated writes too (a milestone, an approval): a typo of
    a year never lands in the owner's history."""
    await archive.remember(ME, "Maya is allergic to peanuts.")
    found = await archive.recall(ME, "What is Maya allergic to?")
    assert isinstance(found, RecallResult) and found.outcome_id is not None
    before = snapshot(database_url)
    for write in (
        lambda: archive.inner.reach_milestone(ME, "first_goal_reflected", {}, at=FAR),
        lambda: archive.inner.approve_promotion(ME, found.hits[0].id, at=FAR),
    ):
        with pytest.raises(InvalidContentError, match="ahead of this machine's clock"):
            await write()
    assert snapshot(database_url) == before
