"""Six simulated weeks of an agent's inner life (issue 31), offline and seeded.

    .venv/bin/python examples/inner_life.py [--seed 0] [--weeks 6]

Day by day, on a simulated clock: the user tells the agent things through the memory gates; a
habit it keeps hearing is promoted to goal weight after two weeks and to identity weight after a
month (waiting for the operator's approval, as the trust level is low); a value the agent holds is
contradicted by something it did, which becomes a tension, is acknowledged as it keeps surfacing
and is resolved by later behaviour; the agent's questions get feedback, and the blend's alphas
move toward the component that predicted what was used (pinned notes: the weight); gut deltas
with outcomes give the night its gut axes; a sub-agent keeps failing a task across generations,
and the night surfaces the failure for reflection; the inner stage runs every night, the full
night once a week. At the end the agent itself (a scripted System 1 stands in for the model: no
network) lets its mind wander, acts on an idle thought that agrees with a value it formed,
and reflects on a goal achieved. Readiness milestones, promotions, tensions, alphas and safety
events are printed week by week. Data goes to a temporary home unless ``MNEMO_HOME`` is set.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from mnemo import AsyncArchive, RecallResult, Scope
from mnemo.agent import Agent, Identity, IdleLoop

SCOPE = Scope("example-user", "inner-life")
START = datetime(2026, 9, 1, 8, tzinfo=UTC)
HABIT = "Maya waters the tomato seedlings every morning before work."
VALUE = "I am honest about the limits of what I know."
BROKE = "I was not honest about the limits of what I knew about the frost date."
KEPT = "I was honest about the limits of what I knew about the rain forecast."
SAME = (  # three ways of saying one thing: the first night merges them into an insight and a narrative
    "Maya prefers watering the garden early in the morning.",
    "Maya prefers to water the garden early in the morning.",
    "Maya prefers watering her garden early each morning.",
)
NOTES = [f"Garden note {n}: the {thing} by the {place} need attention."
         for n, (thing, place) in enumerate([("beans", "fence"), ("basil", "patio"), ("carrots", "bed"),
                                             ("squash", "trellis"), ("lettuce", "shed"), ("onions", "gate"),
                                             ("peppers", "wall"), ("herbs", "path"), ("leeks", "pond")])]  # fmt: skip
PINNED = {1, 4, 7}
CHATTER = [
    "The bus to town was late again this morning.",
    "Maya's sister visits next weekend.",
    "The library closes early on Fridays.",
    "It rained most of the afternoon.",
    "The neighbour's cat sleeps on the garden wall.",
    "Maya bought a new watering can.",
]


def plural(n: int, one: str, many: str | None = None) -> str:
    """``1 tuning step``, ``3 tuning steps``."""
    return f"{n} {one if n == 1 else many or one + 's'}"


def share(alphas: dict[str, float], name: str = "weight") -> float:
    """One component's share of the blend: what tuning moves (its alpha alone may stay put)."""
    return alphas.get(name, 0.0) / sum(alphas.values())


async def week_line(archive: AsyncArchive, week: int) -> str:
    life = await archive.inner.life(SCOPE)
    states = [t.status for t in life.tensions]
    weight = share(life.alphas)
    promoted = [s for s in life.history if s.name == "blend" and s.applied]
    checks: dict[str, int] = {}
    for e in life.safety:
        checks[e.check] = checks.get(e.check, 0) + 1
    return (
        f"week {week}: milestones {life.readiness.reached}/10 · tensions open {states.count('open')}, acknowledged "
        f"{states.count('acknowledged')}, resolved {states.count('resolved')} · weight share of the blend "
        f"{weight:.3f} ({plural(len(promoted), 'tuning step')} applied) · "
        f"awaiting approval {len(life.awaiting_approval)} · "
        f"safety events {json.dumps(checks, sort_keys=True)}"
    )


