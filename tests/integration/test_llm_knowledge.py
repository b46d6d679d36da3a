"""With an LLM configured (issue 40 item 4): the night's fact extraction and supersession, and recall's
answerability check, ask it; a failing model leaves the offline result. Driven by Pydantic AI's
FunctionModel (no network), on real PostgreSQL and the real embedder."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from mnemo import AsyncArchive, Refusal, Scope, Settings
from mnemo.embed import Embeddings
from tests.night_data import START, record

pytestmark = pytest.mark.future_nights

ME = Scope("alice", "llm")
LATER = START + timedelta(days=120)
_TURN = re.compile(r"^\[(\d+)\] [^:]*: (.*)$", re.MULTILINE)


def _prompt(messages: list[ModelMessage]) -> str:
    return str(messages[-1].parts[-1].content)  # type: ignore[union-attr]


def _fact(attribute: str, value: str, kind: str = "fact", **extra: Any) -> dict[str, Any]:
    return {"entity": "Alice", "attribute": attribute, "value": value, "confidence": 0.9, "kind": kind, **extra}


def _model(
    facts: dict[str, list[dict[str, Any]]],
    *,
    replaces: Callable[[str, str], bool] | None = None,
    answers: Callable[[str], tuple[bool, str]] | None = None,
    calls: list[str] | None = None,
) -> FunctionModel:
    """A stand-in LLM: extraction gives ``facts`` for each turn whose text holds a key; supersession
    asks ``replaces(old, new)`` per pair (raises without it); answerability asks ``answers(prompt)``."""
    seen = calls if calls is not None else []

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        instructions, prompt = info.instructions or "", _prompt(messages)
        tool = info.output_tools[0].name
        if "extract durable knowledge" in instructions:
            seen.append("extract")
            found = [
                {**f, "source": int(i)} for i, text in _TURN.findall(prompt) for k, fs in facts.items() if k in text
                for f in fs
            ]  # fmt: skip
            return ModelResponse(parts=[ToolCallPart(tool, {"facts": found, "triples": []})])
        if "memory current" in instructions:
            seen.append("supersede")
            if replaces is None:
                raise RuntimeError("the model is down")
            pairs = re.findall(r"\[(\d+)\] OLD: (.*)\n\s+NEW: (.*)", prompt)
            return ModelResponse(
                parts=[ToolCallPart(tool, {"replaced": [int(i) for i, o, n in pairs if replaces(o, n)]})]
            )
        seen.append("answer")
        if answers is None:
            raise RuntimeError("the model is down")
        ok, missing = answers(prompt)
        return ModelResponse(parts=[ToolCallPart(tool, {"answerable": ok, "missing": missing})])

    return FunctionModel(respond)


async def _night(settings: Settings, embeddings: Embeddings, model: FunctionModel, sessions: list[list[str]]) -> Any:
    archive = await AsyncArchive.open(settings, embeddings=embeddings, llm=model)
    try:
        for n, texts in enumerate(sessions):
            await record(archive, ME, f"s{n}", texts, START + timedelta(days=60 * n))
        report = await archive.night_cycle(ME, as_of=LATER, stages=("surprisal", "knowledge"))
        return report, await archive.knowledge.facts(ME, "Alice")
    finally:
        await archive.close()


def _values(facts: Any) -> tuple[set[str], set[str]]:
    return {f.value for f in facts.current}, {f.value for f in facts.past}


async def test_llm_extraction_closes_a_changed_job_and_an_ended_one(settings: Settings, embeddings: Embeddings) -> None:
    model = _model(
        {
            "Booking.com": [_fact("works at", "Booking.com", slot="employer")],
            "Typeform": [_fact("employed by", "Typeform", slot="employer")],  # the slot says it is the job
            "Bristol": [_fact("lives in", "Bristol", slot="residence")],
            "packed up": [_fact("lives in", "Bristol", negated=True, slot="residence")],
        },
        replaces=lambda old, new: False,
    )
    sessions = [
        ["I work at Booking.com as a designer, and I live in Bristol.", "Nice."],
        ["I accepted the offer from Typeform!", "Congratulations!", "We packed up and left for good.", "Wow."],
    ]
    report, alice = await _night(settings, embeddings, model, sessions)
    current, past = _values(alice)
    assert "Typeform" in current and "Booking.com" in past and "Bristol" in past
    assert {"Booking.com", "Bristol"}.isdisjoint(current)
    (typeform,) = [f for f in alice.current if f.value == "Typeform"]
    assert typeform.attribute == "works at"  # stored under the slot's attribute, so a later job closes it
    assert report.facts_closed == 2 and report.llm_fallbacks == 0


_OLD_LIFE = {
    "Booking": [_fact("is employed by", "Booking.com")],
    "jazz": [_fact("likes", "jazz", kind="preference")],
}
_NEW_LIFE = {
    "Typeform": [_fact("has a job at", "Typeform")],
    "hiking": [_fact("likes", "hiking", kind="preference")],
}
_SESSIONS = [
    ["I'm with Booking these days, and I love jazz.", "Cool."],
    ["My first week at Typeform went well. Also took up hiking.", "Great."],
]


async def test_llm_supersession_closes_what_the_offline_rules_leave_open(
    settings: Settings, embeddings: Embeddings
) -> None:
    calls: list[str] = []
    model = _model(
        {**_OLD_LIFE, **_NEW_LIFE},
        replaces=lambda old, new: "Booking.com" in old and "Typeform" in new,
        calls=calls,
    )
    report, alice = await _night(settings, embeddings, model, _SESSIONS)
    current, past = _values(alice)
    assert past == {"Booking.com"}  # the model said the new job replaces it
    assert current == {"Typeform", "jazz", "hiking"}  # two tastes can both hold: the model said no
    assert calls.count("supersede") == 1  # one batched call for the session that had open values
    assert report.facts_closed == 1 and report.llm_fallbacks == 0


async def test_a_failing_supersession_model_leaves_the_offline_result(
    settings: Settings, embeddings: Embeddings
) -> None:
    calls: list[str] = []
    model = _model({**_OLD_LIFE, **_NEW_LIFE}, replaces=None, calls=calls)
    report, alice = await _night(settings, embeddings, model, _SESSIONS)
    assert _values(alice) == ({"Booking.com", "Typeform", "jazz", "hiking"}, set())  # nothing closed offline either
    assert "supersede" in calls and report.facts_closed == 0 and report.llm_fallbacks == 1


async def test_supersession_is_not_asked_when_switched_off(settings: Settings, embeddings: Embeddings) -> None:
    calls: list[str] = []
    model = _model({**_OLD_LIFE, **_NEW_LIFE}, replaces=lambda o, n: True, calls=calls)
    report, alice = await _night(settings.model_copy(update={"llm_supersession": False}), embeddings, model, _SESSIONS)
    assert "supersede" not in calls and not _values(alice)[1] and report.facts_closed == 0


_TALK = [
    "My partner Sam works as a nurse at the city hospital.",
    "That sounds demanding.",
    "I play the cello in a quartet on Thursdays.",
    "Lovely.",
]
BLOOD = "Which instrument does Sam play?"  # Alice plays the cello: nothing says Sam plays at all
WORK = "Where does Alice's partner Sam work?"


def _by_question(prompt: str) -> tuple[bool, str]:
    return ("instrument" not in prompt, "the instrument Sam plays")


async def _recall(settings: Settings, embeddings: Embeddings, llm: object, question: str) -> Any:
    archive = await AsyncArchive.open(settings, embeddings=embeddings, llm=llm)
    try:
        return await archive.recall(ME, question, k=5, read_only=True)
    finally:
        await archive.close()


@pytest.fixture
async def talked(settings: Settings, embeddings: Embeddings) -> Settings:
    archive = await AsyncArchive.open(settings, embeddings=embeddings)
    try:
        await record(archive, ME, "s1", _TALK, START)
    finally:
        await archive.close()
    return settings


async def test_recall_refuses_what_the_model_says_the_hits_do_not_answer(
    talked: Settings, embeddings: Embeddings
) -> None:
    prompts: list[str] = []

    def judge(prompt: str) -> tuple[bool, str]:
        prompts.append(prompt)
        return _by_question(prompt)

    offline = await _recall(talked, embeddings, None, BLOOD)
    assert not isinstance(offline, Refusal) and offline.hits  # the offline rules answer it (cello, Sam)
    refused = await _recall(talked, embeddings, _model({}, answers=judge), BLOOD)
    assert isinstance(refused, Refusal)
    assert refused.unsupported == ("the instrument Sam plays",) and "the instrument Sam plays" in refused.message
    assert refused.candidates  # the hits it would have given stay inspectable
    assert any("Sam works as a nurse" in p for p in prompts)  # the model read the hits' text
    answered = await _recall(talked, embeddings, _model({}, answers=judge), WORK)
    assert not isinstance(answered, Refusal)
    assert "nurse" in answered.hits[0].content


async def test_a_failing_or_disabled_answerability_check_leaves_the_offline_result(
    talked: Settings, embeddings: Embeddings
) -> None:
    offline = await _recall(talked, embeddings, None, BLOOD)
    broken = await _recall(talked, embeddings, _model({}, answers=None), BLOOD)
    calls: list[str] = []
    off = talked.model_copy(update={"llm_answerability": False})
    disabled = await _recall(off, embeddings, _model({}, answers=lambda p: (False, "x"), calls=calls), BLOOD)
    for result in (broken, disabled):
        assert not isinstance(result, Refusal)
        assert [h.id for h in result.hits] == [h.id for h in offline.hits]
    assert calls == []  # switched off: never asked
