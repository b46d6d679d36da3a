"""The pure rules behind the agent's window, actions and metacognition (issue 18 items 3-5;
cognitive-plan §3.3, §3.4, §2.11): window sizing bands, FIFO pruning, the rate limit, the action
check, verbalised-confidence parsing, log-probabilities from provider details, the triggers."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart

from mnemo.agent.metacognition import contradicts, logprobs_of, parse_verbalised, signals
from mnemo.cognition.mind.actions import SELF_GENERATED, SOURCE_FLOOR, SourceTag, check_action
from mnemo.cognition.mind.window_sizing import (
    DEEP,
    NORMAL,
    RELAXED,
    RateLimit,
    intensity,
    prune_count,
    system2_recency,
    window_share,
)

unit = st.floats(0.0, 1.0)


@given(unit, unit, unit, unit)
def test_intensity_is_the_mean_of_its_four_signals(gate: float, s2: float, goals: float, charge: float) -> None:
    level = intensity(gate, s2, goals, charge)
    assert level.value == pytest.approx((gate + s2 + goals + charge) / 4)
    assert 0.0 <= level.value <= 1.0


@pytest.mark.parametrize("bad", [-0.1, 1.5, float("nan")])
def test_intensity_refuses_signals_outside_the_unit_interval(bad: float) -> None:
    with pytest.raises(ValueError, match="within"):
        intensity(bad, 0.0, 0.0, 0.0)


def test_the_window_share_follows_the_seeds_three_bands() -> None:
    assert window_share(0.71) == DEEP == 0.9
    assert window_share(0.7) == window_share(0.3) == NORMAL
    assert window_share(0.29) == RELAXED and 0.3 <= RELAXED <= 0.4


@given(st.floats(0.0, 1.0), st.floats(0.0, 1.0))
def test_more_intensity_never_shrinks_the_window(a: float, b: float) -> None:
    low, high = sorted((a, b))
    assert window_share(low) <= window_share(high)


@given(st.lists(st.integers(0, 500), min_size=1, max_size=30), st.integers(0, 3000))
def test_pruning_drops_the_fewest_oldest_messages_and_keeps_the_newest(tokens: list[int], limit: int) -> None:
    drop = prune_count(tokens, limit)
    assert 0 <= drop < len(tokens)  # the newest always stays
    kept = tokens[drop:]
    assert sum(kept) <= limit or drop == len(tokens) - 1  # it fits, unless the newest alone does not
    if drop:
        assert sum(tokens[drop - 1 :]) > limit  # one fewer dropped would not have fitted


def test_system2_recency_halves_each_cycle_and_is_zero_without_escalation() -> None:
    assert system2_recency(None) == 0.0
    assert [system2_recency(n) for n in range(3)] == [1.0, 0.5, 0.25]


def test_the_rate_limit_allows_one_event_per_interval() -> None:
    limit = RateLimit(5.0)
    assert limit.take(10.0) and not limit.take(12.0) and not limit.take(14.9)
    assert limit.take(15.0) and not limit.ready(19.0)


def test_replies_to_the_user_are_delivered_when_the_source_is_trusted() -> None:
    user = SourceTag.of("external_user")
    assert check_action("communication", "hi", user, 0.1).allowed  # escalation handled the doubt
    doubtful = SourceTag.of("external_user", 0.4)
    assert not check_action("communication", "hi", doubtful, 1.0).allowed
    assert check_action("internal", "note", doubtful, None).allowed  # nothing leaves the agent


@given(unit, unit)
def test_self_generated_messages_need_more_confidence_than_answers_to_the_user(trust: float, sure: float) -> None:
    impulse = check_action("communication", "x", SourceTag.of("internal_dmn", trust), sure)
    answer = check_action("communication", "x", SourceTag.of("external_user", trust), sure)
    assert impulse.allowed == (trust >= SOURCE_FLOOR and sure >= SELF_GENERATED)
    assert answer.allowed == (trust >= SOURCE_FLOOR)
    assert not impulse.allowed or answer.allowed  # whatever an impulse may send, an answer may


def test_source_tags_are_checked() -> None:
    assert SourceTag.of("internal_gut").confidence == 0.6
    with pytest.raises(ValueError, match="source must be"):
        SourceTag.of("rumour")
    with pytest.raises(ValueError, match="within"):
        SourceTag.of("external_user", 1.2)


@pytest.mark.parametrize(
    ("text", "value"),
    [("0.85", 0.85), ("Confidence: 0.3.", 0.3), ("about 70%", 0.7), ("1", 1.0), (".5", 0.5), ("no idea", None),
     ("7 out of 10", None), ("250%", None)],
)  # fmt: skip
def test_verbalised_confidence_is_read_or_left_out(text: str, value: float | None) -> None:
    assert parse_verbalised(text) == value


def test_logprobs_are_read_from_openai_and_gemini_details() -> None:
    tokens = [{"logprob": -0.1}, {"logprob": -0.3}]
    openai = ModelResponse(parts=[TextPart("ok")], provider_details={"logprobs": tokens})
    assert logprobs_of([openai]) == [-0.1, -0.3]
    part = TextPart("ok", provider_details={"logprobs": [{"logprob": -2.0}]})
    assert logprobs_of([ModelResponse(parts=[part])]) == [-2.0]
    gemini = ModelResponse(
        parts=[TextPart("ok")],
        provider_details={"logprobs": {"chosen_candidates": [{"log_probability": -0.5}]}, "avg_logprobs": -0.5},
    )
    assert logprobs_of([gemini]) == [-0.5]
    assert logprobs_of([ModelResponse(parts=[TextPart("ok")], provider_details={"avg_logprobs": -0.2})]) == [-0.2]
    plain = [ModelRequest(parts=[UserPromptPart("q")]), ModelResponse(parts=[TextPart("ok")])]
    assert logprobs_of(plain) is None and math.isclose(math.exp(-0.5), 0.6065, rel_tol=1e-3)


def test_the_triggers_read_off_an_exchange() -> None:
    assert signals("When?", unsure=True, unknown=True, contradiction=False, flags=[]) == ["low_confidence", "novelty"]
    steps = "First book the flight, then the hotel, finally the car."
    assert signals(steps, unsure=False, unknown=False, contradiction=True, flags=["goals"]) == [
        "goals",
        "contradiction",
        "complexity",
    ]
    assert contradicts(["Maya is not allergic to peanuts."], ["Maya is allergic to peanuts."])
    assert not contradicts(["Maya likes the sea."], ["Maya is allergic to peanuts."])
