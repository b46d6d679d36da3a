"""Recall latency of a k=10 caller with the blend's head 50 deep (what k=10 got before issue 42)
against ``blend_depth`` deep (100: what k=50 got, and now every k up to 100).

    .venv/bin/python benchmarks/blend_depth_latency.py LOCOMO.json [--conversations 2] [--rounds 3]

The first ``--conversations`` LoCoMo conversations are imported once (embedded database, read
index warm); every question is then recalled read-only with k=10 under each depth, the depths
taking turns to go first, round after round. Prints p50 / p95 per round and their medians. Run it
from a baseline worktree too (``PYTHONPATH=<worktree>/src``) to set another commit beside it; the
machine is shared and noisy, so compare only figures from runs made side by side.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from mnemo import AsyncArchive, Scope, Settings
from mnemo.bench.locomo import load_locomo
from mnemo.bench.metrics import percentile
from mnemo.embed import load_embedder


async def run(path: Path, conversations: int, rounds: int, depths: list[int]) -> None:
    convs = load_locomo(path)[:conversations]
    embeddings = load_embedder("bundled")
    with tempfile.TemporaryDirectory(prefix="mnemo-depth-") as home:
        archives = {
            d: await AsyncArchive.open(
                Settings(home=Path(home), scoring="deterministic", blend_depth=d), embeddings=embeddings
            )
            for d in depths
        }
        try:
            for conv in convs:
                await archives[depths[0]].import_turns(Scope("depth", conv.sample_id), conv.turns)
            for archive in archives.values():  # warm: read indexes built, token embeddings cached
                for conv in convs:
                    await archive.recall(Scope("depth", conv.sample_id), conv.questions[0].text, 10, read_only=True)
            figures: dict[int, list[tuple[float, float]]] = {d: [] for d in depths}
            for r in range(rounds):
                for d in depths[r % len(depths) :] + depths[: r % len(depths)]:
                    spent = []
                    for conv in convs:
                        for q in conv.questions:
                            started = time.perf_counter()
                            await archives[d].recall(Scope("depth", conv.sample_id), q.text, 10, read_only=True)
                            spent.append((time.perf_counter() - started) * 1000)
                    figures[d].append((percentile(spent, 50), percentile(spent, 95)))
                    print(f"round {r + 1} head {d}: p50 {figures[d][-1][0]:.1f} p95 {figures[d][-1][1]:.1f} ms")
        finally:
            for archive in archives.values():
                await archive.close()
    for d, runs in figures.items():
        p50 = statistics.median(f[0] for f in runs)
        p95 = statistics.median(f[1] for f in runs)
        print(f"head {d}, k=10: median of {rounds} rounds, p50 {p50:.1f} ms, p95 {p95:.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--conversations", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--depths", default="50,100")
    args = parser.parse_args()
    asyncio.run(run(args.path, args.conversations, args.rounds, [int(d) for d in args.depths.split(",")]))


if __name__ == "__main__":
    main()
