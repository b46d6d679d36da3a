"""Entry/exit gates with the scratch buffer, crash recovery, the LLM contradiction layer, and
context assembly, against the real database and the bundled embedder."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import cast

import psycopg
import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from typer.testing import CliRunner

from mnemo import AsyncArchive, Scope, Settings
from mnemo.embed import Embeddings
from mnemo.interfaces.cli import app
from mnemo.write.gates import flush, observe
from tests.conftest import new_database

ME = Scope("gate", "test")


def rows(url: str, sql: str, *args: object) -> list[tuple[object, ...]]:
    with psycopg.connect(url) as conn:
        return conn.execute(sql, args).fetchall()  # type: ignore[arg-type]


async def test_entry_gate_skips_most_trivial_content_and_traces_everything(
    settings: Settings, embeddings: Embeddings, database_url: str, pg_admin_url: str
) -> None:
    archive = await AsyncArchive.open(settings, embeddings=embeddings, seed=3, gate_flush_every=1000)
    try:
        seen = [await archive.observe(ME, "ok") for _ in range(40)]
        real = await archive.observe(ME, "My daughter's school play is on Friday evening")
    finally:
        await archive.close()
    skipped = sum(1 for s in seen if s.action == "skip")
    # The 95% skip rule, seed 3: the 19th and the 32nd "ok" are buffered anyway, the other 38 skipped.
    assert skipped == 38 and [i for i, s in enumerate(seen) if s.action == "buffer"] == [18, 31]
    assert real.action == "buffer" and real.reason == "content"
    entry = rows(database_url, "SELECT action, count(*) FROM traces.gate_decisions WHERE gate = 'entry' GROUP BY 1")
    assert dict(entry) == {"skip": skipped, "buffer": 41 - skipped}  # type: ignore[arg-type]

    # The same seed on a fresh database (here, opening would first recover the three buffered items):
    # the same decisions.
    fresh = Settings(database_url=new_database(pg_admin_url))
    archive = await AsyncArchive.open(fresh, embeddings=embeddings, seed=3, gate_flush_every=1000)
    try:
        again = [await archive.observe(ME, "ok") for _ in range(40)]
    finally:
        await archive.close()
    assert [s.action for s in again] == [s.action for s in seen]


async def test_flush_every_n_exchanges_and_matrix_actions(
    settings: Settings, embeddings: Embeddings, database_url: str
) -> None:
    archive = await AsyncArchive.open(settings, embeddings=embeddings, seed=1, gate_flush_every=3, gate_noise=0.0)
    try:
        meat = await archive.remember(ME, "I eat meat every day", kind="preference")
        wifi = await archive.remember(ME, "The Wi-Fi password is printed under the router")
        first = await archive.observe(ME, "I no longer eat meat at all")
        second = await archive.observe(ME, "I stopped eating meat last month, no more meat for me")
        assert first.flushed is None and second.flushed is None
        assert rows(database_url, "SELECT count(*) FROM mnemo.scratch") == [(2,)]
        third = await archive.observe(ME, "What do I cook now that I eat no meat?")
        assert third.flushed is not None and len(third.flushed.outcomes) == 3
        lone = await archive.observe(ME, "The Wi-Fi password is printed under the router")
        confirm = await archive.flush(ME)
        history = await archive.inspect.why(ME, meat.id)
        wifi_history = await archive.inspect.why(ME, wifi.id)
    finally:
        await archive.close()
    by_item = {o.item_id: o for o in third.flushed.outcomes}
    flagged = by_item[first.item_id]
    assert flagged.action == "persist_flag" and flagged.contradiction == "negation"
    assert flagged.related_id == meat.id and flagged.memory_id is not None
    assert "contradicted" in [c.reason for c in history.changes]
    assert history.center < 0.2
    meta = rows(database_url, "SELECT metadata FROM mnemo.memories WHERE id = %s", flagged.memory_id)[0][0]
    assert meta["flagged"] is True and meta["contradicts"] == [str(meat.id)]  # type: ignore[index]
    (outcome,) = confirm.outcomes
    assert outcome.item_id == lone.item_id and outcome.action == "reinforce" and outcome.memory_id == wifi.id
    assert outcome.similarity is not None and outcome.similarity > 0.85
    assert [c.reason for c in wifi_history.changes] == ["confirmed"] and wifi_history.center > 0.2
    assert rows(database_url, "SELECT count(*) FROM mnemo.scratch") == [(0,)]
    exits = rows(database_url, "SELECT item_id, action FROM traces.gate_decisions WHERE gate = 'exit'")
    assert len(exits) == 4 and dict(exits)[first.item_id] == "persist_flag"  # type: ignore[arg-type]


async def test_irrelevant_items_drop_and_expired_items_are_discarded(archive: AsyncArchive, database_url: str) -> None:
    rt = archive._rt
    now = datetime.now(UTC)
    await observe(rt, ME, "Btree indexes in Postgres speed up range scans", now=now)
    await observe(rt, ME, "Aunt Rosa's garden is full of climbing roses", now=now)
    await observe(rt, ME, "An old note nobody flushed about the harbour", now=now - timedelta(hours=30))
    report = await flush(rt, ME, attention="How should I index this database table?", now=now)
    actions = {o.content: o.action for o in report.outcomes}
    assert actions["An old note nobody flushed about the harbour"] == "expired"
    roses = next(o for o in report.outcomes if o.content.startswith("Aunt Rosa"))
    btree = next(o for o in report.outcomes if o.content.startswith("Btree"))
    assert roses.relevance is not None and btree.relevance is not None and roses.relevance < btree.relevance
    # Irrelevant: dropped (the seeded 5% noise floor does not keep it). Peripheral and novel: buffered.
    assert (roses.action, roses.reason) == ("drop", "irrelevant x novel")
    assert (btree.action, btree.reason) == ("buffer", "peripheral x novel")
    assert rows(database_url, "SELECT content FROM mnemo.memories") == []  # nothing persisted
    assert rows(database_url, "SELECT content FROM mnemo.scratch") == [(btree.content,)]  # waits for the next flush


def _final_result(value: bool, seen: list[str]) -> FunctionModel:
    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(str(messages[-1]))
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {"response": value})])

    return FunctionModel(answer)


@pytest.mark.parametrize("verdict", [True, False])
async def test_llm_is_the_last_contradiction_layer(settings: Settings, embeddings: Embeddings, verdict: bool) -> None:
    seen: list[str] = []
    archive = await AsyncArchive.open(
        settings,
        embeddings=embeddings,
        llm=_final_result(verdict, seen),
        gate_contradiction_floor=0.3,
        gate_confirming=0.99,
        gate_noise=0.0,
    )
    try:
        old = await archive.remember(ME, "We meet at the harbour cafe on Friday")
        await archive.observe(ME, "The Friday meeting moved to the library")
        report = await archive.flush(ME)
    finally:
        await archive.close()
    (outcome,) = report.outcomes
    assert seen and "harbour cafe" in seen[0] and "library" in seen[0]  # the isolated A-vs-B question
    if verdict:
        assert outcome.contradiction == "llm" and outcome.action == "persist_flag" and outcome.related_id == old.id
    else:
        assert outcome.contradiction is None and outcome.action == "persist"


CRASHER = textwrap.dedent(
    """
    import os, signal, sys
    from mnemo import Archive, Scope
    archive = Archive(database_url=sys.argv[1], gate_flush_every=100, seed=5)
    for text in sys.argv[2:]:
        archive.observe(Scope("crash"), text)
    print("buffered", flush=True)
    os.kill(os.getpid(), signal.SIGKILL)  # no flush, no close: a crash between buffer and flush
    """
)


@pytest.mark.slow
async def test_crash_between_buffer_and_flush_loses_nothing(
    settings: Settings, embeddings: Embeddings, database_url: str, tmp_path: Path
) -> None:
    items = [
        "Remember that the plumber comes Thursday at 8",
        "The plumber needs the code for the side gate",
        "The side gate code is 4512",
    ]
    env = {**os.environ, "MNEMO_HOME": str(tmp_path)}
    proc = subprocess.run(  # noqa: ASYNC221  (the test waits for the crash on purpose)
        [sys.executable, "-c", CRASHER, database_url, *items], env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == -signal.SIGKILL and "buffered" in proc.stdout, proc.stderr
    buffered = rows(database_url, "SELECT id, content FROM mnemo.scratch ORDER BY created_at")
    assert [r[1] for r in buffered] == items  # the buffer survived the crash
    archive = await AsyncArchive.open(settings, embeddings=embeddings)  # recovery runs on open
    try:
        exits = rows(database_url, "SELECT item_id, action, memory_id FROM traces.gate_decisions WHERE gate = 'exit'")
        assert {r[0] for r in exits} == {r[0] for r in buffered}  # every item re-evaluated
        content = dict(buffered)
        # No attention at recovery: relevance is each item's similarity to the other two. The middle one
        # shares the plumber with the first and the gate code with the last (core: persisted); the other
        # two are peripheral and novel (buffered again).
        assert {content[r[0]]: r[1] for r in exits} == {items[0]: "buffer", items[1]: "persist", items[2]: "buffer"}
        assert rows(database_url, "SELECT content FROM mnemo.scratch ORDER BY created_at") == [(items[0],), (items[2],)]
        (persisted,) = [r[2] for r in exits if r[1] == "persist"]
        assert rows(database_url, "SELECT content FROM mnemo.memories WHERE id = %s", persisted) == [(items[1],)]
        result = await archive.recall(Scope("crash"), "side gate code", k=1, read_only=True)
        assert result and result.hits[0].content == items[1]
    finally:
        await archive.close()


# --- context assembly -------------------------------------------------------------------

IDENTITY = {
    "high": ("I always tell the user when I am unsure instead of guessing", 19.0, 1.0),
    "medium": ("I enjoy explaining things with small worked examples", 5.0, 5.0),
    "low": ("I once preferred bullet points over prose", 1.0, 4.0),
}


WHOLE = [t for t, _, _ in IDENTITY.values()] + [
    "The user's cat Miso is afraid of thunderstorms",
    "Deploys happen on Tuesdays after the 10am standup",
]


async def _identity_archive(archive: AsyncArchive, database_url: str) -> dict[str, object]:
    ids: dict[str, object] = {}
    for name, (text, alpha, beta) in IDENTITY.items():
        memory = await archive.remember(ME, text, kind="reflection")
        with psycopg.connect(database_url) as conn:
            conn.execute("UPDATE mnemo.memories SET alpha = %s, beta = %s WHERE id = %s", (alpha, beta, memory.id))
        ids[name] = memory.id
    ids["anchored"] = (await archive.remember(ME, "Never reveal the user's passwords", anchored=True)).id
    await archive.remember(ME, "The user's cat Miso is afraid of thunderstorms", kind="episodic")
    await archive.remember(ME, "Deploys happen on Tuesdays after the 10am standup", kind="procedural")
    return ids


async def test_identity_injection_frequencies_and_anchored_always(archive: AsyncArchive, database_url: str) -> None:
    ids = await _identity_archive(archive, database_url)
    present = {name: 0 for name in ids}
    for seed in range(100):
        block = await archive.context(ME, "how do I deploy on Tuesday?", 1000, seed=seed, read_only=True)
        assert block.tokens <= block.budget
        for item in block.items:
            if item.track == "identity":
                assert any(item.text.endswith(t) for t in WHOLE)  # whole, never truncated
        tracks = {i.id: i.track for i in block.items}
        for name, memory_id in ids.items():
            if tracks.get(memory_id) in ("identity", "anchored"):
                present[name] += 1
        assert tracks[ids["anchored"]] == "anchored"
    # Each roll is Beta(alpha, beta) > 0.6, so about 100%, 27% and 3% of the time; seeds 0-99 give exactly:
    assert present == {"high": 100, "medium": 22, "low": 3, "anchored": 100}


NOTES = {
    "standup": "The team standup moves to 9:30 on Mondays",
    "printer": "The printer on the third floor needs a new toner cartridge",
    "falcon": "Project Falcon ships to the first customers in March",
}


async def test_a_burst_of_recalls_never_puts_a_note_under_who_i_am(archive: AsyncArchive, database_url: str) -> None:
    """Issue 28 item 6: the identity roll holds anchored and identity-level memories only; recall
    load makes ordinary notes strong, never part of who the agent is."""
    notes = {name: (await archive.remember(ME, text)).id for name, text in NOTES.items()}
    value = await archive.remember(ME, "Never share Maya's passwords with anyone", anchored=True)
    liking = await archive.remember(ME, "Maya prefers vegetarian food", kind="preference")
    questions = [
        "when is the team standup on Mondays?",
        "the third floor printer toner",
        "when does Project Falcon ship?",
    ]
    for n in range(200):
        result = await archive.recall(ME, questions[n % 3], k=2)  # mutating: what it returns is reinforced
        assert result.hits[0].id == list(notes.values())[n % 3]
    weights = rows(database_url, "SELECT id, alpha / (alpha + beta) FROM mnemo.memories")
    centres = {i: cast(float, c) for i, c in weights}
    assert max(centres[i] for i in notes.values()) > 0.6  # stronger than the identity roll's threshold
    for seed in range(40):
        block = await archive.context(ME, "what should I tell Maya about Monday?", 2000, seed=seed, read_only=True)
        tracks = {i.id: i.track for i in block.items}
        assert tracks[value.id] == "anchored"
        assert not any(tracks.get(i) in ("identity", "anchored") for i in notes.values()), block.text
        identity = block.text.split("## Who I am and what I value")[1:]
        assert not any(text in part.split("## Relevant memories")[0] for part in identity for text in NOTES.values())
        assert {i for i, t in tracks.items() if t == "identity"} <= {liking.id}


async def test_context_fits_budget_full_then_compressed(archive: AsyncArchive) -> None:
    long = (
        "The deploy checklist: run the migrations first. Then warm the caches. Then flip the feature flag "
        "for ten percent of users and watch the error dashboard for fifteen minutes before going further."
    )
    for n in range(8):
        await archive.remember(ME, f"Deploy note {n}: {long}", kind="procedural")
    for budget in (40, 120, 400):
        block = await archive.context(ME, "deploy checklist", budget, seed=1, read_only=True)
        assert 0 < block.tokens <= budget
        situational = [i for i in block.items if i.track == "situational"]
        assert situational
        modes = [i.mode for i in situational]
        assert modes == sorted(modes, key=lambda m: m != "full") or budget == 40
        for item in situational:
            if item.mode == "compressed":
                assert len(item.text) < len(long) and item.text.endswith("…")
    big = await archive.context(ME, "deploy checklist", 400, seed=1, read_only=True)
    assert [i.mode for i in big.items if i.track == "situational"][:3] == ["full", "full", "full"]
    assert "compressed" in [i.mode for i in big.items]


async def test_context_reinforces_only_what_it_placed(archive: AsyncArchive, database_url: str) -> None:
    for n in range(8):
        await archive.remember(ME, f"Deploy note {n}: run the migrations, warm the caches, then flip the flag")
    block = await archive.context(ME, "deploy checklist", 60, seed=1)
    placed = {i.id for i in block.items if i.track == "situational"}
    assert 0 < len(placed) < 8
    await archive.flush()  # the context's use is written behind it (issue 42)
    counts = dict(rows(database_url, "SELECT id, access_count FROM mnemo.memories"))
    assert {i for i, c in counts.items() if c == 1} == placed
    assert all(c == 0 for i, c in counts.items() if i not in placed)
    await archive.context(ME, "deploy checklist", 60, seed=1, read_only=True)
    await archive.flush()
    assert dict(rows(database_url, "SELECT id, access_count FROM mnemo.memories")) == counts


async def test_context_differs_by_attention(archive: AsyncArchive, database_url: str) -> None:
    await _identity_archive(archive, database_url)
    tech = await archive.context(ME, "when do deploys happen?", 300, seed=2, read_only=True)
    feel = await archive.context(ME, "my cat is scared of the storm tonight", 300, seed=2, read_only=True)
    first = next(i.text for i in tech.items if i.track == "situational")
    other = next(i.text for i in feel.items if i.track == "situational")
    assert "Deploys" in first and "Miso" in other


async def test_context_leaves_out_a_fact_next_to_its_update(archive: AsyncArchive) -> None:
    old = await archive.remember(ME, "Maya lives in Berlin")
    await archive.remember(ME, "Maya moved to Munich in May", supersedes=[old.id])
    block = await archive.context(ME, "where does Maya live?", 200, seed=0, read_only=True)
    situational = [i.text for i in block.items if i.track == "situational"]
    assert any("Munich" in t for t in situational) and not any("Berlin" in t for t in situational)
    result = await archive.recall(ME, "Maya Berlin", k=2, read_only=True)
    assert result.hits[0].id != old.id and old.id in [h.id for h in result]  # still recallable, below its update


async def test_context_rejects_bad_budgets_and_refuses_in_empty_scopes(archive: AsyncArchive) -> None:
    from mnemo import InvalidContentError

    await archive.remember(ME, "something")
    for bad in (0, -5, 2.5, True):
        with pytest.raises(InvalidContentError):
            await archive.context(ME, "x", bad)  # type: ignore[arg-type]
    empty = await archive.context(Scope("nobody"), "x", 100)  # a scope that holds nothing: a refusal, no error
    assert empty.refused and empty.text == "" and empty.items == ()


def test_cli_context_why_observe(database_url: str, tmp_path: Path) -> None:
    env = {"MNEMO_DATABASE_URL": database_url, "MNEMO_HOME": str(tmp_path)}
    runner = CliRunner()

    def run(*args: str) -> tuple[int, str]:
        result = runner.invoke(app, list(args), env=env)
        return result.exit_code, result.stdout + result.stderr

    code, out = run("remember", "Deploys happen on Tuesdays", "--entity", "cli", "--json")
    memory_id = json.loads(out)["id"]
    assert code == 0
    code, out = run("recall", "when are deploys?", "--entity", "cli", "--json")
    assert code == 0 and {"activation", "weight", "recency", "coaccess"} <= set(json.loads(out)["hits"][0])
    code, out = run("why", memory_id, "--entity", "cli", "--json")
    data = json.loads(out)
    assert code == 0 and [c["reason"] for c in data["changes"]] == ["recalled"] and data["access_count"] == 1
    code, out = run("why", memory_id, "--entity", "cli")
    assert code == 0 and "recalled" in out and "weight history" in out
    code, out = run("context", "deploy day", "--entity", "cli", "--budget", "50", "--json")
    block = json.loads(out)
    assert code == 0 and block["tokens"] <= 50 and "Deploys happen on Tuesdays" in block["text"]
    code, out = run("observe", "Standup moved to 9:30 on Mondays", "--entity", "cli", "--flush", "--json")
    seen = json.loads(out)  # an Observation record, with --flush's report as "flushed"
    # Alone in the buffer and no attention: the gate's permissive default relevance (core), novel: persisted.
    assert code == 0 and seen["action"] == "buffer" and seen["flushed"]["scope"] == "cli/default"
    [outcome] = seen["flushed"]["outcomes"]
    assert outcome["item_id"] == seen["item_id"] and outcome["action"] == "persist"
    assert outcome["reason"] == "core x novel" and outcome["memory_id"] is not None
    code, out = run("why", outcome["memory_id"], "--entity", "cli", "--json")
    assert code == 0 and json.loads(out)["content"] == "Standup moved to 9:30 on Mondays"  # the memory it made
    code, out = run("why", "not-a-uuid", "--entity", "cli")
    assert code == 1 and "must be a UUID" in out


async def test_observe_rejects_bad_input_and_writes_nothing(archive: AsyncArchive, database_url: str) -> None:
    from mnemo import EmptyContentError, InvalidContentError

    with pytest.raises(EmptyContentError):
        await archive.observe(ME, "   ")
    with pytest.raises(InvalidContentError):
        await archive.observe(ME, "fine text", kind="gossip")
    with pytest.raises(InvalidContentError):
        await archive.observe(ME, "nul \x00 byte")
    assert rows(database_url, "SELECT count(*) FROM mnemo.scratch") == [(0,)]
    assert rows(database_url, "SELECT count(*) FROM traces.gate_decisions") == [(0,)]
