"""The LLM path of llm.py (summarise, extract, insight, narrative) driven by FunctionModel / TestModel; no network."""

from __future__ import annotations

import json
import logging
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

from mnemo import llm
from mnemo.cognition.consolidation.extraction import Extraction, FactCandidate, TripleCandidate, TurnText, extract

AT = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
TURNS = [
    TurnText("Caroline", "user", "I went to a support group yesterday and it was so moving.", AT),
    TurnText("Melanie", "assistant", "My sister Anna lives in Lyon. I no longer work at Acme.", AT),
]


def structured(payload: dict[str, Any], seen: list[tuple[list[ModelMessage], AgentInfo]]) -> FunctionModel:
    """A model that answers every request by calling the output tool with ``payload``."""

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append((messages, info))
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, payload)])

    return FunctionModel(answer)


def text_model(reply: str, seen: list[tuple[list[ModelMessage], AgentInfo]] | None = None) -> FunctionModel:
    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if seen is not None:
            seen.append((messages, info))
        return ModelResponse(parts=[TextPart(reply)])

    return FunctionModel(answer)


def failing() -> FunctionModel:
    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise RuntimeError("provider down")

    return FunctionModel(answer)


def as_payload(ex: Extraction) -> dict[str, Any]:
    """What a well-behaved model would return for ``ex`` (JSON-safe, dates as ISO strings)."""

    def row(record: FactCandidate | TripleCandidate) -> dict[str, Any]:
        data = asdict(record)
        data["valid_from"] = record.valid_from.isoformat() if record.valid_from else None
        return data

    return json.loads(json.dumps({"facts": [row(f) for f in ex.facts], "triples": [row(t) for t in ex.triples]}))


async def test_llm_extraction_yields_the_same_records_as_the_offline_path() -> None:
    offline = extract(TURNS)
    assert offline.facts and offline.triples  # the comparison below must compare something
    seen: list[tuple[list[ModelMessage], AgentInfo]] = []
    online = await llm.extract(structured(as_payload(offline), seen), TURNS)
    assert online == offline
    assert all(type(f) is FactCandidate for f in online.facts)
    assert all(type(t) is TripleCandidate for t in online.triples)
    ((messages, info),) = seen  # one isolated call: a single request, no history, clear instructions
    assert len(messages) == 1 and isinstance(messages[0], ModelRequest)
    assert info.instructions is not None and "first person" in info.instructions
    prompt = str(messages[0].parts[-1].content)  # type: ignore[union-attr]
    assert "[0] Caroline (user, 2023-05-08): I went to a support group" in prompt
    assert "[1] Melanie (assistant, 2023-05-08)" in prompt


async def test_bad_llm_output_is_filtered_and_clamped() -> None:
    good = {"entity": "Caroline", "attribute": "went to", "value": "support group", "source": 0, "kind": "event"}
    payload = {
        "facts": [
            {**good, "confidence": 3.0, "valid_from": "2023-05-07", "precision": "day"},  # clamped to 1
            {**good, "confidence": 0.7, "source": 99},  # no such turn
            {**good, "confidence": 0.7, "source": -1},
            {**good, "confidence": -0.5},  # no belief
            {**good, "confidence": float("nan")},
            {**good, "confidence": 0.7, "kind": "opinion"},  # unknown kind
            {**good, "confidence": 0.7, "value": "   "},  # empty
            {**good, "confidence": 0.8, "entity": "I", "attribute": "lives in", "value": "Lyon", "source": 1},
            {**good, "confidence": 0.6, "valid_from": "last Tuesday", "precision": "fortnight"},
            {**good, "confidence": 0.9, "attribute": "works at", "value": "", "negated": True, "source": 1},
        ],
        "triples": [
            {"subject": "Melanie", "predicate": "sister", "object": "Anna", "confidence": 1.5, "source": 1},
            {"subject": "Melanie", "predicate": "sister", "object": "Anna", "confidence": 0.5, "source": 7},
            {"subject": "Melanie", "predicate": "", "object": "Anna", "confidence": 0.5, "source": 1},
        ],
    }
    out = await llm.extract(structured(payload, []), TURNS)
    assert out is not None
    first, lyon, undated, quit_job = out.facts
    assert first.confidence == 1.0 and first.valid_from == datetime(2023, 5, 7, tzinfo=UTC)  # zone of the turn
    assert first.precision == "day" and first.kind == "event"
    assert (lyon.entity, lyon.attribute, lyon.value, lyon.source) == ("Melanie", "lives in", "Lyon", 1)  # "I"
    assert undated.valid_from is None and undated.precision is None  # unparseable date, unknown precision
    assert quit_job.negated and quit_job.value == ""  # an ended fact needs no value
    (triple,) = out.triples
    assert (triple.subject, triple.object, triple.confidence, triple.source) == ("Melanie", "Anna", 1.0, 1)
    assert all(0 < f.confidence <= 1 and 0 <= f.source < len(TURNS) for f in out.facts)


