"""The first ten hits do not depend on the k asked (issue 42: ``blend_depth`` independent of k).

A caller asking for 10 hits gets the ranking a caller asking for 50 gets: the head the blend,
late interaction, the learned stage and the current-first stage score is ``blend_depth`` deep
whatever k is, so only the length of the answer changes. Real archive: a LoCoMo dev conversation
imported, its questions asked with the archive's default (stochastic) scoring, each recall seeded.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import pytest

from mnemo import AsyncArchive, RecallResult, Scope, Settings
from mnemo.bench.locomo import load_locomo
from mnemo.embed import Embeddings
from mnemo.write.importer import import_turns

ROOT = Path(__file__).resolve().parents[2]
DEV = Path(os.environ.get("LOCOMO_DEV", ROOT.parent / "shared" / "bench" / "locomo" / "locomo-dev.json"))
DEV_FOUND = DEV.is_file()
QUESTIONS = 40


@pytest.fixture
async def stochastic(settings: Settings, embeddings: Embeddings) -> AsyncIterator[AsyncArchive]:
    """The archive as a user opens it: stochastic scoring (the tests' default is deterministic)."""
    archive = await AsyncArchive.open(settings.model_copy(update={"scoring": "stochastic"}), embeddings=embeddings)
    try:
        yield archive
    finally:
        await archive.close()


async def test_the_top_ten_of_k_10_is_the_top_ten_of_k_50_for_the_same_seed(stochastic: AsyncArchive) -> None:
    assert DEV_FOUND, f"the LoCoMo dev split is read from {DEV} (../shared beside the repository)"
    conv = load_locomo(DEV)[0]
    scope = Scope("locomo", conv.sample_id)
    await import_turns(stochastic._rt, scope, conv.turns)
    await stochastic._rt.backfill.wait()
    drawn = 0
    for n, q in enumerate(conv.questions[:QUESTIONS]):
        ten = await stochastic.recall(scope, q.text, 10, read_only=True, threshold=-1.0, seed=1000 + n)
        fifty = await stochastic.recall(scope, q.text, 50, read_only=True, threshold=-1.0, seed=1000 + n)
        assert isinstance(ten, RecallResult) and isinstance(fifty, RecallResult)
        assert len(ten.hits) == 10 and len(fifty.hits) == 50
        assert [h.id for h in ten.hits] == [h.id for h in fifty.hits[:10]], q.text
        # the same scores, to float32 rounding: a sum over the hits asked for is taken in another
        # order, and one of the two recalls may answer through SQL while the read index builds in the
        # background, the other through the index (pgvector's halfvec cosines against numpy's: 2e-8)
        assert np.allclose([h.score for h in ten.hits], [h.score for h in fifty.hits[:10]], rtol=0, atol=1e-6)
        # another seed draws another blend: the scores depend on the seed, not on k
        other = await stochastic.recall(scope, q.text, 10, read_only=True, threshold=-1.0, seed=2000 + n)
        assert isinstance(other, RecallResult)
        drawn += [h.score for h in other.hits] != [h.score for h in ten.hits]
    assert drawn > 0
