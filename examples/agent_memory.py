"""An agent that remembers across runs: mnemo's Pydantic AI toolset.

Run 1 tells the agent something; the archive is closed (as if the process
ended); run 2 opens it again with a brand-new agent, which recalls it.

    .venv/bin/python examples/agent_memory.py                      # offline, scripted model
    MNEMO_EXAMPLE_MODEL=openai:gpt-4o-mini .venv/bin/python examples/agent_memory.py

Any Pydantic AI model name works for ``MNEMO_EXAMPLE_MODEL``; ``openai:`` models need
``.venv/bin/pip install "pydantic-ai-slim[openai]"`` and ``OPENAI_API_KEY``.

Without ``MNEMO_EXAMPLE_MODEL`` a small scripted model stands in for the LLM
(no network, no key): it calls ``remember`` for "Remember ..." messages and
``query_archive`` otherwise, then answers with what the tool returned. The
memory itself (embedded PostgreSQL, bundled embedder) is the real thing; data
goes to ``MNEMO_HOME`` (default: your user data directory).
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from mnemo import AsyncArchive, Scope
from mnemo.interfaces.pydantic_ai import memory_toolset

SCOPE = Scope("example-user", "assistant")
INSTRUCTIONS = (
    "You are a personal assistant with long-term memory. Store facts the user asks you to remember with "
    "the remember tool; answer questions about the user from query_archive, and say you don't know when "
    "it finds nothing reliable."
)


def offline_model() -> FunctionModel:
    """Stands in for an LLM: one tool call, then an answer built from the tool's result."""

    def step(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returned = [p for m in messages for p in getattr(m, "parts", []) if isinstance(p, ToolReturnPart)]
        if returned:
            content: Any = returned[-1].content
            if isinstance(content, list) and content:
                return ModelResponse(parts=[TextPart(f"From memory: {content[0]['content']}")])
            return ModelResponse(parts=[TextPart(str(content))])
        prompt = next(str(p.content) for m in messages for p in getattr(m, "parts", []) if p.part_kind == "user-prompt")
        if prompt.lower().startswith("remember"):
            fact = prompt.split(" ", 1)[1].removeprefix("that ").strip()
            return ModelResponse(parts=[ToolCallPart("remember", {"content": fact, "kind": "semantic"})])
        return ModelResponse(parts=[ToolCallPart("query_archive", {"query": prompt, "k": 3})])

    return FunctionModel(step)


async def one_run(message: str) -> str:
    archive = await AsyncArchive.open()  # a fresh connection each run, like a new process
    try:
        toolset = await memory_toolset(archive, SCOPE)
        if toolset is None:
            sys.exit("memory is unavailable (see the warning above)")
        model = os.environ.get("MNEMO_EXAMPLE_MODEL") or offline_model()
        agent = Agent(model, instructions=INSTRUCTIONS, toolsets=[toolset])
        result = await agent.run(message)
        return str(result.output)
    finally:
        await archive.close()


async def main() -> None:
    for message in ("Remember that my dog is a beagle called Pixel.", "What kind of dog do I have?"):
        print(f"user:  {message}")
        print(f"agent: {await one_run(message)}\n")


if __name__ == "__main__":
    asyncio.run(main())
