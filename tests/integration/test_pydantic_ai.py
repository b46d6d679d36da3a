"""The Pydantic AI toolset driven by FunctionModel / TestModel against the real database and embedder."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

from mnemo import Archive, AsyncArchive, Scope, Settings
from mnemo.embed import Embeddings, load_embedder
from mnemo.interfaces.pydantic_ai import REFUSAL, memory_toolset

MAYA = Scope("maya", "chat")


def scripted(calls: list[tuple[str, dict[str, Any]]], returns: list[Any]) -> FunctionModel:
    """A model that makes the given tool calls one per turn, records what they returned, then answers."""

    def step(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        for message in messages:
            for part in getattr(message, "parts", []):
                if isinstance(part, ToolReturnPart) and part.tool_call_id not in {r[0] for r in returns}:
                    returns.append((part.tool_call_id, part.content))
        if calls:
            name, args = calls.pop(0)
            return ModelResponse(parts=[ToolCallPart(name, args, tool_call_id=f"call-{len(returns)}-{name}")])
        return ModelResponse(parts=[TextPart("done")])

    return FunctionModel(step)


async def test_agent_remembers_then_recalls_through_the_tools(archive: AsyncArchive) -> None:
    toolset = await memory_toolset(archive, MAYA)
    assert toolset is not None
    returns: list[Any] = []
    model = scripted(
        [
            ("remember", {"content": "Maya's dog is a beagle called Pixel", "kind": "semantic"}),
            ("query_archive", {"query": "what is the name of Maya's dog?", "k": 3}),
            ("query_archive", {"query": "orbital period of Neptune's moons", "k": 3}),
            ("context", {"budget": 200}),
        ],
        returns,
    )
    result = await Agent(model, toolsets=[toolset]).run("Tell me about my dog")
    assert result.output == "done"
    stored, found, refused, block = (content for _, content in returns)
    assert stored.startswith("remembered (semantic, id ")
    assert found[0]["content"] == "Maya's dog is a beagle called Pixel" and found[0]["kind"] == "semantic"
    assert set(found[0]) >= {"content", "kind", "time", "score"}
    assert refused == REFUSAL
    assert "Pixel" in block
    # the write really went to the database, in Maya's scope only
    hits = await archive.recall(MAYA, "Pixel", k=1, read_only=True)
    assert hits and hits.hits[0].content == "Maya's dog is a beagle called Pixel"


async def test_a_new_scope_answers_with_the_refusal_not_an_error(archive: AsyncArchive) -> None:
    toolset = await memory_toolset(archive, Scope("newcomer", "chat"))  # nothing was ever stored there
    assert toolset is not None
    returns: list[Any] = []
    model = scripted([("query_archive", {"query": "what is my dog called?"}), ("context", {"budget": 200})], returns)
    await Agent(model, toolsets=[toolset]).run("What is my dog called?")
    assert [content for _, content in returns] == [REFUSAL, REFUSAL]


async def test_tools_reject_bad_kinds_and_clamp_k(archive: AsyncArchive) -> None:
    toolset = await memory_toolset(archive, MAYA, max_k=2)
    assert toolset is not None
    for n in range(4):
        await archive.remember(MAYA, f"Maya's note number {n} about gardening")
    returns: list[Any] = []
    model = scripted(
        [
            ("remember", {"content": "something", "kind": "gossip"}),
            ("query_archive", {"query": "gardening notes", "k": 50}),
            ("remember", {"content": "   "}),
        ],
        returns,
    )
    await Agent(model, toolsets=[toolset]).run("garden")
    bad_kind, clamped, empty = (content for _, content in returns)
    assert bad_kind.startswith("unknown kind 'gossip'")
    assert len(clamped) == 2
    assert empty.startswith("not stored: content is empty")


async def test_test_model_calls_every_tool(archive: AsyncArchive) -> None:
    await archive.remember(MAYA, "Maya prefers window seats on trains")
    toolset = await memory_toolset(archive, MAYA)
    assert toolset is not None
    result = await Agent(TestModel(), toolsets=[toolset]).run("Which seat should I book for Maya?")
    called = {
        part.tool_name
        for message in result.all_messages()
        for part in getattr(message, "parts", [])
        if isinstance(part, ToolReturnPart)
    }
    assert called == {"query_archive", "remember", "context"}
    assert json.loads(result.output)  # TestModel summarises the tool results as JSON


async def test_no_tools_while_the_embedder_cannot_read_the_archive(settings: Settings, embeddings: Embeddings) -> None:
    archive = await AsyncArchive.open(settings, embeddings=embeddings)
    try:
        await archive.remember(MAYA, "Maya's dog is a beagle called Pixel")
    finally:
        await archive.close()
    other = await AsyncArchive.open(settings, embeddings=load_embedder(truncate_dim=128))
    try:
        assert other.pending_reembed == 1
        assert "run `mnemo reembed` first" in (await other.maintenance.health() or "")
        assert await memory_toolset(other, MAYA) is None
        await other.maintenance.reembed()
        assert await other.maintenance.health() is None and await memory_toolset(other, MAYA) is not None
    finally:
        await other.close()


def test_the_blocking_archive_works_too(sync_archive: Archive) -> None:
    import asyncio

    sync_archive.remember(MAYA, "Maya takes her coffee black")

    async def go() -> Any:
        toolset = await memory_toolset(sync_archive, MAYA)
        assert toolset is not None
        returns: list[Any] = []
        await Agent(scripted([("query_archive", {"query": "coffee"})], returns), toolsets=[toolset]).run("coffee?")
        return returns[0][1]

    found = asyncio.run(go())
    assert found[0]["content"] == "Maya takes her coffee black"


@pytest.mark.slow
def test_the_example_remembers_across_two_runs(database_url: str, tmp_path: Any) -> None:
    import os
    import subprocess
    import sys
    from pathlib import Path

    example = Path(__file__).parents[2] / "examples" / "agent_memory.py"
    env = {**os.environ, "MNEMO_DATABASE_URL": database_url, "MNEMO_HOME": str(tmp_path)}
    env.pop("MNEMO_EXAMPLE_MODEL", None)
    done = subprocess.run([sys.executable, str(example)], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "agent: remembered (semantic, id " in lines[1]
    assert lines[4] == "agent: From memory: my dog is a beagle called Pixel."


@pytest.mark.future_nights  # a week of nights
async def test_the_tool_reaches_the_cortex_its_lines_gists_and_tree(settings: Settings, embeddings: Embeddings) -> None:
    from tests.integration.test_cortex import QUESTION, a_week_of

    # no refusals: a one-branch tree's extractive summary need not resemble this question
    archive = await AsyncArchive.open(settings, embeddings=embeddings, refusal_threshold=-1.0)
    try:
        await a_week_of(archive, MAYA)  # a week of nights: raw turns gone, blocks in the cortex, a tree
        returns = await _ask_the_tool(archive, QUESTION)
    finally:
        await archive.close()
    lines, summaries, expanded, refused = (content for _, content in returns)
    assert "evict" in lines[0]["content"].lower() and lines[0]["tier"] == "cortex" and lines[0]["gist"]
    assert isinstance(summaries, list) and summaries and all(s["kind"] == "summary" for s in summaries)
    assert max(len(e["content"]) for e in expanded) > max(len(x["content"]) for x in lines)  # whole episodes
    assert isinstance(refused, str) and refused.startswith("memory error: level must be")


async def _ask_the_tool(archive: AsyncArchive, question: str) -> list[Any]:
    toolset = await memory_toolset(archive, MAYA)
    assert toolset is not None
    returns: list[Any] = []
    model = scripted(
        [
            ("query_archive", {"query": question, "k": 3}),
            ("query_archive", {"query": question, "k": 2, "level": 1}),
            ("query_archive", {"query": question, "k": 10, "expand": True}),
            ("query_archive", {"query": question, "level": 7}),
        ],
        returns,
    )
    await Agent(model, toolsets=[toolset]).run("why was the replica evicted?")
    return returns
