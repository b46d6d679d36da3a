"""The performance harness on a tiny scale: its metrics are computed and sane."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from mnemo.bench import perf
from mnemo.bench.perf import VectorCache, run_perf
from mnemo.embed import Embeddings, load_embedder
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
    vectors, tokens = await VectorCache(tmp_path, embeddings).get_with_tokens(texts[1:])
    assert np.allclose(vectors[0], first[1], atol=1e-6)
    _, fresh = await embeddings.embed_documents_with_tokens(texts[1:2])
    read = tokens[0]
    assert read is not None and np.array_equal(read.ids, fresh[0].ids) and read.vectors.dtype == np.int8
    assert np.min(np.sum(read.vectors * read.scale * fresh[0].vectors, axis=1)) > 0.99  # int8 codes, as stored


async def test_perf_harness_tiny_run(tmp_path: Path, embeddings: Embeddings) -> None:
    result = await run_perf(
        tiny(tmp_path / "t.json"),
        embeddings=embeddings,
        scales=(300,),
        baseline=load_embedder(backend="torch"),
        ingest_turns=100,
        mutation_memories=40,
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
    emb = result["embedding"]
    assert (emb["backend"], emb["baseline"]) == ("onnx", "torch") and emb["least_cosine_to_baseline"] > 0.9999
    assert emb["query_ms"]["p50"] > 0 and emb["baseline_documents_per_s"] > 0
    mutation = result["mutation"]
    assert mutation["memories"] == 40 and mutation["queries"] == 12
    assert 0 < mutation["read_only_ms"]["p50"] <= mutation["read_only_ms"]["p95"]


async def test_perf_harness_synthesised_vectors_deferred_hnsw_ann_and_over_budget(
    tmp_path: Path, embeddings: Embeddings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 42's 1M run in miniature: vectors past ``real`` synthesised (and said so), the HNSW
    index dropped for the load and built after it, the read index answering through its ANN
    above ``exact_scan_limit``, and the scope answered through SQL under a budget it does not fit."""
    monkeypatch.setattr(perf, "DEFER_HNSW_ABOVE", 200)
    monkeypatch.setenv("MNEMO_EXACT_SCAN_LIMIT", "100")
    result = await run_perf(
        tiny(tmp_path / "t.json"),
        embeddings=embeddings,
        scales=(300,),
        real=100,
        ingest_turns=100,
        mutation_memories=0,
        queries=12,
        cache_dir=tmp_path / "cache",
    )
    json.dumps(result)
    assert result["vectors"]["real"] == 100 and result["vectors"]["synthesised"] == 200
    assert "synthesised" in result["vectors"]["note"]
    (scale,) = result["scales"]
    assert scale["hnsw_build_s"] is not None and scale["hnsw_build_s"] >= 0
    assert 0.9 <= scale["ann_recall_at_10"] <= 1.0  # the rebuilt HNSW index answers
    assert scale["index_held"] and scale["index_dense"].startswith("ANN")
    assert scale["index_ann_recall_at_10"] is not None and scale["index_ann_recall_at_10"] >= 0.95
    over = result["over_budget"]
    assert over["index_held"] is False and over["answered_through"].startswith("SQL")
    assert over["budget_mb"] < over["index_mb"] and over["recall_ms_with_embedding"]["p50"] > 0
