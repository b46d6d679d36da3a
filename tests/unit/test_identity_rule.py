"""The identity roll's rule (issue 28 item 6): "Who I am and what I value" holds only identity-level
memories, whatever use did to their weights. Property tests over the real recall reinforcement
(:func:`mnemo.cognition.scoring.safety.propose`, ``reinforce(0.1)`` per recall)."""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from mnemo.cognition.scoring.context_packing import (
    IDENTITY_KINDS,
    Candidate,
    identity_level,
    identity_pool,
    roll_identity,
)
from mnemo.cognition.scoring.safety import Policy, propose
from mnemo.cognition.scoring.weights import StochasticWeight
from mnemo.models import MEMORY_KINDS

RECALL_GAIN = 0.1  # cognitive-plan §3.8: every recall that returns a memory reinforces it by this


def recalled(weight: StochasticWeight, times: int, policy: Policy) -> StochasticWeight:
    """``weight`` after ``times`` recalls returned its memory."""
    for _ in range(times):
        weight = propose(weight, "reinforce", RECALL_GAIN, policy).new
    return weight


@dataclass(frozen=True, slots=True, eq=False)
class Mem:
    """A memory as the identity rule reads it."""

    id: uuid.UUID
    kind: str
    anchored: bool
    alpha: float
    beta: float


@st.composite
def memories(draw: st.DrawFn) -> list[Mem]:
    policy = Policy(ceiling_enforced=draw(st.booleans()))
    out = []
    for _ in range(draw(st.integers(0, 14))):
        anchored = draw(st.booleans())
        start = StochasticWeight(
            draw(st.floats(0.5, 60.0)), draw(st.floats(0.5, 60.0)), anchored
        )  # any weight, then a burst of recalls on top
        weight = recalled(start, draw(st.integers(0, 300)), policy)
        out.append(
            Mem(
                id=uuid.UUID(int=draw(st.integers(0, 2**128 - 1))),
                kind=draw(st.sampled_from(MEMORY_KINDS)),
                anchored=anchored,
                alpha=weight.alpha,
                beta=weight.beta,
            )
        )
    return out


@settings(max_examples=200, deadline=None)
@given(memories(), st.integers(0, 20), st.integers(0, 2**32 - 1))
def test_only_identity_level_memories_roll_whatever_their_use(rows: list[Mem], top: int, seed: int) -> None:
    pool = identity_pool(rows, top)
    # only memories about the self, never an anchored one (they have their own section)
    assert all(m.kind in IDENTITY_KINDS and not m.anchored for m in pool)
    # ... and of those, exactly the strongest ``top``, strongest first
    eligible = [m for m in rows if identity_level(m.kind) and not m.anchored]
    centre = {id(m): m.alpha / (m.alpha + m.beta) for m in rows}
    assert len(pool) == min(top, len(eligible))
    assert [centre[id(m)] for m in pool] == sorted((centre[id(m)] for m in pool), reverse=True)
    left_out = [m for m in eligible if all(m is not p for p in pool)]
    assert not pool or all(centre[id(m)] <= centre[id(pool[-1])] for m in left_out)
    # whatever the rolls, nothing else is ever placed under the identity header
    weights = [StochasticWeight(m.alpha, m.beta, m.anchored) for m in pool]
    placed = roll_identity(
        [Candidate(i, 10, None, w) for i, w in enumerate(weights)], random.Random(seed), threshold=0.0, budget=10**6
    )
    assert {p.key for p in placed} <= set(range(len(pool)))


@given(st.sampled_from(MEMORY_KINDS), st.booleans(), st.integers(0, 2000))
def test_the_rule_is_what_a_memory_is_not_how_often_it_was_recalled(kind: str, anchored: bool, times: int) -> None:
    weight = recalled(StochasticWeight(1.0, 4.0), times, Policy())  # a new note, recalled ``times`` times
    row = Mem(uuid.uuid4(), kind, anchored, weight.alpha, weight.beta)
    assert identity_level(kind, anchored=anchored) == (anchored or kind in {"preference", "reflection", "narrative"})
    assert (identity_pool([row], 1) == [row]) == (not anchored and kind in IDENTITY_KINDS)


def test_a_burst_of_recalls_makes_a_note_strong_but_not_identity() -> None:
    note = recalled(StochasticWeight(1.0, 4.0), 200, Policy())
    assert note.center > 0.6  # strong enough that a weight centre rule would roll it in most contexts
    rows = [Mem(uuid.uuid4(), "semantic", False, note.alpha, note.beta)]
    assert identity_pool(rows, 20) == []