async def test_malformed_structured_output_falls_back_to_none(caplog: pytest.LogCaptureFixture) -> None:
    payload = {"facts": [{"entity": "x", "source": "not a number"}]}
    with caplog.at_level(logging.WARNING, logger="mnemo.llm"):
        assert await llm.extract(structured(payload, []), TURNS) is None
    assert "extraction failed" in caplog.text


async def test_testmodel_structured_output_round_trips() -> None:
    args = {
        "facts": [{"entity": "Ana", "attribute": "likes", "value": "jazz", "confidence": 0.9, "source": 0}],
        "triples": [],
    }
    args["facts"][0]["kind"] = "preference"
    out = await llm.extract(TestModel(custom_output_args=args), [TurnText("Ana", "user", "I love jazz.")])
    assert out == Extraction((FactCandidate("Ana", "likes", "jazz", 0.9, 0, "preference"),), ())
    assert await llm.extract(TestModel(), []) == Extraction()


@pytest.mark.parametrize(
    "call",
    [
        lambda m: llm.summarise(m, ["a text"]),
        lambda m: llm.extract(m, TURNS),
        lambda m: llm.insight(m, ["a statement"]),
        lambda m: llm.narrative(m, "Insight: value rest", ["slept well"]),
        lambda m: llm.contradicts(m, "a", "b"),
    ],
)
async def test_no_model_or_a_failing_model_gives_none(call: Any, caplog: pytest.LogCaptureFixture) -> None:
    assert await call(None) is None
    with caplog.at_level(logging.WARNING, logger="mnemo.llm"):
        assert await call(failing()) is None
    assert "provider down" in caplog.text


async def test_summarise() -> None:
    seen: list[tuple[list[ModelMessage], AgentInfo]] = []
    out = await llm.summarise(text_model("  Caroline went to a support\n group.  ", seen), ["t1", "t2"], max_words=20)
    assert out == "Caroline went to a support group."
    ((messages, info),) = seen
    assert len(messages) == 1 and info.instructions is not None and "at most 20 words" in info.instructions
    long = " ".join(f"w{i}" for i in range(100))
    cut = await llm.summarise(text_model(long), ["t"], max_words=10)
    assert cut is not None and cut.endswith("…") and len(cut.split()) == 10  # never longer than asked
    assert await llm.summarise(text_model("   "), ["t"]) is None  # nothing said: use the offline summary
    assert await llm.summarise(text_model("x"), []) is None
    assert await llm.summarise(TestModel(custom_output_text="A short summary."), ["t"]) == "A short summary."


async def test_insight_and_narrative_have_the_offline_prefixes() -> None:
    assert await llm.insight(text_model("I value simple tools."), ["s1", "s2"]) == "Insight: I value simple tools."
    assert await llm.insight(text_model("Insight: already there"), ["s"]) == "Insight: already there"
    assert await llm.insight(text_model("x"), []) is None
    seen: list[tuple[list[ModelMessage], AgentInfo]] = []
    story = await llm.narrative(
        text_model("I came to value simple tools because complex infra ate the budget.", seen),
        "Insight: values simple tools",
        ["complex infra ate the budget", "shipping got faster"],
    )
    assert story == "Identity narrative: I came to value simple tools because complex infra ate the budget."
    ((messages, info),) = seen
    prompt = str(messages[0].parts[-1].content)  # type: ignore[union-attr]
    assert "Insight: values simple tools\n" in prompt and "- shipping got faster" in prompt
    assert "Insight: Insight:" not in prompt and info.instructions is not None
    assert await llm.narrative(text_model(""), "Insight: x", ["y"]) is None
    assert await llm.narrative(text_model("z"), "  ", ["y"]) is None
