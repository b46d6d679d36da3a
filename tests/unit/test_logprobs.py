"""Surprisal from an LLM endpoint's token log-probabilities (issue 5 item 1), against a fake
OpenAI-compatible completions server on 127.0.0.1: parsing, errors, settings and the circuit breaker
(no database; the real night cycle: tests/integration/test_logprobs.py)."""

from __future__ import annotations

import json
import re

import pytest

from mnemo import EndpointError, MnemoError, Settings
from mnemo.cognition.consolidation.surprisal import NGramModel
from mnemo.night.logprobs import (
    MAX_CONSECUTIVE_FAILURES,
    SurprisalEndpointError,
    endpoint_logprobs,
    surprise_factory,
)
from tests.fake_completions import FAKE_BITS, FakeCompletions, free_port
from tests.night_data import ROUTINE

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
    assert isinstance(info.value, EndpointError) and isinstance(info.value, MnemoError)  # in the error tree
    assert url in str(info.value)


def test_endpoint_logprobs_raises_on_transport_errors(fake: tuple[FakeCompletions, str]) -> None:
    state, url = fake
    state.delay = 1.0
    with pytest.raises(SurprisalEndpointError, match="Timeout"):
        endpoint_logprobs(url, "tiny-lm", timeout=0.2)("one two")
    with pytest.raises(SurprisalEndpointError, match="ConnectError"):
        endpoint_logprobs(f"http://127.0.0.1:{free_port()}/v1", "tiny-lm", timeout=5)("one two")


# -- settings and the factory -----------------------------------------------------------------------------


def test_settings_from_environment_and_factory(monkeypatch: pytest.MonkeyPatch) -> None:
    assert surprise_factory(Settings()) is None  # no endpoint: the n-gram model alone

    endpoint = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
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
