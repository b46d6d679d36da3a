"""Composite confidence (issue 18 item 5, cognitive-plan §2.11): hedged, self-correcting, questioning
or oddly long answers score lower; log-probabilities give the objective signal; the seed's weights
combine what is present."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemo.cognition.mind.confidence import SEED_WEIGHTS, composite, from_logprobs, structural

PLAIN = "Maya is allergic to peanuts. She carries an epipen."


def test_each_structural_sign_lowers_confidence() -> None:
    plain = structural(PLAIN, typical_words=9).score
    assert plain == pytest.approx(1.0)
    assert structural("I think Maya might be allergic to peanuts, maybe.", 9).score < plain
    assert structural("Maya is allergic to peanuts. Actually, wait, I mean shellfish.", 9).score < plain
    assert structural("Is Maya allergic to peanuts? Or to shellfish?", 9).score < plain
    assert structural(" ".join(["word"] * 200) + ".", 9).score < plain


@given(st.text(max_size=400), st.one_of(st.none(), st.floats(1, 500)))
def test_structural_confidence_stays_in_range(text: str, typical: float | None) -> None:
    s = structural(text, typical)
    assert 0.0 <= s.score <= 1.0 and all(0.0 <= v <= 1.0 for v in (s.hedging, s.self_correction, s.questions, s.length))


def test_logprobs_and_the_seed_weights() -> None:
    assert from_logprobs([math.log(0.9)] * 5) == pytest.approx(0.9)
    assert composite(1.0, 0.0, 0.0) == pytest.approx(SEED_WEIGHTS[0])
    assert composite(0.8, None, None) == pytest.approx(0.8)  # one signal: itself
    assert composite(None, 0.5, 1.0) == pytest.approx((0.35 * 0.5 + 0.15) / 0.5)
    assert composite(None, None, None) is None
    with pytest.raises(ValueError):
        from_logprobs([])
