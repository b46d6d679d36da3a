"""Attention allocation (issue 18 item 2, cognitive-plan §3.10) with the seed's test: the user's
message beats a weak internal thought on urgency, an inflated internal charge beats a weak user
message, and the state report reflects every candidate and score."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemo.cognition.mind.attention import URGENCY, Candidate, allocate, salience, state_report


def unit(*values: float) -> np.ndarray:
    v = np.asarray(values, dtype=np.float32)
    return v / np.linalg.norm(v)


USER = Candidate("u1", "external_user", "Can you book the table for Friday?", unit(1, 0, 0), URGENCY["external_user"])
THOUGHT = Candidate(
    "d1", "internal_dmn", "I wonder whether the garden needs water.", unit(0, 1, 0), URGENCY["internal_dmn"]
)
RECENT = [unit(0.2, 0.9, 0.1)]
GOALS = [(1.0, unit(0.5, 0.5, 0))]


def test_the_user_wins_over_a_weak_internal_thought() -> None:
    allocation = allocate([THOUGHT, USER], RECENT, GOALS)
    assert allocation.winner.candidate is USER
    assert [c.id for c in allocation.waiting] == ["d1"] and allocation.waiting[0].urgency == pytest.approx(0.16)


def test_an_inflated_internal_charge_beats_a_weak_user_message() -> None:
    weak_user = Candidate("u2", "external_user", "ok", unit(0.2, 0.9, 0.1), 0.8)  # nothing new, off-goal
    alarm = Candidate("g1", "internal_gut", "This contradicts what I told her yesterday!", unit(0.6, 0.6, 0.5),
                      URGENCY["internal_gut"], charge=1.0)  # fmt: skip
    allocation = allocate([weak_user, alarm], RECENT, GOALS)
    assert allocation.winner.candidate is alarm


def test_the_state_report_names_every_candidate_with_its_scores() -> None:
    allocation = allocate([THOUGHT, USER], RECENT, GOALS)
    report = state_report(allocation)
    for s in allocation.scored:
        assert f"{s.candidate.source} salience {s.salience:.2f}" in report
    assert report.splitlines()[1].startswith("-> external_user") and "1 waiting" in report


vectors = st.lists(st.floats(-1, 1, allow_nan=False), min_size=3, max_size=3).filter(
    lambda v: sum(x * x for x in v) > 1e-3
)


@given(vectors, st.floats(0, 1), st.floats(0, 1), st.lists(vectors, max_size=3))
def test_salience_stays_in_range_and_grows_with_urgency(
    v: list[float], urgency: float, charge: float, recent: list[list[float]]
) -> None:
    c = Candidate("x", "internal_dmn", "t", unit(*v), urgency, charge)
    past = [unit(*r) for r in recent]
    low = salience(c, past, GOALS)
    assert 0 <= low.salience <= 1
    higher = salience(Candidate("x", "internal_dmn", "t", unit(*v), min(1.0, urgency + 0.1), charge), past, GOALS)
    assert higher.salience >= low.salience


def test_no_candidate_is_an_error() -> None:
    with pytest.raises(ValueError):
        allocate([], RECENT, GOALS)
