"""The agent's inner life (issue 31): what it holds survives a restart, the gut feeling is logged
each cycle and recall becomes mood-congruent, the idle loop wanders with its biases (measurable over
many draws), answers on its three channels, keeps quiet during conversation and broadens when one
topic keeps coming back, and the milestones only an agent sees are reached by its own events."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from mnemo import AsyncArchive, Scope
from mnemo.agent import Agent, Identity, IdleLoop
from mnemo.config import Settings
from mnemo.embed import Embeddings

pytestmark = pytest.mark.future_nights  # nights run days or weeks ahead of the clock

ME = Scope("mira", "life")


async def test_pending_inputs_and_scheduled_tasks_survive_a_restart(archive: AsyncArchive, database_url: str) -> None:
    first = Agent(archive, ME, name="mira")
    await first.start()
    await first.submit("Remember to call the plumber about the leak.", "internal_dmn")
    await first.submit("What should we plant next spring?")
    due = datetime.now(UTC) + timedelta(hours=1)
    await first.schedule("Water the tomatoes on the balcony.", due)
    # the process dies here; a new one starts
    second = Agent(archive, ME, name="mira")
    await second.start()
    assert sorted((c.source, c.text) for c in second.pending) == sorted((c.source, c.text) for c in first.pending)
    assert [(at, text) for at, text, _ in second.scheduled] == [(due, "Water the tomatoes on the balcony.")]
    assert await second.cycle() is not None and len(second.pending) == 1
    third = Agent(archive, ME, name="mira")
    await third.start()
    assert [c.text for c in third.pending] == [c.text for c in second.pending]
    assert third.pending[0].waited == 1 and third.pending[0].urgency < 0.2  # it lost a cycle: decayed
    await third.cycle(due + timedelta(minutes=1))
    await third.cycle()
    assert await third.cycle() is None
    with psycopg.connect(database_url) as conn:
        assert conn.execute("SELECT count(*) FROM mnemo.agent_inputs").fetchone() == (0,)
    other = Agent(archive, ME, name="someone-else")  # another agent of the scope holds nothing of mira's
    await other.start()
    assert other.pending == [] and other.scheduled == []


def _identity(tmp_path: Path, embeddings: Embeddings) -> Identity:
    (tmp_path / "values.json").write_text(json.dumps(["Be honest about what I do not know."]))
    (tmp_path / "goals.json").write_text(json.dumps(["Help Maya grow vegetables in her garden"]))
    return Identity(tmp_path, embeddings)


async def test_every_cycle_logs_a_gut_delta_and_recall_follows_the_mood(
    archive: AsyncArchive, database_url: str, tmp_path: Path, embeddings: Embeddings
) -> None:
    await archive.remember(ME, "Maya grows tomatoes and beans in her vegetable garden.")
    agent = Agent(archive, ME, name="mira", identity=_identity(tmp_path, embeddings))
    await agent.start()
    assert agent.gut is not None and agent.gut.subconscious is not None
    await agent.submit("The stock market fell sharply today and my portfolio lost value.")
    first = await agent.cycle()
    await agent.submit("What does Maya grow in her garden?")
    second = await agent.cycle()
    assert first is not None and second is not None and first.gut_outcome is not None
    assert second.evidence is not None and second.evidence.hits[0].emotional != 0.5  # mood-congruent recall
    with psycopg.connect(database_url) as conn:
        rows = conn.execute("SELECT magnitude, valence, context FROM mnemo.gut_deltas ORDER BY at").fetchall()
    assert len(rows) == 2 and all(0 < m <= 1 and -1 <= v <= 1 for m, v, _ in rows)
    assert "stock market" in rows[0][2]
    await archive.inner.feedback(ME, first.gut_outcome, -0.5)  # an outcome links back to the feeling


async def test_the_idle_loop_keeps_quiet_during_conversation(archive: AsyncArchive) -> None:
    await archive.remember(ME, "Maya grows tomatoes in her garden.")
    agent = Agent(archive, ME, name="mira", clock=lambda: 100.0)
    await agent.start()
    idle = IdleLoop(agent, quiet=30.0)
    await agent.submit("Hello, are you there?")
    assert (await idle.think(seed=1)).suppressed
    await agent.cycle()
    idle.heard_user()
    assert (await idle.think(seed=1)).suppressed
    agent.clock = lambda: 200.0
    report = await idle.think(seed=1)
    assert not report.suppressed and report.sampled


async def test_the_idle_loop_answers_on_its_three_channels(
    archive: AsyncArchive, tmp_path: Path, embeddings: Embeddings
) -> None:
    await archive.remember(ME, "Maya wants to grow more vegetables in her garden this year.")
    await archive.remember(ME, "I told a user I was sure about a date I did not know.", kind="episodic")
    await archive.remember(ME, "The train to Lyon leaves from platform nine.")
    agent = Agent(archive, ME, name="mira", identity=_identity(tmp_path, embeddings))
    await agent.start()
    idle = IdleLoop(agent, n=3)
    report = await idle.think(seed=4)
    channels = Counter(channel for channel, _ in report.inputs)
    assert channels["self_prompt"] >= 1 and any("Help Maya grow vegetables" in t for _, t in report.inputs)
    assert report.insights  # the train and the garden have nothing in common: a creative association
    assert [c.source for c in agent.pending].count("internal_dmn") == len(report.inputs)
    ready = await archive.inner.readiness(ME)
    assert next(m for m in ready.milestones if m.name == "first_creative_association").reached
    thought = await agent.cycle()  # an idle thought wins attention and is acted on
    assert thought is not None and thought.tag is not None and thought.tag.source == "internal_dmn"
    ready = await archive.inner.readiness(ME)
    assert next(m for m in ready.milestones if m.name == "first_idle_thought_acted").reached


async def test_the_entropy_guard_broadens_when_one_topic_keeps_returning(archive: AsyncArchive) -> None:
    for n in range(6):
        await archive.remember(ME, f"Garden note {n}: the beds need compost in spring.")
    agent = Agent(archive, ME, name="mira")
    await agent.start()
    idle = IdleLoop(agent, n=1)
    stuck = (await archive.inner.wander(ME, 1, seed=0))[0].id
    idle.topics = [stuck] * 8
    report = await idle.think(seed=0)
    assert report.avoided == (stuck,) and report.sampled[0].id != stuck


async def test_wandering_favours_neglected_important_memories_over_many_draws(
    archive: AsyncArchive, database_url: str
) -> None:
    await archive.remember(ME, "I promised Maya to help with her garden every spring.", anchored=True)
    for n in range(9):
        await archive.remember(ME, f"Trivia {n}: the bus to town runs every twenty minutes.")
    with psycopg.connect(database_url) as conn:  # the promise was last thought of a month ago
        conn.execute("UPDATE mnemo.memories SET last_accessed = now() - interval '30 days' WHERE anchored")
    drawn = Counter()
    for seed in range(300):
        (w,) = await archive.inner.wander(ME, 1, seed=seed)
        drawn["promise" if "promised" in w.content else "trivia"] += 1
        if "promised" in w.content:
            assert w.biases["neglected"] > 1.0 and w.biases["self"] > 1.0
    assert drawn["promise"] / 300 > 3 * (1 / 10)  # far above its uniform share of one in ten
    again = [[w.id for w in await archive.inner.wander(ME, 2, seed=5)] for _ in range(2)]
    assert again[0] == again[1]  # seeded: the same draws


async def test_a_goal_reflected_upon_and_a_self_formed_value_acted_on(
    settings: Settings, embeddings: Embeddings
) -> None:
    archive = await AsyncArchive.open(settings, embeddings=embeddings, operator_trust=3)
    try:
        value = "I double-check dates before telling Maya about them."
        start = datetime(2026, 9, 1, 8, tzinfo=UTC)
        for day in range(16):  # a value the agent formed itself, confirmed for two weeks
            at = start + timedelta(days=day)
            await archive.observe(ME, value, attention=value, at=at)
            await archive.flush(ME, attention=value, at=at)
        await archive.inner.reflect(ME, as_of=start + timedelta(days=16))

        def think(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            if any(isinstance(p, TextPart) or p.part_kind == "tool-return" for m in messages for p in m.parts):
                return ModelResponse(parts=[TextPart("Done.")])
            return ModelResponse(
                parts=[ToolCallPart("note_for_later", {"thought": "Double-check the date before telling Maya."})]
            )

        agent = Agent(archive, ME, name="mira", model=FunctionModel(think), meta=None)
        await agent.start()
        await agent.submit("Maya's seed swap might be next Saturday.", "internal_dmn")
        await agent.cycle()
        memory = await agent.achieve_goal("Help Maya plan the garden", "Planning early left room for mistakes.")
        ready = await archive.inner.readiness(ME)
        reached = {m.name: m for m in ready.milestones if m.reached}
        assert "first_aligned_decision" in reached and "first_goal_reflected" in reached
        assert reached["first_goal_reflected"].evidence["memory"] == str(memory)
        with pytest.raises(ValueError):
            await agent.achieve_goal("", "nothing")
    finally:
        await archive.close()


@pytest.mark.slow
def test_six_simulated_weeks_reach_every_milestone(database_url: str, tmp_path: Path) -> None:
    import os
    import re
    import subprocess
    import sys

    example = Path(__file__).parents[2] / "examples" / "inner_life.py"
    env = {**os.environ, "MNEMO_DATABASE_URL": database_url, "MNEMO_HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, str(example), "--seed", "0"], env=env, capture_output=True, text=True,
                          timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "readiness: 10 of 10 milestones" in out
    assert re.search(r"day 1[4-9]: promoted 1 to goal", out) and "operator approved an identity-level promotion" in out
    assert "milestone reached: first_conflict_resolution" in out and "gut axes: hope" in out
    assert "Persistent failure: 'Book the cheapest train to Lyon'" in out
    shares = [float(s) for s in re.findall(r"weight share of the blend ([0-9.]+)", out)]
    # the alphas moved toward what predicted use: the weight's share of the blend, 1/17 untuned
    assert len(shares) == 6 and shares[0] > 2 / 17 and shares == sorted(shares)
    tensions = re.findall(r"tensions open (\d), acknowledged (\d), resolved (\d)", out)
    assert tensions[0] == ("1", "0", "0") and tensions[1] == ("0", "1", "0") and tensions[-1] == ("0", "0", "1")
    _reads_well(out)


def _reads_well(out: str) -> None:
    """Issue 39 item 13: what a person reads in the example's output."""
    import re
    from datetime import date

    # a model by its name, not its repr
    assert "System 1: function:_scripted;" in out and "FunctionModel(" not in out and "<function" not in out
    # counts agree with their nouns
    assert "(1 tuning step applied)" in out and not re.search(r"\b1 (tuning steps|insight candidates)\b", out)
    # what tuning changed: the weight's share of the blend, rising step by step
    line = re.search(r"the weight's share of the blend over time: (.*)", out)
    assert line is not None
    over_time = [float(x) for x in re.findall(r"\d\d-\d\d ([0-9.]+)", line.group(1))]
    # one point per applied step, ending where the weekly lines end (the alpha alone may stay put)
    steps = re.findall(r"weight share of the blend ([0-9.]+) \((\d+) tuning steps? applied\)", out)[-1]
    assert over_time == sorted(over_time) and len(over_time) == int(steps[1]) and over_time[-1] == float(steps[0])
    # gut axes that carry variance or meaning, each named after a different memory
    axes = re.search(r"gut axes: (.*)", out)
    assert axes is not None and "(0% of variance)" not in axes.group(1)
    labels = re.findall(r"toward '(.*?)' \(", axes.group(1))
    assert labels and len(labels) == len(set(labels))
    # every milestone dated on the simulation's clock: six weeks from 2026-09-01 and the agent's day after
    dates = [date.fromisoformat(d) for d in re.findall(r"^  x \w+ \((\d{4}-\d\d-\d\d)\)$", out, re.M)]
    assert len(dates) == 10 and all(date(2026, 9, 1) <= d <= date(2026, 10, 14) for d in dates)
    # a narrative in English: a whole statement follows "I came to see that", the name keeps its capital
    assert "narrative: Identity narrative: I came to see that Maya prefers" in out and "I came to maya" not in out


async def test_forgetting_a_turn_blanks_the_gut_deltas_and_held_inputs_that_quote_it(
    archive: AsyncArchive, database_url: str
) -> None:
    said = "My bank password hint is the name of my first cat."
    turn = await archive.record_turn(ME, "s1", "user", said)
    await archive.inner.log_gut(ME, "mira", [0.01] * 384, magnitude=0.1, valence=0.0, context=said, action="noted")
    await archive.inner.log_gut(
        ME, "mira", [0.01] * 384, magnitude=0.1, valence=0.0, context="the weather", action="none"
    )
    await archive.agents.hold_input(ME, "mira", said, source="external_user")
    await archive.forget(ME, turn.id)
    with psycopg.connect(database_url) as conn:
        contexts = sorted(r[0] for r in conn.execute("SELECT context FROM mnemo.gut_deltas").fetchall())
        held = conn.execute("SELECT count(*) FROM mnemo.agent_inputs").fetchone()
    assert contexts == ["", "the weather"] and held == (0,)
