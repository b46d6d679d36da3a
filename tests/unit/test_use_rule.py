"""Use strengthens, being returned does not (issue 28 item 4): which candidates recall may reinforce
and which near misses it may suppress (mnemo.cognition.relevance)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mnemo.cognition.relevance import most_relevant, suppressible

scores = st.dictionaries(st.integers(0, 60), st.floats(0, 1, allow_nan=False), max_size=40)


@given(scores, st.integers(0, 50))
def test_the_most_relevant_are_the_k_best_by_search_alone(search: dict[int, float], k: int) -> None:
    chosen = most_relevant(search, k)
    assert len(chosen) == min(k, len(search))
    left = set(search) - chosen
    assert all(search[a] >= search[b] for a in chosen for b in left)


@given(scores, st.integers(0, 50), st.dictionaries(st.integers(0, 60), st.floats(-1, 1)), st.floats(-1, 1))
def test_a_relevant_candidate_is_never_suppressed(
    search: dict[int, float], k: int, similarity: dict[int, float], threshold: float
) -> None:
    relevant = most_relevant(search, k)
    for item in set(search) | set(similarity):
        if suppressible(item, relevant, similarity, threshold):
            assert item not in relevant and similarity.get(item, 0.0) < threshold
        elif item not in relevant:
            assert similarity.get(item, 0.0) >= threshold


def test_the_search_order_not_the_blend_decides() -> None:
    # "b" is a little less relevant; the blend may lift it to first place, but only "a" is reinforceable
    assert most_relevant({"a": 1.0, "b": 0.9, "c": 0.1}, 1) == frozenset({"a"})
    assert most_relevant({"a": 0.5, "b": 0.5}, 1) == frozenset({"a"})  # ties: by key, as the blend sorts
