"""The learned fusion and session spreading on the real read path (issue 32 items 1 and 3): what
the model sees of each candidate, that it decides the utterances' order and leaves memories
their places, and that a model file that cannot be used stops the archive from opening."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from mnemo import AsyncArchive, RecallResult, Scope, Settings
from mnemo.cognition.scoring.ranker import FEATURES, Ranker
from mnemo.embed import Embeddings
from mnemo.errors import ConfigurationError
from mnemo.recall.first_stage import Said, SqlStage

ME = Scope("ana", "chat")
TURNS = [
    # (session, speaker, content)
    ("s1", "Ben", "The blue bowl! The lopsided blue bowl from pottery class, the blue bowl is on the shelf."),
    ("s1", "Ana", "I love it, the bowl you made."),
    ("s1", "Ben", "Pottery class is on Tuesdays now."),
    ("s2", "Ana", "My knee hurts after long runs."),
    ("s2", "Ben", "You should rest it before the Berlin marathon."),
    ("s2", "Ana", "The bowl sits next to my running shoes, a blue thing I look at every day."),
]
QUESTION = "What did Ana say about the blue bowl?"


async def _fill(archive: AsyncArchive) -> None:
    for session, speaker, content in TURNS:
        await archive.record_turn(ME, session, "user", content, speaker=speaker)


def _weights_file(tmp_path: Path, **weights: float) -> Path:
    model = Ranker(
        FEATURES, (0.0,) * len(FEATURES), (1.0,) * len(FEATURES), tuple(weights.get(f, 0.0) for f in FEATURES)
    )
    path = tmp_path / "ranker.json"
    path.write_text(model.to_json(), encoding="utf-8")
    return path


async def _open(database_url: str, embeddings: Embeddings, **overrides: object) -> AsyncArchive:
    settings = Settings(database_url=database_url, scoring="deterministic", **overrides)  # type: ignore[arg-type]
    return await AsyncArchive.open(settings, embeddings=embeddings)


async def test_the_model_sees_each_candidates_speaker_session_and_scores(
    database_url: str, embeddings: Embeddings
) -> None:
    archive = await _open(database_url, embeddings)
    try:
        await _fill(archive)
        with archive.inspect.probes().capturing() as capture:
            result = await archive.recall(ME, QUESTION, 6, read_only=True, kinds=("turn",))
        texts = {h.id: (h.speaker, h.session_id) for h in result.hits}
    finally:
        await archive.close()
    assert isinstance(result, RecallResult) and len(capture.pools) == 1
    pool = capture.pools[0]
    assert set(pool.ids) == set(texts) and pool.matrix.shape == (len(pool.ids), len(FEATURES))
    column = {f: pool.matrix[:, n] for n, f in enumerate(FEATURES)}
    for row, item in enumerate(pool.ids):
        speaker, session = texts[item]
        assert column["speaker"][row] == float(speaker == "Ana")  # the question names Ana
        assert pool.sessions[item] == session
    # the hand-set order is the pool's order, and each session's best candidate ranks 1 in it
    assert list(column["hand"]) == sorted(column["hand"], reverse=True)
    for session in ("s1", "s2"):
        ranks = [column["session_rank"][n] for n, i in enumerate(pool.ids) if pool.sessions[i] == session]
        assert ranks[0] == 1.0 and all(r < 1.0 for r in ranks[1:])
    # a session's evidence is the same for all its candidates
    for session in ("s1", "s2"):
        mass = {column["session_mass"][n] for n, i in enumerate(pool.ids) if pool.sessions[i] == session}
        assert len(mass) == 1


async def test_the_model_decides_the_order_of_utterances(
    database_url: str, embeddings: Embeddings, tmp_path: Path
) -> None:
    archive = await _open(database_url, embeddings, ranker="hand")
    try:
        await _fill(archive)
        hand = await archive.recall(ME, QUESTION, 3, read_only=True, kinds=("turn",))
    finally:
        await archive.close()
    assert isinstance(hand, RecallResult)
    assert hand.hits[0].speaker == "Ana"  # by hand, Ana's own words come first
    model = _weights_file(tmp_path, speaker=-1.0, hand=0.01)  # a model that prefers anyone but her
    archive = await _open(database_url, embeddings, ranker="learned", ranker_file=model)
    try:
        learned = await archive.recall(ME, QUESTION, 3, read_only=True, kinds=("turn",))
    finally:
        await archive.close()
    assert isinstance(learned, RecallResult)
    assert [h.speaker for h in learned.hits] == ["Ben", "Ben", "Ben"]  # the model decides


async def test_memories_keep_their_places_whatever_the_model_says(
    database_url: str, embeddings: Embeddings, tmp_path: Path
) -> None:
    async def ranking(**overrides: object) -> list[tuple[str, str]]:
        archive = await _open(database_url, embeddings, **overrides)
        try:
            result = await archive.recall(ME, QUESTION, 10, read_only=True)
        finally:
            await archive.close()
        assert isinstance(result, RecallResult)
        return [(h.item_kind, str(h.id)) for h in result.hits]

    archive = await _open(database_url, embeddings)
    try:
        await _fill(archive)
        await archive.remember(ME, "Ben made Ana a lopsided blue bowl at pottery class")
        await archive.remember(ME, "Ana keeps the blue bowl next to her running shoes")
    finally:
        await archive.close()
    hand = await ranking(ranker="hand", spread_sessions=False)
    learned = await ranking(ranker="learned", ranker_file=_weights_file(tmp_path, speaker=-1.0))
    assert [k for k, _ in hand] == [k for k, _ in learned]  # the memories' places
    assert [i for k, i in hand if k == "memory"] == [i for k, i in learned if k == "memory"]
    assert [i for k, i in hand if k != "memory"] != [i for k, i in learned if k != "memory"]


async def test_a_model_file_that_cannot_be_used_stops_the_archive_from_opening(
    database_url: str, embeddings: Embeddings, tmp_path: Path
) -> None:
    bad = tmp_path / "ranker.json"
    bad.write_text('{"features": ["dense"], "mean": [0], "scale": [1], "weights": [1]}', encoding="utf-8")
    with pytest.raises(ConfigurationError, match="ranker_file"):
        await _open(database_url, embeddings, ranker_file=bad)


async def test_a_session_penalty_gives_the_second_session_a_place_in_the_top(
    database_url: str, embeddings: Embeddings, tmp_path: Path
) -> None:
    plain = Ranker.hand_set()
    spread = Ranker(plain.features, plain.mean, plain.scale, plain.weights, penalty=5.0)
    model = tmp_path / "spread.json"
    model.write_text(spread.to_json(), encoding="utf-8")
    question = "What did Ben say about pottery class and the bowl?"
    # the penalty alone (session representation, issue 43, has tests of its own)
    archive = await _open(database_url, embeddings, ranker="hand", spread_sessions=False, represent_sessions=False)
    try:
        await _fill(archive)
        hand = await archive.recall(ME, question, 2, read_only=True, kinds=("turn",))
    finally:
        await archive.close()
    archive = await _open(database_url, embeddings, ranker="learned", ranker_file=model, represent_sessions=False)
    try:
        spreading = await archive.recall(ME, question, 2, read_only=True, kinds=("turn",))
    finally:
        await archive.close()
    assert isinstance(hand, RecallResult) and isinstance(spreading, RecallResult)
    assert [h.session_id for h in hand.hits] == ["s1", "s1"]  # by hand, one session holds the top
    assert {h.session_id for h in spreading.hits} == {"s1", "s2"}
    assert spreading.hits[0].id == hand.hits[0].id  # the best stays first


async def _pool_of(archive: AsyncArchive, *, warm: bool) -> tuple[tuple[object, ...], list[list[float]], int]:
    """The learned stage's pool for :data:`QUESTION` (and how often it read texts through SQL),
    after the scope's read index is built (``warm``) or with none."""
    if warm:
        assert await archive._rt.indexes.ensure(archive._rt, (ME.entity_id, ME.namespace, archive._rt.slug))
    calls = []
    sql_said = SqlStage.said

    async def counted(self: SqlStage, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, Said]:
        calls.append(list(ids))
        return await sql_said(self, ids)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(SqlStage, "said", counted)
        with archive.inspect.probes().capturing() as capture:
            await archive.recall(ME, QUESTION, 6, read_only=True)
    assert len(capture.pools) == 1
    pool = capture.pools[0]
    return pool.ids, pool.matrix.tolist(), len(calls)


