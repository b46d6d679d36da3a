"""The inner cognition's pure parts (issue 31): the two-centroid gut and its axes, the idle loop's
sampling and entropy guard, self-tuning of the blend and the gate, the phase B/C safety checks,
promotion, tensions and the frustration ledger."""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Hashable
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemo.cognition.consolidation.tuning import (
    GateParams,
    Sample,
    capped,
    contributor,
    evolve,
    gate_step,
    pathological,
    quality,
)
from mnemo.cognition.mind.gut import (
    LAYER_SHARES,
    Feeling,
    attention_centroid,
    axes,
    charge,
    feel,
    mood_alignment,
    subconscious_centroid,
    weighted_centroid,
)
from mnemo.cognition.mind.idle_sampling import (
    BIASES,
    Pooled,
    bias,
    channel,
    needs_broadening,
    sample,
    topic_entropy,
)
from mnemo.cognition.mind.ledger import Attempt, failure_patterns, reflection, task_key
from mnemo.cognition.mind.promotion import LEVELS, demoted, needs_approval, next_step, utility
from mnemo.cognition.mind.tensions import aligned, next_status, opposes, statement
from mnemo.cognition.scoring.blend_components import TUNED
from mnemo.cognition.scoring.safety import (
    breaker,
    coherence,
    coherence_drop,
    cycle_rate,
    entropy_drop,
    goal_budget,
    two_gate,
    weight_entropy,
)

FEW = settings(max_examples=50, deadline=None)


def _e(i: int, d: int = 4) -> np.ndarray:
    v = np.zeros(d)
    v[i] = 1.0
    return v


def _unit_vectors(d: int = 5) -> st.SearchStrategy[np.ndarray]:
    return (
        st.lists(st.floats(-1.0, 1.0, allow_nan=False), min_size=d, max_size=d)
        .map(lambda xs: np.asarray(xs, dtype=float))
        .filter(lambda v: float(np.linalg.norm(v)) > 1e-3)
        .map(lambda v: v / np.linalg.norm(v))
    )


# --- gut -------------------------------------------------------------------------------------------


def test_weighted_centroid_is_the_unit_weighted_mean_and_none_without_weight() -> None:
    c = weighted_centroid([_e(0), _e(1)], [3.0, 1.0])
    assert c is not None
    assert np.allclose(c, np.array([3.0, 1.0, 0.0, 0.0]) / math.sqrt(10))
    assert weighted_centroid([], []) is None
    assert weighted_centroid([_e(0), _e(1)], [0.0, 0.0]) is None
    # negative weights count as zero
    neg = weighted_centroid([_e(0), _e(1)], [-5.0, 1.0])
    assert neg is not None and np.allclose(neg, _e(1))
    # vectors that cancel out have no direction
    assert weighted_centroid([_e(0), -_e(0)], [1.0, 1.0]) is None
    with pytest.raises(ValueError, match="one weight per vector"):
        weighted_centroid([_e(0), _e(1)], [1.0])


@FEW
@given(st.lists(_unit_vectors(), min_size=1, max_size=6), st.data())
def test_weighted_centroid_is_a_unit_vector_along_the_weighted_sum(
    vectors: list[np.ndarray], data: st.DataObject
) -> None:
    weights = data.draw(st.lists(st.floats(0.1, 10.0), min_size=len(vectors), max_size=len(vectors)))
    total = sum(w * v for w, v in zip(weights, vectors, strict=True))
    c = weighted_centroid(vectors, weights)
    if np.linalg.norm(total) < 1e-9:
        return
    assert c is not None
    assert math.isclose(float(np.linalg.norm(c)), 1.0, abs_tol=1e-9)
    assert np.allclose(c, total / np.linalg.norm(total), atol=1e-9)


def test_subconscious_centroid_uses_the_seed_layer_shares() -> None:
    assert LAYER_SHARES == (0.5, 0.25, 0.25)
    full = subconscious_centroid(_e(0), _e(1), _e(2))
    assert full is not None
    assert np.allclose(full, np.array([0.5, 0.25, 0.25, 0.0]) / np.linalg.norm([0.5, 0.25, 0.25]))
    assert full[0] == pytest.approx(2 * full[1]) and full[1] == pytest.approx(full[2])


def test_a_missing_layer_share_goes_to_the_others() -> None:
    no_goals = subconscious_centroid(_e(0), None, _e(2))
    assert no_goals is not None
    # values keep twice the memories' share; together they hold all of it (a unit vector)
    assert no_goals[1] == 0.0 and no_goals[0] == pytest.approx(2 * no_goals[2])
    assert np.allclose(no_goals, np.array([2.0, 0.0, 1.0, 0.0]) / math.sqrt(5))
    no_values = subconscious_centroid(None, _e(1), _e(2))
    assert no_values is not None and np.allclose(no_values, np.array([0.0, 1.0, 1.0, 0.0]) / math.sqrt(2))
    only = subconscious_centroid(None, None, _e(3))
    assert only is not None and np.allclose(only, _e(3))
    assert subconscious_centroid(None, None, None) is None


def test_attention_centroid_weighs_recent_context_more() -> None:
    # oldest first: the newest weighs 1, one half-life older 0.5
    c = attention_centroid([_e(0), _e(1)], half_life=1.0)
    assert c is not None and np.allclose(c, np.array([0.5, 1.0, 0.0, 0.0]) / math.sqrt(1.25))
    four = attention_centroid([_e(0), _e(1), _e(2), _e(3)], half_life=3.0)
    assert four is not None
    assert four[3] > four[2] > four[1] > four[0]
    assert four[0] == pytest.approx(0.5 * four[3])
    assert attention_centroid([]) is None
    for bad in (0.0, -1.0):
        with pytest.raises(ValueError, match="half_life"):
            attention_centroid([_e(0)], half_life=bad)