async def simulate_day(archive: AsyncArchive, day: int, rng: random.Random, hope: np.ndarray) -> dict[str, int]:
    """One day: what the user says, what the agent does, its questions and feelings, a sub-agent's try."""
    at = START + timedelta(days=day)
    done: dict[str, int] = {}
    if day % 2 == 0:  # the habit keeps coming up
        await archive.observe(SCOPE, HABIT, role="user", attention=HABIT, at=at)
        await archive.flush(SCOPE, attention=HABIT, at=at)
    chat = rng.choice(CHATTER)
    await archive.observe(SCOPE, chat, role="user", attention=chat, at=at + timedelta(hours=2))
    if day == 3:
        await archive.remember(SCOPE, BROKE, kind="episodic", event_time=at)
    if 8 <= day <= 14:  # the tension keeps surfacing
        await archive.recall(SCOPE, "an internal contradiction about being honest on the limits of what I know")
    if day == 24:
        await archive.remember(SCOPE, KEPT, kind="episodic", event_time=at)
    for n in range(3):  # the agent asks about its notes, and the pinned ones are what it uses
        found = await archive.recall(SCOPE, f"Which garden notes need attention? ({day}.{n})", 9, seed=day * 10 + n)
        if isinstance(found, RecallResult) and found.outcome_id is not None:
            used = [h.id for h in found if h.weight > 0.9]
            if used:
                await archive.inner.feedback(SCOPE, found.outcome_id, 1.0, used=used)
    for _ in range(2):  # gut deltas: toward the garden's hope, or away from it, and how it went
        a = rng.gauss(0.0, 1.0)
        delta = 0.2 * (a * hope + 0.3 * np.asarray([rng.gauss(0, 1) for _ in range(len(hope))]) / np.sqrt(len(hope)))
        outcome = await archive.inner.log_gut(SCOPE, "mira", delta,
                                              magnitude=min(1.0, float(np.linalg.norm(delta)) / 2),
                                              valence=float(np.tanh(a)), context=f"day {day}")  # fmt: skip
        await archive.inner.feedback(SCOPE, outcome, float(np.tanh(2 * a)), kind="task")
    if day % 7 == 5:  # a booking sub-agent tries again, a new generation, and fails again
        generation = day // 7
        await archive.inner.record_attempt(
            SCOPE, "Book the cheapest train to Lyon", lineage="booker", generation=generation, success=False,
            failure_mode="timeout", mutation=f"variant {generation}",
        )  # fmt: skip
    return done


async def night(archive: AsyncArchive, day: int) -> dict[str, Any]:
    end = START + timedelta(days=day, hours=23)
    if day % 7 == 6:
        await archive.night_cycle(SCOPE, as_of=end, stages=("insights",))
    done = await archive.inner.reflect(SCOPE, as_of=end)
    life = await archive.inner.life(SCOPE)
    for memory_id in life.awaiting_approval:  # the operator reads the promotion and approves it
        await archive.inner.approve_promotion(SCOPE, memory_id, at=end)
        print(f"  day {day}: the operator approved an identity-level promotion")
    if done["promotion"]["goal"] or done["promotion"]["identity"]:
        print(f"  day {day}: promoted {done['promotion']['goal']} to goal, {done['promotion']['identity']} to identity")
    for name in done["milestones"]:
        print(f"  day {day}: milestone reached: {name}")
    return done


def _scripted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """System 1 for the last part: an idle thought about the habit becomes a note to act on."""
    last = messages[-1]
    asked = " ".join(str(getattr(p, "content", "")) for p in last.parts)
    if any(getattr(p, "part_kind", "") == "tool-return" for p in last.parts) or "Thinking about my goal" not in asked:
        return ModelResponse(parts=[TextPart("I will remind Maya about the seedlings.")])
    return ModelResponse(parts=[ToolCallPart("note_for_later", {"thought": "Remind Maya to water the tomato "
                                                                          "seedlings tomorrow morning."})])  # fmt: skip


