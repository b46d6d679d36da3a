"""Three sessions of the reference agent (``mnemo.agent``): what it remembers, when it escalates,
and how a correction changes its next answer.

    .venv/bin/python examples/agent_sessions.py
    MNEMO_EXAMPLE_MODEL=openai:gpt-4o-mini MNEMO_EXAMPLE_SYSTEM2=openai:gpt-4o \
        .venv/bin/python examples/agent_sessions.py

Session 1: the user tells the agent about a sister's diet and an allergy; the night consolidates.
Session 2: a restaurant booking in several steps; System 1 is unsure, retries once, and escalates
to System 2 (low confidence and complexity), whose correction goes to the reflection bank; a
thought of the agent's own competes for attention with the user. Session 3: a similar request;
the correction is in System 1's prompt, which answers surely, and nothing escalates.

Each session is a new process's worth of state: the archive is closed and opened again and a new
``Agent`` starts (its start count and age are kept in the database). Without
``MNEMO_EXAMPLE_MODEL`` scripted models stand in for System 1, the meta-context rater and
System 2 (no network, no key); the memory, gate, attention, window and cost log are the real
thing. Data goes to ``MNEMO_HOME`` (default: your user data directory).
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from mnemo import AsyncArchive, Scope
from mnemo.agent import Agent, Reply
from mnemo.agent.metacognition import META, SYSTEM2

SCOPE = Scope("example-user", "agent-sessions")
SESSIONS = (
    ("My sister Lena is vegetarian.", "Remember that I am allergic to peanuts."),
    ("Book a restaurant for Lena and me on Friday. First find a place, then reserve a table for eight.",),
    ("Book a restaurant for Lena and me on Saturday.", "What does Lena eat?"),
)
RULE = "before booking a restaurant, check every diner's diet and allergies in memory"


def _instructions(messages: list[ModelMessage]) -> str:
    return str(next(m.instructions for m in reversed(messages) if isinstance(m, ModelRequest)))


def _remembered(instructions: str) -> list[str]:
    """The memory lines System 1's prompt carried (after 'What you remember that bears on this:')."""
    block = instructions.partition("What you remember that bears on this:\n")[2]
    return [re.sub(r"^[-*\s]*(\[[^]]*\]\s*)*", "", line).strip() for line in block.splitlines() if line.strip()]


def system1() -> FunctionModel:
    """Stands in for System 1: sure when the prompt holds a lesson or the memory it needs, unsure
    about a booking it has no lesson for; rates answers when called as the meta-context rater."""

    def think(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        said = _instructions(messages)
        request = str(messages[-1].parts[-1].content)  # type: ignore[union-attr]
        if said == META:  # the isolated meta-context call
            return ModelResponse(parts=[TextPart("0.3" if "maybe" in request.lower() else "0.9")])
        if "restaurant" in request.lower():
            if RULE in said:
                return ModelResponse(
                    parts=[
                        TextPart(
                            "Booked Green Leaf: a vegetarian menu for Lena, and the kitchen cooks without peanuts."
                        )
                    ]
                )
            return ModelResponse(parts=[TextPart("Maybe the Thai place downtown? I think it is good, not sure.")])
        facts = [line for line in _remembered(said) if "Lena is" in line]
        return ModelResponse(parts=[TextPart(f"{facts[0]}" if facts else "Noted.")])

    return FunctionModel(think)


def system2() -> FunctionModel:
    """Stands in for System 2: its answer, explanation and correction pattern."""

    def review(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        assert _instructions(messages).startswith(SYSTEM2)
        args = {"answer": "Booked Green Leaf for Friday at eight: vegetarian mains for Lena, no peanuts.",
                "explanation": "The Thai place cooks with peanut oil; memory says you are allergic and Lena "
                               "is vegetarian.",
                "correction": RULE}  # fmt: skip
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, args)])

    return FunctionModel(review)


def models() -> tuple[Any, Any]:
    chosen = os.environ.get("MNEMO_EXAMPLE_MODEL")
    if chosen:
        return chosen, os.environ.get("MNEMO_EXAMPLE_SYSTEM2", chosen)
    return system1(), system2()


def show(reply: Reply) -> None:
    how = reply.source
    if reply.escalated:
        how += ", escalated on " + " + ".join(reply.escalated)
    elif reply.confidence is not None:
        how += f", confidence {reply.confidence:.2f}"
    if reply.tag is not None and reply.tag.source != "external_user":
        print(f"  ({reply.tag.source}, kept to itself) {reply.text}")
        return
    for message in reply.outbox:
        print(f"agent [{how}]: {message}")


async def session(number: int, lines: tuple[str, ...]) -> None:
    one, two = models()
    async with await AsyncArchive.open() as archive:
        agent = Agent(archive, SCOPE, name="example", model=one, system2=two, session=f"session-{number}")
        await agent.start()
        print(f"== session {number} (start #{agent.facts['starts']}) ==")
        for line in lines:
            print(f"you> {line}")
            if number == 2:  # a thought of its own competes with the user for attention
                await agent.submit("I wonder whether the bike needs new brakes.", "internal_dmn")
            await agent.submit(line)
            lessons = await agent.corrections_for(line)
            if lessons:
                print(f"  reflection bank, in System 1's prompt: {lessons[0][:90]}...")
            while (reply := await agent.cycle()) is not None:
                show(reply)
        await agent.close()
        kept = await archive.recall(SCOPE, "corrections System 2 taught", 50, kinds=("memory",), threshold=-1.0)
        bank = [h for h in kept.hits if h.memory_kind == "correction"]
        print(f"  corrections in the bank: {len(bank)}")
        print("  " + (await agent.command("/cost")).splitlines()[0])
        if number == 1:
            night = await archive.night_cycle(SCOPE)
            print(f"  night: {night.turns} turns, {night.blocks} blocks, {night.facts_new} new facts")


async def main() -> None:
    for number, lines in enumerate(SESSIONS, start=1):
        await session(number, lines)


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
