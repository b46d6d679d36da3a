"""Long items and passages (issue 14 item 6): retrieval of evidence inside long items, and the
ingest cost of embedding them as overlapping passages, on a LoCoMo-format file.

    .venv/bin/python benchmarks/long_items.py path/to/locomo.json [--tokens 350] [--json out.json]

LoCoMo turns are short; the long-conversation benchmarks where assistants answer at length are
not. To measure what passages do for long items on data in hand, every session is cut into
items of consecutive turns ("Speaker: text" lines) of about ``--tokens`` tokens each (350 by
default, the median long assistant turn the issue cites), and each item goes into a fresh
scope through the real write path, once with ``passages`` off and once on. Every question runs
the real recall path, read-only, over those items; an item counts as the evidence turns it
holds. Figures per setting: recall@k (fractional, as ``mnemo bench locomo``), recall_any@k,
ingest seconds and items/s (the conversations' imports summed), recall p50/p95.

The item length is the only knob, and it is not tuned: it is the cited median.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mnemo import AsyncArchive, Refusal, Scope, Settings, TurnInput
from mnemo.bench.locomo import Conversation, load_locomo
from mnemo.bench.metrics import mean, percentile, recall_any_at_k, recall_at_k
from mnemo.embed import Embeddings, load_embedder

KS = (1, 5, 10)


def long_items(conv: Conversation, embeddings: Embeddings, tokens: int) -> list[tuple[TurnInput, tuple[str, ...]]]:
    """The conversation's sessions cut into items of about ``tokens`` tokens, each with the dia_ids it holds."""
    items: list[tuple[TurnInput, tuple[str, ...]]] = []
    lines: list[str] = []
    ids: list[str] = []
    size = 0
    session = None
    counts = embeddings.count_tokens([f"{t.speaker}: {t.content}" for t in conv.turns])

    def flush() -> None:
        nonlocal lines, ids, size
        if lines:
            items.append((TurnInput(session_id=str(session), role="assistant", content="\n".join(lines)), tuple(ids)))
        lines, ids, size = [], [], 0

    for turn, n in zip(conv.turns, counts, strict=True):
        if turn.session_id != session:
            flush()
            session = turn.session_id
        lines.append(f"{turn.speaker}: {turn.content}")
        ids.append(str(turn.metadata["dia_id"]))
        size += n
        if size >= tokens:
            flush()
    flush()
    return items


async def run(path: Path, tokens: int, embeddings: Embeddings) -> dict[str, Any]:
    conversations = load_locomo(path)
    out: dict[str, Any] = {"dataset": str(path), "item_tokens": tokens}
    for passages in (False, True):
        with tempfile.TemporaryDirectory(prefix="mnemo-long-") as home:
            settings = Settings(home=Path(home), scoring="deterministic", passages=passages)
            archive = await AsyncArchive.open(settings, embeddings=embeddings)
            rows: list[dict[str, float]] = []
            latencies: list[float] = []
            ingest = 0.0
            n_items = 0
            long_share: list[float] = []
            try:
                for conv in conversations:
                    items = long_items(conv, embeddings, tokens)
                    n_items += len(items)
                    counts = embeddings.count_tokens([i.content for i, _ in items])
                    long_share.extend(float(c + 2 > (embeddings.max_tokens or 10**9)) for c in counts)
                    scope = Scope("long", conv.sample_id)
                    started = time.perf_counter()
                    stored = await archive.import_turns(scope, [i for i, _ in items])
                    ingest += time.perf_counter() - started
                    cover = {str(t.id): ids for t, (_, ids) in zip(stored, items, strict=True)}
                    for q in conv.questions:
                        started = time.perf_counter()
                        result = await archive.recall(scope, q.text, max(KS), read_only=True, threshold=-1.0)
                        latencies.append((time.perf_counter() - started) * 1000)
                        hits = result.candidates if isinstance(result, Refusal) else result.hits
                        ranking = [str(h.id) for h in hits]
                        rows.append(
                            {f"R@{k}": recall_at_k(ranking, q.evidence, k, cover) for k in KS}
                            | {f"A@{k}": recall_any_at_k(ranking, q.evidence, k, cover) for k in KS}
                        )
            finally:
                await archive.close()
        out["passages on" if passages else "passages off"] = {
            "items": n_items,
            "longer than the model reads": round(100 * mean(long_share), 1),
            **{m: round(100 * mean([r[m] for r in rows]), 2) for m in rows[0]},
            "ingest_seconds": round(ingest, 1),
            "items_per_second": round(n_items / ingest, 1),
            "recall_ms": {"p50": round(percentile(latencies, 50), 1), "p95": round(percentile(latencies, 95), 1)},
        }
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--tokens", type=int, default=350)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    result = asyncio.run(run(args.path, args.tokens, load_embedder("bundled")))
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
