"""The rows the inspector shows (issue 17), one class per query of :mod:`mnemo.store.inspection`.

Seeds: archive-adr §2 (traces), §9 (staged curation); memory-architecture §3-5 (episodes, flux
arcs, salience). Each is read with psycopg's ``class_row``: its fields are the query's column names.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

__all__ = [
    "AuditEntry",
    "BlockListing",
    "CurationView",
    "CurvePoint",
    "EntityView",
    "LinkView",
    "MemoryListing",
    "MemoryView",
    "RunView",
    "ScopeCounts",
    "ScopeView",
]


@dataclass(frozen=True, slots=True)
class ScopeView:
    """A scope the reader may see (:func:`visible_scopes`); ``owner`` False: granted to it."""

    entity_id: str
    namespace: str
    owner: bool
    forked_from: str | None


@dataclass(frozen=True, slots=True)
class ScopeCounts:
    """Rows per chamber of one scope, and its memories per status and per tier (:func:`scope_counts`)."""

    turns: int
    lines: int
    blocks: int
    facts: int
    triples: int
    by_status: dict[str, int]
    by_tier: dict[str, int]


@dataclass(frozen=True, slots=True)
class RunView:
    """A night run (:func:`night_runs`)."""

    id: uuid.UUID
    as_of: datetime
    started_at: datetime
    finished_at: datetime | None
    stages_done: list[str]
    report: dict[str, Any]  # free-form JSONB: what each stage recorded


@dataclass(frozen=True, slots=True)
class EntityView:
    """An entity with its current facts and open relations counted (:func:`entities`)."""

    name: str
    mention_count: int
    first_seen: datetime
    last_seen: datetime
    facts: int
    relations: int


@dataclass(frozen=True, slots=True)
class MemoryListing:
    """A memory on a browse page (:func:`browse`)."""

    id: uuid.UUID
    kind: str
    content: str
    status: str
    anchored: bool
    tier: str
    alpha: float
    beta: float
    access_count: int
    created_at: datetime
    """Record time: when the archive wrote it (a night's memory: the night's time)."""
    process_id: str
    event_time: datetime | None = None
    """Event time: when it was said or happened (None: not known apart from the record time)."""


@dataclass(frozen=True, slots=True)
class MemoryView:
    """One memory whole, with its block's id when it is a block's memory (:func:`memory`)."""

    id: uuid.UUID
    kind: str
    content: str
    compressed: str | None
    status: str
    anchored: bool
    tier: str
    alpha: float
    beta: float
    access_count: int
    access_timestamps: list[datetime]
    last_accessed: datetime | None
    created_at: datetime
    event_time: datetime | None
    source_tag: str | None
    source_confidence: float
    provenance: list[str]
    metadata: dict[str, Any]  # free-form JSONB
    process_id: str
    block_id: uuid.UUID | None


@dataclass(frozen=True, slots=True)
class LinkView:
    """A structural link from (``out``) or to (``in``) an item (:func:`links_of`)."""

    direction: str
    link_type: str
    other: uuid.UUID
    strength: float | None


@dataclass(frozen=True, slots=True)
class BlockListing:
    """A block on the episodes page (:func:`blocks`)."""

    id: uuid.UUID
    kind: str
    session_id: str | None
    first_turn: int | None
    last_turn: int | None
    coherence_gain: float | None
    salience_scores: dict[str, Any]  # free-form JSONB
    arc_start_time: datetime | None
    migrated_at: datetime | None
    memory_id: uuid.UUID | None
    preview: str


@dataclass(frozen=True, slots=True)
class CurvePoint:
    """A block's turn with its surprisal, or its verbatim line (``raw`` False, no surprisal) (:func:`turn_curve`)."""

    turn_number: int
    speaker: str | None
    role: str
    content: str
    surprisal: float | None
    flux_state: str | None
    raw: bool


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """A weight change, safety event or inspector action, in one shape (:func:`audit`)."""

    at: datetime
    item_id: uuid.UUID | None
    reason: str
    enforced: bool | None
    detail: str | None
    subject: str | None = None
    """What the item says (its compressed line, else its content, cut to 160 characters); None: no
    item, or forgotten since."""


@dataclass(frozen=True, slots=True)
class CurationView:
    """A staged curation version with its items (:func:`curation`)."""

    version: int
    status: str
    as_of: datetime
    counts: dict[str, int]
    created_at: datetime
    applied_at: datetime | None
    items: list[dict[str, Any]]  # JSON: up to 200 items, best score first
