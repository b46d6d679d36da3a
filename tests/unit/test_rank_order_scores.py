"""The score shown in rank order (issue 40 item 7): :func:`rank_scores` over any order recall makes."""

from __future__ import annotations

from itertools import pairwise

from hypothesis import given
from hypothesis import strategies as st

from mnemo.cognition.scoring.rank_order import rank_scores, rank_tiers

SCORES = st.lists(st.floats(min_value=-1.0, max_value=2.0, allow_nan=False), max_size=40)


@given(SCORES)
def test_the_shown_scores_never_rise_and_never_exceed_the_blend(scores: list[float]) -> None:
    shown = rank_scores(scores)
    assert len(shown) == len(scores)
    assert all(b <= a for a, b in pairwise(shown))
    assert all(s <= b for s, b in zip(shown, scores, strict=True))
    assert shown[:1] == scores[:1]  # the first hit shows its own blend
    assert rank_scores(shown) == shown


@given(SCORES)
def test_scores_already_in_order_are_shown_as_they_are(scores: list[float]) -> None:
    ordered = sorted(scores, reverse=True)
    assert rank_scores(ordered) == ordered


@given(SCORES)
def test_each_shown_score_is_the_lowest_blend_at_or_above_its_place(scores: list[float]) -> None:
    assert rank_scores(scores) == [min(scores[: n + 1]) for n in range(len(scores))]


def test_a_hit_the_order_put_below_a_lower_blend_shows_that_score() -> None:
    assert rank_scores([0.73, 0.76, 0.68, 0.48, 0.35, 0.33]) == [0.73, 0.73, 0.68, 0.48, 0.35, 0.33]


@given(st.lists(st.one_of(st.none(), st.integers(min_value=0, max_value=6)), max_size=30))
def test_the_tiers_shown_never_fall_and_never_exceed_the_own(tiers: list[int | None]) -> None:
    shown = rank_tiers(tiers)
    assert [t is None for t in shown] == [t is None for t in tiers]
    known = [t for t in shown if t is not None]
    assert known == sorted(known)
    assert all(s <= t for s, t in zip(shown, tiers, strict=True) if s is not None and t is not None)
    ordered = sorted(t for t in tiers if t is not None)
    assert rank_tiers(ordered) == ordered  # an order that respects the tiers shows them as they are


def test_a_successor_moved_above_its_stale_statement_ranks_in_its_tier() -> None:
    assert rank_tiers([0, 2, 0, 1, None, 3]) == [0, 0, 0, 1, None, 3]
