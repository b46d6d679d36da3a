"""Surprisal from an LLM endpoint's token log-probabilities (issue 5 item 1), against a fake
OpenAI-compatible completions server on 127.0.0.1: parsing, errors, and the real night cycle."""

from __future__ import annotations

import asyncio
import json
import logging
import math
import re
import socket
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import psycopg
import pytest

from mnemo import AsyncArchive, Scope, Settings
from mnemo.cognition.surprisal import NGramModel, score_stream
from mnemo.embed import Embeddings
from mnemo.night.logprobs import (
    MAX_CONSECUTIVE_FAILURES,
    SurprisalEndpointError,
    endpoint_logprobs,
    surprise_factory,
)
from tests.night_data import ROUTINE, START, record

ME = Scope("alice", "llm-surprisal")
FAKE_BITS = 0.5 / math.log(2.0)  # -0.5 nats per token


class FakeCompletions:
    """Answers POST /v1/completions like an OpenAI-compatible server asked to echo and score the prompt.

    Each whitespace-separated word of the prompt is one token; the first has no log-probability, every other
    one -0.5 (or ``fixed`` as given). ``mode`` makes it misbehave; ``fail_if`` fails only prompts containing
    that string; ``delay`` sleeps before answering. Every request is kept in ``requests``.
    """

    def __init__(self) -> None:
        self.mode = "ok"
        self.fail_if: str | None = None
        self.fixed: list[Any] | None = None
        self.delay = 0.0
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def answer(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> tuple[int, str, bytes]:
        with self.lock:
            self.requests.append({"path": path, "headers": headers, "body": body})
        if self.delay:
            time.sleep(self.delay)
        prompt = str(body.get("prompt", ""))
        mode = self.mode if self.fail_if is None or self.fail_if in prompt else "ok"
        if path != "/v1/completions":
            return 404, "application/json", b'{"error": "not found"}'
        if mode == "500":
            return 500, "application/json", b'{"error": {"message": "model crashed"}}'
        if mode == "garbage":
            return 200, "text/html", b"<html>not json</html>"
        tokens = prompt.split()
        values: list[Any] = self.fixed if self.fixed is not None else [None] + [-0.5] * (len(tokens) - 1)
        logprobs: dict[str, Any] = {"tokens": tokens, "token_logprobs": values, "top_logprobs": None}
        text = prompt
        if mode == "missing":
            del logprobs["token_logprobs"]
        elif mode == "nan":
            logprobs["token_logprobs"] = [None, -0.5, float("nan")]
        elif mode == "positive":
            logprobs["token_logprobs"] = [None, -0.5, 0.7]
        elif mode == "string":
            logprobs["token_logprobs"] = [None, "-0.5"]
        elif mode == "empty":
            logprobs["token_logprobs"] = [None]
        elif mode == "noecho":  # a server that ignores echo and scores a generated token only
            text, logprobs["token_logprobs"] = " Sure", [-0.1]
        elif mode == "nochoices":
            return 200, "application/json", json.dumps({"object": "text_completion", "choices": []}).encode()
        choice = {"index": 0, "text": text, "logprobs": logprobs, "finish_reason": "length"}
        return 200, "application/json", json.dumps({"object": "text_completion", "choices": [choice]}).encode()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def fake() -> Iterator[tuple[FakeCompletions, str]]:
    state = FakeCompletions()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            status, ctype, payload = state.answer(self.path, dict(self.headers.items()), json.loads(raw))
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:  # keep the test output clean
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state, f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


# -- endpoint_logprobs ------------------------------------------------------------------------------------


def test_endpoint_logprobs_parses_strips_leading_none_and_sends_the_key(fake: tuple[FakeCompletions, str]) -> None:
    state, url = fake
    ask = endpoint_logprobs(url + "/", "tiny-lm", api_key="sk-test", timeout=5)
    assert ask("one two three four") == [-0.5, -0.5, -0.5]
    state.fixed = [None, None, -1.25, 0, -3]
    assert ask("whatever") == [-1.25, 0.0, -3.0]

    request = state.requests[0]
    assert request["path"] == "/v1/completions"  # the trailing slash of the base URL is not doubled
    assert request["headers"]["Authorization"] == "Bearer sk-test"
    assert request["body"] == {
        "model": "tiny-lm",
        "prompt": "one two three four",
        "max_tokens": 0,
        "echo": True,
        "logprobs": 0,
        "temperature": 0,
    }


def test_endpoint_logprobs_without_key_or_model_sends_neither(fake: tuple[FakeCompletions, str]) -> None:
    state, url = fake
    assert endpoint_logprobs(url, None)("a b") == [-0.5]
    request = state.requests[0]
    assert "Authorization" not in request["headers"]
    assert "model" not in request["body"]


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("500", "HTTP 500"),
        ("garbage", "not JSON"),
        ("missing", "token_logprobs"),
        ("nochoices", "choices[0]"),
        ("nan", "not a finite number"),
        ("positive", "not a finite number <= 0"),
        ("string", "not a finite number"),
        ("empty", "no token log-probabilities"),
        ("noecho", "did not echo the prompt"),
    ],
)
def test_endpoint_logprobs_raises_on_bad_answers(fake: tuple[FakeCompletions, str], mode: str, message: str) -> None:
    state, url = fake
    state.mode = mode
    with pytest.raises(SurprisalEndpointError, match=re.escape(message)) as info:
        endpoint_logprobs(url, "tiny-lm")("one two three")
    assert isinstance(info.value, RuntimeError)
    assert url in str(info.value)


