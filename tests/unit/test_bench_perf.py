"""The performance harness's synthetic corpus (no database, no embedder)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from mnemo.bench.perf import build_corpus, synthesise
from tests.bench_data import tiny


def test_corpus_expands_with_new_speakers_and_dates(tmp_path: Path) -> None:
    turns, questions = build_corpus(tiny(tmp_path / "t.json"), 10)
    assert len(turns) == 10 and len(questions) == 4
    first, copy = turns[0], turns[4]
    assert first.content == copy.content  # the same sentence ...
    assert (first.speaker, first.session_id) != (copy.speaker, copy.session_id)  # ... said by someone else
    assert copy.created_at is not None and first.created_at is not None and copy.created_at > first.created_at
    assert len({(t.speaker, t.content) for t in turns}) == 10


def test_synthesised_vectors_are_seeded_unit_mixes_of_the_real_ones() -> None:
    real = np.random.default_rng(1).normal(size=(50, 16)).astype(np.float32)
    real /= np.linalg.norm(real, axis=1, keepdims=True)
    made = synthesise(real, 300)
    assert made.shape == (300, 16) and made.dtype == np.float32
    assert np.allclose(np.linalg.norm(made, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(made, synthesise(real, 300))  # seeded (rule 7)
    assert not np.array_equal(made, synthesise(real, 300, seed=43))
    nearest = (made @ real.T).max(axis=1)
    assert nearest.min() > 0.75  # each is mostly one real vector ...
    assert len({row.tobytes() for row in made}) == 300 and nearest.max() < 0.9999  # ... and none is a copy
