"""``mnemo mcp`` end to end: the official MCP client launches the real server as a subprocess (stdio)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from mnemo import AsyncArchive, Settings
from mnemo.embed import Embeddings
from tests.conftest import snapshot

# Every test here starts ``mnemo mcp`` as a real subprocess (stdio or HTTP).
pytestmark = pytest.mark.slow


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
        assert tools == {
            "recall", "remember", "context", "forget", "export_packets", "record_outcome", "reflexes_for", "feedback",
            "readiness", "record_turn",
        }  # fmt: skip
        unknown = await client.call_tool("export_packets", {})  # nothing stored yet: refused as the night refuses
        assert unknown.is_error and "scope mcp-user/mcp does not exist (nothing" in unknown.content[0].text

        stored = _data(await client.call_tool("remember", {"content": "Maya's bike is a green Brompton"}))
        assert stored["kind"] == "semantic"
        found = _data(await client.call_tool("recall", {"query": "what bike does Maya ride?", "k": 3}))
        assert found["refused"] is False and found["hits"][0]["content"] == "Maya's bike is a green Brompton"
        assert found["hits"][0]["id"] == stored["id"]
        nothing = _data(await client.call_tool("recall", {"query": "the boiling point of liquid nitrogen"}))
        assert nothing["refused"] is True and nothing["message"] == "The archive contains nothing reliable about this."
        assert not nothing.get("hits") and nothing["scope"] == "mcp-user/mcp"  # a Refusal record: no hits
        block = await client.call_tool("context", {"text": "planning a bike trip with Maya", "budget": 100})
        assert "green Brompton" in _data(block)["text"] and "green Brompton" in block.content[0].text

        bad = await client.call_tool("remember", {"content": "x", "kind": "gossip"})
        assert bad.is_error and "kind must be one of" in bad.content[0].text
        empty = await client.call_tool("remember", {"content": " \x00 "})
        assert empty.is_error
        no_question = await client.call_tool("recall", {"query": "  "})
        assert no_question.is_error and "the question is empty" in no_question.content[0].text
        control = await client.call_tool("remember", {"content": "bad\x01content"})
        assert control.is_error and "control character U+0001" in control.content[0].text
        out_of_range = await client.call_tool("recall", {"query": "bike", "k": 500})
        assert out_of_range.is_error and "k must be an integer between 1 and 200" in out_of_range.content[0].text
        no_level = await client.call_tool("recall", {"query": "bike", "level": 7})
        assert no_level.is_error and "level must be 0, 1, 2 or 3" in no_level.content[0].text
        whole = _data(await client.call_tool("recall", {"query": "what bike does Maya ride?", "expand": True}))
        assert whole["hits"][0]["id"] == stored["id"] and whole["hits"][0]["tier"] == "hippocampus"
        bad_time = await client.call_tool("recall", {"query": "bike", "as_of": "yesterday-ish"})
        assert bad_time.is_error and "ISO-8601" in bad_time.content[0].text
        before = _data(await client.call_tool("recall", {"query": "what bike does Maya ride?", "as_of": "2001-01-01"}))
        assert before["refused"] is True  # at that time nothing was stored
        tree = _data(await client.call_tool("recall", {"query": "bikes", "level": 1}))
        assert tree["refused"] is True  # no night has built a tree yet: a refusal, not an error

        exported = _data(await client.call_tool("export_packets", {"limit": 1}))
        assert [p["packet_id"] for p in exported["packets"]] == [stored["id"]] and exported["next"] is None
        packet = exported["packets"][0]
        assert packet["prose"]["content"] == stored["content"] and packet["vectors"]
        too_many = await client.call_tool("export_packets", {"limit": 0})
        assert too_many.is_error and "limit must be" in too_many.content[0].text

        gone = _data(await client.call_tool("forget", {"item_id": stored["id"]}))
        assert gone["removed"]["memories"] == 1
        again = await client.call_tool("forget", {"item_id": stored["id"]})
        assert again.is_error and "no turn or memory" in again.content[0].text
    assert snapshot(database_url)["mnemo.memories"] == 0


async def test_each_server_sees_only_its_configured_scope(database_url: str, tmp_path: Path) -> None:
    async with Client(_server(database_url, tmp_path, "alice")) as alice:
        await alice.call_tool("remember", {"content": "Alice's locker code is 5521"})
    async with Client(_server(database_url, tmp_path, "bob")) as bob:
        unknown = _data(await bob.call_tool("recall", {"query": "Alice's locker code", "k": 5}))
        assert unknown["refused"] is True and not unknown.get("hits")  # bob has no memory yet: "I don't know"
        await bob.call_tool("remember", {"content": "Bob's locker is number 12"})
        result = _data(await bob.call_tool("recall", {"query": "Alice's locker code", "k": 5}))
        assert result["hits"] and all("5521" not in h["content"] for h in result["hits"])


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_mcp_over_http_takes_the_scope_from_the_token(
    database_url: str, tmp_path: Path, settings: Settings, embeddings: Embeddings
) -> None:
    import asyncio
    import subprocess

    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    archive = await AsyncArchive.open(settings, embeddings=embeddings)
    try:
        maya, _ = await archive.access.create_token("maya", namespace="mcp")
        rex, rex_id = await archive.access.create_token("rex")
    finally:
        await archive.close()
    port = _free_port()
    env = {**os.environ, "MNEMO_DATABASE_URL": database_url, "MNEMO_HOME": str(tmp_path), "MNEMO_ENTITY": "nobody"}
    mnemo = str(Path(sys.executable).parent / "mnemo")
    proc = subprocess.Popen(  # noqa: ASYNC220  # the real server, as a client would run it
        [mnemo, "mcp", "--http", "--auth", "--port", str(port)], env=env, stderr=subprocess.DEVNULL
    )
    url = f"http://127.0.0.1:{port}/mcp"

    @asynccontextmanager
    async def client(token: str) -> AsyncIterator[Client]:
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http,
            Client(streamable_http_client(url, http_client=http)) as c,
        ):
            yield c

    try:
        async with httpx2.AsyncClient() as http:
            for _ in range(600):  # the server loads the model first
                try:
                    anonymous = await http.post(url, json={})
                    break
                except httpx2.TransportError:
                    await asyncio.sleep(0.1)
            assert anonymous.status_code == 401  # no token, no MCP
            forged = await http.post(url, json={}, headers={"Authorization": "Bearer mn1.bWF5YQ.forged"})
            assert forged.status_code == 401

        async with client(maya) as c:
            stored = _data(await c.call_tool("remember", {"content": "Maya's locker code is 4471"}))
            found = _data(await c.call_tool("recall", {"query": "what is Maya's locker code?", "k": 3}))
            assert found["hits"][0]["id"] == stored["id"]
        async with client(rex) as c:  # another entity's token sees nothing of Maya's
            other = _data(await c.call_tool("recall", {"query": "what is Maya's locker code?", "k": 3}))
            assert other["refused"] is True and not other.get("hits")  # rex's own scope holds nothing yet
            await c.call_tool("remember", {"content": "Rex walks the dog at seven"})
            mine = _data(await c.call_tool("recall", {"query": "what is Maya's locker code?", "k": 3}))
            assert all("4471" not in h["content"] for h in mine.get("hits", []))  # a Refusal has no hits
        scopes = {(e, n) for e, n in _rows(database_url, "SELECT entity_id, namespace FROM mnemo.memories")}
        # The token's namespace, else the configured one (MNEMO_NAMESPACE unset: "default"); never MNEMO_ENTITY.
        assert scopes == {("maya", "mcp"), ("rex", "default")}

        archive = await AsyncArchive.open(settings, embeddings=embeddings)
        try:
            assert await archive.access.revoke_token("rex", rex_id)
        finally:
            await archive.close()
        async with httpx2.AsyncClient() as http:
            revoked = await http.post(url, json={}, headers={"Authorization": f"Bearer {rex}"})
            assert revoked.status_code == 401
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _rows(url: str, query: str) -> list[tuple[Any, ...]]:
    import psycopg

    with psycopg.connect(url) as conn:
        return conn.execute(query).fetchall()  # type: ignore[arg-type]


async def test_mcp_record_turn_with_a_key_stores_once(database_url: str, tmp_path: Path) -> None:
    # A retried record_turn (issue 39 item 3): the repeat is reported, nothing stored twice.
    async with Client(_server(database_url, tmp_path, "turner")) as client:
        args = {"content": "Book the table for 8", "session": "s", "idempotency_key": "m-1"}
        first = _data(await client.call_tool("record_turn", args))
        retry = _data(await client.call_tool("record_turn", args))
        assert first["repeat"] is False and first["turn_number"] == 0
        assert retry["repeat"] is True and retry["id"] == first["id"]
        reused = await client.call_tool("record_turn", {**args, "content": "Cancel it"})
        assert reused.is_error and "already names turn 0" in reused.content[0].text
        bad = await client.call_tool("record_turn", {**args, "idempotency_key": "two\nlines"})
        assert bad.is_error and "idempotency_key" in bad.content[0].text
    assert snapshot(database_url)["mnemo.turns"] == 1
