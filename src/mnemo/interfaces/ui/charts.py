"""The inspector's charts as SVG geometry: pure functions, no I/O (tested with hypothesis).

Seeds: cognitive-plan §2.3 (a memory's weight is a Beta(alpha, beta) belief, shown as its density),
§2.1 (ACT-R base-level activation from the times it was used), memory-architecture §3 (an
episode's surprisal per turn against its baseline band). Charts are drawn server-side as SVG
attributes, so the pages need no script and no inline style (the Content-Security-Policy allows
neither).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime

__all__ = ["activation_series", "beta_density", "polyline", "scale"]


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


def polyline(points: Sequence[tuple[float, float]]) -> str:
    """An SVG ``points`` attribute."""
    return " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
