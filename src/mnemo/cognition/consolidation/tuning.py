"""Self-tuning: the blend's Dirichlet alphas and the exit gate's thresholds move with outcomes.

Seed: cognitive-plan §4.5 ("Gate Tuning + Dirichlet Evolution"): for each retrieval outcome, the
alpha of the component that contributed most moves (toward it after a good outcome, away after a
bad one); the gate is too aggressive when dropped content was needed later and too permissive when
persisted content is never retrieved; pathological Beta parameters (alpha or beta exploding) are
flagged; the history is kept for introspection (the caller stores it).

Pure functions over the stored components of past recalls; no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from mnemo.cognition.scoring.blend_components import TUNED

__all__ = [
    "GateParams",
    "Sample",
    "capped",
    "contributor",
    "evolve",
    "gate_step",
    "pathological",
    "quality",
]


@dataclass(frozen=True, slots=True)
class Sample:
    """One recall with an outcome: each returned hit's blend components, best first, which hits
    were used, and how it went (-1 bad .. 1 good)."""

    parts: tuple[Mapping[str, float], ...]
    used: frozenset[int]
    value: float


def contributor(sample: Sample) -> str | None:
    """The component that contributed most to putting the used hits where they were: the largest
    advantage of the used hits' mean over all returned hits' mean (None: nothing used, or no
    component sets the used hits apart)."""
    if not sample.used or not sample.parts:
        return None
    best, best_gap = None, 1e-9
    for c in TUNED:  # noise keeps its alpha: exploration is not learned away
        every = [p.get(c, 0.0) for p in sample.parts]
        used = [sample.parts[i].get(c, 0.0) for i in sample.used if i < len(sample.parts)]
        if not used:
            continue
        gap = sum(used) / len(used) - sum(every) / len(every)
        if gap > best_gap:
            best, best_gap = c, gap
    return best


def evolve(alphas: Mapping[str, float], samples: Sequence[Sample], rate: float = 0.02) -> dict[str, float]:
    """Each outcome moves its contributor's alpha by ``rate * value`` of the alphas' total (so the
    step does not depend on their scale: about ten consistent outcomes triple a minor component's
    alpha); the total is then restored, so the blend's concentration (how stochastic it is) stays."""
    total = sum(alphas.values())
    moved = dict(alphas)
    for s in samples:
        c = contributor(s)
        if c is not None and c in moved:
            moved[c] = max(1e-3, moved[c] + rate * s.value * total)
    scale = total / sum(moved.values())
    return {c: a * scale for c, a in moved.items()}


def capped(
    alphas: Mapping[str, float], start: Mapping[str, float], factor: float = 3.0
) -> tuple[dict[str, float], list[str]]:
    """The capacity cap of the Two-Gate guardrail: every alpha within ``[start / factor, start *
    factor]``; returns the capped alphas and the components the cap held back."""
    held: list[str] = []
    out: dict[str, float] = {}
    for c, a in alphas.items():
        lo, hi = start.get(c, a) / factor, start.get(c, a) * factor
        out[c] = min(max(a, lo), hi)
        if abs(out[c] - a) > 1e-9:
            held.append(c)
    return out, held


def quality(alphas: Mapping[str, float], samples: Sequence[Sample], k: int = 5) -> float:
    """How well these alphas' expected weights rank the used hits among the returned ones: the mean
    over samples with a used hit of (good outcome: +1, bad: -1) x reciprocal rank of the used hits,
    and the share of used hits in the top ``k`` (both over the stored hits only)."""
    total = sum(alphas.values())
    weights = {c: a / total for c, a in alphas.items()}
    scores: list[float] = []
    for s in samples:
        if not s.used or not s.parts:
            continue
        ranked = sorted(range(len(s.parts)), key=lambda i: -sum(w * s.parts[i].get(c, 0.0) for c, w in weights.items()))
        position = {i: r for r, i in enumerate(ranked)}
        rr = sum(1.0 / (1 + position[i]) for i in s.used if i in position) / len(s.used)
        top = sum(position[i] < k for i in s.used if i in position) / len(s.used)
        scores.append(math.copysign(1.0, s.value) * (rr + top) / 2)
    return sum(scores) / len(scores) if scores else 0.0


@dataclass(frozen=True, slots=True)
class GateParams:
    """The exit gate's tunable thresholds (cognitive-plan §2.8)."""

    core: float
    peripheral: float
    noise: float


def gate_step(
    params: GateParams, needed: int, dropped: int, unretrieved: int, persisted: int, step: float = 0.05
) -> tuple[GateParams, str | None]:
    """Move the gate by one ``step`` (§4.5): when the share of dropped content needed later exceeds
    the share of persisted content never retrieved, the gate is too aggressive (thresholds down,
    more noise: keep more); in the opposite case too permissive (thresholds up, less noise). Shares
    are of at least 10 decisions each (else no evidence, no move). The thresholds stay ordered
    within [0.05, 0.95] and the noise within [0.01, 0.2]."""
    if dropped < 10 or persisted < 10:
        return params, None
    aggressive, permissive = needed / dropped, unretrieved / persisted
    if abs(aggressive - permissive) < 0.05:
        return params, None
    sign = -1.0 if aggressive > permissive else 1.0
    core = min(0.95, max(0.1, params.core + sign * step))
    peripheral = min(core - 0.05, max(0.05, params.peripheral + sign * step))
    noise = min(0.2, max(0.01, params.noise - sign * step / 5))
    reason = (
        f"too aggressive: {needed} of {dropped} dropped were needed later"
        if sign < 0
        else f"too permissive: {unretrieved} of {persisted} persisted were never retrieved"
    )
    return GateParams(core, peripheral, noise), reason


def pathological(alpha: float, beta: float, limit: float = 500.0) -> str | None:
    """Why a Beta weight looks pathological (an exploding parameter), or None."""
    if not (math.isfinite(alpha) and math.isfinite(beta)):
        return "a parameter is not finite"
    if alpha > limit or beta > limit:
        return f"Beta({alpha:.1f}, {beta:.1f}): evidence beyond {limit:.0f} freezes the weight"
    return None