async def agent_part(archive: AsyncArchive, home: Path, seed: int, day: int) -> None:
    """The agent's day after the simulated weeks, on the same clock (its cycles and goal are dated by it)."""
    at = START + timedelta(days=day)
    (home / "identity").mkdir(parents=True, exist_ok=True)
    (home / "identity" / "values.json").write_text(json.dumps([VALUE]))
    (home / "identity" / "goals.json").write_text(json.dumps(["Help Maya grow vegetables in her garden"]))
    identity = Identity(home / "identity", archive.embeddings)
    agent = Agent(archive, SCOPE, name="mira", identity=identity, model=FunctionModel(_scripted), meta=None)
    await agent.start()
    idle = IdleLoop(agent, n=3)
    for round_ in range(5):  # the mind wanders until it links two unlike memories
        thought = await idle.think(seed=seed * 10 + round_)
        print(f"idle loop: wandered to {[w.content[:32] for w in thought.sampled]}; queued "
              f"{[c for c, _ in thought.inputs]}; {plural(len(thought.insights), 'insight candidate')}")  # fmt: skip
        if thought.insights:
            break
    await agent.submit(f"Thinking about my goal 'Help Maya grow vegetables in her garden': {HABIT}", "internal_dmn")
    for _ in range(6):  # a few cycles: the idle thoughts compete, the winners are acted on
        reply = await agent.cycle(now=at + timedelta(hours=1))
        if reply is None:
            break
        if reply.tag is not None:
            print(f"  cycle: attended to {reply.tag.source}; actions {[a.kind for a in reply.actions if a.allowed]}")
    await agent.achieve_goal("Help Maya grow vegetables in her garden", "Watering early was what made the difference.",
                             now=at + timedelta(hours=2))  # fmt: skip
    await archive.inner.reflect(SCOPE, as_of=at + timedelta(hours=23))  # that day's night
    print(await agent.command("/readiness"))


async def main(seed: int, weeks: int) -> None:
    rng = random.Random(seed)
    home = Path(os.environ.get("MNEMO_HOME") or tempfile.mkdtemp(prefix="mnemo-inner-"))
    archive = await AsyncArchive.open(home=home, tuning_min_outcomes=12)
    try:
        if any(s.scope == SCOPE for s in await archive.access.scopes(SCOPE.entity_id)):
            await archive.purge(SCOPE)  # a fresh run
        await archive.remember(SCOPE, VALUE, kind="semantic", anchored=True, event_time=START)
        for n, text in enumerate(NOTES):
            await archive.remember(SCOPE, text, anchored=n in PINNED, event_time=START)
        for text in SAME:
            await archive.remember(SCOPE, text, kind="semantic", event_time=START)
        good, bad = await archive.embeddings.embed_documents(["The garden thrives.", "The garden withers."])
        hope = np.asarray(good) - np.asarray(bad)
        hope /= np.linalg.norm(hope)
        for week in range(weeks):
            for day in range(week * 7, week * 7 + 7):
                await simulate_day(archive, day, rng, hope)
                await night(archive, day)
            print(await week_line(archive, week + 1))
        life = await archive.inner.life(SCOPE)
        print("gut axes: " + "; ".join(f"{a.name} ({a.variance:.0%} of variance)" for a in life.axes))
        for failure in life.failures:
            print(f"persistent failure: {failure.reflection}")
        blend = [s for s in life.history if s.name == "blend" and s.applied]
        print("the weight's share of the blend over time: " + " -> ".join(
            f"{s.at:%m-%d} {share(s.params['alphas']):.3f}" for s in blend))  # fmt: skip
        for memory in (await archive.inspect.memories(SCOPE, limit=200)).items:
            if memory.kind == "narrative":
                print(f"narrative: {memory.content}")
                break
        await agent_part(archive, home, seed, weeks * 7)
        ready = await archive.inner.readiness(SCOPE)
        print(f"readiness: {ready.reached} of {len(ready.milestones)} milestones")
        for m in ready.milestones:
            print(f"  {'x' if m.reached else ' '} {m.name}" + (f" ({m.reached_at:%Y-%m-%d})" if m.reached_at else ""))
    finally:
        await archive.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Six simulated weeks of an agent's inner life.")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--weeks", type=int, default=6)
    ns = parser.parse_args()
    asyncio.run(main(ns.seed, ns.weeks))