@FEW
@given(_unit_vectors(), _unit_vectors())
def test_feel_magnitude_is_half_the_delta_and_within_unit(attention: np.ndarray, subconscious: np.ndarray) -> None:
    f = feel(attention, subconscious)
    delta = attention - subconscious
    assert np.allclose(f.delta, delta)
    assert 0.0 <= f.magnitude <= 1.0
    assert f.magnitude == pytest.approx(float(np.linalg.norm(delta)) / 2.0)
    assert f.valence == 0.0  # no hope direction: no valence


@FEW
@given(_unit_vectors(), _unit_vectors(), _unit_vectors())
def test_feel_valence_signs_with_the_hope_direction(
    attention: np.ndarray, subconscious: np.ndarray, hope: np.ndarray
) -> None:
    delta = attention - subconscious
    if np.linalg.norm(delta) < 1e-3:
        return
    toward = feel(attention, subconscious, hope=delta)
    away = feel(attention, subconscious, hope=-delta)
    assert toward.valence == pytest.approx(1.0)
    assert away.valence == pytest.approx(-1.0)
    f = feel(attention, subconscious, hope=hope)
    assert -1.0 <= f.valence <= 1.0
    cos = float(delta @ hope / np.linalg.norm(delta))
    assert f.valence == pytest.approx(cos, abs=1e-9)
    if abs(cos) > 1e-6:
        assert math.copysign(1.0, f.valence) == math.copysign(1.0, cos)


def test_no_delta_no_feeling() -> None:
    f = feel(_e(0), _e(0), hope=_e(1))
    assert f.magnitude == 0.0 and f.valence == 0.0
    assert charge(_e(0), f) == 0.0
    assert feel(_e(0), -_e(0)).magnitude == pytest.approx(1.0)


def test_charge_is_the_alignment_with_the_gut_scaled_by_its_intensity() -> None:
    f = feel(_e(0), _e(1))  # delta (1, -1, 0, 0), magnitude sqrt(2)/2
    assert charge(_e(0), None) == 0.0
    assert charge(_e(2), f) == pytest.approx(0.0)  # orthogonal to the delta
    expected = (1 / math.sqrt(2)) * (0.5 + f.magnitude)
    assert charge(_e(0), f) == pytest.approx(min(1.0, expected))
    assert charge(-_e(0), f) == pytest.approx(charge(_e(0), f))  # charge has no sign
    weak = Feeling(np.array([0.1, 0.0, 0.0, 0.0]), 0.05, 0.0)
    assert charge(_e(0), weak) == pytest.approx(0.55)
    assert charge(_e(0), weak) < charge(_e(0), Feeling(weak.delta, 0.4, 0.0))


@FEW
@given(_unit_vectors(), _unit_vectors(), _unit_vectors())
def test_charge_is_within_unit(v: np.ndarray, a: np.ndarray, s: np.ndarray) -> None:
    assert 0.0 <= charge(v, feel(a, s)) <= 1.0


def test_mood_alignment_is_neutral_at_zero_and_monotone() -> None:
    assert mood_alignment(0.0) == 0.5
    assert mood_alignment(1.0) == 1.0
    assert mood_alignment(-1.0) == 0.0
    assert mood_alignment(0.4) == pytest.approx(0.7)
    assert mood_alignment(5.0) == 1.0 and mood_alignment(-5.0) == 0.0
    xs = np.linspace(-1, 1, 21)
    ys = [mood_alignment(float(x)) for x in xs]
    assert ys == sorted(ys) and len(set(ys)) == len(ys)


def _planted(seed: int, n: int = 200, d: int = 6) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[float]]:
    """Deltas with a high-variance direction unrelated to outcomes (w) and a lower-variance one
    that drives them (u)."""
    rng = np.random.default_rng(seed)
    basis = np.linalg.qr(rng.normal(size=(d, d)))[0]
    u, w = basis[:, 0], basis[:, 1]
    a, b = rng.normal(size=n), 3.0 * rng.normal(size=n)
    deltas = np.outer(a, u) + np.outer(b, w) + 0.05 * rng.normal(size=(n, d))
    outcomes = list(a + 0.1 * rng.normal(size=n))
    return deltas, u, w, outcomes


@pytest.mark.parametrize("seed", range(6))
def test_axes_recover_the_planted_directions_and_name_the_outcome_one(seed: int) -> None:
    deltas, u, w, outcomes = _planted(seed)
    found = axes(deltas, outcomes, k=3)
    assert [a.rank for a in found] == [0, 1]  # the two planted directions; the third is noise, not an axis
    assert [a.variance for a in found] == sorted((a.variance for a in found), reverse=True)
    top, second = found[0], found[1]
    # PCA: the largest variance lies along w, the next along u
    assert abs(float(top.axis @ w)) > 0.99 and top.variance > 0.8
    assert abs(float(second.axis @ u)) > 0.99
    # the unrelated direction is not named; the outcome one is, and its name matches its
    # orientation: "hope" points toward good outcomes, "fear" toward bad ones
    assert top.name == "axis 1"
    assert top.correlation is not None and abs(top.correlation) < 0.3
    assert second.name in {"hope", "fear"}
    assert second.correlation is not None and abs(second.correlation) > 0.95
    if second.name == "hope":
        assert second.correlation > 0 and float(second.axis @ u) > 0.99
    else:
        assert second.correlation < 0 and float(second.axis @ u) < -0.99
    assert sum(a.name in {"hope", "fear"} for a in found) == 1


