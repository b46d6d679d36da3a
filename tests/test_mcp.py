"""``mnemo mcp`` end to end: the official MCP client launches the real server as a subprocess (stdio)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from tests.conftest import snapshot


def _server(database_url: str, home: Path, entity: str) -> StdioServerParameters:
    env = {
        **os.environ,
        "MNEMO_DATABASE_URL": database_url,
        "MNEMO_HOME": str(home),
        "MNEMO_ENTITY": entity,
        "MNEMO_NAMESPACE": "mcp",
    }
    mnemo = str(Path(sys.executable).parent / "mnemo")  # the installed console script, as a client would run it
    return StdioServerParameters(command=mnemo, args=["mcp"], env=env)


def _data(result: Any) -> Any:
    if result.structured_content is not None:
        content = result.structured_content
        return content.get("result", content) if isinstance(content, dict) and set(content) == {"result"} else content
    return json.loads(result.content[0].text)


async def test_mcp_tools_over_stdio(database_url: str, tmp_path: Path) -> None:
    async with Client(_server(database_url, tmp_path, "mcp-user")) as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        assert tools == {"recall", "remember", "context", "forget"}

        stored = _data(await client.call_tool("remember", {"content": "Maya's bike is a green Brompton"}))
        assert stored["kind"] == "semantic"
        found = _data(await client.call_tool("recall", {"query": "what bike does Maya ride?", "k": 3}))
        assert found["refused"] is False and found["hits"][0]["content"] == "Maya's bike is a green Brompton"
        assert found["hits"][0]["id"] == stored["id"]
        nothing = _data(await client.call_tool("recall", {"query": "the boiling point of liquid nitrogen"}))
        assert nothing == {"refused": True, "message": "The archive contains nothing reliable about this.", "hits": []}
        block = await client.call_tool("context", {"text": "planning a bike trip with Maya", "budget": 100})
        assert "green Brompton" in block.content[0].text

        bad = await client.call_tool("remember", {"content": "x", "kind": "gossip"})
        assert bad.is_error and "kind must be one of" in bad.content[0].text
        empty = await client.call_tool("remember", {"content": " \x00 "})
        assert empty.is_error
        out_of_range = await client.call_tool("recall", {"query": "bike", "k": 500})
        assert out_of_range.is_error and "k must be between" in out_of_range.content[0].text

        gone = _data(await client.call_tool("forget", {"item_id": stored["id"]}))
        assert gone["removed"]["memories"] == 1
        again = await client.call_tool("forget", {"item_id": stored["id"]})
        assert again.is_error and "no turn or memory" in again.content[0].text
    assert snapshot(database_url)["mnemo.memories"] == 0


async def test_each_server_sees_only_its_configured_scope(database_url: str, tmp_path: Path) -> None:
    async with Client(_server(database_url, tmp_path, "alice")) as alice:
        await alice.call_tool("remember", {"content": "Alice's locker code is 5521"})
    async with Client(_server(database_url, tmp_path, "bob")) as bob:
        unknown = await bob.call_tool("recall", {"query": "Alice's locker code", "k": 5})
        assert unknown.is_error and "does not exist" in unknown.content[0].text  # bob has no memory yet
        await bob.call_tool("remember", {"content": "Bob's locker is number 12"})
        result = _data(await bob.call_tool("recall", {"query": "Alice's locker code", "k": 5}))
        assert result["hits"] and all("5521" not in h["content"] for h in result["hits"])
