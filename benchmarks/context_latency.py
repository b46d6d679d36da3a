"""``context()`` latency on a scope of memories with use histories, read index warm and SQL alone.

    .venv/bin/python benchmarks/context_latency.py path/to/locomo.json [--memories 2000]
        [--queries 200] [--budget 1000]

Issue 29 target 3: assembling an agent's context block (a recall of the context candidates, the
anchored and identity memories, token counting, packing, and the reinforcement of what was
placed) at 2,000 memories. A fresh home gets ``--memories`` LoCoMo sentences remembered one by one
(``mnemo bench perf``'s corpus) and a warm-up of owner's recalls (use histories, co-access links);
then each LoCoMo question asks for a ``--budget``-token block, as the owner (mutating, the
default) through an archive with the read index, and read-only through the same database with
``index=false``, taking turns. Prints p50 / p95 per way.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mnemo import AsyncArchive, Scope, Settings
from mnemo.bench.metrics import percentile
from mnemo.bench.perf import build_corpus
from mnemo.embed import load_embedder


async def run(path: Path, memories: int, queries: int, budget: int) -> dict[str, Any]:
    embeddings = load_embedder("bundled")
    turns, questions = build_corpus(path, memories)
    scope = Scope("bench", "context")
    times: dict[str, list[float]] = {"index, owner": [], "index, read-only": [], "sql, read-only": []}
    with tempfile.TemporaryDirectory(prefix="mnemo-context-") as home:
        archive = await AsyncArchive.open(Settings(home=Path(home)), embeddings=embeddings)
        sql = await AsyncArchive.open(Settings(home=Path(home), index=False), embeddings=embeddings)
        try:
            for turn in turns:
                await archive.remember(scope, turn.content)
            await archive.inspect.probes().settle()
            await archive.maintenance.warm(scope)
            asked = (questions * (queries // len(questions) + 1))[: queries + 50]
            for q in asked[:50]:  # use histories and links, as an agent's recalls leave them
                await archive.recall(scope, q, 10)
            for n, q in enumerate(asked[50:]):
                ways = [
                    ("index, owner", archive, False),
                    ("index, read-only", archive, True),
                    ("sql, read-only", sql, True),
                ]
                for name, way, read_only in ways[n % 3 :] + ways[: n % 3]:
                    started = time.perf_counter()
                    await way.context(scope, q, budget, read_only=read_only)
                    times[name].append((time.perf_counter() - started) * 1000)
        finally:
            await sql.close()
            await archive.close()
    return {
        "memories": memories,
        "queries": queries,
        "budget": budget,
        **{
            name: {"p50": round(statistics.median(t), 1), "p95": round(percentile(t, 95), 1)}
            for name, t in times.items()
        },
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--memories", type=int, default=2000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--budget", type=int, default=1000)
    args = parser.parse_args(argv)
    print(json.dumps(asyncio.run(run(args.path, args.memories, args.queries, args.budget)), indent=2))


if __name__ == "__main__":
    main()
