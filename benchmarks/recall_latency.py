"""Recall latency over N imported turns (issue 2's figure).

Builds a throw-away embedded database, imports ``--turns`` real conversation
turns (LoCoMo dev turns, repeated with varied speakers and dates until the
count is reached) through the real write path, then times ``--queries`` recalls
(the LoCoMo questions) end to end, query embedding included, read-only.

    python -m benchmarks.recall_latency --locomo ../shared/bench/locomo/locomo-dev.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from mnemo import AsyncArchive, Scope, Settings
from mnemo.formats import TurnInput, parse_locomo
from mnemo.remember import import_turns

NAMES = ["Ana", "Ben", "Chloé", "Dev", "Emeka", "Fatima", "Goran", "Hana", "Ivo", "Jun"]


def build_turns(locomo: Path, n: int) -> tuple[list[TurnInput], list[str]]:
    base = parse_locomo(locomo.read_text(), max_chars=32_000)
    questions = [qa["question"] for s in json.loads(locomo.read_text()) for qa in s["qa"]]
    turns: list[TurnInput] = []
    copy = 0
    while len(turns) < n:
        shift = timedelta(days=97 * copy)
        for t in base:
            if len(turns) == n:
                break
            speaker = NAMES[(NAMES.index(t.speaker) if t.speaker in NAMES else hash(t.speaker) % 10 + copy) % 10]
            turns.append(TurnInput(
                session_id=f"copy{copy}:{t.session_id}", role=t.role, content=t.content,
                speaker=speaker if copy else t.speaker,
                created_at=(t.created_at or datetime(2023, 1, 1, tzinfo=UTC)) + shift, turn_number=t.turn_number,
                metadata=t.metadata,
            ))
        copy += 1
    return turns, questions


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


async def run(args: argparse.Namespace) -> dict[str, float | int]:
    turns, questions = build_turns(Path(args.locomo), args.turns)
    questions = (questions * (args.queries // max(1, len(questions)) + 1))[: args.queries]
    home = Path(tempfile.mkdtemp(prefix="mnemo-bench-"))
    archive = await AsyncArchive.open(Settings(home=home))
    try:
        scope = Scope("bench", "latency")
        started = time.perf_counter()
        await import_turns(archive.runtime, scope, turns)
        ingest_s = time.perf_counter() - started
        for q in questions[:20]:  # warm-up
            await archive.recall(scope, q, 10, read_only=True)
        latencies = []
        for q in questions:
            t0 = time.perf_counter()
            await archive.recall(scope, q, 10, read_only=True)
            latencies.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        for q in questions[:200]:
            await archive.embeddings.embed_query(q)
        embed_ms = (time.perf_counter() - t0) * 1000 / 200
    finally:
        await archive.close()
    return {
        "cores": os.cpu_count() or 0, "turns": len(turns), "queries": len(latencies),
        "ingest_turns_per_s": round(len(turns) / ingest_s, 1),
        "recall_p50_ms": round(statistics.median(latencies), 2), "recall_p95_ms": round(pct(latencies, 95), 2),
        "recall_p99_ms": round(pct(latencies, 99), 2), "query_embedding_mean_ms": round(embed_ms, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--locomo", default="../shared/bench/locomo/locomo-dev.json")
    parser.add_argument("--turns", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=1_000)
    print(json.dumps(asyncio.run(run(parser.parse_args())), indent=2))


if __name__ == "__main__":
    main()
