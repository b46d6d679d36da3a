"""One JSON shape per operation (issue 12, "consistent JSON field names across CLI --json, HTTP and
MCP"): ``mnemo ... --json``, the HTTP service and the MCP tools answer the same operation with the
same public record of :mod:`mnemo.models` as :func:`~mnemo.models.to_jsonable` makes it: the same
keys at every depth, ids as strings, times in ISO 8601 with their offset.

One archive for the module: seeded through the library (turns, three near-identical memories, a
night that mines facts and an insight), then written and read through all three faces in the
same scope. Each face's answers are collected once; the tests compare them."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import uuid
from collections.abc import Iterator
from dataclasses import fields
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from typer.testing import CliRunner

from mnemo import Archive, Scope, Settings
from mnemo.embed import Embeddings
from mnemo.interfaces.cli import app as cli_app
from mnemo.interfaces.http import create_app
from mnemo.models import ContextBlock, EntityFacts, Memory, MemoryHistory, RecallResult, Refusal, Turn
from tests.conftest import SEED, new_database
from tests.integration.test_http import serve
from tests.night_data import START

# The MCP answers come from ``mnemo mcp``, a real subprocess.
pytestmark = pytest.mark.slow

ENTITY = "shape"
SCOPE = Scope(ENTITY, "default")
HIT_QUERY = "what bike does Maya ride?"
MISS_QUERY = "the boiling point of liquid nitrogen"
ATTENTION = "planning a bike trip with Maya"
FACTS_ABOUT = "Alice"
# Free-form mappings inside records (their keys are data, not shape): compared as leaves.
FREE_FORM = {"metadata", "evidence", "weights"}
TIME_KEYS = {"created_at", "event_time", "last_accessed", "at", "valid_from", "valid_to", "as_of", "last_write"}
ID_KEYS = {"id", "parent", "item_id", "memory_id", "related_id", "forgotten"}
# The record each operation answers with (where there is one): its fields are the top-level keys.
RECORDS: dict[str, type] = {
    "remember": Memory,
    "record": Turn,
    "recall": RecallResult,
    "refusal": Refusal,
    "context": ContextBlock,
    "why": MemoryHistory,
    "facts": EntityFacts,
}

Answers = dict[str, dict[str, Any]]  # face ("cli", "http", "mcp") -> operation -> JSON answer


# --- the shared archive ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def shape_settings(pg_admin_url: str, template_url: str) -> Settings:
    return Settings(database_url=new_database(pg_admin_url), seed=SEED)


@pytest.fixture(scope="module")
def seeded(shape_settings: Settings, embeddings: Embeddings) -> dict[str, str]:
    """Turns with facts about Alice, three near-identical memories (an insight merges them), a
    night that mines both; a bearer token for the scope's entity. Returns the ids the reads need."""
    with Archive(shape_settings, embeddings=embeddings) as archive:
        for i, text in enumerate(["I live in Lisbon.", "Nice.", "I work at Acme as an engineer.", "Cool."]):
            archive.record_turn(
                SCOPE,
                "seed",
                "user" if i % 2 == 0 else "assistant",
                text,
                speaker=("Alice", "Bob")[i % 2],
                created_at=START + timedelta(minutes=i),
            )
        sources = [
            archive.remember(SCOPE, f"Alice prefers simple deployment tools {tail} complex infrastructure.")
            for tail in ("over", "rather than", "to")
        ]
        archive.night_cycle(SCOPE, as_of=START + timedelta(hours=1), stages=("surprisal", "knowledge", "insights"))
        token, _ = archive.access.create_token(ENTITY)
    with psycopg.connect(str(shape_settings.database_url)) as conn:
        row = conn.execute("SELECT id FROM mnemo.memories WHERE kind = 'insight' LIMIT 1").fetchone()
    assert row is not None, "the night made no insight to ask 'why do I believe' about"
    return {"token": token, "source": str(sources[0].id), "insight": str(row[0])}


# --- the three faces ------------------------------------------------------------------------------
def _cli(settings: Settings, home: Path, ids: dict[str, str]) -> dict[str, Any]:
    runner = CliRunner()
    env = {"MNEMO_DATABASE_URL": str(settings.database_url), "MNEMO_HOME": str(home), "MNEMO_ENTITY": ENTITY}

    def run(*args: str) -> Any:
        result = runner.invoke(cli_app, [*args, "--json"], env=env)
        assert result.exit_code == 0, (args, result.stdout, result.stderr)
        return json.loads(result.stdout)

    made = run("remember", "Maya rides a green Brompton bike to work")
    return {
        "remember": made,
        "record": run("record", "We cycled to the coast", "--session", "cli", "--speaker", "Maya"),
        "recall": run("recall", HIT_QUERY, "-k", "3"),
        "refusal": run("recall", MISS_QUERY),
        "context": run("context", ATTENTION, "--budget", "200"),
        "why": run("why", ids["source"]),
        "believe": run("believe", ids["insight"]),
        "facts": run("facts", FACTS_ABOUT),
        "grant": run("grant", "bob"),
        "grants": run("grants"),
        "revoke": run("revoke", "bob"),
        "forget": run("forget", made["id"]),
    }


