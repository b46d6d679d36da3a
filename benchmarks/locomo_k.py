"""LoCoMo recall@k when the caller asks for only ``--k`` hits (issue 42: ``blend_depth`` independent of k).

    .venv/bin/python benchmarks/locomo_k.py LOCOMO.json --k 10 --json F

``mnemo bench locomo`` asks every recall for 50 hits; this runs the same benchmark (lab pass and
one lived round, seed 0, no baselines, as ``mnemo bench locomo --live --rounds 1 --seed 0
--no-baselines``) with recalls asking for ``--k`` hits instead, so R@10 at k=10 can be set beside
R@10 at k=50. Prints R@1/5/10 of the lab pass and of the lived round.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

from mnemo.bench import locomo
from mnemo.config import load_settings
from mnemo.embed import load_embedder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--k", type=int, default=10, help="hits each recall asks for (the bench asks 50)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--conversations", type=int, default=None)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    # the benchmark asks max(KS) hits and scores R@k for each k in KS: only the k it can score
    locomo.KS = tuple(k for k in locomo.KS if k <= args.k)  # type: ignore[assignment]  # fewer ks
    locomo.ANY_KS = tuple(k for k in locomo.ANY_KS if k <= args.k)  # type: ignore[assignment]
    settings = load_settings()
    embeddings = load_embedder(settings.embedder, **settings.embedder_options())
    result = asyncio.run(
        locomo.run_locomo(
            args.path,
            embeddings=embeddings,
            database_url=settings.database_url,
            baselines=False,
            live=True,
            rounds=1,
            seed=args.seed,
            conversations_limit=args.conversations,
        )
    )
    lab = result["systems"]["mnemo"]["overall 1-5"]
    lived = result["lived"]["systems"]["mnemo"][0]["scores"]["overall 1-5"]
    figures = {"k": args.k, "lab": {m: lab.get(m) for m in ("R@1", "R@5", "R@10")}}
    figures["lived"] = {m: lived.get(m) for m in ("R@1", "R@5", "R@10")}
    print(json.dumps(figures))
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
