"""Ingest through the write path against the raw embedder, for short turns and for long items.

    .venv/bin/python benchmarks/ingest_rate.py path/to/locomo.json [--conversations 2] [--rounds 3]
        [--tokens 350] [--json out.json]

Issue 29 target 6: the write path (embedding, token embeddings, passages, postings, the change
log's triggers, every row in one transaction) keeps at least 90% of the raw embedder's rate. Two
kinds of items from the first ``--conversations`` LoCoMo conversations: the turns themselves
(short, "Speaker: text"), and each session cut into items of about ``--tokens`` tokens (as
``benchmarks/long_items.py`` cuts them: longer than the model reads, so they are embedded as
passages too). Each round times the raw embedder on exactly what the write path embeds (the
write path's own embedding, ``AsyncArchive.inspect.probes().embed``: vectors with token
embeddings, and the passages), then the import of the same items into a fresh scope, then the
raw embedder again; the ratio is the write rate over the mean of the two raw rates (the
machine's load drifts between runs). Prints every round's ratio and the medians.
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

from long_items import long_items

from mnemo import AsyncArchive, Scope, Settings, TurnInput
from mnemo.bench.locomo import load_locomo
from mnemo.embed import load_embedder


async def _round(archive: AsyncArchive, parts: list[list[TurnInput]], name: str) -> dict[str, float]:
    """One round: the raw embedder, the write path (each conversation into its own fresh scope:
    their session ids and turn numbers overlap), the raw embedder again."""
    probes = archive.inspect.probes()
    items = [t for part in parts for t in part]
    texts = [(t.content, f"{t.speaker}: " if t.speaker else "") for t in items]

    async def raw() -> float:
        started = time.perf_counter()
        await probes.embed(texts)
        return len(items) / (time.perf_counter() - started)

    before = await raw()
    started = time.perf_counter()
    for n, part in enumerate(parts):
        await archive.import_turns(Scope("ingest", f"{name}-{n}"), part)
    write = len(items) / (time.perf_counter() - started)
    after = await raw()
    return {"raw_per_s": (before + after) / 2, "write_per_s": write, "ratio": write / ((before + after) / 2)}


async def run(path: Path, conversations: int, rounds: int, tokens: int) -> dict[str, Any]:
    embeddings = load_embedder("bundled")
    chosen = load_locomo(path)[:conversations]
    kinds = {
        "short turns": [list(c.turns) for c in chosen],
        f"long items (~{tokens} tokens)": [[i for i, _ in long_items(c, embeddings, tokens)] for c in chosen],
    }
    out: dict[str, Any] = {"conversations": len(chosen), "rounds": rounds}
    with tempfile.TemporaryDirectory(prefix="mnemo-ingest-") as home:
        archive = await AsyncArchive.open(Settings(home=Path(home)), embeddings=embeddings)
        try:
            await archive.inspect.probes().embed([("warm-up", "")] * 64)
            for name, parts in kinds.items():
                runs = [await _round(archive, parts, f"{name[:4]}{n}") for n in range(rounds)]
                out[name] = {
                    "items": sum(len(p) for p in parts),
                    "raw_per_s": round(statistics.median(r["raw_per_s"] for r in runs), 1),
                    "write_per_s": round(statistics.median(r["write_per_s"] for r in runs), 1),
                    "write_vs_raw": round(statistics.median(r["ratio"] for r in runs), 3),
                    "write_vs_raw_per_round": [round(r["ratio"], 3) for r in runs],
                }
        finally:
            await archive.close()
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--conversations", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tokens", type=int, default=350)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    result = asyncio.run(run(args.path, args.conversations, args.rounds, args.tokens))
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
