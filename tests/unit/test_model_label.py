"""Issue 39 item 13: the agent's ``/readiness`` printed ``FunctionModel(… function=<function _scripted
at 0x…>)``. A model is shown by its name."""

from __future__ import annotations

from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

from mnemo.agent.loop import label


def _scripted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    return ModelResponse(parts=[TextPart("ok")])


def test_a_model_is_shown_by_its_name_never_its_repr() -> None:
    assert label(FunctionModel(_scripted)) == "function:_scripted"
    assert label(TestModel()) == "test"
    assert label("openai:gpt-4o-mini") == "openai:gpt-4o-mini"
    assert "0x" not in label(FunctionModel(_scripted)) and "(" not in label(TestModel())
