"""The reference agent's first loop (issue 18 items 3, 9, 11) on the real archive: offline it
answers from memory or refuses; with a model (Pydantic AI's FunctionModel) the system prompt holds
the identity layers, the cost line and the memory block, and every call lands in the cost log with
its tokens; turns carry source tags; starts are counted; ``mnemo agent chat`` works piped."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

from mnemo import AsyncArchive, Scope, Settings
from mnemo.agent import Agent, DocsTool, Identity
from mnemo.agent.loop import REFUSAL, price
from mnemo.embed import Embeddings

ME = Scope("maya", "chat")


def _instructions(messages: list[ModelMessage]) -> str:
    """The instructions of this call (on its newest request; older requests come from the window)."""
    return str(next(m.instructions for m in reversed(messages) if isinstance(m, ModelRequest)))


MNEMO = str(Path(sys.executable).parent / "mnemo")


async def test_offline_it_answers_from_memory_or_refuses_and_tags_sources(
    archive: AsyncArchive, database_url: str
) -> None:
    await archive.remember(ME, "Maya is allergic to peanuts and carries an epipen.")
    agent = Agent(archive, ME)
    assert await agent.start() is None and agent.model is None
    known = await agent.respond("What is Maya allergic to?")
    assert known.source == "offline" and "peanuts" in known.text
    assert known.confidence is not None and 0.3 < known.confidence <= 1.0  # the evidence's similarity
    unknown = await agent.respond("What is the capital of Mongolia?")
    assert unknown.text == REFUSAL
    with psycopg.connect(database_url) as conn:
        turns = conn.execute(
            "SELECT role, content, metadata->>'source' FROM mnemo.turns WHERE namespace = 'chat' ORDER BY created_at"
        ).fetchall()
    assert [(r, s) for r, _, s in turns] == [("user", "external_user"), ("assistant", "offline")] * 2


def _echoes(replies: list[str], questions: list[str]) -> list[str]:
    """The replies that quote a question of the conversation (or any question at all)."""
    asked = [q.rstrip("?").strip().lower() for q in questions]
    return [
        r for r in replies if "?" in r or "from memory: from memory" in r.lower() or any(q in r.lower() for q in asked)
    ]


async def test_offline_a_statement_is_acknowledged_and_a_question_is_never_its_own_answer(
    archive: AsyncArchive,
) -> None:
    """Issue 28 item 8: told "I am allergic to peanuts.", asked three times, the offline agent
    answered with the question itself, then with its own earlier reply."""
    agent = Agent(archive, ME)
    await agent.start()
    told = await agent.respond("I am allergic to peanuts.")
    assert told.text == "Noted: you are allergic to peanuts." and told.outbox == (told.text,)
    question = "What am I allergic to?"
    answers = [(await agent.respond(question)).text for _ in range(3)]
    assert all(a == "From memory: you are allergic to peanuts." for a in answers), answers
    assert _echoes([told.text, *answers], [question]) == []


FACTS = [  # (told, asked, the fact the answer names)
    ("I am allergic to peanuts.", "What am I allergic to?", "peanuts"),
    ("My dog is called Pixel.", "What is my dog's name?", "Pixel"),
    ("I live in Rotterdam.", "Which city do I live in?", "Rotterdam"),
    ("I work as a nurse at the children's hospital.", "What is my job?", "nurse"),
    ("My brother is called Tomas.", "what's my brother's name", "Tomas"),
    ("My birthday is on the 14th of March.", "When is my birthday?", "March"),
    ("I drive a blue Volvo.", "What car do I drive?", "Volvo"),
    ("Remember that my favourite food is lasagna.", "What is my favourite food?", "lasagna"),
    ("My hobby is rock climbing.", "Do you remember my hobby?", "climbing"),
    ("I speak Portuguese at home.", "Which language do I speak at home?", "Portuguese"),
]


async def test_offline_ten_facts_told_in_two_sessions_are_answered_after_restarts(
    settings: Settings, embeddings: Embeddings
) -> None:
    """Three sessions, each a fresh archive and agent on the same database: facts told in the first
    two (with a question in the second), asked in the third, some twice; no reply quotes a question."""
    sessions = [
        [told for told, _, _ in FACTS[:5]],
        [told for told, _, _ in FACTS[5:]] + [FACTS[0][1], FACTS[2][1]],
        [asked for _, asked, _ in FACTS] + [FACTS[1][1], FACTS[6][1], FACTS[0][1]],
    ]
    replies: list[list[str]] = []
    for number, lines in enumerate(sessions, start=1):
        async with await AsyncArchive.open(settings, embeddings=embeddings) as archive:
            agent = Agent(archive, ME, session=f"facts-{number}")
            await agent.start()
            replies.append([(await agent.respond(line)).text for line in lines])
            await agent.close()
    told, second, third = replies
    assert told[0] == "Noted: you are allergic to peanuts." and told[1] == "Noted: your dog is called Pixel."
    assert second[2] == "Noted: your favourite food is lasagna."  # "remember that" is not part of the fact
    assert "peanuts" in second[5] and "Rotterdam" in second[6]  # asked across one restart
    right = [fact for (_, _, fact), answer in zip(FACTS, third[:10], strict=True) if fact in answer]
    assert len(right) >= 8, list(zip([f for _, _, f in FACTS], third[:10], strict=True))
    assert "Pixel" in third[10] and "Volvo" in third[11] and "peanuts" in third[12]  # asked again
    questions = [line for lines in sessions for line in lines if line in {asked for _, asked, _ in FACTS}]
    assert _echoes([r for session in replies for r in session], questions) == []
    print(f"offline: {len(right)} of {len(FACTS)} facts answered after two restarts")


async def test_with_a_model_the_prompt_carries_identity_cost_and_memory_and_calls_are_logged(
    archive: AsyncArchive, tmp_path: Path
) -> None:
    (tmp_path / "values.json").write_text(json.dumps(["Never guess about allergies."]))
    (tmp_path / "goals.json").write_text(json.dumps(["Keep Maya safe at dinner parties."]))
    await archive.remember(ME, "Maya is allergic to peanuts and carries an epipen.")
    seen: list[str] = []

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(_instructions(messages))
        return ModelResponse(parts=[TextPart("Peanuts: keep them off the menu.")])

    agent = Agent(archive, ME, model=FunctionModel(answer), identity=Identity(tmp_path, archive.embeddings), meta=None)
    await agent.start()
    reply = await agent.respond("Plan a dinner for Maya.")
    assert reply.source == "system1" and reply.text == "Peanuts: keep them off the menu."
    assert reply.confidence == 1.0  # a plain, unhedged answer
    (prompt,) = seen
    assert "Never guess about allergies." in prompt and "Keep Maya safe" in prompt
    assert "peanuts" in prompt and "Cost: $" in prompt and "start #1" in prompt
    lifetime = await archive.agents.model_costs(ME.entity_id, "agent", agent.started.replace(year=2000))
    assert lifetime["calls"] == 1 and lifetime["input_tokens"] > 0 and lifetime["output_tokens"] > 0
    assert lifetime["unpriced"] == 1  # a FunctionModel has no price: logged, counted, not invented
    cost = await agent.respond("/cost")
    assert cost.source == "command" and "lifetime: 1 calls" in cost.text and "1 unpriced" in cost.text


async def test_starts_are_counted_and_known_models_are_priced(archive: AsyncArchive) -> None:
    first = Agent(archive, ME, name="scout")
    await first.start()
    second = Agent(archive, ME, name="scout")
    await second.start()
    assert second.facts["starts"] == 2 and second.facts["first_started"] == first.facts["first_started"]
    assert "start #2" in await second.command("/readiness")
    assert price("openai:gpt-4o", 1000, 500) == 0.0075 and price("nobody:model", 10, 10) is None


def test_mnemo_agent_chat_works_piped(database_url: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMO_") or k == "MNEMO_MODEL_CACHE"}
    env |= {"MNEMO_HOME": str(tmp_path), "MNEMO_DATABASE_URL": database_url}
    stored = subprocess.run([MNEMO, "remember", "-e", "maya", "Maya's bike is a red Gazelle."], env=env,
                            capture_output=True, text=True, timeout=300)  # fmt: skip
    assert stored.returncode == 0, stored.stderr
    script = "What bike does Maya ride?\n/cost\n/think [b]Maya's bike[/b] might need new brakes\n/state\n"
    talk = subprocess.run([MNEMO, "agent", "chat", "-e", "maya"], input=script, env=env | {"MNEMO_SYSTEM2_LLM": "test"},
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert talk.returncode == 0, talk.stderr
    lines: list[Any] = talk.stdout.splitlines()
    assert "red Gazelle" in lines[0] and lines[1].startswith("session: 0 calls")
    assert "System 2: test" in talk.stderr  # the readiness line names System 2 from the settings
    # the thought went through the same loop: answered from memory, kept inside (stderr), not sent
    assert "(internal_dmn) From memory: Maya's bike is a red Gazelle." in talk.stderr
    assert lines[-1].startswith("window: 4 messages") and lines[-1].endswith("2 cycles")


def test_the_offline_chat_notes_a_fact_and_answers_with_it_after_a_restart(database_url: str, tmp_path: Path) -> None:
    """The user's transcript (issue 28 item 8), piped through two ``mnemo agent chat`` processes."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMO_") or k == "MNEMO_MODEL_CACHE"}
    env |= {"MNEMO_HOME": str(tmp_path), "MNEMO_DATABASE_URL": database_url}
    said = []
    for script in ("I am allergic to peanuts.\nWhat am I allergic to?\n", "What am I allergic to?\n" * 2):
        talk = subprocess.run([MNEMO, "agent", "chat", "-e", "maya"], input=script, env=env, capture_output=True,
                              text=True, timeout=300)  # fmt: skip
        assert talk.returncode == 0, talk.stderr
        said += talk.stdout.splitlines()
    assert said == ["Noted: you are allergic to peanuts."] + ["From memory: you are allergic to peanuts."] * 3


