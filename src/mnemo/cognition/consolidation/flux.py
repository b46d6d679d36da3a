"""Flux arcs: a spike of surprisal, its decay, and the turn where it settles.

Seeds: cognitive-plan §3.2 (flux analysis: moving average over 3-5 turns, a
rolling baseline of 20 turns, a spike at 1.5 sigma above it, closed after 2
consecutive stable turns; flux reversal quality ``(peak - final) * duration``),
§3.3 (blocks take 2 margin turns before the spike and 2 after the resolution;
Arreté) and §4.2 (a session that ends inside an unresolved arc is flagged for
continuation).

The seed speaks of perplexity; mnemo works in surprisal, bits per token, and
perplexity is ``2 ** surprisal``. Every value here (baseline, sigma, peak,
final, thresholds) is in bits, except :attr:`FluxArc.arrete`, which the seed
defines as a ratio of perplexities and is therefore computed on ``2 ** bits``.

Detection, on a per-turn series ``x`` (see :func:`detect_arcs`):

1. ``s`` = trailing moving average of ``x`` over ``smoothing_window`` turns
   (fewer at the very start).
2. A turn ``t`` outside any arc is a spike when at least ``min_history`` turns
   among the ``baseline_window`` turns before it lie outside every arc, and
   ``s[t] > mean + spike_threshold * max(std, min_sigma)`` over those turns'
   smoothed values. The arc starts at the first turn of the moving-average
   window ending at ``t`` (never before the previous arc, nor before
   ``min_history``) whose raw value is above that threshold, so a moderate
   spike that the average needs two turns to show is still dated to its turn.
   When no such turn exists (the average is lifted by an earlier turn that
   may not start an arc), ``t`` is not a spike.
3. The peak is the highest raw value since the start. A turn counts as stable
   once the smoothing window has moved past the peak (``j >= peak + window``)
   and ``|s[j] - s[j-1]| < stable_threshold``; ``stabilization_count``
   consecutive stable turns close the arc there (resolved). An arc that reaches
   ``max_arc_turns`` turns first is cut there, unresolved; so is one still open
   when the series ends.

Reported ``baseline`` and ``sigma`` are the mean and the floored standard
deviation used for the spike test; ``peak`` is the raw peak value and
``final`` the smoothed value at the arc's last turn (the settled level).
The series is centred on its first value before any arithmetic, so adding a
constant to every value changes no arc (exactly so when the additions are exact
in floating point) and only shifts ``baseline``, ``peak`` and ``final``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "FLUX_STATES",
    "FluxArc",
    "FluxParams",
    "detect_arcs",
    "flux_states",
    "open_at_end",
    "with_margins",
]

FLUX_STATES = ("baseline", "spike", "resolution", "stable")
"""The per-turn states :func:`flux_states` returns (a database CHECK constraint)."""


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_real(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


@dataclass(frozen=True, slots=True)
class FluxParams:
    """Flux detection parameters; defaults from seed §3.2, all values in surprisal bits."""

    baseline_window: int = 20
    smoothing_window: int = 3
    spike_threshold: float = 1.5
    stable_threshold: float = 0.1
    stabilization_count: int = 2
    min_history: int = 3
    min_sigma: float = 0.25
    max_arc_turns: int = 40

    def __post_init__(self) -> None:
        for name in ("baseline_window", "smoothing_window", "stabilization_count", "min_history", "max_arc_turns"):
            value = getattr(self, name)
            if not _is_int(value) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, not {value!r}")
        for name in ("spike_threshold", "stable_threshold"):
            value = getattr(self, name)
            if not _is_real(value) or value <= 0:
                raise ValueError(f"{name} must be a finite number > 0, not {value!r}")
        if not _is_real(self.min_sigma) or self.min_sigma < 0:
            raise ValueError(f"min_sigma must be a finite number >= 0, not {self.min_sigma!r}")
        if self.min_history > self.baseline_window:
            raise ValueError(
                f"min_history ({self.min_history}) must not exceed baseline_window ({self.baseline_window}):"
                " no spike could ever be detected"
            )
        shortest = self.smoothing_window + self.stabilization_count
        if self.max_arc_turns < shortest:
            raise ValueError(
                f"max_arc_turns ({self.max_arc_turns}) must be >= smoothing_window + stabilization_count"
                f" ({shortest}), the shortest arc that can resolve"
            )


@dataclass(frozen=True, slots=True)
class FluxArc:
    """One arc over turn indices ``start..end`` (inclusive); values in surprisal bits."""

    start: int
    peak_index: int
    end: int
    baseline: float
    sigma: float
    peak: float
    final: float
    resolved: bool

    @property
    def duration(self) -> int:
        """Turns in the arc, both ends included."""
        return self.end - self.start + 1

    @property
    def quality(self) -> float:
        """Flux reversal quality, seed §3.2: ``(peak - final) * duration``."""
        return (self.peak - self.final) * self.duration

    @property
    def arrete(self) -> float:
        """Arreté, seed §3.3, on perplexities: ``(2**baseline - 2**final) / 2**baseline``, clipped to [-1, 1].

        Computed as ``1 - 2**(final - baseline)``; positive when the arc settles below its baseline.
        """
        diff = self.final - self.baseline
        if diff >= 1.0:  # 1 - 2**diff <= -1; also avoids overflow for huge differences
            return -1.0
        return max(-1.0, min(1.0, 1.0 - 2.0**diff))


def _smooth(x: np.ndarray, window: int) -> np.ndarray:
    out = np.empty_like(x)
    for i in range(len(x)):
        out[i] = x[max(0, i - window + 1) : i + 1].mean()
    return out


def detect_arcs(surprisals: Sequence[float], params: FluxParams | None = None) -> list[FluxArc]:
    """Non-overlapping flux arcs of a per-turn surprisal series, in order (see the module docstring).

    Raises ``ValueError`` for a value that is not finite. Deterministic.
    """
    p = params if params is not None else FluxParams()
    raw = np.asarray(surprisals, dtype=np.float64)
    if raw.ndim != 1:
        raise ValueError("surprisals must be a one-dimensional sequence")
    n = len(raw)
    if n == 0:
        return []
    if not np.all(np.isfinite(raw)):
        raise ValueError("surprisals must all be finite")
    ref = float(raw[0])
    x = raw - ref
    s = _smooth(x, p.smoothing_window)
    w = p.smoothing_window

    arcs: list[FluxArc] = []
    in_arc = np.zeros(n, dtype=bool)
    free = 0  # first turn after the last arc
    t = 0
    while t < n:
        window = np.arange(max(0, t - p.baseline_window), t)
        base = s[window[~in_arc[window]]]
        if len(base) < p.min_history:
            t += 1
            continue
        mean = float(base.mean())
        sigma = max(float(base.std()), p.min_sigma)
        threshold = mean + p.spike_threshold * sigma
        if not s[t] > threshold:
            t += 1
            continue

        first = max(free, t - w + 1, p.min_history)
        start = next((j for j in range(first, t + 1) if x[j] > threshold), None)
        if start is None:  # the average is lifted by a turn that cannot start an arc
            t += 1
            continue
        peak_index = start + int(np.argmax(x[start : t + 1]))
        stable = 0
        end = -1
        resolved = False
        j = t + 1
        while j < n and j - start < p.max_arc_turns:
            if x[j] > x[peak_index]:
                peak_index = j
            if j >= peak_index + w and abs(s[j] - s[j - 1]) < p.stable_threshold:
                stable += 1
            else:
                stable = 0
            if stable >= p.stabilization_count:
                end = j
                resolved = True
                break
            j += 1
        if not resolved:
            # Cut at the cap or at the series end. The cap lies past t: t - start < smoothing_window.
            end = min(n - 1, start + p.max_arc_turns - 1)

        arcs.append(
            FluxArc(
                start=start,
                peak_index=peak_index,
                end=end,
                baseline=mean + ref,
                sigma=sigma,
                peak=float(x[peak_index]) + ref,
                final=float(s[end]) + ref,
                resolved=resolved,
            )
        )
        in_arc[start : end + 1] = True
        free = end + 1
        t = end + 1
    return arcs


def _check_arcs(n: int, arcs: Sequence[FluxArc]) -> list[FluxArc]:
    if not _is_int(n) or n < 0:
        raise ValueError(f"n must be an int >= 0, not {n!r}")
    ordered = sorted(arcs, key=lambda a: a.start)
    previous_end = -1
    for arc in ordered:
        if not (0 <= arc.start <= arc.peak_index <= arc.end < n):
            raise ValueError(f"arc {arc.start}..{arc.end} (peak {arc.peak_index}) does not fit in {n} turns")
        if arc.start <= previous_end:
            raise ValueError("arcs overlap")
        previous_end = arc.end
    return ordered


def flux_states(n: int, arcs: Sequence[FluxArc]) -> list[str]:
    """The flux state of each of ``n`` turns: one of :data:`FLUX_STATES`.

    ``spike`` from an arc's start to its peak, ``resolution`` after the peak to the arc's end, ``stable``
    after a resolved arc until the next arc, ``baseline`` before the first arc and after an arc that was
    cut unresolved. The post-peak turns of an arc still open at the end are ``resolution`` too; use
    :func:`open_at_end` for the session-continuity flag.
    """
    states = ["baseline"] * n
    after = "baseline"
    cursor = 0
    for arc in _check_arcs(n, arcs):
        states[cursor : arc.start] = [after] * (arc.start - cursor)
        states[arc.start : arc.peak_index + 1] = ["spike"] * (arc.peak_index + 1 - arc.start)
        states[arc.peak_index + 1 : arc.end + 1] = ["resolution"] * (arc.end - arc.peak_index)
        after = "stable" if arc.resolved else "baseline"
        cursor = arc.end + 1
    states[cursor:] = [after] * (n - cursor)
    return states


def open_at_end(arcs: Sequence[FluxArc], n: int) -> bool:
    """True when the series of ``n`` turns ends inside an unresolved arc (seed §4.2 continuity flag)."""
    ordered = _check_arcs(n, arcs)
    return bool(ordered) and not ordered[-1].resolved and ordered[-1].end == n - 1


def with_margins(arc: FluxArc, n: int, before: int = 2, after: int = 2) -> tuple[int, int]:
    """Inclusive turn range of ``arc`` widened by ``before``/``after`` margin turns, clamped to ``[0, n-1]``."""
    if not _is_int(n) or n < 1:
        raise ValueError(f"n must be an int >= 1, not {n!r}")
    if not (_is_int(before) and _is_int(after)) or before < 0 or after < 0:
        raise ValueError("margins must be ints >= 0")
    if not 0 <= arc.start <= arc.end < n:
        raise ValueError(f"arc {arc.start}..{arc.end} does not fit in {n} turns")
    return max(0, arc.start - before), min(n - 1, arc.end + after)
