"""Issue 12 extras: de-duplicated ``remember``, purging an entity across namespaces, one ``k`` limit."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from typer.testing import CliRunner

from mnemo import Archive, AsyncArchive, InvalidContentError, RecallResult, Scope, Settings, UnknownScopeError
from mnemo.embed import Embeddings
from mnemo.interfaces.cli import app
from mnemo.interfaces.pydantic_ai import memory_toolset
from tests.conftest import snapshot

ME = Scope("repeater", "notes")
runner = CliRunner()


def cli(database_url: str, home: Path, *args: str) -> tuple[int, str, str]:
    env = {"MNEMO_DATABASE_URL": database_url, "MNEMO_HOME": str(home), "MNEMO_ENTITY": "cli"}
    result = runner.invoke(app, list(args), env=env)
    return result.exit_code, result.stdout, result.stderr


# --- 1. de-duplication -----------------------------------------------------------------------


async def test_an_identical_remember_reinforces_instead_of_copying(archive: AsyncArchive, database_url: str) -> None:
    first = await archive.remember(ME, "The boiler is serviced every October", kind="procedural")
    again = await archive.remember(ME, "The boiler is serviced every October", kind="procedural")

    assert again.id == first.id
    assert snapshot(database_url)["mnemo.memories"] == 1
    assert again.alpha > first.alpha and again.beta == first.beta  # reinforced, returned as it now stands
    history = await archive.inspect.why(ME, first.id)
    reinforced = [c for c in history.changes if c.operation == "reinforce"]
    assert [c.reason for c in reinforced] == ["remembered again"]
    assert history.alpha == again.alpha


async def test_what_differs_is_not_a_duplicate(archive: AsyncArchive, database_url: str) -> None:
    base = await archive.remember(ME, "Tea, not coffee, after 3pm", kind="preference")
    other_kind = await archive.remember(ME, "Tea, not coffee, after 3pm", kind="semantic")
    anchored = await archive.remember(ME, "Tea, not coffee, after 3pm", kind="preference", anchored=True)
    other_scope = await archive.remember(
        Scope("repeater", "elsewhere"), "Tea, not coffee, after 3pm", kind="preference"
    )
    update = await archive.remember(ME, "Tea, not coffee, after 3pm", kind="preference", supersedes=[base.id])

    assert len({base.id, other_kind.id, anchored.id, other_scope.id, update.id}) == 5
    assert snapshot(database_url)["mnemo.memories"] == 5
    # the superseded one is no longer live; remembering the text again reinforces the update
    assert (await archive.remember(ME, "Tea, not coffee, after 3pm", kind="preference")).id == update.id


def test_the_blocking_archive_dedupes_too(sync_archive: Archive) -> None:
    first = sync_archive.remember(ME, "The spare key is with the neighbour")
    assert sync_archive.remember(ME, "The spare key is with the neighbour").id == first.id


# --- 2. purge an entity across namespaces -------------------------------------------------------


async def _fill(archive: AsyncArchive, scope: Scope) -> None:
    await archive.remember(scope, f"A memory of {scope.entity_id} in {scope.namespace}")
    await archive.record_turn(scope, "s1", "user", f"a turn of {scope.entity_id} in {scope.namespace}")


async def test_purge_entity_removes_every_namespace_and_nothing_else(archive: AsyncArchive, database_url: str) -> None:
    bob = Scope("bob", "chat")
    for scope in (Scope("alice", "chat"), Scope("alice", "work"), bob):
        await _fill(archive, scope)
    before_bob = await archive.access.scopes("bob")

    removed = await archive.purge_entity("alice")

    assert removed["scopes"] == 2 and removed["memories"] == 2 and removed["turns"] == 2
    assert await archive.access.scopes("alice") == []
    assert await archive.access.scopes("bob") == before_bob
    counts = snapshot(database_url)
    assert counts["mnemo.scopes"] == 1 and counts["mnemo.memories"] == 1 and counts["mnemo.turns"] == 1
    hits = await archive.recall(bob, "a memory of bob", k=2, read_only=True)
    assert isinstance(hits, RecallResult) and hits.hits
    with pytest.raises(UnknownScopeError):
        await archive.purge_entity("alice")


def test_purge_entity_blocking(sync_archive: Archive) -> None:
    with pytest.raises(UnknownScopeError):
        sync_archive.purge_entity("nobody")
    sync_archive.remember(Scope("carol", "a"), "Carol likes kites")
    assert sync_archive.purge_entity("carol")["memories"] == 1


def test_cli_purge_all_namespaces(database_url: str, tmp_path: Path) -> None:
    for ns in ("chat", "work"):
        assert cli(database_url, tmp_path, "remember", f"alice note in {ns}", "-e", "alice", "-n", ns)[0] == 0
    assert cli(database_url, tmp_path, "remember", "bob note", "-e", "bob", "-n", "chat")[0] == 0

    code, _, err = cli(database_url, tmp_path, "purge", "--all-namespaces", "-e", "alice")
    assert code != 0 and "--yes" in err
    assert snapshot(database_url)["mnemo.memories"] == 3
    code, out, _ = cli(database_url, tmp_path, "purge", "--all-namespaces", "-e", "alice", "--yes", "--json")
    assert code == 0 and json.loads(out)["removed"]["memories"] == 2
    assert snapshot(database_url)["mnemo.memories"] == 1
    code, _, err = cli(database_url, tmp_path, "purge", "--all-namespaces", "-e", "alice", "--yes")
    assert code == 1 and "no scope" in err


# --- 3. one k limit ----------------------------------------------------------------------------


async def test_k_above_max_k_is_rejected_alike_by_api_and_cli(
    archive: AsyncArchive, database_url: str, tmp_path: Path
) -> None:
    await archive.remember(ME, "The bins go out on Tuesday")
    too_many = archive.settings.max_k + 1
    with pytest.raises(InvalidContentError) as api_error:
        await archive.recall(ME, "bins", too_many)
    code, _, err = cli(database_url, tmp_path, "recall", "bins", "-k", str(too_many), "-e", "repeater", "-n", "notes")
    assert code == 1
    assert str(api_error.value) in " ".join(err.split())
    assert f"between 1 and {archive.settings.max_k}" in str(api_error.value)
    # max_k itself is allowed on both
    assert await archive.recall(ME, "bins", archive.settings.max_k, read_only=True)
    code, _, _ = cli(
        database_url, tmp_path, "recall", "bins", "-k", str(archive.settings.max_k), "-e", "repeater", "-n", "notes"
    )
    assert code == 0


async def test_pydantic_ai_tool_clamps_k_to_the_settings_limit(settings: Settings, embeddings: Embeddings) -> None:
    small = await AsyncArchive.open(settings.model_copy(update={"max_k": 3}), embeddings=embeddings)
    try:
        for n in range(5):
            await small.remember(ME, f"Garden note number {n} about tomatoes")
        toolset = await memory_toolset(small, ME, max_k=50)  # a higher tool limit cannot pass the archive's
        assert toolset is not None
        returns: list[Any] = []

        def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            for message in messages:
                returns.extend(p.content for p in getattr(message, "parts", []) if isinstance(p, ToolReturnPart))
            if returns:
                return ModelResponse(parts=[TextPart("done")])
            return ModelResponse(parts=[ToolCallPart("query_archive", {"query": "garden tomatoes", "k": 50})])

        await Agent(FunctionModel(script), toolsets=[toolset]).run("garden")
        assert len(returns[0]) == 3
    finally:
        await small.close()
