"""What a recall's and a context's use costs the caller: mutating against read-only, interleaved.

    .venv/bin/python benchmarks/use_latency.py path/to/locomo.json [--memories 2000] [--queries 150]
        [--budget 1000]

Issue 42 decisions 3 and 4 (targets: mutating recall ≤ +5 ms p95 over read-only; ``context()`` as
the owner ≤ 30 ms p95 at 2,000 items). A fresh home gets ``--memories`` LoCoMo sentences remembered
one by one (``mnemo bench perf``'s corpus), the read index warmed, and 50 owner's recalls (use
histories, co-access links). Then each question is asked, the ways taking turns to go first:
recall read-only, recall as the owner (mutating), context read-only, context as the owner. Before
each timed call the archive's queued use is written (``flush()``, untimed, where the archive has a
use queue), so each call is timed alone; ``+ use`` also times writing its queued use right after
(the whole cost, as a recall cost before the queue). Prints p50 / p95 per way and the mutating
recall's extra over read-only. Runs on any commit (``PYTHONPATH=<worktree>/src``).
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from mnemo import AsyncArchive, Scope, Settings
from mnemo.bench.metrics import percentile
from mnemo.bench.perf import build_corpus
from mnemo.embed import load_embedder


async def run(path: Path, memories: int, queries: int, budget: int) -> dict[str, Any]:
    embeddings = load_embedder("bundled")
    turns, questions = build_corpus(path, memories)
    scope = Scope("bench", "uses")
    times: dict[str, list[float]] = {
        "recall, read-only": [],
        "recall, owner": [],
        "recall, owner + use": [],
        "context, read-only": [],
        "context, owner": [],
        "context, owner + use": [],
    }
    with tempfile.TemporaryDirectory(prefix="mnemo-uses-") as home:
        archive = await AsyncArchive.open(Settings(home=Path(home)), embeddings=embeddings)
        queued = inspect.signature(AsyncArchive.flush).parameters["scope"].default is None

        async def drain() -> None:
            if queued:
                await archive.flush()  # type: ignore[call-overload]

        try:
            for turn in turns:
                await archive.remember(scope, turn.content)
            await archive.inspect.probes().settle()
            await archive.maintenance.warm(scope)
            asked = (questions * (queries // len(questions) + 1))[: queries + 50]
            for q in asked[:50]:  # use histories and links, as an agent's recalls leave them
                await archive.recall(scope, q, 10)
            await drain()

            def recall(read_only: bool) -> Callable[[str], Awaitable[object]]:
                return lambda q: archive.recall(scope, q, 10, read_only=read_only, threshold=-1.0)

            def context(read_only: bool) -> Callable[[str], Awaitable[object]]:
                return lambda q: archive.context(scope, q, budget, read_only=read_only)

            ways = [
                ("recall, read-only", recall(True)),
                ("recall, owner", recall(False)),
                ("context, read-only", context(True)),
                ("context, owner", context(False)),
            ]
            for n, q in enumerate(asked[50:]):
                for name, call in ways[n % 4 :] + ways[: n % 4]:
                    await drain()
                    started = time.perf_counter()
                    await call(q)
                    returned = time.perf_counter()
                    await drain()
                    times[name].append((returned - started) * 1000)
                    if "owner" in name:
                        times[f"{name} + use"].append((time.perf_counter() - started) * 1000)
        finally:
            await archive.close()
    lat = {
        name: {"p50": round(statistics.median(t), 1), "p95": round(percentile(t, 95), 1)} for name, t in times.items()
    }
    return {
        "memories": memories,
        "queries": queries,
        "budget": budget,
        "use_queue": queued,
        **lat,
        "mutating_extra_ms_p95": round(lat["recall, owner"]["p95"] - lat["recall, read-only"]["p95"], 1),
        "mutating_extra_ms_p50": round(lat["recall, owner"]["p50"] - lat["recall, read-only"]["p50"], 1),
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--memories", type=int, default=2000)
    parser.add_argument("--queries", type=int, default=150)
    parser.add_argument("--budget", type=int, default=1000)
    args = parser.parse_args(argv)
    print(json.dumps(asyncio.run(run(args.path, args.memories, args.queries, args.budget)), indent=2))


if __name__ == "__main__":
    main()
