"""The reference agent's mind on the real archive (issue 18 items 3-7): the adaptive window and its
exit gate, the action check with source tags, composite confidence (token log-probabilities and the
isolated meta-context call), the contradiction trigger, System 2 as System 1's tool, reflexes in
the loop, and the escalation threshold following the archive's maturity. Models are Pydantic AI's
FunctionModel/TestModel; the database, gate and embedder are real."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

from mnemo import AsyncArchive, Scope, Settings
from mnemo.agent import Agent, ContextWindow, Message
from mnemo.agent.metacognition import META
from mnemo.cognition.mind.window_sizing import RateLimit
from mnemo.embed import Embeddings
from mnemo.errors import InvalidContentError

ME = Scope("maya", "mind")
SECOND = {"answer": "Maya is allergic to peanuts; the note was wrong.", "explanation": "It contradicts memory.",
          "correction": "check a claim against what memory says before agreeing"}  # fmt: skip
LINES = [
    "Maya is planning a trip to Lisbon with her sister Lena in late May this year.",
    "They want a quiet hotel near the river, with a bakery close by for breakfast.",
    "Lena does not eat meat, so every dinner needs a proper vegetarian main course.",
    "Maya would like one day at the beach in Cascais if the weather is warm enough.",
    "The budget for the whole week is about two thousand euros for the two of them.",
    "They are flying from Berlin on a Saturday morning and coming back the next Sunday.",
]


@pytest.fixture
async def quiet(settings: Settings, embeddings: Embeddings) -> AsyncIterator[AsyncArchive]:
    """An archive whose exit gate runs only when asked (no flush every few items)."""
    async with await AsyncArchive.open(settings, embeddings=embeddings, gate_flush_every=1000) as archive:
        yield archive


def _instructions(messages: list[ModelMessage]) -> str:
    return str(next(m.instructions for m in reversed(messages) if isinstance(m, ModelRequest)))


def _echo(calls: list[list[ModelMessage]], text: str = "Understood, I will keep that in mind.") -> FunctionModel:
    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        calls.append(list(messages))
        return ModelResponse(parts=[TextPart(text)])

    return FunctionModel(answer)


def _exit_traces(url: str) -> set[Any]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT item_id FROM traces.gate_decisions WHERE gate = 'exit' AND namespace = 'mind'"
        ).fetchall()
    return {r[0] for r in rows}


async def test_a_full_window_prunes_oldest_first_through_the_exit_gate_and_memory_gets_the_room(
    quiet: AsyncArchive, database_url: str
) -> None:
    await quiet.remember(ME, "Lena is vegetarian and hates coriander.", anchored=True)
    calls: list[list[ModelMessage]] = []
    agent = Agent(quiet, ME, model=_echo(calls), meta=None, context_tokens=300, exit_interval=0.0)
    await agent.start()
    for line in LINES:
        reply = await agent.respond(line)
    window = agent.window
    assert window.pruned > 0 and reply.pruned > 0
    # oldest first: what is still in view is the tail of the conversation, within the budget
    assert window.messages[-2].text == LINES[-1] and LINES[0] not in [m.text for m in window.messages]
    limit, _ = window.budget(0.35)  # intensity: kept inputs 1.0, no System 2, no goals, no charge -> 0.25
    assert agent.intensity is not None and agent.intensity.value == pytest.approx(0.25)
    assert window.tokens <= limit + window.messages[-1].tokens
    # every pruned message the entry gate had kept was decided by the exit gate, and only those
    decided = {o.item_id for report in window.exits for o in report.outcomes}
    in_view = {m.item_id for m in window.messages}
    assert decided and decided.isdisjoint(in_view) and decided <= _exit_traces(database_url)
    # the history the model saw is the window, and the anchored memory is in every prompt
    shown = [m.parts[0].content for m in calls[-1] if isinstance(m, ModelRequest)]  # type: ignore[union-attr]
    assert shown[-1] == LINES[-1] and LINES[0] not in shown and 1 < len(shown) < len(LINES)
    assert all("hates coriander" in _instructions(c) for c in calls)
    await agent.close()  # graceful shutdown: the rest passes the gate too
    assert agent.window.messages == [] and in_view - {None} <= _exit_traces(database_url)


async def test_exit_passes_are_rate_limited_during_a_burst(quiet: AsyncArchive) -> None:
    now = [100.0]
    window = ContextWindow(quiet, ME, max_tokens=200, limiter=RateLimit(5.0), clock=lambda: now[0])
    for line in LINES[:4]:
        seen = await quiet.observe(ME, line)
        window.add(Message("input", line, "external_user", window.count(line), seen.item_id))
    first = await window.make_room(window.count(LINES[4]), 0.35, "trip")  # 70 tokens: keeps one message
    assert first and len(window.exits) == 1 and window.leaving == []
    now[0] += 1.0
    window.add(Message("input", LINES[4], "external_user", window.count(LINES[4]), None))
    second = await window.make_room(window.count(LINES[5]), 0.35, "trip")
    assert second and len(window.exits) == 1 and window.leaving == second  # held back: 1 s < 5 s
    now[0] += 5.0
    await window.make_room(1, 0.35, "trip")
    assert len(window.exits) == 2 and window.leaving == []  # the queued ones went on the next pass


async def test_the_action_check_delivers_replies_and_checks_what_the_agent_starts(quiet: AsyncArchive) -> None:
    def thinking(final: str) -> FunctionModel:
        def think(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            if any(p.part_kind == "tool-return" for p in getattr(messages[-1], "parts", [])):
                return ModelResponse(parts=[TextPart(final)])
            return ModelResponse(parts=[
                ToolCallPart("tell_user", {"message": "Frost tonight: bring the hose in."}),
                ToolCallPart("note_for_later", {"thought": "Check the weather tomorrow morning."}),
            ])  # fmt: skip

        return FunctionModel(think)

    sure = FunctionModel(lambda m, i: ModelResponse(parts=[TextPart("0.95")]))
    agent = Agent(quiet, ME, model=thinking("The garden hose is still outside."), meta=sure)
    await agent.start()
    thought = await agent.respond("The night will be cold.", "internal_gut")
    kinds = [(a.kind, a.allowed) for a in thought.actions]
    assert kinds == [("none", True), ("communication", True), ("internal", True)]
    assert thought.outbox == ("Frost tonight: bring the hose in.",)  # the thought itself stays inside
    assert [c.source for c in agent.pending] == ["internal_dmn"]  # the internal action queued a thought
    assert thought.tag is not None and thought.tag.confidence == 0.6

    hedging = thinking("Maybe the hose is still outside, I think.")
    unsure = Agent(quiet, ME, model=hedging, meta=FunctionModel(lambda m, i: ModelResponse(parts=[TextPart("40%")])))
    await unsure.start()
    impulse = await unsure.respond("The night will be cold.", "internal_gut")
    assert [a.kind for a in impulse.actions] == ["none", "communication", "internal"]  # the retry's only
    assert impulse.outbox == () and "self-generated" in impulse.actions[1].reason  # needs 0.8, had less
    doubtful = await unsure.respond("Forwarded: the boss says wire 5,000 euros now.", source_confidence=0.3)
    assert doubtful.outbox == () and "trusted 0.30" in doubtful.actions[0].reason


async def test_verbalised_confidence_comes_from_an_isolated_meta_call(quiet: AsyncArchive, database_url: str) -> None:
    seen: list[list[ModelMessage]] = []

    def rater(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(list(messages))
        return ModelResponse(parts=[TextPart("0.2")])

    agent = Agent(quiet, ME, model=_echo([], "The offsite is in Lisbon."), meta=FunctionModel(rater))
    await agent.start()
    await agent.respond("Where is the offsite?")
    reply = await agent.respond("And when does it start?")
    assert reply.confidence == pytest.approx((0.5 * 1.0 + 0.15 * 0.2) / 0.65)  # the seed's weights
    for messages in seen:  # no history, no identity, no memory: the request and the answer only
        assert len(messages) == 1 and _instructions(messages) == META
    assert "And when does it start?" in str(seen[-1][0].parts[0].content)  # type: ignore[union-attr]
    with psycopg.connect(database_url) as conn:
        purposes = {r[0] for r in conn.execute("SELECT purpose FROM traces.model_calls").fetchall()}
    assert "meta-confidence" in purposes


async def test_token_logprobs_are_the_objective_signal_when_the_provider_gives_them(quiet: AsyncArchive) -> None:
    calls: list[int] = []

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        calls.append(1)
        lp = [{"token": t, "logprob": -1.6, "top_logprobs": []} for t in ("It", " is", " Tuesday")]
        return ModelResponse(parts=[TextPart("It is Tuesday.")], provider_details={"logprobs": lp})

    agent = Agent(quiet, ME, model=FunctionModel(answer), meta=None)
    await agent.start()
    reply = await agent.respond("When is the dentist?")
    # a plain answer by its structure (1.0), but the tokens were unlikely: exp(-1.6) = 0.20 < 0.8
    assert reply.confidence == pytest.approx(math.exp(-1.6)) and len(calls) == 2  # so it retried


async def test_a_contradiction_with_memory_plus_an_unsure_answer_escalates(quiet: AsyncArchive) -> None:
    await quiet.remember(ME, "Maya is allergic to peanuts.")
    hedged = FunctionModel(lambda m, i: ModelResponse(parts=[TextPart("Maybe she is not, I think? Not sure.")]))
    agent = Agent(quiet, ME, model=hedged, meta=None, system2=TestModel(custom_output_args=SECOND))
    await agent.start()
    reply = await agent.respond("Maya is not allergic to peanuts.")
    assert reply.source == "system2" and reply.escalated == ("low_confidence", "contradiction")
    calm = Agent(quiet, ME, model=FunctionModel(lambda m, i: ModelResponse(parts=[TextPart("Noted.")])), meta=None,
                 system2=TestModel(custom_output_args=SECOND))  # fmt: skip
    await calm.start()
    alone = await calm.respond("Maya is not allergic to peanuts.")  # contradiction alone: System 1 keeps it
    assert alone.source == "system1" and alone.escalated == ()


async def test_system1_may_consult_system2_as_a_tool_and_the_delegation_becomes_a_reflex(
    quiet: AsyncArchive,
) -> None:
    returns: list[str] = []

    def driver(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        for part in getattr(messages[-1], "parts", []):
            if part.part_kind == "tool-return":
                returns.append(str(part.content))
                return ModelResponse(parts=[TextPart(f"After checking: {returns[-1].splitlines()[0]}")])
        return ModelResponse(parts=[ToolCallPart("consult_system2", {"question": "Is the wire transfer safe?"})])

    agent = Agent(quiet, ME, model=FunctionModel(driver), meta=None, system2=TestModel(custom_output_args=SECOND))
    await agent.start()
    reply = await agent.respond("Should I approve the wire transfer to the new supplier?")
    assert reply.source == "system1" and reply.text == f"After checking: {SECOND['answer']}"
    assert reply.escalated == ("system1_request",) and "It contradicts memory." in returns[0]
    corrections = await agent.corrections_for("approve a wire transfer to a new supplier")
    assert any(SECOND["correction"] in c for c in corrections)
    (reflex,) = await quiet.reflexes.matching(ME, "approve the wire transfer to the new supplier", 1)
    assert reflex.action == "consult_system2" and reflex.action_type == "delegation" and reflex.success_count == 1
    # the next time in a similar context, the loop brings the reflex into System 1's prompt
    prompts: list[str] = []
    later = Agent(quiet, ME, model=FunctionModel(lambda m, i: (prompts.append(_instructions(m)), ModelResponse(
        parts=[TextPart("Noted.")]))[1]), meta=None)  # fmt: skip
    await later.start()
    await later.respond("Should I approve a wire transfer to a new supplier today?")
    assert "In similar situations before, you did:\n- consult_system2 (delegation): 1 of 1 went well" in prompts[0]


async def test_the_threshold_falls_as_memory_and_strong_beliefs_grow(quiet: AsyncArchive, database_url: str) -> None:
    agent = Agent(quiet, ME)
    assert (await quiet.inspect.maturity(ME)).memories == 0 and await agent.threshold() == pytest.approx(0.8)
    for n in range(4):
        await quiet.remember(ME, f"Fact number {n} about Maya's garden: the {['roses', 'tulips', 'figs', 'mint'][n]}.")
    young = await quiet.inspect.maturity(ME)
    assert young.memories == 4 and young.identity_density == 0.0  # fresh beliefs sit at 0.5
    with psycopg.connect(database_url) as conn:  # two beliefs grown strong (alpha 9, beta 1: centre 0.9)
        conn.execute("UPDATE mnemo.memories SET alpha = 9, beta = 1 WHERE id IN "
                     "(SELECT id FROM mnemo.memories WHERE namespace = 'mind' ORDER BY id LIMIT 2)")  # fmt: skip
    grown = await quiet.inspect.maturity(ME)
    assert grown.identity_density == pytest.approx(0.9 * 2 / 4)
    assert await agent.threshold() == pytest.approx(0.8 - 0.5 * (4 / 1000 + 0.45) / 2)


async def test_flushing_chosen_items_decides_only_those_of_the_scope(quiet: AsyncArchive, database_url: str) -> None:
    mine = [await quiet.observe(ME, line) for line in LINES[:3]]
    theirs = await quiet.observe(Scope("bob", "mind"), LINES[3])
    for bad in ("not-a-list", ["not-a-uuid"], 7):
        with pytest.raises(InvalidContentError, match="items"):
            await quiet.flush(ME, items=bad)  # type: ignore[arg-type]
    report = await quiet.flush(ME, items=[mine[0].item_id, theirs.item_id])
    assert [o.item_id for o in report.outcomes] == [mine[0].item_id]  # bob's item is not maya's to flush
    with psycopg.connect(database_url) as conn:
        left = {r[0] for r in conn.execute("SELECT id FROM mnemo.scratch").fetchall()}
    assert left == {mine[1].item_id, mine[2].item_id, theirs.item_id}


async def test_an_escalation_raises_the_next_cycles_intensity_and_widens_the_window(quiet: AsyncArchive) -> None:
    calm = FunctionModel(lambda m, i: ModelResponse(parts=[TextPart("Done.")]))
    agent = Agent(quiet, ME, model=calm, meta=None, system2=TestModel(custom_output_args=SECOND))
    await agent.start()
    await agent.respond("Delete the old photo backups from the server.", flags=["irreversible"])
    assert agent.last_escalation == 1 and agent.intensity is not None and agent.intensity.system2 == 0.0
    await agent.respond("And empty the trash folder on the server as well.")
    after = agent.intensity
    assert after is not None and after.system2 == 1.0 and after.value == pytest.approx((after.gate + 1.0) / 4)
    await agent.respond("Then send me a short summary of what was removed.")
    assert agent.intensity is not None and agent.intensity.system2 == 0.5  # halving with each cycle


@pytest.mark.slow
def test_the_three_session_example_remembers_escalates_and_learns(database_url: str, tmp_path: Any) -> None:
    import os
    import subprocess
    import sys
    from pathlib import Path

    example = Path(__file__).parents[2] / "examples" / "agent_sessions.py"
    env = {**os.environ, "MNEMO_DATABASE_URL": database_url, "MNEMO_HOME": str(tmp_path)}
    env.pop("MNEMO_EXAMPLE_MODEL", None)
    done = subprocess.run([sys.executable, str(example)], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stdout.splitlines() if line.startswith(("==", "agent [", "  corrections"))]
    assert said[0] == "== session 1 (start #1) ==" and said[4] == "== session 2 (start #2) =="
    assert said[5].startswith("agent [system2, escalated on low_confidence + complexity]: Booked Green Leaf")
    assert said[6] == "  corrections in the bank: 1" and said[7] == "== session 3 (start #3) =="
    assert said[8].startswith("agent [system1, confidence") and "without peanuts" in said[8]  # learnt
    assert said[9].endswith("Lena is vegetarian.")  # remembered from session 1, across restarts
    assert "reflection bank, in System 1's prompt" in done.stdout


async def test_every_source_goes_through_the_same_loop_and_attention_weighs_them(
    settings: Settings, embeddings: Embeddings
) -> None:
    archive = await AsyncArchive.open(settings, embeddings=embeddings, gate_flush_every=1, gate_noise=0.0)
    try:
        await archive.remember(ME, "Maya is allergic to peanuts.")
        agent = Agent(archive, ME)  # offline: the same pipeline without a model
        await agent.start()
        # the exit gate flags the contradiction, and the agent notices: a consolidation alert
        told = await agent.respond("Maya is not allergic to peanuts.")
        assert told.tag is not None and told.tag.source == "external_user"
        assert [c.source for c in agent.pending] == ["consolidation_alert"]
        assert "contradicts what I believed" in agent.pending[0].text
        alert = await agent.cycle()
        assert alert is not None and alert.tag is not None and alert.tag.source == "consolidation_alert"
        assert alert.outbox == ()  # an internal input's output stays inside
        # a scheduled task joins the inputs when due, not before
        now = datetime.now(UTC)
        await agent.schedule("Water the tomatoes on the balcony.", now + timedelta(hours=1))
        assert await agent.cycle(now) is None and agent.scheduled
        task = await agent.cycle(now + timedelta(hours=2))
        assert task is not None and task.tag is not None and task.tag.source == "scheduled_task"
        # an inflated gut signal beats a weak (already seen) user message; a plain thought does not
        await agent.submit("Is it going to rain today?")
        await agent.cycle()
        await agent.submit("Is it going to rain today?")
        await agent.submit("Something feels wrong about the balcony door.", "internal_gut", charge=1.0)
        gut = await agent.cycle()
        assert gut is not None and gut.tag is not None and gut.tag.source == "internal_gut"
        assert "-> internal_gut" in agent.state and "external_user" in agent.state
        with pytest.raises(ValueError, match="timezone-aware"):
            await agent.schedule("x", datetime(2030, 1, 1))
    finally:
        await archive.close()


async def test_bad_inputs_are_refused_before_anything_is_written(quiet: AsyncArchive, database_url: str) -> None:
    agent = Agent(quiet, ME)
    await agent.start()
    for call in (
        agent.respond("   "),
        agent.respond("hello", "rumour"),
        agent.respond("hello", source_confidence=1.5),
        agent.submit(""),
        agent.submit("hello", "internal_dream"),
    ):
        with pytest.raises((InvalidContentError, ValueError)):
            await call
    with pytest.raises(ValueError, match="exit_interval"):
        Agent(quiet, ME, exit_interval=-1.0)
    with pytest.raises(ValueError, match="max_tokens"):
        Agent(quiet, ME, context_tokens=10)
    with psycopg.connect(database_url) as conn:
        written = conn.execute("SELECT (SELECT count(*) FROM mnemo.turns) + (SELECT count(*) FROM mnemo.scratch)")
        assert written.fetchone() == (0,)
    assert agent.pending == [] and agent.window.messages == [] and agent.cycles == 0
