"""The blend's components are declared once (issue 41 item 2): the registry in
mnemo.cognition.scoring.blend_components, and everything that names a component reads it: the alphas,
the blend's weights, the tuning, a hit's fields and components(), the inspector and the CLI."""

from __future__ import annotations

import dataclasses
import math
import random
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemo.cognition.consolidation.tuning import Sample, contributor
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
from mnemo.cognition.scoring.blend_components import (
    BLEND,
    COLD_START_ALPHAS,
    COMPONENTS,
    MATURE_ALPHAS,
    RELEVANCE,
    TUNED,
    Candidate,
    Occasion,
    recency,
    scores,
    with_mood,
)
from mnemo.cognition.scoring.relevance import blend_weights
from mnemo.cognition.scoring.weights import StochasticWeight
from mnemo.interfaces.ui._views import explain
from mnemo.models import Hit, RecallResult, Scope

unit = st.floats(min_value=0.0, max_value=1.0)


def test_the_components_their_order_and_alphas_are_those_the_blend_always_had() -> None:
    # the sums run in this order: any change here moves scores (LoCoMo figures) by a bit
    assert COMPONENTS == ("search", "activation", "weight", "recency", "coaccess", "noise", "emotional")
    assert list(COLD_START_ALPHAS.items()) == [
        ("search", 12.0), ("activation", 1.0), ("weight", 1.0), ("recency", 1.5), ("coaccess", 1.0), ("noise", 0.5),
    ]  # fmt: skip
    assert list(MATURE_ALPHAS.items()) == [
        ("search", 12.0), ("activation", 1.5), ("weight", 1.5), ("recency", 1.0), ("coaccess", 2.0), ("noise", 0.5),
    ]  # fmt: skip
    assert TUNED == ("search", "activation", "weight", "recency", "coaccess", "emotional")
    assert RELEVANCE == "search"


def test_a_component_that_needs_a_mood_joins_only_a_recall_with_one() -> None:
    assert "emotional" not in with_mood(MATURE_ALPHAS, mood=False, mature=True)
    assert with_mood(MATURE_ALPHAS, mood=True, mature=True) == {**MATURE_ALPHAS, "emotional": 1.0}
    assert with_mood(COLD_START_ALPHAS, mood=True, mature=False) == {**COLD_START_ALPHAS, "emotional": 1.0}
    tuned = {**MATURE_ALPHAS, "emotional": 2.5}
    assert with_mood(tuned, mood=True, mature=True) == tuned  # a tuned alpha stays
    assert list(blend_weights(with_mood(tuned, mood=True, mature=True))) == list(COMPONENTS)


def test_every_component_is_a_field_of_hit_with_its_absent_value_as_default() -> None:
    fields = {f.name: f for f in dataclasses.fields(Hit)}
    names = [f.name for f in dataclasses.fields(Hit) if f.name in COMPONENTS]
    assert names == list(COMPONENTS)  # the record's fields, in the registry's order (the JSON keeps it)
    start = list(fields).index(COMPONENTS[0])
    assert list(fields)[start : start + len(COMPONENTS)] == list(COMPONENTS)  # side by side
    for c in BLEND:
        assert fields[c.name].default == c.absent


def _hit(**scores: float) -> Hit:
    return Hit(
        id=uuid.uuid4(), item_kind="memory", content="x", score=0.5, similarity=0.5, vector_rank=1,
        lexical_rank=None, lexical_score=None, created_at=datetime(2024, 1, 1, tzinfo=UTC), scope=Scope("me"),
        **scores,
    )  # fmt: skip


def test_hit_components_and_the_inspector_show_every_component_emotional_too() -> None:
    hit = _hit(**{c: 0.25 + i / 100 for i, c in enumerate(COMPONENTS)})
    shown = hit.components()
    assert [k for k in shown if k in COMPONENTS] == list(COMPONENTS)
    assert shown["emotional"] == hit.emotional == pytest.approx(0.31)
    page = explain(RecallResult("q", Scope("me"), (hit,), 0.5, 1.0, weights={"search": 1.0}), k=5)
    bars = page["hits"][0]["parts"]
    assert [b["name"] for b in bars] == list(COMPONENTS)
    assert [b["text"] for b in bars] == [f"{getattr(hit, c):.2f}" for c in COMPONENTS]


# --- the computation is the one recall always made (the old inline code, kept here as the reference) --
def _reference(
    c: Candidate, o: Occasion, search: float, coaccess: float, mood: float | None, rng: random.Random | None
) -> dict[str, float]:
    a = activation(
        base_level(c.history, o.now, o.decay),
        spreading(c.similarity, o.spreading),
        partial_match(c.attributes, o.cues, o.mismatch),
        logistic_noise(rng, o.noise) if rng is not None else 0.0,
    )
    parts = {
        "activation": retrieval_probability(a, o.tau, o.noise),
        "weight": (c.weight.observe(rng) if rng is not None else c.weight.center) * c.trust,
        "recency": recency(c.age, o.half_life),
        "noise": rng.random() if rng is not None else 0.5,
    } | {"search": search, "coaccess": coaccess}
    if mood is not None:
        parts["emotional"] = mood_alignment(mood)
    return parts


@settings(max_examples=200, deadline=None)
@given(
    searched=unit,
    spread=unit,
    similarity=st.floats(min_value=-1.0, max_value=1.0),
    ages=st.lists(st.floats(min_value=0.0, max_value=1e8), min_size=0, max_size=5),
    alpha=st.floats(min_value=0.1, max_value=60.0),
    beta=st.floats(min_value=0.1, max_value=60.0),
    trust=unit,
    mood=st.one_of(st.none(), st.floats(min_value=-1.0, max_value=1.0)),
    cue=st.sampled_from([{}, {"kind": "fact"}, {"kind": "turn"}]),
    seed=st.one_of(st.none(), st.integers(min_value=0, max_value=2**32)),
)
def test_scores_are_bit_for_bit_the_old_inline_components(
    searched: float,
    spread: float,
    similarity: float,
    ages: list[float],
    alpha: float,
    beta: float,
    trust: float,
    mood: float | None,
    cue: Mapping[str, object],
    seed: int | None,
) -> None:
    now = 1.7e9
    history = AccessHistory(now - 1e8, tuple(sorted(now - a for a in ages)))
    candidate = Candidate(
        searched=searched, spread=spread, similarity=similarity, history=history,
        weight=StochasticWeight(alpha, beta), trust=trust, attributes={"kind": "fact"},
        age=min(ages, default=1e8), mood=mood,
    )  # fmt: skip

    def occasion(rng: random.Random | None) -> Occasion:
        return Occasion(now=now, cues=cue, rng=rng, decay=0.5, spreading=1.0, mismatch=-1.0, noise=0.4, tau=-1.0,
                        half_life=7 * 86400.0)  # fmt: skip

    draws = None if seed is None else random.Random(seed)
    again = None if seed is None else random.Random(seed)
    got = scores(candidate, occasion(draws))
    want = _reference(candidate, occasion(again), searched, spread, mood, again)
    assert got == want  # the same floats, to the bit, and the same draws in the same order
    assert draws is None or again is None or draws.random() == again.random()
    assert all(math.isfinite(v) for v in got.values())


def test_tuning_reads_the_tuned_components_only() -> None:
    parts = ({"noise": 0.9, "search": 0.1}, {"noise": 0.1, "search": 0.1})
    assert contributor(Sample(parts, frozenset({0}), 1.0)) is None  # noise is never tuned
    parts = ({"emotional": 0.9}, {"emotional": 0.1})
    assert contributor(Sample(parts, frozenset({0}), 1.0)) == "emotional"
