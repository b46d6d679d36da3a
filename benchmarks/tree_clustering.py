"""RAPTOR tree clustering, Gaussian mixture vs HDBSCAN, each over a spectral embedding or PCA,
on a LoCoMo-format file (issue 13).

    .venv/bin/python benchmarks/tree_clustering.py path/to/locomo.json [--min-size 5] [--json out.json]

For each method (``cortex_clustering``) and reduction (``cortex_reduction``), every conversation goes into a fresh scope
through the real write path, then through tonight's night and the one eight days
later (the blocks migrate to the cortex and the tree is built over them with that
method). Figures per method:

* ``branches``, ``levels``, ``blocks per branch``: the tree's shape;
* ``pair lift``: for each question whose evidence lies in two or more blocks, the
  share of those block pairs that share a branch, over the share of all block pairs
  of the conversation that do (1.0: no better than chance; higher: a branch gathers
  what one question needs);
* ``top-branch evidence``: ``recall(level=1, k=1)`` per question, the share of its
  evidence turns whose block is under the branch returned, beside ``top-branch
  share``, the share of the conversation's blocks under it (what reading it costs), and
  their ratio, ``top-branch lift`` (1.0: the branch holds evidence no better than its size);
* ``cluster seconds``: the cluster stage of both nights.

No knob is tuned here: both methods run with the same ``cortex_cluster_size``.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import statistics
import tempfile
from collections.abc import Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from mnemo import AsyncArchive, Scope, Settings
from mnemo.bench.locomo import LATER, Conversation, load_locomo
from mnemo.config import load_settings
from mnemo.embed import Embeddings, load_embedder
from mnemo.models import RecallResult


async def measure(
    conversations: Sequence[Conversation], embeddings: Embeddings, method: str, reduction: str, min_size: int
) -> dict[str, Any]:
    """One method's figures over every conversation."""
    lifts: list[float] = []
    top_evidence: list[float] = []
    top_share: list[float] = []
    branches: list[int] = []
    levels: list[int] = []
    seconds = 0.0
    total_blocks = 0
    with tempfile.TemporaryDirectory(prefix="mnemo-tree-") as home:
        settings = Settings(
            home=Path(home),
            scoring="deterministic",
            cortex_clustering=method,
            cortex_reduction=reduction,
            cortex_cluster_size=min_size,
            clock_skew_hours=(LATER + timedelta(days=1)) / timedelta(hours=1),  # its second night is a week ahead
        )
        archive = await AsyncArchive.open(settings, embeddings=embeddings)
        try:
            for conv in conversations:
                scope = Scope("tree", conv.sample_id)
                turns = await archive.import_turns(scope, conv.turns)
                first = await archive.night_cycle(scope)
                later = await archive.night_cycle(scope, as_of=first.as_of + LATER)
                seconds += first.stage_seconds.get("cluster", 0.0) + later.stage_seconds.get("cluster", 0.0)
                block_of = await _blocks_of_dia(archive, scope, {str(t.metadata["dia_id"]): str(t.id) for t in turns})
                tree = await archive.inspect.cortex_tree(scope)
                branch_of = {b: n.id for n in tree if n.level == 1 for b in n.member_ids}
                branches.append(sum(1 for n in tree if n.level == 1))
                total_blocks += len(branch_of)
                levels.append(max((n.level for n in tree), default=0))
                chance = _pair_share(list(branch_of), branch_of)
                for q in conv.questions:
                    blocks = sorted({block_of[d] for d in q.evidence if d in block_of})
                    if len(blocks) >= 2 and chance > 0:
                        lifts.append(_pair_share(blocks, branch_of) / chance)
                    if not blocks:
                        continue
                    found = await archive.recall(scope, q.text, 1, level=1, threshold=-1.0)
                    hit = found.hits[0] if isinstance(found, RecallResult) and found.hits else None
                    top = set(hit.metadata["block_ids"]) if hit is not None else set()
                    covered = [d for d in q.evidence if block_of.get(d) in top]
                    top_evidence.append(len(covered) / len([d for d in q.evidence if d in block_of]))
                    top_share.append(len(top) / max(1, len(branch_of)))
        finally:
            await archive.close()
    return {
        "branches": sum(branches),
        "levels": statistics.mean(levels) if levels else 0,
        "blocks per branch": round(total_blocks / max(1, sum(branches)), 1),
        "pair lift": round(statistics.mean(lifts), 2) if lifts else None,
        "pairs": len(lifts),
        "top-branch evidence": round(100 * statistics.mean(top_evidence), 1) if top_evidence else None,
        "top-branch share": round(100 * statistics.mean(top_share), 1) if top_share else None,
        "top-branch lift": round(statistics.mean(top_evidence) / statistics.mean(top_share), 2) if top_share else None,
        "cluster seconds": round(seconds, 2),
    }


async def _blocks_of_dia(archive: AsyncArchive, scope: Scope, turn_of: Mapping[str, str]) -> dict[str, str]:
    """dia_id -> the id of the block holding that turn."""
    blocks = await archive.inspect.probes().block_turns(scope)
    block_of_turn = {str(t): str(block) for block, turn_ids in blocks.items() for t in turn_ids}
    return {dia: block_of_turn[t] for dia, t in turn_of.items() if t in block_of_turn}


def _pair_share(blocks: Sequence[str], branch_of: Mapping[str, str]) -> float:
    """The share of pairs of ``blocks`` that sit under one branch."""
    pairs = list(itertools.combinations([b for b in blocks if b in branch_of], 2))
    return sum(branch_of[a] == branch_of[b] for a, b in pairs) / len(pairs) if pairs else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("locomo", type=Path)
    parser.add_argument("--min-size", type=int, default=5, help="cortex_cluster_size for both methods")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    conversations = load_locomo(args.locomo)
    base = load_settings()
    embeddings = load_embedder(base.embedder, **base.embedder_options())
    figures = {
        f"{method} over {reduction}": asyncio.run(measure(conversations, embeddings, method, reduction, args.min_size))
        for reduction in ("spectral", "pca")
        for method in ("gmm", "hdbscan")
    }
    for method, row in figures.items():
        print(method, json.dumps(row))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