def test_axes_name_both_hope_and_fear_when_outcomes_pull_two_ways() -> None:
    rng = np.random.default_rng(7)
    n, d = 300, 5
    basis = np.linalg.qr(rng.normal(size=(d, d)))[0]
    u, v = basis[:, 0], basis[:, 1]
    a, b = 2.0 * rng.normal(size=n), rng.normal(size=n)
    deltas = np.outer(a, u) + np.outer(b, v) + 0.01 * rng.normal(size=(n, d))
    outcomes = a / 2.0 - b + 0.05 * rng.normal(size=n)
    found = axes(deltas, list(outcomes), k=2)
    names = sorted(x.name for x in found)
    # both lines carry outcome; whatever their labels, each label matches its correlation's sign
    for x in found:
        assert x.correlation is not None and abs(x.correlation) > 0.3
        if x.name == "hope":
            assert x.correlation > 0
        elif x.name == "fear":
            assert x.correlation < 0
    assert names.count("hope") <= 1 and names.count("fear") <= 1
    assert "hope" in names or "fear" in names


def test_the_direction_toward_good_outcomes_is_always_named_hope() -> None:
    for seed in range(10):
        deltas, u, _, outcomes = _planted(seed)
        names = {a.name: a for a in axes(deltas, outcomes, k=3)}
        assert "hope" in names and float(names["hope"].axis @ u) > 0.99


def test_noise_directions_are_not_axes() -> None:
    """Issue 39 item 13: nine axes at 0% of variance were listed. Past the planted structure, the
    components are noise spread evenly: none carries more than an average direction's share of the
    variance, none correlates with outcomes, and none is an axis."""
    rng = np.random.default_rng(3)
    n, d = 120, 40
    hope = np.linalg.qr(rng.normal(size=(d, d)))[0][:, 0]
    a = rng.normal(size=n)
    deltas = np.outer(a, hope) + 0.3 * rng.normal(size=(n, d)) / np.sqrt(d)
    found = axes(deltas, list(np.tanh(a)), k=10)
    assert [x.name for x in found] == ["hope"] and found[0].variance > 0.5
    assert all(x.variance > 1 / d or abs(x.correlation or 0.0) >= 0.3 for x in found)


def test_axes_without_enough_data_or_outcomes() -> None:
    assert axes(np.zeros((1, 3)), [1.0]) == []
    assert axes(np.zeros((4, 3)), [None] * 4) == []  # no variance
    with pytest.raises(ValueError, match="one outcome slot per delta"):
        axes(np.eye(3), [1.0, 0.0])
    deltas, _, _, outcomes = _planted(0, n=20)
    # fewer than 3 known outcomes: no correlation, nothing named
    sparse = [outcomes[0], outcomes[1]] + [None] * 18
    found = axes(deltas, sparse, k=3)
    assert found and all(a.correlation is None and a.name.startswith("axis ") for a in found)


# --- idle ------------------------------------------------------------------------------------------


def _plain(i: object, **kw: float | bool) -> Pooled:
    base: dict = {"center": 0.5, "idle_days": 0.0, "age_days": 0.0}
    base.update(kw)
    return Pooled(i, **base)


def test_a_plain_memory_weighs_one() -> None:
    w, parts = bias(_plain("x"))
    assert w == 1.0
    assert parts == dict.fromkeys(BIASES, 0.0)


@pytest.mark.parametrize(
    ("kw", "part"),
    [
        ({"idle_days": 30.0}, "neglected"),
        ({"in_tension": True}, "tension"),
        ({"age_days": 365.0}, "distant"),
        ({"about_self": True}, "self"),
    ],
)
def test_each_bias_raises_the_weight(kw: dict, part: str) -> None:
    w, parts = bias(_plain("x", **kw))
    assert w > 1.0
    assert parts[part] > 0.0
    assert all(v == 0.0 for k, v in parts.items() if k != part)
    assert w == pytest.approx(1.0 + sum(parts.values()))


def test_bias_sizes_follow_their_half_lives_and_the_centre() -> None:
    _, parts = bias(_plain("x", center=0.8, idle_days=7.0, age_days=30.0, in_tension=True, about_self=True))
    assert parts["neglected"] == pytest.approx(BIASES["neglected"] * 0.8 * 0.5)
    assert parts["distant"] == pytest.approx(BIASES["distant"] * 0.5)
    assert parts["tension"] == BIASES["tension"]
    assert parts["self"] == pytest.approx(BIASES["self"] * 0.8)
    # a weightier memory is more neglected for the same idle time
    assert bias(_plain("x", center=0.9, idle_days=10.0))[0] > bias(_plain("x", center=0.2, idle_days=10.0))[0]


@FEW
@given(st.floats(0, 1000), st.floats(0, 1000), st.floats(0, 1000), st.floats(0, 1))
def test_bias_grows_with_neglect_and_distance(idle: float, age: float, more: float, center: float) -> None:
    w, _ = bias(_plain("x", center=center, idle_days=idle, age_days=age))
    assert 1.0 <= w <= 1.0 + sum(BIASES.values())
    assert bias(_plain("x", center=center, idle_days=idle + more, age_days=age))[0] >= w
    assert bias(_plain("x", center=center, idle_days=idle, age_days=age + more))[0] >= w


def _pool(n: int = 10) -> list[Pooled]:
    return [_plain(i) for i in range(n)]


