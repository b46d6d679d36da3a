"""Identity layers (issue 18 item 1, cognitive-plan §2.4) with the real bundled embedder: values
and goals come from JSON files, are embedded once and cached on disk, re-embedded only when their
text changes; blank layers are empty lists; a broken file is a clear error."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from mnemo import ConfigurationError
from mnemo.agent import Identity
from mnemo.embed import Embeddings

VALUES = [{"text": "Be honest about what I do not know.", "weight": 1.0}, "Protect the user's privacy."]


async def test_layers_are_embedded_once_and_the_cache_matches_a_fresh_embedding(
    tmp_path: Path, embeddings: Embeddings
) -> None:
    (tmp_path / "values.json").write_text(json.dumps(VALUES))
    first = Identity(tmp_path, embeddings)
    values = await first.layer(0)
    assert [(v.text, v.weight) for v in values] == [(VALUES[0]["text"], 1.0), ("Protect the user's privacy.", 1.0)]  # type: ignore[index]
    assert first.embedded == 2
    again = Identity(tmp_path, embeddings)  # a new process: everything from the cache
    cached = await again.layer(0)
    assert again.embedded == 0
    fresh = await embeddings.embed_documents([v.text for v in values])
    for item, vector in zip(cached, fresh, strict=True):
        assert np.allclose(item.vector, vector, atol=1e-6)  # the seed's test: cached == re-embedded
    (tmp_path / "values.json").write_text(json.dumps([*VALUES, "Finish what I start."]))
    third = Identity(tmp_path, embeddings)
    assert len(await third.layer(0)) == 3 and third.embedded == 1  # only the new text


async def test_blank_layers_are_empty(tmp_path: Path, embeddings: Embeddings) -> None:
    identity = Identity(tmp_path, embeddings)
    assert await identity.layer(0) == [] and await identity.layer(1) == []
    (tmp_path / "goals.json").write_text("  \n")
    assert await identity.layer(1) == [] and identity.embedded == 0


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("{not json", "not valid JSON"),
        ('{"text": "a"}', "JSON list"),
        ('[""]', "non-empty text"),
        ('[{"text": "a", "weight": 3}]', "weight"),
    ],
)
async def test_a_broken_layer_file_is_a_clear_error(
    tmp_path: Path, embeddings: Embeddings, text: str, says: str
) -> None:
    (tmp_path / "goals.json").write_text(text)
    with pytest.raises(ConfigurationError, match=says):
        await Identity(tmp_path, embeddings).layer(1)
    with pytest.raises(ConfigurationError, match="layers are 0"):
        await Identity(tmp_path, embeddings).layer(2)
