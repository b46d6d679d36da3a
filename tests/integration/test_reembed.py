"""Dimension lock: vectors are sealed with the model slug; a new model sees only its
own vectors until ``reembed`` catches up (archive-adr §8)."""

from __future__ import annotations

import pytest

from mnemo import AsyncArchive, RecallResult, Refusal, Scope, Settings
from mnemo.embed import Embeddings, load_embedder

SCOPE = Scope("lock", "test")


@pytest.fixture(scope="module")
def small_embeddings() -> Embeddings:
    # The same bundled MiniLM truncated to 128 dimensions: a real, different model slug.
    return load_embedder(truncate_dim=128)


async def test_switching_embedders_reports_and_reembeds(
    settings: Settings, embeddings: Embeddings, small_embeddings: Embeddings, caplog: pytest.LogCaptureFixture
) -> None:
    first = await AsyncArchive.open(settings, embeddings=embeddings)
    await first.remember(SCOPE, "Marie Curie won two Nobel prizes")
    await first.record_turn(SCOPE, "s", "user", "I repaired the garden fence with new cedar boards")
    await first.record_turn(SCOPE, "s", "user", "The cedar boards smell wonderful")
    assert first.pending_reembed == 0
    await first.close()

    second = await AsyncArchive.open(settings, embeddings=small_embeddings)
    try:
        assert str(second.embeddings.slug) == "sentence-transformers:all-MiniLM-L6-v2@128:128"
        assert second.pending_reembed == 3
        assert "3 stored items were embedded with another model" in caplog.text
        status = await second.status()
        assert status.pending_reembed == 3 and status.vector_table == "vectors.universal_128"
        # only lexical candidates exist for the new slug: a paraphrase with no shared word finds nothing dense
        result = await second.recall(SCOPE, "physicist awards", threshold=-1.0)
        assert isinstance(result, Refusal) and result.best_similarity is None and not result.candidates
        seen: list[tuple[int, int]] = []
        done = await second.maintenance.reembed(batch_size=2, progress=lambda d, t: seen.append((d, t)))
        assert done == 3 and second.pending_reembed == 0
        assert seen[0] == (0, 3) and seen[-1] == (3, 3)
        result = await second.recall(SCOPE, "physicist awards", k=1, threshold=0.0)
        assert isinstance(result, RecallResult)
        assert result[0].content.startswith("Marie Curie") and result[0].vector_rank == 1
        assert await second.maintenance.reembed() == 0  # resumable and idempotent: nothing left
    finally:
        await second.close()

    third = await AsyncArchive.open(settings, embeddings=small_embeddings)
    assert third.pending_reembed == 0
    await third.close()


async def test_same_dimension_model_swap_replaces_sealed_vectors(settings: Settings, embeddings: Embeddings) -> None:
    first = await AsyncArchive.open(settings, embeddings=embeddings)
    await first.remember(SCOPE, "The Danube flows into the Black Sea")
    await first.close()
    # same weights, different slug (as if another 384-d model were configured)
    other = Embeddings(
        embeddings.embedder,
        type(embeddings.slug)("sentence-transformers", "other-384", 384),
        tokenizer=embeddings.tokenizer,
    )
    second = await AsyncArchive.open(settings, embeddings=other)
    try:
        assert second.pending_reembed == 1
        before = await second.recall(SCOPE, "European river ending in a sea", threshold=-1.0)
        before_items = [*before.hits, *getattr(before, "candidates", ())]
        assert before_items and all(h.vector_rank is None for h in before_items)
        assert await second.maintenance.reembed() == 1
        status = await second.status()
        assert [(t, s) for t, s, _ in status.vectors] == [("universal_384", "sentence-transformers:other-384:384")]
        after = await second.recall(SCOPE, "European river ending in a sea", threshold=-1.0)
        assert after[0].vector_rank == 1
    finally:
        await second.close()


@pytest.mark.future_nights  # a week of nights
async def test_reembed_reaches_the_long_term_tier(
    settings: Settings, embeddings: Embeddings, small_embeddings: Embeddings
) -> None:
    from tests.integration.test_cortex import QUESTION, a_week_of

    history = Scope("lock", "history")
    first = await AsyncArchive.open(settings, embeddings=embeddings)
    try:
        blocks, migrated = await a_week_of(first, history)  # raw turns gone, every block in the cortex
        assert blocks == migrated > 0
    finally:
        await first.close()
    second = await AsyncArchive.open(settings, embeddings=small_embeddings)
    try:
        cortex = second._rt.cortex
        assert cortex is not None
        before = await second.recall(history, QUESTION, 5, threshold=-1.0, read_only=True, kinds=("turn",))
        assert all(h.similarity is None for h in before.hits)  # the old lines are invisible to the new model
        assert await second.maintenance.reembed() > 0
        for family in ("lines", "blocks"):
            assert await cortex.count(family, 128, history) == await cortex.count(family, 384, history) > 0
        lines = await second.recall(history, QUESTION, 5, threshold=-1.0, read_only=True, kinds=("turn",))
        assert isinstance(lines, RecallResult)
        assert lines[0].tier == "cortex" and lines[0].similarity is not None and "evict" in lines[0].content.lower()
        found = await second.recall(history, QUESTION, 5, threshold=-1.0, read_only=True, kinds=("memory",))
        assert isinstance(found, RecallResult)
        assert any(h.metadata.get("block_id") and h.similarity is not None and h.excerpt for h in found.hits)
        assert await second.maintenance.reembed() == 0  # converged: nothing left
    finally:
        await second.close()
