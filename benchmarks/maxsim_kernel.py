"""The MaxSim kernel alone (issue 42, decision 1): float32 against int8 x int8 into int32.

    .venv/bin/python benchmarks/maxsim_kernel.py LOCOMO.json [--items 2000]

The token embeddings of the first ``--items`` LoCoMo dev turns (the bundled model, int8 codes as
the store keeps them; cached in ``--cache``) are laid out as one scope's token index; each of
``--queries`` questions is scored against all of them by :func:`mnemo.cognition.scoring.late.index_scores`
as it stands (codes converted to float32 block by block, one float32 product), and by int8
products into int32 (the query's unit rows as int8 codes too): numpy's integer matmul, ONNX
Runtime's ``MatMulInteger`` (MLAS: VNNI where the CPU has it; :func:`mnemo.embed.int8_product`,
what recall uses). ``torch._int_mm`` is not measured here (a private torch name, and torch is
not loaded in a recall process).
Prints per kernel the median over rounds of each query's product time (ms, p50 / p95 over the
queries), and how far the int8 scores land from the float ones (largest difference, top-10 overlap).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from pathlib import Path

import numpy as np

from mnemo.bench.locomo import load_locomo
from mnemo.bench.metrics import percentile
from mnemo.cognition.scoring.late import (
    QUANT,
    Int8Product,
    TokenIndex,
    TokenVectors,
    index_scores,
    index_tokens,
    quantize,
)
from mnemo.embed import int8_product, load_embedder

Kernel = Int8Product


def _numpy_kernel(rows: np.ndarray, codes: np.ndarray) -> np.ndarray:
    # an index holds its codes shifted (uint8, code + 128): numpy multiplies the signed codes
    signed = rows if rows.dtype == np.int8 else np.bitwise_xor(rows, np.uint8(0x80)).view(np.int8)
    return np.matmul(signed, codes.T, dtype=np.int32)


def scores(query: TokenVectors, index: TokenIndex, product: Int8Product | None) -> np.ndarray:
    return index_scores(query, index, product)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/maxsim_kernel_tokens.npz"))
    parser.add_argument("--kernels", default="float,ort,numpy")
    args = parser.parse_args()
    conversations = load_locomo(args.path)
    turns = [t for c in conversations for t in c.turns][: args.items]
    questions = [q.text for c in conversations for q in c.questions][: args.queries]
    embeddings = load_embedder("bundled")
    if args.cache.is_file():
        data = np.load(args.cache, allow_pickle=False)
        items = [
            TokenVectors(i, v, 1.0 / QUANT)
            for i, v in zip(np.split(data["ids"], data["cuts"]), np.split(data["vectors"], data["cuts"]), strict=True)
        ]
        queries = [
            TokenVectors(i, v, 1.0)
            for i, v in zip(
                np.split(data["qids"], data["qcuts"]), np.split(data["qvectors"], data["qcuts"]), strict=True
            )
        ]
    else:
        texts = [embeddings.turn_text(t.content, t.speaker) for t in turns]
        _, tokens = asyncio.run(embeddings.embed_documents_with_tokens(texts))
        items = [quantize(tv) for tv in tokens]
        queries = [asyncio.run(embeddings.embed_query_with_tokens(q))[1] for q in questions]
        cuts = np.cumsum([len(tv.ids) for tv in items])[:-1]
        qcuts = np.cumsum([len(tv.ids) for tv in queries])[:-1]
        np.savez(args.cache, ids=np.concatenate([tv.ids for tv in items]), cuts=cuts,
                 vectors=np.concatenate([tv.vectors for tv in items]),
                 qids=np.concatenate([tv.ids for tv in queries]), qcuts=qcuts,
                 qvectors=np.concatenate([np.asarray(tv.vectors, np.float32) * tv.scale
                                          for tv in queries]))  # fmt: skip
    index = index_tokens(items)
    print(f"{len(items)} items, {len(index.rows)} token rows x {index.rows.shape[1]} ({index.rows.dtype}); "
          f"{len(queries)} queries, {statistics.mean(len(q.ids) for q in queries):.1f} tokens each")  # fmt: skip
    kernels: dict[str, Kernel | None] = {}
    for name in args.kernels.split(","):
        kernels[name] = {"float": lambda: None, "ort": lambda: int8_product,
                         "numpy": lambda: _numpy_kernel}[name]()  # fmt: skip
    reference = [scores(q, index, None) for q in queries]
    timings: dict[str, list[list[float]]] = {name: [] for name in kernels}
    for _ in range(args.rounds):
        for name, kernel in kernels.items():  # the kernels take turns, round after round
            spent = []
            for q in queries:
                started = time.perf_counter()
                scores(q, index, kernel)
                spent.append((time.perf_counter() - started) * 1000)
            timings[name].append(spent)
    for name, kernel in kernels.items():
        p50 = statistics.median(percentile(r, 50) for r in timings[name])
        p95 = statistics.median(percentile(r, 95) for r in timings[name])
        got = [scores(q, index, kernel) for q in queries]
        diff = max(float(np.abs(g - r).max()) for g, r in zip(got, reference, strict=True))
        overlap = statistics.mean(
            len(set(np.argsort(-g, kind="stable")[:10]) & set(np.argsort(-r, kind="stable")[:10])) / 10
            for g, r in zip(got, reference, strict=True)
        )
        print(f"{name:6s} p50 {p50:7.2f} ms  p95 {p95:7.2f} ms  max |score - float| {diff:.5f}", end="  ")
        print(f"top-10 overlap {overlap:.3f}")


if __name__ == "__main__":
    main()
