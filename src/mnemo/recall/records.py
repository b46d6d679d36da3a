"""The records recall's stages pass along: the request, the candidates every stage enriches,
the blended head and the decision (DESIGN §3; seeds: cognitive-plan §2.5, §3.1).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from mnemo.cognition.scoring.late import TokenVectors
from mnemo.models import Hit, Scope, uuid7
from mnemo.store import scopes as scope_rows
from mnemo.store.dynamics import MemoryState
from mnemo.store.search import TurnHit
from mnemo.store.tiers import LineHit

ITEM_KINDS = ("turn", "memory")
Scored = list[tuple[float, uuid.UUID, dict[str, float]]]


@dataclass(frozen=True, slots=True)
class Request:
    """A checked recall request."""

    scope: Scope
    text: str
    k: int
    kinds: tuple[str, ...]
    hops: int
    reader: str
    """The entity reading: the owner, or a grantee (``as_entity``)."""
    threshold: float
    depth: int
    """How many candidates each retriever returns."""
    read_only: bool
    trace: bool
    given_vector: np.ndarray | None
    cues: Mapping[str, object] | None
    now: datetime
    seed: int | None
    """Fixes this recall's stochastic draws (``scoring="stochastic"``)."""
    expand: bool = False
    """Block hits come back whole instead of as their excerpt."""
    as_of: datetime | None = None
    """The point in time the recall is made at, when the caller gave one: it is :attr:`now`, and
    items written after it are left out."""
    processes: tuple[str, ...] = ()
    """Only items these processes wrote (archive-adr §4 attribution); empty: any process."""
    mood: np.ndarray | None = None
    """The caller's gut direction (cognitive-plan §5.1), a unit vector: the blend's emotional
    component is each item's alignment with it; None: the neutral 0.5."""
    trace_id: uuid.UUID = field(default_factory=uuid7)
    """The recall's trace id: the outcome id a later outcome links back to."""

    @property
    def owner_reads(self) -> bool:
        return self.reader == self.scope.entity_id

    @property
    def blocks_by_lines(self) -> bool:
        """Whether blocks answer through their lines: when utterances are searched too, a block's
        lines compete on their own (each a bifocal hit with the block's gist), so the block itself
        is no hit; it would only repeat its best line and spend budget on weaker ones. Memory-only
        recalls and ``expand`` keep block hits."""
        return "turn" in self.kinds and "memory" in self.kinds and not self.expand


@dataclass(slots=True)
class Candidates:
    """Everything the retrievers found, enriched stage by stage."""

    vector: np.ndarray
    kind_of: dict[uuid.UUID, str]
    ids: list[uuid.UUID]
    """The retrievers' candidates (neighbours and spread memories come on top)."""
    vector_rank: dict[uuid.UUID, int]
    lexical_rank: dict[uuid.UUID, int]
    dense_order: list[uuid.UUID]
    lexical_order: list[uuid.UUID]
    similarity: dict[uuid.UUID, float]
    lexical_score: dict[uuid.UUID, float]
    base: dict[uuid.UUID, float] = field(default_factory=dict)
    """The fused search score."""
    final: dict[uuid.UUID, float] = field(default_factory=dict)
    """The fused score after neighbour smoothing (and late interaction)."""
    query_tokens: TokenVectors | None = None
    """The query's token embeddings, when late interaction re-ranks."""
    smoothed: dict[uuid.UUID, float] = field(default_factory=dict)
    """The fused score after neighbour smoothing, before late interaction re-ranked the head."""
    late: dict[uuid.UUID, float] = field(default_factory=dict)
    """Late-interaction (MaxSim) scores of the re-ranked head."""
    in_period: set[uuid.UUID] = field(default_factory=set)
    """Candidates of the period the question names, lifted by :func:`time_frame`."""
    stale: set[uuid.UUID] = field(default_factory=set)
    """Candidates a later statement superseded (:mod:`mnemo.recall.current`): never reinforced."""
    names: dict[str, bool] = field(default_factory=dict)
    """The names the question is about, and whether the scope mentions each (the refusal's evidence)."""
    support: dict[str, tuple[int, float]] = field(default_factory=dict)
    """The question's focus words: how many items of the scope hold each (-1: not searchable, or not
    counted because the hits match it) and how well the top hits' tokens match it
    (:mod:`mnemo.recall.support`)."""
    literal: tuple[str, ...] = ()
    """The question's words that name a relation a person names literally: unsupported when no item
    holds any of its words, whatever the hits' tokens match (:func:`~mnemo.cognition.scoring.refusal.literal_focus`)."""
    scanned: dict[uuid.UUID, float] = field(default_factory=dict)
    """Late-interaction scores of every item of the scope, when late interaction retrieved
    (:func:`_late_retrieval`): the fusion's third retriever."""
    positions: dict[uuid.UUID, tuple[str, int]] = field(default_factory=dict)
    """Each utterance's ``(session, turn number)``, read by neighbour smoothing."""
    bounds: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Each session's first and last turn number, read by neighbour smoothing."""
    facts: scope_rows.RecallFacts | None = None
    """What the recall read of its scope first (which searches it can skip)."""
    stage: Any = None
    """Where first-stage scores come from (:class:`mnemo.recall.first_stage.FirstStage`): the scope's warm
    read index, or SQL."""


#: A candidate's row, by its kind: a memory's state, a raw turn, or a block's verbatim line.
RecallRow = MemoryState | TurnHit | LineHit


@dataclass(frozen=True, slots=True)
class Blended:
    """The cognitively scored head of the ranking, best first."""

    scored: Scored
    weights: Mapping[str, float]
    rows: Mapping[uuid.UUID, RecallRow]
    tiers: Mapping[uuid.UUID, int] = field(default_factory=dict)
    """Each candidate's relevance tier, 0 the most relevant (the hits show it: issue 40 item 7)."""


@dataclass(frozen=True, slots=True)
class Decision:
    hits: tuple[Hit, ...]
    near_misses: list[uuid.UUID]
    best: float | None
    refused: bool
    latency_ms: float
    spare: tuple[Hit, ...] = ()
    """The next candidates after the top k: they move up when a hit is dropped as a repeat."""
    unknown: tuple[str, ...] = ()
    """The question's names the scope never mentions, when the recall is refused for them."""
    unsupported: tuple[str, ...] = ()
    """The question's words nothing returned supports, when the recall is refused for them."""
    relevant: frozenset[uuid.UUID] = frozenset()
    """The k candidates the search ranking alone puts first: a hit among them was returned on its
    relevance, not lifted by use, weight, recency or association (only such hits are reinforced)."""
