"""The inspector's chart geometry (issue 17): the Beta density peaks at the mode, activation rises
at each use and decays between uses, scaling keeps order; a time axis gets a few round, labelled
ticks (issue 27)."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemo.interfaces.ui.charts import activation_series, beta_density, polyline, scale, time_ticks

positive = st.floats(min_value=0.05, max_value=500, allow_nan=False)


@given(positive, positive)
def test_the_density_is_scaled_to_one_and_peaks_at_the_mode(alpha: float, beta: float) -> None:
    points = beta_density(alpha, beta)
    assert max(d for _, d in points) == pytest.approx(1.0)
    assert all(0 < x < 1 and 0 <= d <= 1 for x, d in points)
    if alpha > 1 and beta > 1:
        mode = (alpha - 1) / (alpha + beta - 2)
        peak = max(points, key=lambda p: p[1])[0]
        assert abs(peak - mode) <= 1 / len(points) + 1e-9


def test_a_bad_beta_is_refused() -> None:
    with pytest.raises(ValueError):
        beta_density(0, 1)


def test_activation_jumps_at_each_use_and_decays_between() -> None:
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    uses = [t0 + timedelta(hours=1), t0 + timedelta(hours=5)]
    series = activation_series(uses, t0, t0 + timedelta(hours=10), decay=0.5, samples=101)
    values = [v for _, v in series]
    assert all(v is None for v in values[:10]) and values[11] is not None  # nothing before the first use
    between = [v for v in values[12:50] if v is not None]
    assert between == sorted(between, reverse=True)  # decays until the second use
    assert values[51] is not None and values[51] > values[49]  # type: ignore[operator]


@given(st.lists(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False), min_size=1, max_size=50))
def test_scaling_keeps_order_and_bounds(values: list[float]) -> None:
    out = scale(values, 10, 90)
    assert all(10 - 1e-6 <= v <= 90 + 1e-6 for v in out)
    for (a, b), (x, y) in zip(itertools.pairwise(values), itertools.pairwise(out), strict=True):
        if a < b:
            assert x <= y + 1e-9


def test_polyline_formats_points() -> None:
    assert polyline([(0, 1), (2.25, 3)]) == "0.0,1.0 2.2,3.0"


moments = st.datetimes(min_value=datetime(1990, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC))


@given(moments, st.floats(min_value=1, max_value=3e9))
def test_a_time_axis_gets_a_few_ordered_ticks_inside_it_each_with_its_own_label(start: datetime, span: float) -> None:
    end = start + timedelta(seconds=span)
    ticks = time_ticks(start, end)
    times, labels = [t for t, _ in ticks], [label for _, label in ticks]
    assert 2 <= len(ticks) <= 7
    assert times == sorted(set(times)) and start <= times[0] and times[-1] <= end
    assert all(labels) and len(set(labels)) == len(labels)


def test_time_ticks_fall_on_round_times() -> None:
    start = datetime(2026, 3, 2, 9, 17, tzinfo=UTC)
    assert [label for _, label in time_ticks(start, start + timedelta(hours=5))] == [
        "03-02 10:00", "03-02 11:00", "03-02 12:00", "03-02 13:00", "03-02 14:00"
    ]  # fmt: skip
    assert [label for _, label in time_ticks(start, datetime(2026, 12, 1, tzinfo=UTC))] == [
        "2026-05", "2026-07", "2026-09", "2026-11"
    ]  # fmt: skip
    assert [label for _, label in time_ticks(start, datetime(2041, 1, 1, tzinfo=UTC))] == ["2030", "2035", "2040"]