def test_endpoint_logprobs_raises_on_transport_errors(fake: tuple[FakeCompletions, str]) -> None:
    state, url = fake
    state.delay = 1.0
    with pytest.raises(SurprisalEndpointError, match="Timeout"):
        endpoint_logprobs(url, "tiny-lm", timeout=0.2)("one two")
    with pytest.raises(SurprisalEndpointError, match="ConnectError"):
        endpoint_logprobs(f"http://127.0.0.1:{_free_port()}/v1", "tiny-lm", timeout=5)("one two")


# -- settings and the factory -----------------------------------------------------------------------------


def test_settings_from_environment_and_factory(monkeypatch: pytest.MonkeyPatch) -> None:
    assert surprise_factory(Settings()) is None  # no endpoint: the n-gram model alone

    endpoint = f"http://127.0.0.1:{_free_port()}/v1"  # nothing listens there
    monkeypatch.setenv("MNEMO_SURPRISAL_ENDPOINT", endpoint)
    monkeypatch.setenv("MNEMO_SURPRISAL_MODEL", "tiny-lm")
    monkeypatch.setenv("MNEMO_SURPRISAL_API_KEY", "sk-secret")
    monkeypatch.setenv("MNEMO_SURPRISAL_TIMEOUT", "2.5")
    settings = Settings()
    assert settings.surprisal_endpoint == endpoint
    assert settings.surprisal_model == "tiny-lm"
    assert settings.surprisal_timeout == 2.5
    assert settings.surprisal_api_key is not None
    assert settings.surprisal_api_key.get_secret_value() == "sk-secret"
    assert "sk-secret" not in repr(settings)
    assert "sk-secret" not in json.dumps(settings.model_dump(mode="json"))  # e.g. bench result files

    factory = surprise_factory(settings)
    assert factory is not None
    ngram = NGramModel()
    model = factory(ngram)
    # The connection is refused: the n-gram model answers, and learns from what is observed.
    assert model.surprisal("hello there world") == ngram.surprisal("hello there world")
    model.observe("hello there world")
    assert ngram.tokens_seen == 3


def test_factory_stops_asking_a_failing_endpoint(fake: tuple[FakeCompletions, str]) -> None:
    state, url = fake
    state.mode = "500"
    factory = surprise_factory(Settings(surprisal_endpoint=url, surprisal_model="tiny-lm"))
    assert factory is not None
    first, second = factory(NGramModel()), factory(NGramModel())  # two batches of one run share the breaker
    for text in ROUTINE[:4]:
        first.surprisal(text)
    for text in ROUTINE[4:]:
        second.surprisal(text)
    assert len(state.requests) == MAX_CONSECUTIVE_FAILURES


def test_factory_breaker_counts_only_failures_in_a_row(fake: tuple[FakeCompletions, str]) -> None:
    state, url = fake
    state.mode, state.fail_if = "500", "cooked"  # turns 1, 3 and 7: never two failures in a row
    factory = surprise_factory(Settings(surprisal_endpoint=url))
    assert factory is not None
    model = factory(NGramModel())
    scores = [model.surprisal(text) for text in ROUTINE]
    assert len(state.requests) == len(ROUTINE)  # never three failures in a row
    assert sum("cooked" in t for t in ROUTINE) == 3
    assert [s == pytest.approx(FAKE_BITS) for s in scores] == ["cooked" not in t for t in ROUTINE]


# -- the real night cycle ----------------------------------------------------------------------------------


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