@FEW
@given(st.integers(1, 15), st.integers(0, 2**32 - 1))
def test_sample_draws_without_replacement_and_reproducibly(n: int, seed: int) -> None:
    pool = _pool()
    drawn = sample(pool, n, np.random.default_rng(seed))
    ids = [p.id for p, _ in drawn]
    assert len(ids) == min(n, len(pool))
    assert len(set(ids)) == len(ids)
    again = sample(pool, n, np.random.default_rng(seed))
    assert [p.id for p, _ in again] == ids
    for p, parts in drawn:
        assert parts == bias(p)[1]


def _favourite_share(temperature: float, draws: int = 3000) -> float:
    pool = [*_pool(9), _plain("fav", center=1.0, idle_days=60.0, in_tension=True, about_self=True)]
    rng = np.random.default_rng(31)
    hits = sum(sample(pool, 1, rng, temperature=temperature)[0][0].id == "fav" for _ in range(draws))
    return hits / draws


def test_biases_show_over_many_draws_and_temperature_flattens_them() -> None:
    share = _favourite_share(1.0)
    # weight about 7.9 against nine of 1: expected share about 0.47, far above the uniform 0.1
    assert share > 0.35
    hot = _favourite_share(4.0)
    assert 0.1 < hot < share - 0.1
    assert _favourite_share(100.0) < 0.15  # near uniform


def test_avoided_memories_are_drawn_only_when_nothing_else_is_left() -> None:
    pool = _pool(5)
    avoid = frozenset({0, 1})
    for seed in range(20):
        ids = [p.id for p, _ in sample(pool, 3, np.random.default_rng(seed), avoid=avoid)]
        assert set(ids) == {2, 3, 4}
        every = [p.id for p, _ in sample(pool, 5, np.random.default_rng(seed), avoid=avoid)]
        assert set(every[:3]) == {2, 3, 4} and set(every[3:]) == {0, 1}
        four = [p.id for p, _ in sample(pool, 4, np.random.default_rng(seed), avoid=avoid)]
        assert set(four[:3]) == {2, 3, 4} and four[3] in avoid


def test_sample_refuses_a_non_positive_temperature_and_draws_nothing_for_nothing() -> None:
    for t in (0.0, -1.0):
        with pytest.raises(ValueError, match="temperature"):
            sample(_pool(), 1, np.random.default_rng(0), temperature=t)
    assert sample(_pool(), 0, np.random.default_rng(0)) == []
    assert sample([], 3, np.random.default_rng(0)) == []


@FEW
@given(st.lists(st.sampled_from("abcdef"), max_size=30))
def test_topic_entropy_is_within_unit(topics: list[str]) -> None:
    h = topic_entropy(topics)
    assert 0.0 <= h <= 1.0 + 1e-12
    if len(topics) >= 2 and len(set(topics)) == 1:
        assert h == 0.0
    if len(set(topics)) == len(topics):
        assert h == pytest.approx(1.0)


def test_topic_entropy_examples() -> None:
    assert topic_entropy(["a", "b", "c", "d"]) == pytest.approx(1.0)
    assert topic_entropy(["a"] * 5) == 0.0
    assert topic_entropy([]) == 1.0 and topic_entropy(["a"]) == 1.0
    assert 0.0 < topic_entropy(["a", "a", "b", "c"]) < 1.0
    assert topic_entropy(["a", "a", "a", "b"]) < topic_entropy(["a", "a", "b", "c"])


def test_needs_broadening_returns_the_repeated_topics_of_a_full_narrow_window() -> None:
    assert needs_broadening(["a"] * 6 + ["b", "c"]) == frozenset({"a"})
    assert needs_broadening(["a"] * 5 + ["b", "b", "c"]) == frozenset({"a", "b"})
    assert needs_broadening(["a"] * 7) == frozenset()  # window not full yet
    assert needs_broadening(list("abcdefgh")) == frozenset()  # broad enough
    # only the last window counts
    assert needs_broadening(["a"] * 20 + list("bcdefghi")) == frozenset()
    assert needs_broadening(list("bcdefghi") + ["z"] * 8) == frozenset({"z"})
    # the floor decides: a window of entropy about 0.43 is narrow under 0.5, broad enough under 0.4
    narrow = ["a"] * 5 + ["b", "b", "c"]
    assert needs_broadening(narrow, floor=0.4) == frozenset()
    assert needs_broadening(["x", "x", "x", "y"], window=4) == frozenset({"x"})
    assert needs_broadening(["x", "x", "y"], window=3) == frozenset()  # entropy about 0.58


@FEW
@given(st.lists(st.sampled_from("abc"), max_size=20), st.integers(2, 10))
def test_broadening_only_avoids_topics_that_came_back(topics: list[str], window: int) -> None:
    avoid = needs_broadening(topics, window=window)
    recent: Counter[Hashable] = Counter(topics[-window:])
    assert all(recent[t] > 1 for t in avoid)
    if avoid:
        assert len(topics) >= window and topic_entropy(topics[-window:]) < 0.5


def test_channel_priority() -> None:
    assert channel(goal=0.9, identity=0.9, partner=0.0, floor=0.5) == "self_prompt"
    assert channel(goal=0.1, identity=0.9, partner=0.0, floor=0.5) == "evaluation"
    assert channel(goal=0.1, identity=0.1, partner=0.2, floor=0.5) == "insight"
    assert channel(goal=0.1, identity=0.1, partner=0.8, floor=0.5) is None
    assert channel(goal=0.1, identity=0.1, partner=None, floor=0.5) is None
    assert channel(goal=0.5, identity=0.1, partner=None, floor=0.5) == "self_prompt"  # the floor counts


# --- tuning ----------------------------------------------------------------------------------------


