"""The inner life through every face (issue 31): HTTP (``/v1/feedback``, ``/v1/readiness``,
``/v1/inner``), the command line (``mnemo readiness``, ``reflect``, ``approve``) and MCP
(``feedback``, ``readiness``): the same records, scoped to the caller, bad input refused with
nothing changed."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp.client import Client
from typer.testing import CliRunner

from mnemo.interfaces.cli import app
from tests.conftest import snapshot
from tests.integration.test_http import auth, server, tokens  # noqa: F401  (fixtures)
from tests.integration.test_mcp import _data, _server

runner = CliRunner()


def test_feedback_readiness_and_the_inner_life_over_http(
    server: str,  # noqa: F811
    tokens: dict[str, Any],  # noqa: F811
    database_url: str,
) -> None:
    with httpx.Client(base_url=server, headers=auth(tokens["alice"]), timeout=30) as c:
        assert c.get("/v1/readiness").json()["reached"] == 0
        c.post("/v1/memories", json={"content": "Alice's favourite tea is oolong", "kind": "preference"})
        found = c.post("/v1/recall", json={"query": "which tea does Alice like?", "k": 2}).json()
        outcome = found["outcome_id"]
        made = c.post("/v1/feedback", json={"outcome_id": outcome, "value": 0.5, "used": [found["hits"][0]["id"]]})
        assert made.status_code == 201 and uuid.UUID(made.json()["id"])
        ready = c.get("/v1/readiness").json()
        assert ready["reached"] == 1 and ready["milestones"][1]["name"] == "first_retrieval"
        assert ready["milestones"][1]["reached"] is True and ready["milestones"][0]["reached"] is False
        life = c.get("/v1/inner").json()
        assert life["tuned"] is False and life["alphas"]["search"] > 0 and life["scope"] == "alice/default"
        assert life["readiness"] == ready  # one shape for readiness, alone or inside the inner life (issue 39)
        before = snapshot(database_url)
        for body in (
            {"outcome_id": outcome, "value": 2},
            {"outcome_id": outcome, "value": 1, "kind": "rumour"},
            {"outcome_id": "nope", "value": 1},
            {"outcome_id": outcome, "value": 1, "owner": "bob"},
        ):
            assert c.post("/v1/feedback", json=body).status_code == 422
        assert snapshot(database_url) == before
    with httpx.Client(base_url=server, headers=auth(tokens["bob"]), timeout=30) as c:
        refused = c.post("/v1/feedback", json={"outcome_id": outcome, "value": 1})
        assert refused.status_code == 404  # bob's scope holds no such outcome; alice's stays unrevealed
        assert c.get("/v1/readiness").json()["reached"] == 0
    assert snapshot(database_url) == before


def test_readiness_reflect_and_approve_on_the_command_line(database_url: str, tmp_path: Path) -> None:
    env = {"MNEMO_DATABASE_URL": database_url, "MNEMO_HOME": str(tmp_path), "MNEMO_ENTITY": "cli"}
    result = runner.invoke(app, ["remember", "The spare key is under the blue flowerpot"], env=env)
    assert result.exit_code == 0
    result = runner.invoke(app, ["recall", "where is the spare key?"], env=env)
    result = runner.invoke(app, ["readiness", "--entity", "cli", "--json"], env=env)
    data = json.loads(result.stdout)
    assert result.exit_code == 0 and data["reached"] == 1 and data["milestones"][1]["reached"]
    result = runner.invoke(app, ["readiness", "--entity", "cli"], env=env)
    assert result.exit_code == 0 and "1 of 10 milestones" in result.stdout and "first_retrieval" in result.stdout
    result = runner.invoke(app, ["reflect", "--entity", "cli", "--json"], env=env)
    assert result.exit_code == 0 and json.loads(result.stdout)["promotion"]["goal"] == 0
    result = runner.invoke(app, ["reflect", "--entity", "cli", "--as-of", "not a time"], env=env)
    assert result.exit_code != 0 and "as-of" in result.stderr
    result = runner.invoke(app, ["approve", str(uuid.uuid4()), "--entity", "cli"], env=env)
    assert result.exit_code == 1 and "no memory" in result.stderr


@pytest.mark.slow
async def test_feedback_and_readiness_over_mcp(database_url: str, tmp_path: Path) -> None:
    async with Client(_server(database_url, tmp_path, "mcp-user")) as client:
        await client.call_tool("remember", {"content": "Maya's bike is a green Brompton"})
        found = _data(await client.call_tool("recall", {"query": "what bike does Maya ride?", "k": 3}))
        told = _data(await client.call_tool("feedback", {"outcome_id": found["outcome_id"], "value": 1.0,
                                                         "used": [found["hits"][0]["id"]]}))  # fmt: skip
        assert uuid.UUID(told["id"])
        bad = await client.call_tool("feedback", {"outcome_id": found["outcome_id"], "value": 3.0})
        assert bad.is_error and "value must be a number from -1 to 1" in bad.content[0].text
        ready = _data(await client.call_tool("readiness", {}))
        assert ready["reached"] == 1 and ready["entity_id"] == "mcp-user"
