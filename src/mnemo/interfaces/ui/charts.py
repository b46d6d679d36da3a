"""The inspector's charts as SVG geometry: pure functions, no I/O (tested with hypothesis).

Seeds: cognitive-plan §2.3 (a memory's weight is a Beta(alpha, beta) belief, shown as its density),
§2.1 (ACT-R base-level activation from the times it was used), memory-architecture §3 (an
episode's surprisal per turn against its baseline band), archive-adr (a fact's validity interval, on a
labelled time axis), cognitive-plan §4.5 (the blend's alphas as the night retunes them, one line per
component over time). Charts are drawn server-side as SVG
attributes, so the pages need no script and no inline style (the Content-Security-Policy allows
neither).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, datetime

__all__ = ["activation_series", "beta_density", "nice_ceiling", "place", "polyline", "scale", "time_ticks"]

HOUR, DAY = 3600, 86400
_STEPS = (60, 300, 900, HOUR, 3 * HOUR, 6 * HOUR, 12 * HOUR, DAY, 2 * DAY, 7 * DAY, 14 * DAY)  # seconds
_MONTHS = (1, 2, 3, 6, 12, 24, 60, 120, 240, 600, 1200)


def beta_density(alpha: float, beta: float, samples: int = 120) -> list[tuple[float, float]]:
    """``(x, density)`` of Beta(alpha, beta) on the open interval (0, 1), ``samples`` points,
    densities scaled to a maximum of 1 (an infinite density at an edge is cut at the largest
    finite one sampled)."""
    if not (alpha > 0 and beta > 0) or samples < 2:
        raise ValueError("alpha and beta must be positive and samples at least 2")
    log_norm = math.lgamma(alpha + beta) - math.lgamma(alpha) - math.lgamma(beta)
    xs = [(i + 0.5) / samples for i in range(samples)]
    logs = [log_norm + (alpha - 1) * math.log(x) + (beta - 1) * math.log1p(-x) for x in xs]
    top = max(logs)
    return [(x, math.exp(v - top)) for x, v in zip(xs, logs, strict=True)]


def activation_series(
    uses: Sequence[datetime], start: datetime, end: datetime, decay: float, samples: int = 100
) -> list[tuple[datetime, float | None]]:
    """ACT-R base-level activation ``ln(sum((t - t_j) ** -decay))`` over ``samples`` times from
    ``start`` to ``end``; None before the first use (no activation yet). Times in seconds."""
    if end <= start or samples < 2:
        raise ValueError("end must follow start and samples be at least 2")
    step = (end - start) / (samples - 1)
    out: list[tuple[datetime, float | None]] = []
    for i in range(samples):
        t = start + step * i
        ages = [(t - u).total_seconds() for u in uses if u < t]
        total = sum(max(age, 1.0) ** -decay for age in ages)
        out.append((t, math.log(total) if total > 0 else None))
    return out


def scale(values: Sequence[float], low: float, high: float) -> list[float]:
    """``values`` mapped linearly onto [low, high] (all to the middle when they are equal)."""
    if not values:
        return []
    lo, hi = min(values), max(values)
    if hi == lo:
        return [(low + high) / 2] * len(values)
    return [low + (v - lo) * (high - low) / (hi - lo) for v in values]


def nice_ceiling(value: float) -> float:
    """The smallest round number (1, 2, 2.5 or 5 times a power of ten) at or above ``value``; 1 for
    a value that is not positive (the top of a value axis starting at 0)."""
    if not value > 0 or math.isinf(value):
        return 1.0
    power = 10.0 ** math.floor(math.log10(value))
    return next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= value * (1 - 1e-12))


def place(
    points: Sequence[tuple[datetime, float]],
    start: datetime,
    end: datetime,
    high: float,
    box: tuple[float, float, float, float],
) -> list[tuple[float, float]]:
    """``(time, value)`` points mapped into ``box`` (left, top, right, bottom): time along x from
    ``start`` to ``end`` (every point at the middle when ``end`` does not follow ``start``), value
    along y from 0 at the bottom to ``high`` at the top (values outside are clamped to the box)."""
    left, top, right, bottom = box
    span = (end - start).total_seconds()
    out = []
    for t, v in points:
        x = left + (t - start).total_seconds() / span * (right - left) if span > 0 else (left + right) / 2
        share = min(max(v / high, 0.0), 1.0) if high > 0 else 0.0
        out.append((min(max(x, left), right), bottom - share * (bottom - top)))
    return out


def polyline(points: Sequence[tuple[float, float]]) -> str:
    """An SVG ``points`` attribute."""
    return " ".join(f"{x:.1f},{y:.1f}" for x, y in points)


def time_ticks(start: datetime, end: datetime, most: int = 6) -> list[tuple[datetime, str]]:
    """Round times from ``start`` to ``end`` (UTC) for a time axis, at most ``most`` + 1 of them, each
    with its label: minutes and hours, days, the first of a month, or a year, whichever step keeps
    them few enough; the two ends when no round time falls between."""
    if end <= start or most < 1:
        raise ValueError("end must follow start and most be at least 1")
    span = (end - start).total_seconds()
    step = next((s for s in _STEPS if span / s <= most), None)
    if step is not None:
        first = math.ceil(start.timestamp() / step) * step
        label = "%Y-%m-%d" if step >= DAY else "%m-%d %H:%M"
        found = [datetime.fromtimestamp(t, UTC) for t in range(first, math.floor(end.timestamp()) + 1, step)]
    else:
        months = next((m for m in _MONTHS if span / (m * 28 * DAY) <= most), _MONTHS[-1])
        found, label = _month_starts(start, end, months), "%Y" if months >= 12 else "%Y-%m"
    if len(found) < 2:
        found, label = [start, end], "%Y-%m-%d %H:%M" if span >= 120 else "%H:%M:%S"
    return [(t, t.astimezone(UTC).strftime(label)) for t in found]


def _month_starts(start: datetime, end: datetime, months: int) -> list[datetime]:
    """The first days of every ``months``-th month (counted from year 0) from ``start`` to ``end``."""
    index = start.year * 12 + start.month - 1
    index += -index % months
    out = []
    while (t := datetime(index // 12, index % 12 + 1, 1, tzinfo=UTC)) <= end:
        if t >= start:
            out.append(t)
        index += months
    return out
