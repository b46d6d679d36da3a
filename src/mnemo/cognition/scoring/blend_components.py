"""The relevance blend's components, one declaration each: the registry (issue 41 item 2).

Seed: cognitive-plan §3.1 (components in [0, 1] mixed by Dirichlet-sampled weights, a cold-start
and a mature alpha set), §4.5 (the night tunes the alphas), §5.1 (the gut's emotional component).

A :class:`Component` says what a component is called, its alpha in the cold-start and mature sets,
whether the night tunes that alpha, when it joins a recall, how it is computed from a
:class:`Candidate` and the recall's :class:`Occasion`, and how the inspector and the CLI show it.
:data:`BLEND` lists them in the order the blend sums them (which every float sum keeps: scores and
alphas stay the same to the bit). Everything else reads it: the blend's alphas and weights
(:mod:`mnemo.cognition.scoring.relevance`, :mod:`mnemo.recall.blend`), a hit's scores and
:meth:`mnemo.models.Hit.components`, the alphas' tuning (:mod:`mnemo.cognition.consolidation.tuning`,
:mod:`mnemo.night.tune`), the inspector's bars and alpha charts, the CLI's recall table.

Adding a component: one declaration here, and one field of the same name on
:class:`~mnemo.models.Hit` (the public record; ``tests/unit/test_blend_components.py`` checks the
two agree), plus a field on :class:`Candidate` when it needs an input no component read before.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from mnemo.cognition.mind.gut import mood_alignment
from mnemo.cognition.scoring.activation import (
    AccessHistory,
    activation,
    base_level,
    logistic_noise,
    partial_match,
    retrieval_probability,
    spreading,
)
from mnemo.cognition.scoring.weights import StochasticWeight

__all__ = [
    "BLEND",
    "COLD_START_ALPHAS",
    "COMPONENTS",
    "MATURE_ALPHAS",
    "RELEVANCE",
    "TUNED",
    "Candidate",
    "Component",
    "Occasion",
    "recency",
    "scores",
    "with_mood",
]


@dataclass(frozen=True, kw_only=True, slots=True)
class Occasion:
    """What the blend knows of the recall being made, the same for every candidate."""

    now: float
    """When the recall is made (epoch seconds)."""
    cues: Mapping[str, object]
    """The recall's cues, matched against a candidate's attributes (ACT-R partial matching)."""
    rng: random.Random | None
    """The recall's generator in stochastic mode; None: every draw is its expected value."""
    decay: float
    """ACT-R base-level decay ``d``."""
    spreading: float
    """ACT-R spreading weight of the query's similarity."""
    mismatch: float
    """ACT-R partial-matching penalty per mismatched cue."""
    noise: float
    """ACT-R activation noise ``s``."""
    tau: float
    """ACT-R retrieval threshold."""
    half_life: float
    """Recency's half-life, in seconds."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Candidate:
    """What the blend knows of one candidate (a turn has the prior weight and one trace at its time)."""

    searched: float
    """Its fused search score, min-max scaled over the blended candidates."""
    spread: float
    """The activation spread to it over co-access links (0 when none reached it)."""
    similarity: float
    """Its cosine similarity to the query."""
    history: AccessHistory
    """When it was used (ACT-R traces)."""
    weight: StochasticWeight
    """Its Beta weight."""
    trust: float
    """How far its source is trusted: the agent's own statements count for less (issue 31)."""
    attributes: Mapping[str, object]
    """Its metadata, kind, role and speaker, for partial matching."""
    age: float
    """Seconds since it was last used, else since its event time, else since it was written."""
    mood: float | None = None
    """Its cosine with the recall's mood direction; None: the recall has no mood."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Component:
    """One component of the blend: a score in [0, 1] per candidate and its alphas."""

    name: str
    """Its key in the blend's weights and alphas, and the :class:`~mnemo.models.Hit` field it fills."""
    cold_start: float
    """Its alpha while the scope holds few memories."""
    mature: float
    """Its alpha once the scope holds ``blend_mature_after`` memories."""
    tuned: bool
    """Whether the night moves its alpha with outcomes (cognitive-plan §4.5)."""
    compute: Callable[[Candidate, Occasion], float]
    """How a candidate's score is computed; called in :data:`BLEND`'s order (the order of the draws)."""
    needs_mood: bool = False
    """Whether it joins only recalls that have a mood (it is absent from the default alpha sets)."""
    absent: float = 0.0
    """What a hit shows when the component did not join (a tree node, a recall without a mood)."""
    column: str | None = None
    """Its header in the CLI's recall table; None: shown only by ``--json`` and the inspector."""
    fmt: str = ".2f"
    """How the inspector and the CLI format its score (:func:`format`)."""

    def alpha(self, mature: bool) -> float:
        """Its default alpha: the mature one, else the cold-start one."""
        return self.mature if mature else self.cold_start


