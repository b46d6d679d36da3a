"""Curator classification, decay amounts and retention cutoffs.

Seeds: archive-adr §8 (pruning signals from access metadata; decay is loss of
salience, not deletion; anchors are never harmed) and §9 (the curator loop:
quality signals of recency and reinforcement, confidence and provenance with
tool-verified facts outranking free claims, contradiction with anchored facts
quarantined, scope relevance; lifecycle classes promote, keep, archive,
prune); cognitive-plan §4.1 (light decay: unused memories nudged by
``contradict(0.01)``), §4.3 (demotion: memories that stop being reinforced
receive gradual ``contradict()``; dormant, not deleted) and §4.4 (deep decay:
not accessed for 90+ days and ``access_count < 3`` gives ``contradict(1.0)``;
never delete); memory-architecture §2.3 and §8.3 (retention by user tier:
one cycle of raw turns for every tier, counted from when a turn arrived, not
from its event time; holographic blocks kept 0, 2 or 6 further cycles in the
hot store, so 1, 3 or 7 cycles in all).

Everything is pure: the caller passes the signals and ``now``, and applies the
verdicts, decay amounts and cutoffs itself. Datetimes must be all naive or all
timezone-aware; an idle time below zero (a timestamp after ``now``) counts as 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal, get_args

__all__ = [
    "TIERS",
    "Classification",
    "CuratorPolicy",
    "DecayPolicy",
    "Provenance",
    "RetentionPolicy",
    "Signals",
    "Tier",
    "Verdict",
    "block_cutoff",
    "classify",
    "decay_amount",
    "idle_days",
    "quality",
    "raw_cutoff",
    "raw_keep",
]

Provenance = Literal["tool", "user", "inferred"]
Verdict = Literal["promote", "keep", "archive", "prune", "quarantine"]
Tier = Literal["normal", "meso", "elder"]
TIERS: tuple[Tier, ...] = get_args(Tier)

_DAY = timedelta(days=1)


def idle_days(last_accessed: datetime | None, created_at: datetime, now: datetime) -> float:
    """Days since the last access, or since creation when never accessed; never below 0."""
    since = last_accessed if last_accessed is not None else created_at
    return max(0.0, (now - since) / _DAY)


def _unit_interval(name: str, value: float) -> None:
    if not (math.isfinite(value) and 0.0 <= value <= 1.0):
        raise ValueError(f"{name} must be in [0, 1], not {value}")


@dataclass(frozen=True, slots=True)
class Signals:
    """What the curator knows about one memory (archive-adr §9 quality signals)."""

    weight_center: float  # centre of the memory's Beta weight, in [0, 1]
    access_count: int  # successful recalls
    last_accessed: datetime | None  # None: never recalled
    created_at: datetime
    mention_count: int  # times the fact was stated or re-derived
    confidence: float  # in [0, 1]
    provenance: Provenance  # tool-verified > a user's claim > inferred
    contradicts_anchor: bool  # conflicts with a trusted anchored fact
    scope_relevance: float  # similarity to the scope's centroid, in [0, 1]
    anchored: bool
    superseded: bool  # a newer memory replaces this one
    mention_span_days: float = 0.0  # days from the first mention to the last (0: one mention, or unknown)

    def __post_init__(self) -> None:
        _unit_interval("weight_center", self.weight_center)
        _unit_interval("confidence", self.confidence)
        _unit_interval("scope_relevance", self.scope_relevance)
        if self.access_count < 0 or self.mention_count < 0:
            raise ValueError("access_count and mention_count must be >= 0")
        if not (math.isfinite(self.mention_span_days) and self.mention_span_days >= 0):
            raise ValueError(f"mention_span_days must be finite and >= 0, not {self.mention_span_days}")
        if self.provenance not in get_args(Provenance):
            raise ValueError(f"provenance must be one of {get_args(Provenance)}, not {self.provenance!r}")


@dataclass(frozen=True, slots=True)
class Classification:
    """The curator's verdict, the quality score in [0, 1], and one reason per rule that fired."""

    verdict: Verdict
    score: float
    reasons: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class CuratorPolicy:
    """Thresholds and score weights of :func:`classify`.

    The quality score is the weighted mean (weights normalised by their sum) of six
    components in [0, 1]: recency ``0.5 ** (idle_days / recency_half_life_days)``,
    reinforcement ``1 - exp(-access_count / access_scale)``, mentions
    ``1 - exp(-mention_count / mention_scale)``, trust ``confidence * provenance factor``,
    scope relevance, and the weight centre.
    """

    promote_score: float = 0.7  # promote at or above this score ...
    promote_min_mentions: int = 2  # ... when mentioned this often, or tool-verified
    pattern_mentions: int = 5  # a pattern seen this often ... (cognitive-plan §4.3: "5+ times over 14+ days")
    pattern_span_days: float = 14.0  # ... over this many days is promoted whatever its use so far
    archive_after_days: float = 30.0  # idle this long: stale
    archive_max_access: int = 3  # stale with fewer accesses than this: archive
    prune_after_days: float = 90.0  # idle this long, with a low score and low trust or no access: prune
    prune_score: float = 0.25  # low score: below this
    prune_confidence: float = 0.3  # low confidence: below this
    recency_half_life_days: float = 14.0
    access_scale: float = 5.0
    mention_scale: float = 3.0
    tool_factor: float = 1.0
    user_factor: float = 0.8
    inferred_factor: float = 0.5
    w_recency: float = 0.20
    w_reinforcement: float = 0.15
    w_mentions: float = 0.15
    w_trust: float = 0.25
    w_scope: float = 0.15
    w_weight: float = 0.10

    def __post_init__(self) -> None:
        for name in ("promote_score", "prune_score", "prune_confidence"):
            _unit_interval(name, getattr(self, name))
        if self.prune_score >= self.promote_score:
            raise ValueError("prune_score must be below promote_score")
        if self.promote_min_mentions < 0 or self.archive_max_access < 0 or self.pattern_mentions < 0:
            raise ValueError("promote_min_mentions, pattern_mentions and archive_max_access must be >= 0")
        if not (math.isfinite(self.pattern_span_days) and self.pattern_span_days >= 0):
            raise ValueError("pattern_span_days must be finite and >= 0")
        if not (math.isfinite(self.archive_after_days) and self.archive_after_days >= 0):
            raise ValueError("archive_after_days must be finite and >= 0")
        if not (math.isfinite(self.prune_after_days) and self.prune_after_days >= self.archive_after_days):
            raise ValueError("prune_after_days must be finite and >= archive_after_days")
        for name in ("recency_half_life_days", "access_scale", "mention_scale"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be finite and > 0")
        for name in ("tool_factor", "user_factor", "inferred_factor"):
            _unit_interval(name, getattr(self, name))
        if not self.tool_factor >= self.user_factor >= self.inferred_factor:
            raise ValueError("provenance factors must be ordered tool >= user >= inferred")
        weights = self.weights()
        if any(not (math.isfinite(w) and w >= 0) for w in weights) or sum(weights) <= 0:
            raise ValueError("score weights must be finite, >= 0, and not all 0")

    def weights(self) -> tuple[float, float, float, float, float, float]:
        """(recency, reinforcement, mentions, trust, scope, weight)."""
        return (self.w_recency, self.w_reinforcement, self.w_mentions, self.w_trust, self.w_scope, self.w_weight)

    def provenance_factor(self, provenance: Provenance) -> float:
        return {"tool": self.tool_factor, "user": self.user_factor, "inferred": self.inferred_factor}[provenance]


def quality(signals: Signals, now: datetime, policy: CuratorPolicy = CuratorPolicy()) -> float:
    """The quality score in [0, 1] (see :class:`CuratorPolicy`); non-decreasing in every good signal."""
    p = policy
    components = (
        0.5 ** (idle_days(signals.last_accessed, signals.created_at, now) / p.recency_half_life_days),
        1.0 - math.exp(-signals.access_count / p.access_scale),
        1.0 - math.exp(-signals.mention_count / p.mention_scale),
        signals.confidence * p.provenance_factor(signals.provenance),
        signals.scope_relevance,
        signals.weight_center,
    )
    weights = p.weights()
    score = sum(w * c for w, c in zip(weights, components, strict=True)) / sum(weights)
    return min(1.0, max(0.0, score))


def classify(signals: Signals, now: datetime, policy: CuratorPolicy = CuratorPolicy()) -> Classification:
    """Promote, keep, archive, prune or quarantine one memory, with the reasons.

    Rules, in order (the first verdict wins; every rule that fires adds a reason):

    1. **quarantine**: it contradicts an anchored fact and is not anchored itself.
    2. anchored: exempt from archive and prune; **promote** when the promotion test
       below passes, else **keep**.
    3. **prune**: superseded and stale (idle >= ``archive_after_days``); or idle >=
       ``prune_after_days`` with a score below ``prune_score`` and either never
       accessed or confidence below ``prune_confidence``.
    4. **promote**: not stale, not superseded, and either score >= ``promote_score`` and
       mentioned at least ``promote_min_mentions`` times or tool-verified, or a *pattern*
       (cognitive-plan §4.3): mentioned at least ``pattern_mentions`` times over at least
       ``pattern_span_days`` days, with confidence >= ``prune_confidence``. (The score weighs
       recall use, which new memories cannot have yet: without the pattern rule nothing
       imported or learnt in one night could be promoted, however often it was said.)
    5. **archive**: superseded (not yet stale), or stale with fewer than
       ``archive_max_access`` accesses.
    6. **keep**: otherwise.

    Stale memories move to cold scope (archive) before they are pruned; decay itself
    never deletes (:func:`decay_amount`).
    """
    p = policy
    score = quality(signals, now, p)
    idle = idle_days(signals.last_accessed, signals.created_at, now)
    reasons: list[str] = [f"quality score {score:.2f}; idle {idle:.1f} days"]

    def done(verdict: Verdict, reason: str) -> Classification:
        return Classification(verdict, score, (*reasons, reason))

    if signals.contradicts_anchor:
        if not signals.anchored:
            return done("quarantine", "contradicts an anchored fact")
        reasons.append("contradicts an anchored fact, but is anchored itself: not quarantined")

    stale = idle >= p.archive_after_days
    trusted = signals.mention_count >= p.promote_min_mentions or signals.provenance == "tool"
    pattern = (
        signals.mention_count >= p.pattern_mentions
        and signals.mention_span_days >= p.pattern_span_days
        and signals.confidence >= p.prune_confidence
    )
    promotable = ((score >= p.promote_score and trusted) or pattern) and not stale and not signals.superseded
    if score >= p.promote_score and trusted:
        promote_reason = f"score {score:.2f} >= {p.promote_score} and " + (
            "tool-verified" if signals.provenance == "tool" else f"mentioned {signals.mention_count} times"
        )
    else:
        promote_reason = (
            f"a pattern: mentioned {signals.mention_count} >= {p.pattern_mentions} times "
            f"over {signals.mention_span_days:.0f} >= {p.pattern_span_days:g} days"
        )

    if signals.anchored:
        reasons.append("anchored: exempt from archive and prune")
        return done("promote", promote_reason) if promotable else done("keep", "anchored memory kept")

    if signals.superseded and stale:
        return done("prune", f"superseded and idle {idle:.0f} >= {p.archive_after_days:g} days")
    if idle >= p.prune_after_days and score < p.prune_score:
        weak = []
        if signals.access_count == 0:
            weak.append("never accessed")
        if signals.confidence < p.prune_confidence:
            weak.append(f"confidence {signals.confidence:.2f} < {p.prune_confidence}")
        if weak:
            return done(
                "prune",
                f"idle {idle:.0f} >= {p.prune_after_days:g} days, score {score:.2f} < {p.prune_score}, "
                + ", ".join(weak),
            )
    if promotable:
        return done("promote", promote_reason)
    if signals.superseded:
        return done("archive", "superseded by a newer memory")
    if stale and signals.access_count < p.archive_max_access:
        return done(
            "archive",
            f"stale (idle {idle:.0f} >= {p.archive_after_days:g} days) and low-use "
            f"({signals.access_count} < {p.archive_max_access} accesses)",
        )
    return done("keep", "useful working memory")


# --- decay (cognitive-plan §4.1, §4.4) ------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DecayPolicy:
    """Light decay (a gentle nudge per pass) and deep decay (halving a long-unused memory)."""

    light_amount: float = 0.01  # contradict() amount for a memory idle >= light_idle_days
    light_idle_days: float = 1.0
    deep_after_days: float = 90.0  # idle this long ...
    deep_max_access: int = 3  # ... with fewer accesses than this ...
    deep_amount: float = 1.0  # ... gets this contradict() amount instead

    def __post_init__(self) -> None:
        for name in ("light_amount", "light_idle_days", "deep_after_days", "deep_amount"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be finite and >= 0")
        if self.deep_amount < self.light_amount:
            raise ValueError("deep_amount must be >= light_amount")
        if self.deep_after_days < self.light_idle_days:
            raise ValueError("deep_after_days must be >= light_idle_days")
        if self.deep_max_access < 0:
            raise ValueError("deep_max_access must be >= 0")


def decay_amount(
    last_accessed: datetime | None,
    created_at: datetime,
    access_count: int,
    anchored: bool,
    now: datetime,
    policy: DecayPolicy = DecayPolicy(),
) -> float:
    """The ``contradict()`` amount to apply in this decay pass; 0.0 means none.

    Anchored memories never decay. Idle time runs from the last access, or from
    creation when never accessed. Idle >= ``deep_after_days`` with ``access_count <
    deep_max_access``: ``deep_amount`` (which replaces, not adds to, the light
    amount); else idle >= ``light_idle_days``: ``light_amount``; else 0.0.
    Non-decreasing in idle time. The amount is per pass: the caller sets the cadence
    (light on every background tick, deep once per deep consolidation) and must not
    re-apply a deep decay to a memory it has already halved unless it means to.
    Decay lowers weight; it never deletes.
    """
    if anchored:
        return 0.0
    idle = idle_days(last_accessed, created_at, now)
    if idle >= policy.deep_after_days and access_count < policy.deep_max_access:
        return policy.deep_amount
    if idle >= policy.light_idle_days:
        return policy.light_amount
    return 0.0


# --- retention (memory-architecture §2.3, §8.3) --------------------------------------------


@dataclass(frozen=True, slots=True)
class RetentionPolicy:
    """Hot-store retention per user tier, in cycles (a night cycle: one day by default).

    Raw turns are kept for ``*_raw_cycles``; holographic blocks for the raw cycles plus
    ``*_block_cycles`` more (the seed's table: normal +0, meso +2, elder +6, so 1, 3
    and 7 cycles in all). A block cycle count of ``None`` keeps blocks in the hot store
    forever (no default does this).
    """

    cycle: timedelta = _DAY
    normal_raw_cycles: int = 1
    meso_raw_cycles: int = 1
    elder_raw_cycles: int = 1
    normal_block_cycles: int | None = 0
    meso_block_cycles: int | None = 2
    elder_block_cycles: int | None = 6

    def __post_init__(self) -> None:
        if self.cycle <= timedelta(0):
            raise ValueError("cycle must be positive")
        for tier in TIERS:
            raw, block = self.raw_cycles(tier), self.block_cycles(tier)
            if raw < 0 or (block is not None and block < 0):
                raise ValueError(f"cycle counts of tier {tier!r} must be >= 0")

    def raw_cycles(self, tier: Tier) -> int:
        return {"normal": self.normal_raw_cycles, "meso": self.meso_raw_cycles, "elder": self.elder_raw_cycles}[tier]

    def block_cycles(self, tier: Tier) -> int | None:
        """Cycles a block stays in the hot store beyond the raw cycles; None: forever."""
        return {
            "normal": self.normal_block_cycles,
            "meso": self.meso_block_cycles,
            "elder": self.elder_block_cycles,
        }[tier]


def _tier(tier: str) -> Tier:
    if tier not in TIERS:
        raise ValueError(f"tier must be one of {TIERS}, not {tier!r}")
    return tier


def raw_keep(tier: Tier, policy: RetentionPolicy = RetentionPolicy()) -> timedelta:
    """How long a raw turn of ``tier`` stays in the hot store after it ARRIVED (was written into
    mnemo), whatever its event time: imported history is years old on arrival, and must still get
    its cycles (memory-architecture §2.3)."""
    return policy.raw_cycles(_tier(tier)) * policy.cycle


def raw_cutoff(tier: Tier, now: datetime, policy: RetentionPolicy = RetentionPolicy()) -> datetime:
    """Raw turns that arrived before this may leave the hot store (``now - raw_keep``).

    Only once a holographic block covers them (memory-architecture §8.3), and compared with
    the turn's arrival time, never its event time: checking both is the caller's job.
    """
    return now - raw_keep(tier, policy)


def block_cutoff(tier: Tier, now: datetime, policy: RetentionPolicy = RetentionPolicy()) -> datetime | None:
    """Blocks whose arc ended before this move from the hot store to the cold tier; None: none move.

    ``now - (raw_cycles + block_cycles) * cycle``. With the defaults a normal user's
    blocks leave with their raw turns (no blocks in the hot store beyond the current
    cycle), a meso user's after 3 cycles, an elder's after 7. Compare against the
    block's arc end time, the age of the content it covers.
    """
    block = policy.block_cycles(_tier(tier))
    if block is None:
        return None
    return now - (policy.raw_cycles(tier) + block) * policy.cycle
