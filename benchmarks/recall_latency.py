"""Recall latency with and without issue 14's recall pieces, on one database, interleaved.

    .venv/bin/python benchmarks/recall_latency.py path/to/locomo.json [--rounds 3] [--k 50]

"before": late interaction, the unknown-names refusal, time-aware queries and passages off
(recall as it was before them); "no scan": the defaults less late retrieval (MaxSim re-ranks the
head but does not scan the scope); "hand-set head": the defaults less issue 32's pieces (the
learned fusion, session spreading, the support refusal); "now": the defaults. ``--configs
issue32`` runs only the last two; ``--configs issue40`` the defaults against "before issue 40"
(no current-first stage, no support refusal). Every conversation is imported once for
"before" and once for the other two (their own scopes, one embedded database); then every
question is recalled read-only, round after round, the configurations taking turns to go first. Prints
p50 / p95 per round and their medians: the machine is shared and noisy, so compare only
figures from one run.
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

# issue 32's pieces off: the hand-set order of the head, no session spreading, no support refusal
HAND = {"ranker": "hand", "spread_sessions": False, "refuse_unsupported": False}
BEFORE = {"late_interaction": False, "refuse_unknown_names": False, "time_aware": False, "passages": False}
# name -> (setting overrides, the scopes it reads: imported once per distinct name)
CONFIGS: dict[str, tuple[dict[str, object], str]] = {
    "before": (BEFORE, "before"),
    "no scan": ({"late_retrieval": False}, "now"),
    "hand-set head": (HAND, "now"),
    "now": ({}, "now"),
}
# issue 40's pieces off: no current-first stage (claims still written: the defaults import the
# scopes first), the support refusal as it was (off)
BEFORE_40 = {"current_first": False, "refuse_unsupported": False}
CHOICES = ("all", "issue32", "issue40")
"""``--configs issue32``: only the hand-set head (issue 32's pieces off) against the defaults;
``--configs issue40``: the defaults against the defaults less issue 40's recall pieces."""


async def run(path: Path, rounds: int, k: int, configs: str = "all") -> dict[str, tuple[float, float]]:
    if configs == "issue40":
        CONFIGS["before issue 40"] = (BEFORE_40, "now")
    picks = {"all": tuple(CONFIGS), "issue32": ("hand-set head", "now"), "issue40": ("now", "before issue 40")}
    chosen = {n: CONFIGS[n] for n in picks[configs]}
    conversations = load_locomo(path)
    embeddings = load_embedder("bundled")
    with tempfile.TemporaryDirectory(prefix="mnemo-latency-") as home:
        archives: dict[str, AsyncArchive] = {}
        try:
            imported: set[str] = set()
            for name, (extra, data) in chosen.items():
                settings = Settings(home=Path(home), scoring="deterministic", **extra)  # type: ignore[arg-type]
                archives[name] = await AsyncArchive.open(settings, embeddings=embeddings)
                if data not in imported:
                    imported.add(data)
                    for conv in conversations:
                        await archives[name].import_turns(Scope(data, conv.sample_id), conv.turns)
            figures: dict[str, list[tuple[float, float]]] = {name: [] for name in archives}
            for round_ in range(rounds):
                names = list(chosen)
                for name in names[round_ % len(names) :] + names[: round_ % len(names)]:
                    latencies = []
                    for conv in conversations:
                        for q in conv.questions:
                            started = time.perf_counter()
                            scope = Scope(CONFIGS[name][1], conv.sample_id)
                            await archives[name].recall(scope, q.text, k, read_only=True)
                            latencies.append((time.perf_counter() - started) * 1000)
                    figures[name].append((percentile(latencies, 50), percentile(latencies, 95)))
                    print(
                        f"round {round_ + 1} {name}: p50 {figures[name][-1][0]:.1f} p95 {figures[name][-1][1]:.1f} ms"
                    )
        finally:
            for archive in archives.values():
                await archive.close()
    return {
        name: (statistics.median(f[0] for f in runs), statistics.median(f[1] for f in runs))
        for name, runs in figures.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--k", type=int, default=50)
    parser.add_argument("--configs", choices=CHOICES, default="all")
    args = parser.parse_args()
    for name, (p50, p95) in asyncio.run(run(args.path, args.rounds, args.k, args.configs)).items():
        print(f"{name}: median of {args.rounds} rounds, p50 {p50:.1f} ms, p95 {p95:.1f} ms")


if __name__ == "__main__":
    main()