def _hits(**columns: list[float]) -> tuple[dict[str, float], ...]:
    n = len(next(iter(columns.values())))
    return tuple({c: vals[i] for c, vals in columns.items()} for i in range(n))


def test_contributor_is_the_component_that_sets_the_used_hits_apart() -> None:
    parts = _hits(search=[0.9, 0.8, 0.7], recency=[0.1, 0.1, 0.9])
    assert contributor(Sample(parts, frozenset({2}), 1.0)) == "recency"
    assert contributor(Sample(parts, frozenset({0}), 1.0)) == "search"
    assert contributor(Sample(parts, frozenset(), 1.0)) is None
    assert contributor(Sample((), frozenset({0}), 1.0)) is None
    flat = _hits(search=[0.5, 0.5], recency=[0.2, 0.2])
    assert contributor(Sample(flat, frozenset({1}), 1.0)) is None
    # a used index past the stored hits is ignored
    assert contributor(Sample(parts, frozenset({2, 9}), 1.0)) == "recency"
    # noise is not tuned, so it never contributes
    noisy = _hits(noise=[0.0, 1.0], search=[0.5, 0.5])
    assert contributor(Sample(noisy, frozenset({1}), 1.0)) is None


START = {
    "search": 4.0,
    "activation": 2.0,
    "weight": 2.0,
    "recency": 1.0,
    "coaccess": 1.0,
    "emotional": 1.0,
    "noise": 1.0,
}


def test_evolve_moves_the_contributor_with_the_outcome_and_keeps_the_total() -> None:
    parts = _hits(search=[0.5, 0.5, 0.5], recency=[0.1, 0.1, 0.9])
    good = evolve(START, [Sample(parts, frozenset({2}), 1.0)] * 10)
    bad = evolve(START, [Sample(parts, frozenset({2}), -1.0)] * 10)
    total = sum(START.values())
    assert sum(good.values()) == pytest.approx(total)
    assert sum(bad.values()) == pytest.approx(total)
    assert good["recency"] > START["recency"] > bad["recency"]
    # the others only rescale: a good outcome for recency takes share from them
    for c in START:
        if c != "recency":
            assert good[c] < START[c] < bad[c]
            assert good[c] / good["search"] == pytest.approx(START[c] / START["search"])
    # nothing used, nothing moved
    assert evolve(START, [Sample(parts, frozenset(), 1.0)]) == pytest.approx(START)


@FEW
@given(
    st.dictionaries(st.sampled_from(TUNED), st.floats(0.1, 10.0), min_size=2),
    st.data(),
    st.floats(-1.0, 1.0).filter(lambda v: abs(v) > 0.05),
    st.integers(1, 5),
)
def test_evolve_property(alphas: dict[str, float], data: st.DataObject, value: float, times: int) -> None:
    target = data.draw(st.sampled_from(sorted(alphas)))
    parts = ({c: 0.0 for c in alphas}, {c: float(c == target) for c in alphas})
    samples = [Sample(parts, frozenset({1}), value)] * times
    assert contributor(samples[0]) == target
    out = evolve(alphas, samples)
    assert sum(out.values()) == pytest.approx(sum(alphas.values()))
    assert all(a > 0 for a in out.values())
    share_before = alphas[target] / sum(alphas.values())
    share_after = out[target] / sum(out.values())
    if value > 0:
        assert share_after > share_before
    else:
        assert share_after < share_before
    # the other components keep their proportions among themselves
    others = [c for c in sorted(alphas) if c != target]
    for a, b in itertools.pairwise(others):
        assert out[a] / out[b] == pytest.approx(alphas[a] / alphas[b])


@FEW
@given(
    st.dictionaries(st.sampled_from(TUNED), st.tuples(st.floats(0.1, 10.0), st.floats(0.01, 100.0)), min_size=1),
    st.floats(1.5, 5.0),
)
def test_capped_keeps_every_alpha_within_its_band(pairs: dict[str, tuple[float, float]], factor: float) -> None:
    start = {c: s for c, (s, _) in pairs.items()}
    alphas = {c: a for c, (_, a) in pairs.items()}
    out, held = capped(alphas, start, factor)
    assert set(out) == set(alphas)
    for c, a in out.items():
        assert start[c] / factor - 1e-9 <= a <= start[c] * factor + 1e-9
        within = start[c] / factor <= alphas[c] <= start[c] * factor
        assert (c in held) == (not within and abs(a - alphas[c]) > 1e-9)
        if within:
            assert a == alphas[c]


def test_capped_examples() -> None:
    out, held = capped(
        {"search": 20.0, "recency": 0.1, "weight": 2.0, "new": 7.0}, {"search": 4.0, "recency": 1.0, "weight": 2.0}
    )
    assert out == {"search": 12.0, "recency": pytest.approx(1 / 3), "weight": 2.0, "new": 7.0}
    assert held == ["search", "recency"]


def test_quality_is_higher_when_the_alphas_rank_the_used_hits_first() -> None:
    parts = _hits(search=[0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3], recency=[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0])
    good = [Sample(parts, frozenset({6}), 1.0)]
    favours_recency = {"search": 1.0, "recency": 5.0}
    favours_search = {"search": 5.0, "recency": 0.1}
    assert quality(favours_recency, good) == pytest.approx(1.0)  # rank 1, in the top k
    assert quality(favours_search, good) == pytest.approx((1 / 7 + 0) / 2)
    assert quality(favours_recency, good) > quality(favours_search, good)
    # after a bad outcome, ranking the used hit first scores worse
    bad = [Sample(parts, frozenset({6}), -1.0)]
    assert quality(favours_recency, bad) < quality(favours_search, bad) < 0
    assert quality(favours_recency, []) == 0.0
    assert quality(favours_recency, [Sample(parts, frozenset(), 1.0)]) == 0.0