async def test_the_learned_stage_reads_speakers_from_the_read_index_as_sql_gives_them(
    database_url: str, embeddings: Embeddings
) -> None:
    archive = await _open(database_url, embeddings)
    sql_only = await _open(database_url, embeddings, index=False)
    try:
        await _fill(archive)
        await archive.remember(ME, "Ana keeps the blue bowl from Ben's pottery class on the shelf.")
        await archive._rt.backfill.wait()
        indexed = await _pool_of(archive, warm=True)
        await archive.record_turn(ME, "s3", "user", "Ana asked Ben to glaze another blue bowl.", speaker="Ben")
        await archive._rt.backfill.wait()
        caught_up = await _pool_of(archive, warm=True)  # the new turn comes in through the change log
        by_sql = await _pool_of(sql_only, warm=False)
    finally:
        await sql_only.close()
        await archive.close()
    ids, matrix, reads = indexed
    assert reads == 0  # the warm index held every head item's text and speaker: no SQL read
    assert caught_up[2] == 0
    assert by_sql[2] == 1  # index=false: the texts are read through SQL, once
    # the same head; what the texts give (names, speaker) to the bit; the scores' features as the
    # read index's float32 scores give them (test_read_index: within its TIE of SQL's)
    assert caught_up[0] == by_sql[0]
    for name in ("names", "speaker"):
        n = FEATURES.index(name)
        assert [row[n] for row in caught_up[1]] == [row[n] for row in by_sql[1]], name
    assert np.allclose(caught_up[1], by_sql[1], rtol=0, atol=1e-6)
    assert len(ids) > len(TURNS) - 1 and len(caught_up[0]) == len(ids) + 1
    speaker = FEATURES.index("speaker")
    assert 0.0 < sum(row[speaker] for row in matrix) < len(matrix)  # Ana's turns, not Ben's nor the memory
