"""Use strengthens, being returned does not (issue 28 item 4): which candidates recall may reinforce
and which near misses it may suppress (mnemo.cognition.scoring.relevance)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mnemo.cognition.scoring.relevance import most_relevant, relevance_tiers, suppressible

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


@given(scores, st.dictionaries(st.integers(0, 60), st.floats(0, 1, allow_nan=False)))
def test_the_blend_never_lifts_an_item_over_a_better_tier(search: dict[int, float], blend: dict[int, float]) -> None:
    """Relevance first (issue 28 item 3): whatever the cognitive scores, ordering by (tier, blend)
    puts every item of a better tier first, and a better tier is always more relevant by search."""
    tiers = relevance_tiers(search)
    order = sorted(search, key=lambda i: (tiers[i], -blend.get(i, 0.0)))
    for n, a in enumerate(order):
        for b in order[n + 1 :]:
            assert tiers[a] <= tiers[b]
            if tiers[a] < tiers[b]:
                assert search[a] > search[b]
    same = [(a, b) for a in search for b in search if search[a] == search[b]]
    assert all(tiers[a] == tiers[b] for a, b in same)


def test_a_clear_gap_starts_a_tier_and_near_equals_share_one() -> None:
    fillers = {f"f{i}": 0.3 - 0.02 * i for i in range(12)}
    # a wide gap with a dense run below it is clear: "red" alone above the "blue" group
    head = {"red": 1.0, "blue": 0.854, "blue2": 0.84, "blue3": 0.83, **fillers}
    tiers = relevance_tiers(head)
    assert tiers["red"] < tiers["blue"] == tiers["blue2"] == tiers["blue3"] < tiers["f0"]
    # twins that differ in one detail (a gap before a wider one) share a tier: use may decide
    twins = relevance_tiers({"mint": 1.0, "earl grey": 0.953, "sencha": 0.737, "oolong": 0.659, **fillers})
    assert twins["mint"] == twins["earl grey"] < twins["sencha"]
    # ... and a hair's difference always does
    assert relevance_tiers(head | {"blue": 0.995})["red"] == relevance_tiers(head | {"blue": 0.995})["blue"]
