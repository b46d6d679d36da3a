"""The LLM judgements of issue 40 item 4 (slot of an extracted fact, supersession, answerability),
driven by FunctionModel; no network."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from mnemo import llm
from mnemo.cognition.consolidation.extraction import TurnText

AT = datetime(2024, 2, 1, 10, 0, tzinfo=UTC)


def answering(payload: dict[str, Any], prompts: list[str] | None = None) -> FunctionModel:
    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if prompts is not None:
            prompts.append(str(messages[-1].parts[-1].content))  # type: ignore[union-attr]
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, payload)])

    return FunctionModel(answer)


def failing() -> FunctionModel:
    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise RuntimeError("provider down")

    return FunctionModel(answer)


def slow() -> FunctionModel:
    async def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        await asyncio.sleep(30)
        raise AssertionError("never reached")

    return FunctionModel(answer)


def _fact(attribute: str, value: str, slot: str | None) -> dict[str, Any]:
    return {"entity": "I", "attribute": attribute, "value": value, "confidence": 0.9, "source": 0, "kind": "fact"} | {
        "slot": slot
    }


async def test_a_named_slot_stores_the_fact_under_the_slots_attribute() -> None:
    facts = [
        _fact("employed by", "Typeform", "employer"),  # the words say no slot: the slot's attribute
        _fact("lives in", "Porto", "employer"),  # the words say a slot already: kept
        _fact("plays", "cello", "hobby"),  # not a one-value slot: kept
        _fact("calls home", "Porto", None),
    ]
    turns = [TurnText("Ana", "user", "I accepted the offer from Typeform; we live in Porto.", AT)]
    out = await llm.extract(answering({"facts": facts, "triples": []}), turns)
    assert out is not None
    assert [(f.entity, f.attribute, f.value) for f in out.facts] == [
        ("Ana", "works at", "Typeform"),
        ("Ana", "lives in", "Porto"),
        ("Ana", "plays", "cello"),
        ("Ana", "calls home", "Porto"),
    ]


async def test_supersedes_reads_the_pairs_numbers_and_ignores_others() -> None:
    prompts: list[str] = []
    pairs = [("Ana works at Booking.com", "Ana works for Typeform"), ("Ana likes jazz", "Ana likes hiking")]
    verdicts = await llm.supersedes(answering({"replaced": [0, 7, -1]}, prompts), pairs)
    assert verdicts == [True, False]
    assert "OLD: Ana works at Booking.com" in prompts[0] and "NEW: Ana likes hiking" in prompts[0]
    assert await llm.supersedes(answering({"replaced": [0]}), []) == []


async def test_supersedes_and_answers_are_none_without_a_model_or_on_failure_or_timeout() -> None:
    pairs = [("a", "b")]
    assert await llm.supersedes(None, pairs) is None
    assert await llm.supersedes(failing(), pairs) is None
    assert await llm.supersedes(slow(), pairs, wait_s=0.05) is None
    assert await llm.answers(None, "q?", ["p"]) is None
    assert await llm.answers(failing(), "q?", ["p"]) is None
    assert await llm.answers(slow(), "q?", ["p"], wait_s=0.05) is None
    assert await llm.answers(answering({"answerable": True}), "q?", []) is None  # nothing to judge


async def test_answers_returns_the_verdict_and_what_is_missing() -> None:
    prompts: list[str] = []
    model = answering({"answerable": False, "missing": "  Ana's   blood type "}, prompts)
    verdict = await llm.answers(model, "What is Ana's blood type?", ["Ana's partner is Sam."])
    assert verdict is not None and not verdict.answerable and verdict.missing == "Ana's blood type"
    assert "Question: What is Ana's blood type?" in prompts[0] and "[0] Ana's partner is Sam." in prompts[0]