def _http(settings: Settings, embeddings: Embeddings, ids: dict[str, str]) -> dict[str, Any]:
    with (
        serve(create_app(settings, embeddings=embeddings)) as url,
        httpx.Client(base_url=url, headers={"Authorization": f"Bearer {ids['token']}"}, timeout=60) as c,
    ):

        def ok(response: httpx.Response) -> Any:
            assert response.status_code in (200, 201), (response.request.url, response.text)
            return response.json()

        made = ok(c.post("/v1/memories", json={"content": "Maya's bike is a green Brompton"}))
        return {
            "remember": made,
            "record": ok(
                c.post("/v1/turns", json={"session": "http", "role": "user", "content": "We cycled to the lake"})
            ),
            "recall": ok(c.post("/v1/recall", json={"query": HIT_QUERY, "k": 3})),
            "refusal": ok(c.post("/v1/recall", json={"query": MISS_QUERY})),
            "context": ok(c.post("/v1/context", json={"text": ATTENTION, "budget": 200})),
            "why": ok(c.get(f"/v1/memories/{ids['source']}/why")),
            "believe": ok(c.get(f"/v1/memories/{ids['insight']}/believe")),
            "facts": ok(c.get(f"/v1/facts/{FACTS_ABOUT}")),
            "grant": ok(c.post("/v1/grants", json={"grantee": "carol"})),
            "grants": ok(c.get("/v1/grants")),
            "revoke": ok(c.delete("/v1/grants/carol")),
            "forget": ok(c.delete(f"/v1/items/{made['id']}")),
        }


def _mcp_data(result: Any) -> Any:
    """A tool's structured content, checked against its JSON text (the two must agree)."""
    assert not result.is_error, result.content
    assert result.structured_content is not None, "the tool answered without structured content"
    assert json.loads(result.content[0].text) == result.structured_content
    return result.structured_content


async def _mcp_answers(settings: Settings, home: Path) -> dict[str, Any]:
    env = {
        **os.environ,
        "MNEMO_DATABASE_URL": str(settings.database_url),
        "MNEMO_HOME": str(home),
        "MNEMO_ENTITY": ENTITY,
        "MNEMO_NAMESPACE": SCOPE.namespace,
    }
    mnemo = str(Path(sys.executable).parent / "mnemo")
    async with Client(StdioServerParameters(command=mnemo, args=["mcp"], env=env)) as client:

        async def call(tool: str, **arguments: Any) -> Any:
            return _mcp_data(await client.call_tool(tool, arguments))

        made = await call("remember", content="Maya's Brompton bike is green")
        return {
            "remember": made,
            "recall": await call("recall", query=HIT_QUERY, k=3),
            "refusal": await call("recall", query=MISS_QUERY),
            "context": await call("context", text=ATTENTION, budget=200),
            "forget": await call("forget", item_id=made["id"]),
        }


@pytest.fixture(scope="module")
def answers(
    shape_settings: Settings,
    seeded: dict[str, str],
    embeddings: Embeddings,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Answers]:
    home = tmp_path_factory.mktemp("shapes")
    yield {
        "http": _http(shape_settings, embeddings, seeded),
        "cli": _cli(shape_settings, home, seeded),
        "mcp": asyncio.run(_mcp_answers(shape_settings, home)),
    }


# --- comparing shapes -----------------------------------------------------------------------------
def shape(value: Any, key: str | None = None) -> Any:
    """The key tree of a JSON value: a dict's keys (recursively), a list's elements merged into one
    shape, ``None`` for null (unknown shape), ``"*"`` for any other leaf."""
    if key in FREE_FORM or not isinstance(value, dict | list):
        return None if value is None else "*"
    if isinstance(value, dict):
        return {k: shape(v, k) for k, v in value.items()}
    merged: Any = None
    for item in value:
        merged = _merge(merged, shape(item, key))
    return [merged]


