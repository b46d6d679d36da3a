"""Reciprocal-rank fusion: exact values on a hand-made case and properties."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemo.cognition.scoring.fusion import rrf


def test_rrf_known_values() -> None:
    fused = rrf({"vector": ["a", "b", "c"], "lexical": ["c", "a"]}, k=60)
    scores = {item.key: item.score for item in fused}
    assert scores["a"] == pytest.approx(1 / 61 + 1 / 62)
    assert scores["c"] == pytest.approx(1 / 63 + 1 / 61)
    assert scores["b"] == pytest.approx(1 / 62)
    assert [item.key for item in fused] == ["a", "c", "b"]
    assert fused[0].ranks == {"vector": 1, "lexical": 2}


def test_rrf_weights_shift_the_order() -> None:
    plain = rrf({"v": ["x", "y"], "l": ["y", "x"]})
    assert [i.key for i in plain] == ["x", "y"]  # tie broken by first appearance
    weighted = rrf({"v": ["x", "y"], "l": ["y", "x"]}, weights={"l": 2.0})
    assert [i.key for i in weighted] == ["y", "x"]


def test_rrf_rejects_bad_k() -> None:
    with pytest.raises(ValueError):
        rrf({"v": ["a"]}, k=0)


rankings = st.dictionaries(
    st.sampled_from(["vector", "lexical", "other"]),
    st.lists(st.integers(min_value=0, max_value=30), max_size=25),
    max_size=3,
)


@given(rankings)
def test_rrf_properties(r: dict[str, list[int]]) -> None:
    fused = rrf(r)
    keys = [item.key for item in fused]
    assert len(keys) == len(set(keys))
    assert set(keys) == {x for ranking in r.values() for x in ranking}
    scores = [item.score for item in fused]
    assert scores == sorted(scores, reverse=True)
    for item in fused:
        # each list contributes at most 1/(k+1)
        assert 0 < item.score <= len(item.ranks) / 61 + 1e-12
        for name, rank in item.ranks.items():
            assert r[name].index(item.key) + 1 == rank


@given(st.lists(st.integers(0, 50), min_size=1, max_size=30, unique=True))
def test_rrf_single_list_preserves_order(ranking: list[int]) -> None:
    assert [i.key for i in rrf({"only": ranking})] == ranking


@given(st.lists(st.integers(0, 50), min_size=2, max_size=30, unique=True))
def test_agreement_beats_a_single_vote(ranking: list[int]) -> None:
    # an item ranked first by two lists beats an item ranked first by one
    fused = rrf({"a": ranking, "b": [ranking[0]], "c": [ranking[1]]})
    assert fused[0].key == ranking[0]
