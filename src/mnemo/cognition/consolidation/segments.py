"""Cutting a session into blocks at its flux arcs.

Seed: memory-architecture §3.3 (a block is a flux arc plus margins of two turns
before the spike and two after the resolution) and §8.3 (raw turns are removed
only once a block covers them). So that every turn is covered, the stretches
between arcs become blocks too ("spans", at most ``max_span`` turns each); an
arc's margins never reach into the previous arc's block.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = ["Segment", "segment"]


@dataclass(frozen=True, slots=True)
class Segment:
    """Turns ``start``..``end`` (inclusive); ``arc`` is the index of its arc for kind ``"arc"``."""

    start: int
    end: int
    kind: Literal["arc", "span"]
    arc: int | None = None


def segment(
    n: int, arcs: Sequence[tuple[int, int]], *, before: int = 2, after: int = 2, max_span: int = 8
) -> list[Segment]:
    """Blocks covering turns ``0..n-1`` exactly once, in order.

    ``arcs`` are ``(start, end)`` index pairs (inclusive, non-overlapping, in order). Each arc
    becomes one block widened by up to ``before``/``after`` margin turns not already taken;
    the turns left between blocks are cut into near-equal spans of at most ``max_span`` turns.
    """
    if n < 0 or before < 0 or after < 0 or max_span < 1:
        raise ValueError("n, before and after must be >= 0 and max_span >= 1")
    taken_until = -1  # last index already in a block
    widened: list[tuple[int, int, int]] = []
    for index, (start, end) in enumerate(arcs):
        if not 0 <= start <= end < n or start <= taken_until:
            raise ValueError(f"arc {index} ({start}, {end}) is out of order or out of range for {n} turns")
        next_start = arcs[index + 1][0] if index + 1 < len(arcs) else n
        lo = max(start - before, taken_until + 1)
        hi = min(end + after, next_start - 1)
        widened.append((lo, hi, index))
        taken_until = hi
    out: list[Segment] = []
    cursor = 0
    for lo, hi, index in [*widened, (n, n - 1, -1)]:
        gap = lo - cursor
        parts = -(-gap // max_span)  # ceil: spans of near-equal length
        for part in range(parts):
            stop = cursor + (gap * (part + 1)) // parts - (gap * part) // parts - 1
            out.append(Segment(cursor, stop, "span"))
            cursor = stop + 1
        if index >= 0:
            out.append(Segment(lo, hi, "arc", index))
            cursor = hi + 1
    return out
