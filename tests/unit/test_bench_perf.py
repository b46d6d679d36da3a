"""The performance harness's synthetic corpus (no database, no embedder)."""

from __future__ import annotations

from pathlib import Path

from mnemo.bench.perf import build_corpus
from tests.bench_data import tiny


def test_corpus_expands_with_new_speakers_and_dates(tmp_path: Path) -> None:
    turns, questions = build_corpus(tiny(tmp_path / "t.json"), 10)
    assert len(turns) == 10 and len(questions) == 4
    first, copy = turns[0], turns[4]
    assert first.content == copy.content  # the same sentence ...
    assert (first.speaker, first.session_id) != (copy.speaker, copy.session_id)  # ... said by someone else
    assert copy.created_at is not None and first.created_at is not None and copy.created_at > first.created_at
    assert len({(t.speaker, t.content) for t in turns}) == 10
