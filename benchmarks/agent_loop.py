"""What the reference agent's loop costs per input, beside the model's own time.

    .venv/bin/python benchmarks/agent_loop.py --locomo PATH/locomo-dev.json [--inputs 40] [--runs 3]

A fresh home (a temporary directory, embedded PostgreSQL) gets the turns of the first LoCoMo
conversation as memories; then ``--inputs`` of its questions go through ``Agent.respond`` in four
ways: offline (the memory-only responder); System 1 as a FunctionModel that answers at once, with
no meta call; the same with the isolated meta-context call (a second instant model call); and, as
the baseline, one ``archive.recall`` of the same question (the memory read every way makes). The
models take no time, so the times are the loop's: window, context assembly, corrections and
reflexes, gate, turns, cost log. Prints p50/p95 per way over all runs, and the median of the runs'
p50s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel


def _questions_and_turns(path: Path, n: int) -> tuple[list[str], list[str]]:
    sample = json.loads(path.read_text())[0]
    talk = sample["conversation"]
    turns = [t["text"] for key, value in talk.items() if key.startswith("session_") and isinstance(value, list)
             for t in value if t.get("text")]  # fmt: skip
    questions = [qa["question"] for qa in sample["qa"]][:n]
    return questions, turns


def _instant(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    return ModelResponse(parts=[TextPart("0.9" if info.instructions and "You rate" in info.instructions else "Yes.")])


async def _way(archive: Any, name: str, questions: list[str], run: int) -> list[float]:
    from mnemo import Scope
    from mnemo.agent import Agent

    scope = Scope("bench", "agent")
    times: list[float] = []
    if name == "recall only (baseline)":
        for q in questions:
            started = time.perf_counter()
            await archive.recall(scope, q, 5, read_only=True)
            times.append((time.perf_counter() - started) * 1000)
        return times
    model = None if name == "offline" else FunctionModel(_instant)
    meta = "system1" if name.endswith("meta call") else None
    agent = Agent(archive, scope, model=model, meta=meta, session=f"{name}-{run}", exit_interval=0.0)
    await agent.start()
    if model is None:
        agent.model = None  # no MNEMO_LLM in this home: keep it offline
    for q in questions:
        started = time.perf_counter()
        await agent.respond(q)
        times.append((time.perf_counter() - started) * 1000)
    await agent.close()
    return times


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", type=Path, required=True)
    parser.add_argument("--inputs", type=int, default=40)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    from mnemo import AsyncArchive, Scope, Settings

    questions, turns = _questions_and_turns(args.locomo, args.inputs)
    ways = ["recall only (baseline)", "offline", "System 1, no meta call", "System 1 + meta call"]
    with tempfile.TemporaryDirectory() as home:
        async with await AsyncArchive.open(Settings(home=Path(home))) as archive:
            for text in turns:
                await archive.remember(Scope("bench", "agent"), text)
            print(f"{len(turns)} memories, {len(questions)} inputs per way, {args.runs} runs")
            results: dict[str, list[list[float]]] = {w: [] for w in ways}
            for run in range(args.runs):
                for way in ways:
                    results[way].append(await _way(archive, way, questions, run))
    print(f"{'way':28} {'p50 ms':>8} {'p95 ms':>8} {'median of run p50s':>20}")
    for way, runs in results.items():
        every = [t for r in runs for t in r]
        middle = statistics.median(statistics.median(r) for r in runs)
        print(f"{way:28} {_pct(every, 0.5):8.1f} {_pct(every, 0.95):8.1f} {middle:20.1f}")


if __name__ == "__main__":
    asyncio.run(main())
