"""z-score fusion and neighbour smoothing (pure functions)."""

from __future__ import annotations

import math

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from mnemo.cognition.scoring.fusion import zscore_fuse
from mnemo.cognition.scoring.neighbours import smooth


def test_zscore_fuse_known_values() -> None:
    fused = zscore_fuse({"v": {"a": 0.9, "b": 0.5, "c": 0.1}, "l": {"a": 0.0, "c": 10.0}}, weights={"l": 0.5})
    # v: mean 0.5, sd sqrt(0.32/3); l: mean 5, sd 5; b has no lexical score -> the minimum (0.0)
    sd_v = math.sqrt(0.32 / 3)
    assert fused["a"] == pytest.approx(0.4 / sd_v + 0.5 * (-1.0))
    assert fused["b"] == pytest.approx(0.0 + 0.5 * (-1.0))
    assert fused["c"] == pytest.approx(-0.4 / sd_v + 0.5 * 1.0)


def test_zscore_reference_fixes_the_scale() -> None:
    scores = {"v": {"a": 1.0, "b": 0.0, "late": 0.5}}
    fused = zscore_fuse(scores, reference={"a", "b"})
    assert fused["late"] == pytest.approx(0.0) and fused["a"] == pytest.approx(1.0)


@given(
    st.dictionaries(st.integers(0, 20), st.floats(-5, 5), min_size=2, max_size=20), st.floats(0.1, 5), st.floats(-3, 3)
)
def test_zscore_is_invariant_to_affine_rescaling(values: dict[int, float], scale: float, shift: float) -> None:
    assume(max(values.values()) - min(values.values()) > 1e-3)  # a spread well above float rounding
    a = zscore_fuse({"x": values})
    b = zscore_fuse({"x": {k: v * scale + shift for k, v in values.items()}})
    for key in values:
        assert a[key] == pytest.approx(b[key], abs=1e-6)


def test_smooth_known_values() -> None:
    base = {"q": 3.0, "a": 1.0, "far": -1.0, "m": 2.0}
    where = {"q": ("s1", 4), "a": ("s1", 5), "far": ("s1", 9)}
    bounds = {"s1": (0, 9)}
    out = smooth(base, where, [0.5, 0.25], floor=-1.0, bounds=bounds)
    # a: its question one turn before (3.0); turn 6 exists but was not retrieved (floor); turns 3 and 7 too
    assert out["a"] == pytest.approx(1.0 + 0.5 * (3.0 - 1.0) + 0.25 * (-1.0 - 1.0))
    assert out["q"] == pytest.approx(3.0 + 0.5 * (-1.0 + 1.0) + 0.25 * (-1.0 - 1.0))
    # far is the last turn: turns 10 and 11 do not exist and count as no evidence
    assert out["far"] == pytest.approx(-1.0 + 0.5 * -1.0 + 0.25 * -1.0)
    assert out["m"] == 2.0  # a memory has no conversation position


def test_smooth_respects_sessions_and_can_be_off() -> None:
    base = {"x": 1.0, "y": 5.0}
    where = {"x": ("s1", 0), "y": ("s2", 1)}
    assert smooth(base, where, [1.0], floor=0.0) == base
    assert smooth(base, {"x": ("s", 0), "y": ("s", 1)}, [], floor=0.0) == base


@given(
    st.dictionaries(st.integers(0, 30), st.floats(-3, 3), min_size=2, max_size=30),
    st.lists(st.floats(0, 1), min_size=1, max_size=3),
    st.data(),
)
def test_a_better_neighbour_never_lowers_a_score(base: dict[int, float], weights: list[float], data) -> None:
    where = {k: ("s", k) for k in base}
    bounds = {"s": (0, 30)}
    floor = min(base.values()) - 1
    before = smooth(base, where, weights, floor=floor, bounds=bounds)
    key = data.draw(st.sampled_from(sorted(base)))
    raised = {**base, key: base[key] + 1.0}
    after = smooth(raised, where, weights, floor=floor, bounds=bounds)
    assert all(after[k] >= before[k] - 1e-9 for k in base)
    assert after[key] > before[key]
