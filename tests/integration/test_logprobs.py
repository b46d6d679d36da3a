"""Surprisal from an LLM endpoint's token log-probabilities in the real night cycle (issue 5 item 1),
against the fake completions server (endpoint parsing and errors: tests/unit/test_logprobs.py)."""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta

import psycopg
import pytest

from mnemo import AsyncArchive, Scope, Settings
from mnemo.cognition.consolidation.surprisal import NGramModel, score_stream
from mnemo.embed import Embeddings
from mnemo.night.logprobs import MAX_CONSECUTIVE_FAILURES
from tests.fake_completions import FAKE_BITS, FakeCompletions
from tests.night_data import ROUTINE, START, record

ME = Scope("alice", "llm-surprisal")


def stored_surprisals(url: str) -> list[float]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT surprisal FROM mnemo.turns WHERE entity_id = %s ORDER BY turn_number", (ME.entity_id,)
        ).fetchall()
    return [r[0] for r in rows]


async def night(settings: Settings, embeddings: Embeddings, endpoint: str | None) -> int:
    archive = await AsyncArchive.open(
        settings, embeddings=embeddings, surprisal_endpoint=endpoint, surprisal_model="fake"
    )
    try:
        await record(archive, ME, "s1", ROUTINE, START)
        report = await archive.night_cycle(ME, as_of=START + timedelta(hours=1), stages=("surprisal",))
    finally:
        await archive.close()
    return report.turns_scored


async def test_night_cycle_scores_turns_with_the_endpoint(
    fake: tuple[FakeCompletions, str], settings: Settings, embeddings: Embeddings, database_url: str
) -> None:
    state, url = fake
    assert await night(settings, embeddings, url) == len(ROUTINE)

    assert stored_surprisals(database_url) == pytest.approx([FAKE_BITS] * len(ROUTINE), rel=1e-12)
    assert [r["body"]["prompt"] for r in state.requests] == ROUTINE  # one request per turn, in order
    assert {r["body"]["model"] for r in state.requests} == {"fake"}
    # The offline model went on learning, so a later run without the endpoint continues from it.
    with psycopg.connect(database_url) as conn:
        (saved,) = conn.execute(
            "SELECT value FROM mnemo.night_state WHERE entity_id = %s AND key = 'surprisal.ngram'", (ME.entity_id,)
        ).fetchone()  # type: ignore[misc]
    learnt = NGramModel()
    for text in ROUTINE:
        learnt.observe(text)
    assert NGramModel.from_state(saved).to_state() == learnt.to_state()


async def test_night_cycle_falls_back_to_the_ngram_model_with_one_warning(
    fake: tuple[FakeCompletions, str],
    settings: Settings,
    embeddings: Embeddings,
    database_url: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    state, url = fake
    state.mode = "500"
    with caplog.at_level(logging.WARNING, logger="mnemo"):
        assert await night(settings, embeddings, url) == len(ROUTINE)

    offline = score_stream(NGramModel(), ROUTINE)
    assert stored_surprisals(database_url) == pytest.approx(offline, rel=1e-12)
    assert not any(s == pytest.approx(FAKE_BITS) for s in offline)  # the two paths are distinguishable
    assert len(state.requests) == MAX_CONSECUTIVE_FAILURES  # then the run stopped asking
    warnings = [r for r in caplog.records if "log-probability endpoint failed" in r.getMessage()]
    assert len(warnings) == 1
    assert f"failed for {len(ROUTINE)} of {len(ROUTINE)} turns" in warnings[0].getMessage()
    assert "HTTP 500" in warnings[0].getMessage()


async def test_night_cycle_mixes_endpoint_and_fallback_per_turn(
    fake: tuple[FakeCompletions, str], settings: Settings, embeddings: Embeddings, database_url: str
) -> None:
    state, url = fake
    state.mode, state.fail_if = "garbage", "garlic"
    await night(settings, embeddings, url)

    ngram, expected = NGramModel(), []
    for text in ROUTINE:  # failed turns: the n-gram model trained on every earlier turn
        expected.append(ngram.surprisal(text) if "garlic" in text else FAKE_BITS)
        ngram.observe(text)
    assert sum("garlic" in t for t in ROUTINE) == 2
    assert stored_surprisals(database_url) == pytest.approx(expected, rel=1e-12)


async def test_without_endpoint_nothing_is_asked(
    fake: tuple[FakeCompletions, str], settings: Settings, embeddings: Embeddings, database_url: str
) -> None:
    state, _ = fake
    await night(settings, embeddings, None)
    assert state.requests == []
    assert stored_surprisals(database_url) == pytest.approx(score_stream(NGramModel(), ROUTINE), rel=1e-12)


@pytest.mark.timing
async def test_a_slow_endpoint_does_not_block_the_event_loop(
    fake: tuple[FakeCompletions, str], settings: Settings, embeddings: Embeddings
) -> None:
    state, url = fake
    archive = await AsyncArchive.open(settings, embeddings=embeddings, surprisal_endpoint=url)
    try:
        await record(archive, ME, "s1", ROUTINE[:3], START)
        state.delay = 0.3
        ticks = 0
        stop = asyncio.Event()

        async def ticker() -> None:
            nonlocal ticks
            while not stop.is_set():
                ticks += 1
                await asyncio.sleep(0.01)

        task = asyncio.create_task(ticker())
        await archive.night_cycle(ME, as_of=START + timedelta(hours=1), stages=("surprisal",))
        stop.set()
        await task
    finally:
        await archive.close()
    assert len(state.requests) == 3
    assert ticks >= 20  # ~0.9 s of endpoint latency; a blocked loop would tick about once