def _valid_gate() -> st.SearchStrategy[GateParams]:
    return st.floats(0.1, 0.95).flatmap(
        lambda core: st.builds(GateParams, st.just(core), st.floats(0.05, core - 0.05), st.floats(0.01, 0.2))
    )


def test_gate_step_moves_against_the_error() -> None:
    p = GateParams(0.7, 0.4, 0.05)
    down, why = gate_step(p, needed=6, dropped=20, unretrieved=1, persisted=20)
    assert why is not None and why.startswith("too aggressive") and "6 of 20" in why
    assert down.core < p.core and down.peripheral < p.peripheral and down.noise > p.noise
    assert (down.core, down.peripheral, down.noise) == pytest.approx((0.65, 0.35, 0.06))
    up, why = gate_step(p, needed=0, dropped=20, unretrieved=15, persisted=20)
    assert why is not None and why.startswith("too permissive") and "15 of 20" in why
    assert up.core > p.core and up.peripheral > p.peripheral and up.noise < p.noise


def test_gate_step_needs_evidence_and_a_real_imbalance() -> None:
    p = GateParams(0.7, 0.4, 0.05)
    assert gate_step(p, needed=9, dropped=9, unretrieved=0, persisted=100) == (p, None)
    assert gate_step(p, needed=0, dropped=100, unretrieved=9, persisted=9) == (p, None)
    assert gate_step(p, needed=3, dropped=30, unretrieved=4, persisted=40) == (p, None)  # 0.10 vs 0.10
    assert gate_step(p, needed=4, dropped=40, unretrieved=5, persisted=40) == (p, None)  # 0.10 vs 0.125


@FEW
@given(_valid_gate(), st.integers(0, 50), st.integers(0, 50), st.integers(0, 50), st.integers(0, 50), st.integers(1, 8))
def test_gate_thresholds_stay_ordered_within_bounds(
    p: GateParams, needed: int, dropped: int, unretrieved: int, persisted: int, rounds: int
) -> None:
    needed, unretrieved = min(needed, dropped), min(unretrieved, persisted)
    for _ in range(rounds):
        p, _ = gate_step(p, needed, dropped, unretrieved, persisted)
        assert p.core > p.peripheral
        assert p.peripheral >= 0.05 - 1e-9 and p.core <= 0.95 + 1e-9
        assert 0.01 - 1e-9 <= p.noise <= 0.2 + 1e-9


def test_pathological_flags_exploding_parameters() -> None:
    assert pathological(3.0, 4.0) is None
    assert pathological(500.0, 500.0) is None
    why = pathological(501.0, 2.0)
    assert why is not None and "501.0" in why and "500" in why
    assert pathological(2.0, 1e6) is not None
    assert pathological(2.0, 60.0, limit=50.0) is not None
    assert pathological(float("inf"), 1.0) == "a parameter is not finite"
    assert pathological(1.0, float("nan")) == "a parameter is not finite"


# --- safety, phases B and C ------------------------------------------------------------------------


def test_cycle_rate_limits_the_relative_move_of_a_cycle() -> None:
    assert cycle_rate(0.5, 0.54) is None
    assert cycle_rate(0.5, 0.55) is None  # exactly the limit
    assert cycle_rate(0.5, 0.46) is None
    up = cycle_rate(0.5, 0.6)
    assert up is not None and "20.0%" in up
    assert cycle_rate(0.5, 0.4) is not None  # down counts too
    assert cycle_rate(0.5, 0.6, max_step=0.25) is None


def test_two_gate_checks_the_margin_and_the_cap() -> None:
    assert two_gate(0.5, 0.6, 0.05, []) == []
    validation = two_gate(0.5, 0.52, 0.05, [])
    assert len(validation) == 1 and validation[0].startswith("validation")
    assert len(two_gate(0.5, 0.55, 0.05, [])) == 1  # equal to the margin is not better
    capacity = two_gate(0.5, 0.6, 0.05, ["search", "recency"])
    assert capacity == ["capacity: search, recency beyond the cap"]
    assert len(two_gate(0.5, 0.4, 0.05, ["search"])) == 2


@FEW
@given(st.lists(st.one_of(st.just(0.0), st.floats(1e-6, 1.0)), max_size=20))
def test_weight_entropy_is_within_unit(centres: list[float]) -> None:
    h = weight_entropy(centres)
    assert 0.0 <= h <= 1.0 + 1e-9


def test_weight_entropy_survives_a_vanishing_centre() -> None:
    assert 0.0 <= weight_entropy([1.0, 1.0, 5e-324]) <= 1.0


def test_weight_entropy_examples() -> None:
    assert weight_entropy([0.5] * 8) == pytest.approx(1.0)
    assert weight_entropy([0.9, 0.0, 0.0, 0.0]) == 0.0
    assert weight_entropy([0.9, 0.1, 0.1, 0.1]) < weight_entropy([0.5, 0.4, 0.4, 0.4])
    assert weight_entropy([0.7]) == 1.0 and weight_entropy([0.0, 0.0]) == 1.0


def test_entropy_drop_flags_a_fall_beyond_tolerance() -> None:
    assert entropy_drop(None, 0.1) is None
    assert entropy_drop(0.9, 0.88) is None
    assert entropy_drop(0.8, 0.9) is None  # a rise is fine
    why = entropy_drop(0.9, 0.7)
    assert why == "weight entropy fell from 0.900 to 0.700"
    assert entropy_drop(0.9, 0.88, tolerance=0.01) is not None


