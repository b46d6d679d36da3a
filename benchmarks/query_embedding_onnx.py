"""ONNX Runtime session settings for the query embedding (issue 42: threads, graph optimisation,
execution mode), one short query at a time as recall embeds it.

    .venv/bin/python benchmarks/query_embedding_onnx.py LOCOMO.json [--queries 100] [--rounds 3]

The bundled model's exported graph (under the settings' model cache) is opened once per setting;
each setting's session takes the place of the shipped one in turn (``Embeddings.embed_query_with_tokens``,
the path recall takes: tokenizer, pooling and token embeddings included), the settings taking turns
round after round. Prints p50 / p95 per setting (medians over rounds) and how its sentence and token
embeddings compare with the shipped setting's: bit-identical, or the least cosine.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort

from mnemo.bench.locomo import load_locomo
from mnemo.bench.metrics import percentile
from mnemo.config import load_settings
from mnemo.embed import load_embedder

LEVELS = {
    "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
    "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
    "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
}
# name -> (intra-op threads, inter-op threads, optimisation level, parallel execution, spinning)
SETTINGS: dict[str, tuple[int, int, str, bool, bool]] = {
    "shipped (2 threads, all, sequential, no spin)": (2, 1, "all", False, False),
    "1 thread": (1, 1, "all", False, False),
    "2 threads, spinning": (2, 1, "all", False, True),
    "optimisation basic": (2, 1, "basic", False, False),
    "optimisation extended": (2, 1, "extended", False, False),
    "parallel execution, 2 inter-op": (2, 2, "all", True, False),
}


def session(model: Path, intra: int, inter: int, level: str, parallel: bool, spinning: bool) -> Any:
    options = ort.SessionOptions()
    options.intra_op_num_threads = intra
    options.inter_op_num_threads = inter
    options.graph_optimization_level = LEVELS[level]
    options.execution_mode = ort.ExecutionMode.ORT_PARALLEL if parallel else ort.ExecutionMode.ORT_SEQUENTIAL
    options.add_session_config_entry("session.intra_op.allow_spinning", "1" if spinning else "0")
    return ort.InferenceSession(str(model), sess_options=options, providers=["CPUExecutionProvider"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    questions = [q.text for c in load_locomo(args.path) for q in c.questions][: args.queries]
    settings = load_settings()
    embeddings = load_embedder(settings.embedder, **settings.embedder_options()).load()
    encoder = embeddings.embedder
    shipped = encoder.session
    models = sorted(settings.models.glob("*/model.onnx"), key=lambda p: p.stat().st_mtime)
    model = next(m for m in reversed(models) if session(m, 1, 1, "basic", False, False).get_inputs())
    sessions = {name: session(model, *knobs) for name, knobs in SETTINGS.items()}

    async def embed_all() -> tuple[list[float], list[tuple[np.ndarray, np.ndarray]]]:
        spent, out = [], []
        for q in questions:
            started = time.perf_counter()
            vector, tokens = await embeddings.embed_query_with_tokens(q)
            spent.append((time.perf_counter() - started) * 1000)
            out.append((vector, np.asarray(tokens.vectors)))
        return spent, out

    timings: dict[str, list[list[float]]] = {name: [] for name in sessions}
    outputs: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
    encoder.session = shipped
    asyncio.run(embed_all())  # warm up
    for r in range(args.rounds):
        names = list(sessions)
        for name in names[r % len(names) :] + names[: r % len(names)]:  # each goes first in turn
            encoder.session = sessions[name]
            spent, outputs[name] = asyncio.run(embed_all())
            timings[name].append(spent)
    encoder.session = shipped
    reference = outputs[next(iter(SETTINGS))]
    print(f"{len(questions)} queries, {model.parent.name}")
    for name in sessions:
        p50 = statistics.median(percentile(t, 50) for t in timings[name])
        p95 = statistics.median(percentile(t, 95) for t in timings[name])
        same = all(
            np.array_equal(a, b) and np.array_equal(ta, tb)
            for (a, ta), (b, tb) in zip(outputs[name], reference, strict=True)
        )
        least = min(
            min(float(a @ b), *(float(x @ y) for x, y in zip(ta, tb, strict=True)))
            for (a, ta), (b, tb) in zip(outputs[name], reference, strict=True)
        )
        agree = "bit-identical" if same else f"least cosine {least:.9f}"
        print(f"{name:48s} p50 {p50:6.2f} ms  p95 {p95:6.2f} ms  {agree}")


if __name__ == "__main__":
    main()