def test_the_chat_answers_an_unknown_command_with_every_command_it_accepts(database_url: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMO_") or k == "MNEMO_MODEL_CACHE"}
    env |= {"MNEMO_HOME": str(tmp_path), "MNEMO_DATABASE_URL": database_url}
    script = "/bogus\n/cost\n/readiness\n/state\n/help\n/think\n/think the kettle is loud\n/quit\nWhat?\n"
    talk = subprocess.run([MNEMO, "agent", "chat", "-e", "maya"], input=script, env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert talk.returncode == 0, talk.stderr
    help_, rest = talk.stdout.split("\nsession: ", 1)  # what /bogus got, then what /cost printed
    assert help_.startswith("unknown command /bogus")
    listed = set(re.findall(r"^\s*(/[a-z]+)", help_, re.MULTILINE))
    assert {"/cost", "/readiness", "/state", "/think", "/help", "/quit"} <= listed
    assert "unknown command" not in rest  # every command it listed is one it accepts
    assert rest.count("/think TEXT") == 2  # /help lists them all again; /think alone says how to use it
    assert "(internal_dmn)" in talk.stderr and "What?" not in talk.stdout + talk.stderr  # /quit ended it


async def test_attention_picks_the_user_first_and_the_state_report_reaches_the_model(
    archive: AsyncArchive, database_url: str
) -> None:
    prompts: list[str] = []

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompts.append(_instructions(messages))
        return ModelResponse(parts=[TextPart("Noted.")])

    agent = Agent(archive, ME, model=FunctionModel(answer), meta=None)
    await agent.start()
    await agent.submit("I keep wondering about the garden hose.", "internal_dmn")
    await agent.submit("Please book a table for Friday at eight.")
    first = await agent.cycle()
    assert first is not None and "[cognitive state]" in prompts[0]
    winner = next(line for line in prompts[0].splitlines() if line.startswith("->"))
    assert winner.startswith("-> external_user") and "internal_dmn" in prompts[0]
    assert [c.source for c in agent.pending] == ["internal_dmn"] and agent.pending[0].urgency < 0.2
    await agent.cycle()  # the thought's turn comes next
    assert agent.pending == [] and await agent.cycle() is None
    with psycopg.connect(database_url) as conn:
        turns = conn.execute(
            "SELECT role, metadata->>'source' FROM mnemo.turns WHERE namespace = 'chat' AND role <> 'assistant'"
            " ORDER BY created_at"
        ).fetchall()
    assert turns == [("user", "external_user"), ("system", "internal_dmn")]


async def test_a_stored_correction_is_injected_next_time_in_a_similar_situation(archive: AsyncArchive) -> None:
    prompts: list[str] = []

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompts.append(_instructions(messages))
        return ModelResponse(parts=[TextPart("Done.")])

    agent = Agent(archive, ME, model=FunctionModel(answer), meta=None)
    await agent.start()
    await agent.store_correction(
        trigger="booking a restaurant for Maya",
        error_type="ignored an allergy",
        original="picked a Thai place that cooks with peanut oil",
        correction="check the menu for peanuts before booking",
    )
    await archive.remember(ME, "The team offsite is in Lisbon in May.")
    await agent.respond("Book a restaurant for Maya's birthday dinner.")
    await agent.respond("When is the team offsite?")
    assert "you made these errors" in prompts[0] and "check the menu for peanuts" in prompts[0]
    assert "you made these errors" not in prompts[1]  # a different situation: no correction applies


async def test_system1_reads_its_own_docs_and_never_outside_them(archive: AsyncArchive, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "notes.md").write_text("Decision: the agent may read its own docs.")
    (tmp_path / "secret.txt").write_text("the safe code is 4471")
    returns: list[str] = []

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        for part in getattr(last, "parts", []):
            if part.part_kind in ("tool-return", "retry-prompt"):
                returns.append(str(part.content))
        if len(returns) == 0:
            return ModelResponse(parts=[ToolCallPart("read_doc", {"path": "docs/../secret.txt"})])
        if len(returns) == 1:
            return ModelResponse(parts=[ToolCallPart("read_doc", {"path": "docs/notes.md"})])
        return ModelResponse(parts=[TextPart(returns[-1])])

    agent = Agent(archive, ME, model=FunctionModel(answer), docs=DocsTool.of(docs), meta=None)
    await agent.start()
    reply = await agent.respond("What did we decide about reading docs?")
    assert "leads outside" in returns[0] and "4471" not in " ".join(returns)
    assert reply.text == "Decision: the agent may read its own docs."


async def test_inputs_pass_the_memory_gate_with_their_source(archive: AsyncArchive, database_url: str) -> None:
    agent = Agent(archive, ME)
    await agent.start()
    await agent.respond("Remember that my sister Lena is vegetarian and visits in June.")
    with psycopg.connect(database_url) as conn:
        decided = conn.execute(
            "SELECT count(*) FROM traces.gate_decisions WHERE entity_id = 'maya' AND namespace = 'chat'"
        ).fetchone()
    assert decided is not None and decided[0] >= 1  # the entry gate saw the input


def _scripted(answers: list[str], prompts: list[str]) -> FunctionModel:
    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompts.append(_instructions(messages))
        return ModelResponse(parts=[TextPart(answers[min(len(prompts), len(answers)) - 1])])

    return FunctionModel(answer)


SECOND = {"answer": "The dentist is on Tuesday at 10.", "explanation": "System 1 guessed.",
          "correction": "look up appointments in the calendar before answering"}  # fmt: skip


async def test_unsure_and_novel_answers_retry_once_then_escalate_to_system2(
    archive: AsyncArchive, database_url: str
) -> None:
    prompts: list[str] = []
    hedged = "I think maybe it is on Tuesday? Perhaps Wednesday, not sure."
    system2 = TestModel(custom_output_args=SECOND)
    agent = Agent(archive, ME, model=_scripted([hedged], prompts), system2=system2, meta=None)
    await agent.start()
    reply = await agent.respond("When is my dentist appointment?")
    assert len(prompts) == 2 and "looked unsure" in prompts[1]  # one retry with targeted feedback
    assert reply.source == "system2" and reply.text == SECOND["answer"]
    assert reply.escalated == ("low_confidence", "novelty")
    with psycopg.connect(database_url) as conn:
        purposes = [r[0] for r in conn.execute("SELECT purpose FROM traces.model_calls ORDER BY at").fetchall()]
        kept = conn.execute("SELECT metadata->>'correction' FROM mnemo.memories WHERE kind = 'correction'").fetchall()
    assert purposes == ["system1", "system1-retry", "system2"]
    assert kept == [(SECOND["correction"],)]  # the reflection bank learnt from it
    (reflex,) = await archive.reflexes.matching(ME, "When is my dentist appointment?", 1)
    assert (reflex.action, reflex.action_type, reflex.success_count) == ("escalate_to_system2", "delegation", 1)


async def test_one_trigger_does_not_escalate_but_an_irreversible_action_always_does(archive: AsyncArchive) -> None:
    prompts: list[str] = []
    system2 = TestModel(custom_output_args=SECOND)
    agent = Agent(archive, ME, model=_scripted(["It is on Tuesday at ten."], prompts), system2=system2, meta=None)
    await agent.start()
    calm = await agent.respond("When is my dentist appointment?")  # novelty alone
    assert calm.source == "system1" and calm.escalated == () and len(prompts) == 1
    risky = await agent.respond("Cancel the dentist appointment.", flags=["irreversible"])
    # the first exchange is in memory now: no novelty, and still System 2 on an irreversible action
    assert risky.source == "system2" and risky.escalated == ("irreversible",)


async def test_the_cost_log_refuses_bad_entries_with_a_clear_error(archive: AsyncArchive) -> None:
    from mnemo.errors import InvalidContentError

    good = {"model": "openai:gpt-4o", "purpose": "system1", "input_tokens": 10, "output_tokens": 5, "cost": None,
            "seconds": 0.2}  # fmt: skip
    for bad in ({"input_tokens": -1}, {"output_tokens": 1.5}, {"cost": float("nan")}, {"seconds": -2.0},
                {"model": ""}):  # fmt: skip
        with pytest.raises(InvalidContentError):
            await archive.agents.log_model_call("maya", "agent", **(good | bad))
    with pytest.raises(InvalidContentError):
        await archive.agents.model_costs("maya", "agent", "not a time")  # type: ignore[arg-type]
    await archive.agents.log_model_call("maya", "agent", **good)
    totals = await archive.agents.model_costs("maya", "agent", datetime(2000, 1, 1, tzinfo=UTC))
    assert (totals["calls"], totals["input_tokens"], totals["unpriced"]) == (1, 10, 1)  # only the good one