def recency(age_seconds: float, half_life_seconds: float = 7 * 86400.0) -> float:
    """Exponential decay since the last use: 1 now, 0.5 after one half-life."""
    if half_life_seconds <= 0:
        raise ValueError("half-life must be > 0")
    return math.pow(0.5, max(age_seconds, 0.0) / half_life_seconds)


def _search(c: Candidate, o: Occasion) -> float:
    """The fused search score (semantic + lexical), min-max scaled over the candidates."""
    return c.searched


def _activation(c: Candidate, o: Occasion) -> float:
    """ACT-R retrieval probability of base level, spreading from the query, partial matching and noise."""
    a = activation(
        base_level(c.history, o.now, o.decay),
        spreading(c.similarity, o.spreading),
        partial_match(c.attributes, o.cues, o.mismatch),
        logistic_noise(o.rng, o.noise) if o.rng is not None else 0.0,
    )
    return retrieval_probability(a, o.tau, o.noise)


def _weight(c: Candidate, o: Occasion) -> float:
    """The Beta weight's centre (or a draw), scaled by source trust."""
    return (c.weight.observe(o.rng) if o.rng is not None else c.weight.center) * c.trust


def _recency(c: Candidate, o: Occasion) -> float:
    """0.5 ** (time since the last use / half-life)."""
    return recency(c.age, o.half_life)


def _coaccess(c: Candidate, o: Occasion) -> float:
    """The activation spread to it over co-access links from the best candidates."""
    return c.spread


def _noise(c: Candidate, o: Occasion) -> float:
    """Exploration: uniform in [0, 1) (or 0.5, its expected value)."""
    return o.rng.random() if o.rng is not None else 0.5


def _emotional(c: Candidate, o: Occasion) -> float:
    """Alignment with the recall's mood (the gut's direction): 0.5 + cos/2."""
    return mood_alignment(c.mood or 0.0)


# The alphas keep search dominant: the other components together weigh about 0.4 (cold start) and
# 0.5 (mature) of the search weight (the seed's mature set, with co-access at 5 of 18.5, let memories
# that were merely co-retrieved often outrank the answer in ``mnemo bench dynamics``).
BLEND: tuple[Component, ...] = (
    Component(name="search", cold_start=12.0, mature=12.0, tuned=True, compute=_search),
    Component(name="activation", cold_start=1.0, mature=1.5, tuned=True, compute=_activation, column="act"),
    Component(name="weight", cold_start=1.0, mature=1.5, tuned=True, compute=_weight, column="wt"),
    Component(name="recency", cold_start=1.5, mature=1.0, tuned=True, compute=_recency, column="rec"),
    Component(name="coaccess", cold_start=1.0, mature=2.0, tuned=True, compute=_coaccess),
    # exploration is not learned away: noise keeps its alpha
    Component(name="noise", cold_start=0.5, mature=0.5, tuned=False, compute=_noise),
    # the gut replaces the seed's neutral 0.5 (cognitive-plan §5.1); its alpha lies between the seed's
    # cold-start 0.5 and the other minor components' 1-2
    Component(
        name="emotional", cold_start=1.0, mature=1.0, tuned=True, compute=_emotional, needs_mood=True, absent=0.5
    ),
)
"""The blend's components, in the order it sums them."""

COMPONENTS: tuple[str, ...] = tuple(c.name for c in BLEND)
"""Their names, in :data:`BLEND`'s order."""
TUNED: tuple[str, ...] = tuple(c.name for c in BLEND if c.tuned)
"""The components whose alphas the night moves."""
COLD_START_ALPHAS: Mapping[str, float] = {c.name: c.cold_start for c in BLEND if not c.needs_mood}
"""The alphas while a scope holds few memories (favouring search)."""
MATURE_ALPHAS: Mapping[str, float] = {c.name: c.mature for c in BLEND if not c.needs_mood}
"""The alphas once it holds ``blend_mature_after`` memories."""
RELEVANCE = BLEND[0].name
"""The first component, search: a candidate's relevance, which the relevance tiers and the use rule
(:mod:`mnemo.cognition.scoring.relevance`) read."""


def with_mood(alphas: Mapping[str, float], *, mood: bool, mature: bool) -> dict[str, float]:
    """``alphas`` with the components that need a mood: at their default alpha (unless ``alphas``
    holds one) when the recall has a mood, dropped when it has none."""
    out = dict(alphas)
    for c in BLEND:
        if c.needs_mood and mood:
            out.setdefault(c.name, c.alpha(mature))
        elif c.needs_mood:
            out.pop(c.name, None)
    return out


def scores(candidate: Candidate, occasion: Occasion) -> dict[str, float]:
    """A candidate's score on every component that joins (those needing a mood only with one), in
    :data:`BLEND`'s order, so the recall's draws come in the same order each time."""
    return {c.name: c.compute(candidate, occasion) for c in BLEND if not c.needs_mood or candidate.mood is not None}
