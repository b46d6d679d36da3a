"""The performance harness on a tiny scale: its metrics are computed and sane."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from mnemo.bench.perf import VectorCache, run_perf
from mnemo.embed import Embeddings
from tests.bench_data import tiny


async def test_vector_cache_round_trip(tmp_path: Path, embeddings: Embeddings) -> None:
    cache = VectorCache(tmp_path, embeddings)
    texts = ["Ana: I adopted a greyhound", "Ben: I painted the kitchen", "Ana: I adopted a greyhound"]
    first = await cache.get(texts)
    assert first.shape == (3, 384) and np.allclose(first[0], first[2])
    again = await VectorCache(tmp_path, embeddings).get(texts[:2])  # read back from disk
    assert np.allclose(again, first[:2], atol=1e-6)
    direct = await embeddings.embed_documents(texts[:1])
    assert np.allclose(direct[0], first[0], atol=1e-5)


async def test_perf_harness_tiny_run(tmp_path: Path, embeddings: Embeddings) -> None:
    result = await run_perf(
        tiny(tmp_path / "t.json"),
        embeddings=embeddings,
        scales=(300,),
        ingest_turns=100,
        queries=12,
        cache_dir=tmp_path / "cache",
    )
    json.dumps(result)  # everything is serialisable for --json
    ingest = result["ingest"]
    assert ingest["turns"] == 100 and ingest["raw_embedder_per_s"] > 0 and ingest["store_only_rows_per_s"] > 0
    assert ingest["rounds"] == 3 and len(ingest["write_vs_raw_per_round"]) == 3
    assert ingest["write_vs_raw"] == sorted(ingest["write_vs_raw_per_round"])[1]  # the median round
    (scale,) = result["scales"]
    assert scale["memories"] == 300 and scale["queries"] == 12
    lat = scale["recall_ms_with_embedding"]
    assert 0 < lat["p50"] <= lat["p95"] <= lat["p99"]
    assert 0.9 <= scale["ann_recall_at_10"] <= 1.0  # 300 vectors: HNSW is close to exact
    assert scale["filtered_queries_with_10_results"] == 1.0  # the 1% scope still returns k results