def test_breaker_counts_reinforcement_without_evidence_and_trips_at_the_limit() -> None:
    counts: dict[str, int] = {}
    tripped: list[str] = []
    for cycle in range(1, 4):
        counts, tripped = breaker(counts, {"a": False, "b": True})
        assert counts.get("a") == cycle and "b" not in counts
        assert tripped == (["a"] if cycle >= 3 else [])
    # new evidence resets the count
    counts2, tripped2 = breaker(counts, {"a": True})
    assert counts2 == {} and tripped2 == []
    # so does a cycle without reinforcement (absent from ``reinforced``)
    counts3, tripped3 = breaker({"a": 5, "c": 1}, {"c": False})
    assert counts3 == {"c": 2} and tripped3 == []
    assert breaker({"a": 1}, {"a": False}, limit=2) == ({"a": 2}, ["a"])
    assert breaker({"b": 3, "a": 4}, {"a": False, "b": False}) == ({"a": 5, "b": 4}, ["a", "b"])


def test_coherence_is_the_mean_of_its_axes_and_its_drop_is_flagged() -> None:
    assert coherence(1.0, 0.5, 0.0) == pytest.approx(0.5)
    assert coherence(0.9, 0.9, 0.9) == pytest.approx(0.9)
    assert coherence(0.0, 0.0, 0.0) == 0.0
    assert coherence_drop(0.8, 0.79) is None
    assert coherence_drop(0.8, 0.9) is None
    assert coherence_drop(0.8, 0.7) == "coherence fell from 0.800 to 0.700"


@FEW
@given(st.floats(0, 1), st.floats(0, 1), st.floats(0, 1))
def test_coherence_lies_between_its_axes(e: float, a: float, v: float) -> None:
    c = coherence(e, a, v)
    assert min(e, a, v) - 1e-12 <= c <= max(e, a, v) + 1e-12


def test_goal_budget_flags_a_goal_above_its_share() -> None:
    assert goal_budget({"a": 0.9, "b": 0.1}) == []  # too few to judge
    assert goal_budget({"a": 0.5, "b": 0.3, "c": 0.2}) == ["a"]
    assert goal_budget({"a": 0.4, "b": 0.3, "c": 0.3}) == []  # exactly 40%
    assert goal_budget({"a": 0.34, "b": 0.33, "c": 0.33}) == []
    assert goal_budget({"a": 0.0, "b": 0.0, "c": 0.0}) == []
    assert goal_budget({"b": 0.45, "a": 0.45, "c": 0.1}) == ["a", "b"]


# --- promotion -------------------------------------------------------------------------------------

T0 = datetime(2025, 1, 1, tzinfo=UTC)


def _seen(times: int, days: float) -> list[datetime]:
    return [T0 + timedelta(days=days * i / (times - 1)) for i in range(times)]


def test_next_step_climbs_the_rungs() -> None:
    goal, identity = LEVELS
    assert next_step(None, _seen(5, 14)) == goal
    assert goal.level == "goal" and goal.gain == 2.0
    assert next_step(None, _seen(10, 30)) == identity  # straight to the highest rung reached
    assert identity.level == "identity" and identity.gain == 5.0
    assert next_step("goal", _seen(10, 30)) == identity
    assert next_step(None, list(reversed(_seen(5, 14)))) == goal  # order does not matter


def test_next_step_needs_enough_sightings_and_span_and_never_repeats_a_rung() -> None:
    assert next_step(None, []) is None
    assert next_step(None, _seen(4, 20)) is None
    assert next_step(None, _seen(5, 13.9)) is None
    assert next_step(None, _seen(50, 1)) is None
    assert next_step("goal", _seen(5, 14)) is None
    assert next_step("goal", _seen(9, 40)) is None
    assert next_step("identity", _seen(10, 30)) is None
    assert next_step(None, _seen(9, 40)) == LEVELS[0]


def test_needs_approval_above_the_line_at_low_trust() -> None:
    assert needs_approval(0.9, 2)
    assert needs_approval(0.86, 0)
    assert not needs_approval(0.9, 3)
    assert not needs_approval(0.85, 0)
    assert not needs_approval(0.7, 0)


def test_dormant_promotions_step_down_a_rung() -> None:
    now = T0 + timedelta(days=100)
    long_ago, lately = now - timedelta(days=31), now - timedelta(days=29)
    assert demoted("identity", long_ago, now) == "goal"
    assert demoted("goal", long_ago, now) is None
    assert demoted("identity", now - timedelta(days=30), now) == "goal"
    assert demoted("identity", lately, now) is False
    assert demoted("goal", lately, now) is False
    assert demoted(None, long_ago, now) is False
    assert demoted("goal", None, now) is False


@FEW
@given(st.lists(st.floats(-1, 1), max_size=20), st.floats(-1, 1), st.floats(0.1, 10))
def test_utility_shrinks_the_mean_toward_the_prior(values: list[float], prior: float, weight: float) -> None:
    u = utility(values, prior, weight)
    if not values:
        assert u == pytest.approx(prior)
        return
    mean = sum(values) / len(values)
    assert min(mean, prior) - 1e-9 <= u <= max(mean, prior) + 1e-9
    # more pseudo-outcomes pull it closer to the prior
    assert abs(utility(values, prior, weight * 2) - prior) <= abs(u - prior) + 1e-9


def test_utility_examples() -> None:
    assert utility([1.0, 1.0]) == pytest.approx(2 / 3)
    assert utility([1.0, 1.0], prior=1.0) == pytest.approx(1.0)
    assert utility([-1.0] * 9, prior=0.0, weight=1.0) == pytest.approx(-0.9)
    assert utility([]) == 0.0