def _merge(a: Any, b: Any) -> Any:
    if a is None or b is None:
        return b if a is None else a
    if isinstance(a, dict) and isinstance(b, dict):
        return {k: _merge(a.get(k), b.get(k)) for k in a.keys() | b.keys()}
    if isinstance(a, list) and isinstance(b, list):
        return [_merge(a[0], b[0])]
    return a


def differences(a: Any, b: Any, path: str = "$") -> list[str]:
    """Where two key trees differ (null and empty lists match anything: their shape is unknown)."""
    if a is None or b is None or a == [None] or b == [None]:
        return []
    if isinstance(a, dict) and isinstance(b, dict):
        found = [f"{path}: keys only on the left {sorted(a.keys() - b.keys())}"] if a.keys() - b.keys() else []
        found += [f"{path}: keys only on the right {sorted(b.keys() - a.keys())}"] if b.keys() - a.keys() else []
        return found + [d for k in a.keys() & b.keys() for d in differences(a[k], b[k], f"{path}.{k}")]
    if isinstance(a, list) and isinstance(b, list):
        return differences(a[0], b[0], f"{path}[]")
    if isinstance(a, dict | list) or isinstance(b, dict | list):
        return [f"{path}: {type(a).__name__} against {type(b).__name__}"]
    return []


def walk(value: Any, key: str | None = None) -> Iterator[tuple[str | None, Any]]:
    """Every (key, value) pair in a JSON value, at every depth."""
    yield key, value
    if isinstance(value, dict):
        for k, v in value.items():
            yield from walk(v, k)
    elif isinstance(value, list):
        for item in value:
            yield from walk(item, key)


OPERATIONS = ["remember", "record", "recall", "refusal", "context", "why", "believe", "facts", "grant", "grants"]
OPERATIONS += ["revoke", "forget"]


@pytest.mark.parametrize("operation", OPERATIONS)
def test_every_face_answers_an_operation_with_the_same_keys(answers: Answers, operation: str) -> None:
    faces = {face: got[operation] for face, got in answers.items() if operation in got}
    assert {"cli", "http"} <= set(faces)  # every operation here exists on the CLI and over HTTP
    reference = shape(faces["http"])
    for face, answer in faces.items():
        assert differences(reference, shape(answer)) == [], f"{face} {operation} differs from HTTP"


@pytest.mark.parametrize("operation", sorted(RECORDS))
def test_answers_are_the_public_record(answers: Answers, operation: str) -> None:
    record = RECORDS[operation]
    expected = {f.name for f in fields(record)}
    for face, got in answers.items():
        if operation in got:
            assert set(got[operation]) == expected, f"{face} {operation} is not a {record.__name__}"


def test_the_answers_hold_what_was_asked(answers: Answers) -> None:
    # Not only shapes: the same data came back, so the shapes compared are of real answers.
    for face, got in answers.items():
        assert got["remember"]["scope"] == str(SCOPE) and got["remember"]["kind"] == "semantic", face
        assert got["recall"]["refused"] is False and "Brompton" in got["recall"]["hits"][0]["content"], face
        assert got["refusal"]["refused"] is True and got["refusal"]["query"] == MISS_QUERY, face
        assert "Brompton" in got["context"]["text"] and got["context"]["items"], face
        assert got["forget"] == {"forgotten": got["remember"]["id"], "removed": got["forget"]["removed"]}, face
        assert got["forget"]["removed"]["memories"] == 1, face
    for face in ("cli", "http"):
        got = answers[face]
        assert got["record"]["session_id"] == face and got["record"]["turn_number"] == 0, face
        assert got["why"]["changes"] and got["believe"]["chain"] and got["facts"]["facts"], face
        assert got["grant"]["created"] is True and got["revoke"]["revoked"] is True, face
        assert got["grants"] == {"scope": str(SCOPE), "grantees": ["bob" if face == "cli" else "carol"]}, face


def test_times_are_iso_8601_and_ids_are_uuid_strings(answers: Answers) -> None:
    times = ids = 0
    for face, got in answers.items():
        for operation, answer in got.items():
            for key, value in walk(answer):
                if key in TIME_KEYS and value is not None:
                    assert isinstance(value, str), (face, operation, key, value)
                    parsed = datetime.fromisoformat(value)
                    assert parsed.tzinfo is not None and parsed.isoformat() == value, (face, operation, key, value)
                    times += 1
                elif key in ID_KEYS and value is not None:
                    assert isinstance(value, str) and str(uuid.UUID(value)) == value, (face, operation, key, value)
                    ids += 1
    assert times > 20 and ids > 20  # the walk saw the records' times and ids
