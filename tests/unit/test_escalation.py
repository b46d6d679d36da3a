"""System 2 escalation rules (issue 18 item 6, cognitive-plan §3.5-3.6): two ordinary triggers or
any always-escalate one; a threshold that falls as the agent matures."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemo.cognition.mind.escalation import ALWAYS, TRIGGERS, decide, escalation_threshold, maturity


def test_two_triggers_escalate_one_does_not() -> None:
    assert not decide(["low_confidence"]).escalate
    assert not decide([]).escalate
    both = decide(["novelty", "low_confidence"])
    assert both.escalate and both.reasons == ("low_confidence", "novelty")


@pytest.mark.parametrize("always", ALWAYS)
def test_irreversible_actions_and_identity_changes_always_escalate(always: str) -> None:
    decision = decide([always])
    assert decision.escalate and decision.reasons == (always,)


def test_unknown_signals_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown"):
        decide(["hunch"])


@given(st.integers(0, 5000), st.floats(0, 1), st.integers(0, 5000), st.floats(0, 1))
def test_the_threshold_falls_as_the_agent_matures(m1: int, d1: float, m2: int, d2: float) -> None:
    t1, t2 = escalation_threshold(m1, d1), escalation_threshold(m2, d2)
    assert 0.3 - 1e-9 <= t1 <= 0.8 + 1e-9
    if maturity(m1, d1) <= maturity(m2, d2):
        assert t1 >= t2 - 1e-12
    assert escalation_threshold(0, 0.0) == pytest.approx(0.8) and escalation_threshold(1000, 1.0) == pytest.approx(0.3)


def test_every_trigger_is_named() -> None:
    assert set(TRIGGERS) == {"low_confidence", "contradiction", "complexity", "novelty"}
    with pytest.raises(ValueError):
        maturity(-1, 0.5)