# --- tensions --------------------------------------------------------------------------------------

VALUE = "I always tell users the truth about delays."


def test_a_negated_behaviour_opposes_the_value() -> None:
    behaviour = "I did not tell the user the truth about the delay."
    assert opposes(VALUE, behaviour)
    assert not aligned(VALUE, behaviour)
    assert opposes(VALUE, "I never tell users the truth about delays.")


def test_a_behaviour_acting_on_the_value_is_aligned() -> None:
    behaviour = "I told the user the truth about the delay today."
    assert aligned(VALUE, behaviour)
    assert not opposes(VALUE, behaviour)


def test_unrelated_sentences_neither_oppose_nor_align() -> None:
    other = "The weather in Lisbon was sunny and warm."
    assert not opposes(VALUE, other)
    assert not aligned(VALUE, other)
    assert not opposes("I keep my code tested.", "The cat slept on the sofa all afternoon.")


def test_the_tension_lifecycle() -> None:
    assert next_status("open", 0, False) == "open"
    assert next_status("open", 5, False) == "open"
    assert next_status("open", 6, False) == "acknowledged"
    assert next_status("acknowledged", 7, False) == "acknowledged"
    assert next_status("open", 6, True) == "resolved"
    assert next_status("acknowledged", 9, True) == "resolved"
    assert next_status("resolved", 100, False) == "resolved"
    assert next_status("resolved", 0, False) == "resolved"


def test_statement_names_both_sides() -> None:
    s = statement(" I always tell users the truth. ", "I hid the delay.")
    assert s == "Internal contradiction: I hold that I always tell users the truth, yet I hid the delay."


# --- ledger ----------------------------------------------------------------------------------------


def test_a_task_failing_across_generations_is_a_pattern() -> None:
    attempts = [
        Attempt("Parse the CSV", "L1", 1, False, "timeout"),
        Attempt("parse  the csv ", "L2", 2, False, "timeout", propagated=True),
        Attempt("Parse the CSV", "L1", 2, False, "bad encoding"),
        Attempt("Parse the CSV", "L1", 3, False, None),
        Attempt("Parse the CSV", "L3", 1, True),
    ]
    [p] = failure_patterns(attempts)
    assert p.key == "parse the csv"
    assert p.task == "Parse the CSV"
    assert p.generations == (1, 2, 3)
    assert p.lineages == ("L1", "L2", "L3")
    assert (p.attempts, p.failures, p.propagated_failures) == (5, 4, 1)
    assert p.modes == (("timeout", 2), ("bad encoding", 1), ("unknown", 1))
    text = reflection(p)
    assert "'Parse the CSV'" in text
    assert "failed 4 of 5 attempts" in text
    assert "generations 1-3" in text
    assert "timeout x2" in text and "bad encoding x1" in text
    assert "L1, L2, L3" in text
    assert "1 failing variants were still propagated" in text


def test_a_task_fixed_in_its_latest_generation_or_failing_once_is_no_pattern() -> None:
    fixed = [
        Attempt("deploy", "L1", 1, False, "x"),
        Attempt("deploy", "L1", 2, False, "x"),
        Attempt("deploy", "L2", 3, False, "x"),
        Attempt("deploy", "L1", 3, True),
    ]
    assert failure_patterns(fixed) == []
    once = [Attempt("deploy", "L1", 1, False, "x"), Attempt("deploy", "L2", 1, False, "y")]
    assert failure_patterns(once) == []
    assert failure_patterns(once, least=1) != []
    assert failure_patterns([]) == []


def test_failure_patterns_are_sorted_worst_first() -> None:
    attempts = [Attempt("a", "L", g, False) for g in (1, 2)]
    attempts += [Attempt("b", "L", g, False) for g in (1, 2, 3)]
    attempts += [Attempt("c", "L", g, False) for g in (1, 2, 2)]
    keys = [p.key for p in failure_patterns(attempts)]
    assert keys == ["b", "c", "a"]
    no_propagation = next(p for p in failure_patterns(attempts) if p.key == "a")
    assert "propagated" not in reflection(no_propagation)
    assert no_propagation.modes == (("unknown", 2),)


@FEW
@given(st.text(alphabet="aBc \t\n", max_size=20))
def test_task_key_ignores_case_and_spacing(task: str) -> None:
    key = task_key(task)
    assert key == key.lower() and key == key.strip()
    assert "  " not in key and "\t" not in key and "\n" not in key
    assert task_key(task.upper() + "  ") == key
    assert task_key(key) == key


@FEW
@given(
    st.lists(
        st.tuples(st.sampled_from(["t1", "T1 ", "t2"]), st.integers(1, 4), st.booleans()),
        max_size=15,
    )
)
def test_failure_patterns_property(rows: list[tuple[str, int, bool]]) -> None:
    attempts = [Attempt(t, "L", g, ok, None if ok else "m") for t, g, ok in rows]
    found = {p.key: p for p in failure_patterns(attempts)}
    for key in {task_key(t) for t, _, _ in rows}:
        group = [(g, ok) for t, g, ok in rows if task_key(t) == key]
        failing = {g for g, ok in group if not ok}
        latest = max(g for g, _ in group)
        expected = len(failing) >= 2 and not any(ok for g, ok in group if g == latest)
        assert (key in found) == expected
        if expected:
            assert found[key].generations == tuple(sorted(failing))


def test_word_forms_share_a_stem_for_tensions() -> None:
    assert opposes("I flag every delay.", "I never flagged delays.")
    assert opposes("I answer every query.", "I ignored queries.")
    assert not opposes("I answer every query.", "The train was late.")
