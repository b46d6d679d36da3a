"""Frozen domain records shared by every layer (DESIGN.md §2).

Records are plain frozen dataclasses; Pydantic is used only where outside data
enters (settings, HTTP/MCP payloads) and to turn a record into JSON
(:func:`to_jsonable`). ``Scope`` validates itself, so an invalid scope can never
reach the store.
"""

from __future__ import annotations

import os
import re
import threading
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal, get_args

from pydantic import GetCoreSchemaHandler, PlainSerializer, TypeAdapter, computed_field
from pydantic_core import CoreSchema, core_schema

from mnemo.cognition.consolidation.curation import Classification, Tier
from mnemo.cognition.mind.gate_rules import EntryAction, ExitAction
from mnemo.cognition.scoring.blend_components import COMPONENTS
from mnemo.cognition.text.patterns import FactKind
from mnemo.errors import InvalidScopeError

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "MEMORY_KINDS",
    "MEMORY_STATUSES",
    "ROLES",
    "BackupManifest",
    "Belief",
    "CausalEdge",
    "ContextBlock",
    "ContextItem",
    "Curation",
    "Database",
    "EntityFacts",
    "ExcerptLine",
    "Fact",
    "FailurePatternRecord",
    "FlushReport",
    "GateAction",
    "GateOutcome",
    "GutAxis",
    "HeldInput",
    "Hit",
    "ImportReport",
    "InnerLife",
    "Item",
    "ItemKind",
    "JobCatalogue",
    "ListedMemory",
    "Memory",
    "MemoryHistory",
    "MemoryKind",
    "MemoryPage",
    "MemoryStatus",
    "Milestone",
    "NightReport",
    "Observation",
    "PacketImport",
    "Principal",
    "Readiness",
    "RecallResult",
    "Reflex",
    "Refusal",
    "Role",
    "SafetyRecord",
    "Scope",
    "ScopeSummary",
    "Status",
    "TaskAttempt",
    "Tension",
    "Timestamp",
    "TokenInfo",
    "Track",
    "TreeNode",
    "TuningStep",
    "Turn",
    "TurnInput",
    "Verdict",
    "Wandering",
    "WeightChange",
    "to_jsonable",
    "uuid7",
]

MemoryKind = Literal[
    "episodic",
    "semantic",
    "procedural",
    "preference",
    "reflection",
    "correction",
    "narrative",
    "tension",
    "insight",
]
MemoryStatus = Literal["candidate", "active", "archived", "pruned", "quarantined"]  # quarantined: by the curator
Role = Literal["user", "assistant", "system", "tool"]
MEMORY_KINDS: tuple[MemoryKind, ...] = get_args(MemoryKind)
MEMORY_STATUSES: tuple[MemoryStatus, ...] = get_args(MemoryStatus)
ROLES: tuple[Role, ...] = get_args(Role)
ItemKind = Literal["turn", "memory", "line", "node"]
"""line: a block's verbatim line whose raw turn retention removed (its id is the turn's);
node: a cortex tree node (recall at a level)."""
MemoryTier = Literal["hippocampus", "cortex"]  # where an item's vector lives: PostgreSQL or LanceDB
Track = Literal["anchored", "identity", "situational"]
GateAction = ExitAction | Literal["expired"]  # an exit-gate outcome; "expired": past its TTL unflushed


def _isoformat(value: datetime) -> str:
    return value.isoformat()


# A datetime that serialises to JSON as ``datetime.isoformat()`` ("+00:00", not pydantic's "Z").
Timestamp = Annotated[datetime, PlainSerializer(_isoformat, return_type=str, when_used="json")]


_adapters: dict[type, TypeAdapter[Any]] = {}


def to_jsonable(record: object) -> Any:
    """A record (or any value pydantic knows) as plain JSON data: dicts, lists, strings, numbers.

    Uuids become strings, datetimes ``isoformat()`` strings, a :class:`Scope` ``"entity/namespace"``;
    ``json.dumps`` takes the result as is. One ``TypeAdapter`` per type, built on first use.
    """
    kind = type(record)
    adapter = _adapters.get(kind)
    if adapter is None:
        adapter = _adapters[kind] = TypeAdapter(kind)
    return adapter.dump_python(record, mode="json")


_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:@+-]{0,127}$")  # fullmatch: "$" alone admits a trailing newline


@dataclass(frozen=True, slots=True)
class Scope:
    """Who a memory belongs to: ``(entity_id, namespace)``.

    Entity ids and namespaces are 1-128 characters of letters, digits and
    ``_ . : @ + -``, starting with a letter or digit.
    """

    entity_id: str
    namespace: str = "default"

    def __post_init__(self) -> None:
        for label, value in (("entity_id", self.entity_id), ("namespace", self.namespace)):
            if not isinstance(value, str) or not _NAME_RE.fullmatch(value):
                raise InvalidScopeError(
                    f"invalid {label} {value!r}: use 1-128 letters, digits or '_.:@+-', starting with a letter or digit"
                )

    def __str__(self) -> str:
        return f"{self.entity_id}/{self.namespace}"

    @classmethod
    def parse(cls, text: str) -> Scope:
        """Parse ``entity`` or ``entity/namespace``."""
        entity, _, namespace = text.partition("/")
        return cls(entity, namespace or "default")

    @classmethod
    def _coerce(cls, value: object) -> Scope:
        if isinstance(value, Scope):
            return value
        if isinstance(value, str):
            return cls.parse(value)  # InvalidScopeError is a ValueError: pydantic reports it
        raise ValueError(f"expected a scope 'entity/namespace', got {type(value).__name__}")

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        """Pydantic sees a scope as its string ``entity/namespace``, both ways."""
        return core_schema.no_info_plain_validator_function(
            cls._coerce,
            json_schema_input_schema=core_schema.str_schema(),
            serialization=core_schema.to_string_ser_schema(),
        )


@dataclass(frozen=True, slots=True)
class Turn:
    """One raw exchange in the day table."""

    id: uuid.UUID
    scope: Scope
    session_id: str
    turn_number: int
    role: Role
    content: str
    created_at: Timestamp
    token_count: int
    speaker: str | None = None
    surprisal: float | None = None
    flux_state: str | None = None
    user_tier: Tier = "normal"
    metadata: Mapping[str, Any] = field(default_factory=dict)
    repeat: bool = False
    """True when the write that returned it stored nothing: the scope already held this turn (same
    idempotency key, or same session, role, time and content; :mod:`mnemo.cognition.text.turn_identity`),
    and this is the turn it held."""


@dataclass(frozen=True, slots=True)
class Memory:
    """A curated memory item."""

    id: uuid.UUID
    scope: Scope
    kind: MemoryKind
    content: str
    created_at: Timestamp
    alpha: float = 1.0
    beta: float = 4.0
    status: MemoryStatus = "active"
    anchored: bool = False
    compressed: str | None = None
    source_tag: str | None = None
    source_confidence: float = 1.0
    provenance: tuple[str, ...] = ()
    event_time: Timestamp | None = None
    access_count: int = 0
    last_accessed: Timestamp | None = None
    token_count: int = 0
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ExcerptLine:
    """One verbatim line a block hit quotes: the turn it was, and how similar it is to the query."""

    turn_id: uuid.UUID
    turn_number: int
    role: Role
    speaker: str | None
    content: str
    created_at: Timestamp
    similarity: float


@dataclass(frozen=True, slots=True)
class Hit:
    """One recalled item with every score that put it where it is."""

    id: uuid.UUID
    item_kind: ItemKind
    content: str
    score: float
    """The score shown beside the hit, in rank order (issue 40 item 7): the hit's :attr:`blend`, capped
    by every score above it, so it never rises down the hits (a hit that a better relevance tier, a
    stage after the blend or the turn it stands for put below a hit of a lower blend shows that hit's
    score). A tree node's is its similarity. The blend's own number is :attr:`blend`."""
    similarity: float | None
    vector_rank: int | None
    lexical_rank: int | None
    lexical_score: float | None
    created_at: Timestamp
    scope: Scope
    session_id: str | None = None
    turn_number: int | None = None
    role: Role | None = None
    speaker: str | None = None
    memory_kind: MemoryKind | None = None
    token_count: int = 0
    metadata: Mapping[str, Any] = field(default_factory=dict)
    neighbour_boost: float = 0.0
    fused: float | None = None  # the fused, neighbour-smoothed search score (z-score units)
    late: float | None = None
    """MaxSim of the query's tokens over the item's (late interaction), or the configured
    cross-encoder's score, when it re-ranked this hit; the search score is then the re-ranked one."""
    in_period: bool = False
    """Whether the item is of the period the question names ("in May 2023", "last week"), for which
    its search score was lifted (time-aware queries)."""
    # the blend's components, one field per declaration in :data:`~mnemo.cognition.scoring.blend_components.BLEND`,
    # in its order, with its ``absent`` value as the default (tests/unit/test_blend_components.py checks they agree)
    search: float = 0.0  # fused score min-max scaled over the blended candidates, [0, 1]
    activation: float = 0.0  # ACT-R retrieval probability, [0, 1]
    weight: float = 0.0  # Beta weight centre (deterministic) or a draw (stochastic)
    recency: float = 0.0  # 0.5 ** (time since last use, else since its event time, else creation / half-life)
    coaccess: float = 0.0  # spreading activation over co-access links
    noise: float = 0.0  # exploration noise (0.5 in deterministic mode)
    emotional: float = 0.5  # alignment with the recall's mood (gut direction); the neutral 0.5 without one
    compressed: str | None = None
    event_time: Timestamp | None = None  # when what a memory tells happened (its source turns' time); None: created_at
    tier: MemoryTier = "hippocampus"
    """Where the item's vector lives: the hippocampus (PostgreSQL) or the cortex (LanceDB)."""
    level: int = 0
    """0: a turn, memory or block; 1-3: a node of the cortex's tree (branch, trunk, canopy)."""
    excerpt: tuple[ExcerptLine, ...] = ()
    """A block hit's quoted lines (bifocal hit): the block's verbatim lines that match the query.
    ``content`` is then these lines (time, speaker, text), unless recall was asked to ``expand``."""
    gist: str | None = None
    """A block or tree node's one-line summary."""
    blend: float | None = None
    """The cognitive blend's score: ``sum_c w_c * component_c`` over the components that joined the
    recall (:data:`~mnemo.cognition.scoring.blend_components.BLEND`; those needing a mood only with one),
    weights in :attr:`RecallResult.weights`; None for a tree node. :attr:`score` is it in rank order."""
    relevance_tier: int | None = None
    """The tier of about equal search relevance the hit was ranked in (0 the most relevant,
    :func:`~mnemo.cognition.scoring.relevance.relevance_tiers`; a hit a later stage put above one of a better
    tier ranks in that tier: :func:`~mnemo.cognition.scoring.rank_order.rank_tiers`): the blend orders hits
    only within a tier, so the tiers never fall down the hits; None for a tree node."""

    def components(self) -> dict[str, float | int | None]:
        """The scores behind this hit, for display and traces: ``blend`` is the blend of its
        components (one per :data:`~mnemo.cognition.scoring.blend_components.BLEND` declaration; weights in
        :attr:`RecallResult.weights`), ``score`` it in rank order, ``relevance_tier`` the tier it was
        ranked in; the rest explain ``search``."""
        return {
            "score": self.score,
            "blend": self.blend,
            "relevance_tier": self.relevance_tier,
            **{name: getattr(self, name) for name in COMPONENTS},
            "fused": self.fused,
            "similarity": self.similarity,
            "vector_rank": self.vector_rank,
            "lexical_rank": self.lexical_rank,
            "lexical_score": self.lexical_score,
            "neighbour_boost": self.neighbour_boost,
            "late": self.late,
        }


@dataclass(frozen=True, slots=True)
class TreeNode:
    """A node of a scope's RAPTOR tree in the cortex (memory-architecture §5.4): level 1 a branch
    (a cluster of blocks), 2 a trunk, 3 a canopy; ``summary`` describes its members."""

    id: str
    level: int
    parent_id: str | None
    summary: str
    member_ids: tuple[str, ...]
    """Block ids (level 1) or node ids (levels above)."""
    block_count: int
    """How many blocks are under the node."""


@dataclass(frozen=True, slots=True)
class RecallResult:
    """Hits for a query, best first. Truthy; iterate it like a list."""

    query: str
    scope: Scope
    hits: tuple[Hit, ...]
    best_similarity: float | None
    latency_ms: float
    weights: Mapping[str, float] = field(default_factory=dict)  # the blend weights this recall used
    refused: Literal[False] = False
    outcome_id: uuid.UUID | None = None
    """The recall's forward-linkable id (its trace): :meth:`AsyncArchive.inner.feedback` links an outcome
    (the hits used, how it went) back to it, and the blend's alphas tune on those. None: not traced."""

    def __iter__(self) -> Iterator[Hit]:
        return iter(self.hits)

    def __len__(self) -> int:
        return len(self.hits)

    def __getitem__(self, index: int) -> Hit:
        return self.hits[index]

    def __bool__(self) -> bool:
        return True


@dataclass(frozen=True, slots=True)
class Refusal:
    """The archive holds nothing reliable about the query (hard refusal).

    Returned instead of hits when the best candidate's similarity is below the
    refusal threshold, so an agent answers "I don't know" rather than guessing.
    Falsy and empty; ``candidates`` keeps the rejected near misses for inspection.
    """

    query: str
    scope: Scope
    best_similarity: float | None
    threshold: float
    latency_ms: float
    candidates: tuple[Hit, ...] = ()
    refused: Literal[True] = True
    message: str = "The archive contains nothing reliable about this."
    unknown: tuple[str, ...] = ()
    """The names the question is about that nothing in the scope mentions, when that is why it was
    refused (empty when nothing was similar enough)."""
    unsupported: tuple[str, ...] = ()
    """The words the question is about that the scope rarely holds and nothing returned matches,
    when that is why it was refused (``refuse_unsupported``)."""

    @property
    def hits(self) -> tuple[Hit, ...]:
        return ()

    def __iter__(self) -> Iterator[Hit]:
        return iter(())

    def __len__(self) -> int:
        return 0

    def __bool__(self) -> bool:
        return False


@dataclass(frozen=True, slots=True)
class ImportReport:
    """What an import wrote; with ``skip_invalid``, the turns it left out as ``(line, reason)``
    (``line`` is None for formats without lines, LoCoMo: the reason names the turn)."""

    scope: Scope
    path: str
    format: str
    turns: int
    sessions: int
    seconds: float
    skipped: tuple[tuple[int | None, str], ...] = ()
    skipped_repeats: int = 0
    """Turns of the file the scope already held (an earlier import of the same file, or turns with
    the same idempotency keys): not stored again, and not counted in ``turns``."""


@dataclass(frozen=True, slots=True)
class WeightChange:
    """One audited weight change (``mnemo why``)."""

    at: Timestamp
    operation: Literal["reinforce", "contradict", "create"]
    gain: float
    old: tuple[float, float] | None  # (alpha, beta) before; None at creation
    new: tuple[float, float]
    reason: str
    evidence: Mapping[str, Any]
    blocked: bool
    ceilings: tuple[str, ...] = ()  # ceilings that fired, "name (enforced)" or "name (shadow)"

    @property
    def center(self) -> float:
        return self.new[0] / (self.new[0] + self.new[1])


@dataclass(frozen=True, slots=True)
class MemoryHistory:
    """A memory's current state and every audited change to its weight, oldest first."""

    id: uuid.UUID
    scope: Scope
    content: str
    kind: MemoryKind
    status: MemoryStatus
    anchored: bool
    alpha: float
    beta: float
    access_count: int
    last_accessed: Timestamp | None
    created_at: Timestamp
    changes: tuple[WeightChange, ...]

    @property
    def center(self) -> float:
        return self.alpha / (self.alpha + self.beta)


_uuid_lock = threading.Lock()
_last_ms = 0
_last_seq = 0


def uuid7() -> uuid.UUID:
    """A time-ordered UUIDv7 (RFC 9562), monotonic within this process."""
    global _last_ms, _last_seq
    with _uuid_lock:
        ms = time.time_ns() // 1_000_000
        if ms <= _last_ms:
            ms = _last_ms
            _last_seq += 1
            if _last_seq > 0xFFF:
                ms += 1
                _last_seq = 0
        else:
            _last_seq = int.from_bytes(os.urandom(2), "big") & 0x3FF
        _last_ms = ms
        seq = _last_seq
    rand_b = int.from_bytes(os.urandom(8), "big") & ((1 << 62) - 1)
    value = (ms & ((1 << 48) - 1)) << 80 | 0x7 << 76 | seq << 64 | 0b10 << 62 | rand_b
    return uuid.UUID(int=value)


@dataclass(frozen=True, slots=True)
class Verdict:
    memory_id: uuid.UUID
    kind: MemoryKind
    content: str
    from_status: MemoryStatus
    to_status: MemoryStatus
    classification: Classification

    @property
    def changes(self) -> bool:
        return self.from_status != self.to_status or self.classification.verdict == "promote"

    def item(self) -> dict[str, Any]:
        return {
            "memory_id": self.memory_id,
            "verdict": self.classification.verdict,
            "score": self.classification.score,
            "reasons": self.classification.reasons,
            "from_status": self.from_status,
            "to_status": self.to_status,
        }


def _vector_counts_json(rows: Sequence[tuple[str, str, int]]) -> list[dict[str, Any]]:
    return [{"table": table, "slug": slug, "rows": count} for table, slug, count in rows]


VectorCounts = Annotated[
    Sequence[tuple[str, str, int]],
    PlainSerializer(_vector_counts_json, return_type=list[dict[str, Any]], when_used="json"),
]


@dataclass(frozen=True, slots=True)
class Status:
    """What ``mnemo status`` shows."""

    database: str
    embedded: bool
    pgvector: str
    embedder: str
    vector_table: str
    counts: Mapping[str, int]
    vectors: VectorCounts  # (table, embedder slug, rows); JSON: [{"table", "slug", "rows"}, ...]
    pending_reembed: int
    queue: Mapping[str, int] = field(default_factory=dict)  # background jobs by status (todo, doing, failed, ...)
    swept: tuple[str, ...] = ()
    """Staging directories a killed backup or restore had left in the home, removed by this call."""
    uses: Mapping[str, int] = field(default_factory=dict)
    """This process's use queue (issue 42 decision 3): recalls' uses ``queued``, ``written`` and
    ``failed`` (logged, never raised) since the archive opened, and the scopes still ``pending``."""


@dataclass(frozen=True, slots=True)
class BackupManifest:
    """What a backup file holds (``mnemo backup``), checked on restore and by ``mnemo backup verify``."""

    format: int
    """The file layout's version: 2, its manifest sealed by ``manifest.sha256`` (1, still read: not sealed)."""
    mnemo_version: str
    created_at: Timestamp
    last_migration: int
    """mnemo's last schema migration in the snapshot: a newer one than this mnemo knows is refused."""
    schemas: tuple[str, ...]
    """The PostgreSQL schemas in the dump: mnemo's chambers, then the extensions' own schemas."""
    spaces: tuple[Mapping[str, Any], ...]
    """Vector spaces: ``{"table", "space", "dim", "slugs": {slug: rows}}`` (the Dimension Lock's seals)."""
    active_slug: str | None
    cortex_id: str | None
    cortex_versions: Mapping[str, int]
    """The LanceDB table versions copied, which match the database snapshot (DESIGN §9)."""
    cortex_rows: Mapping[str, int]
    counts: Mapping[str, int]
    """Rows per table (``schema.table``) in the snapshot."""
    files: Mapping[str, str]
    """sha256 of every other member of the file."""
    database_bytes: int


@dataclass(frozen=True, slots=True)
class PacketImport:
    """What importing bifocal packets did (``mnemo import-packets``, ``fork``, ``merge``)."""

    scope: Scope
    turns: int
    """Turns written."""
    memories: int
    """Memories written (an identical live memory already there is reinforced instead)."""
    already_there: int
    """Packets this scope had imported before: skipped (imports are idempotent)."""
    reembedded: int
    """Packets written whose vectors came from another model than the active one: embedded again."""
    links: int
    """References between the packets, written as links between the items they became."""
    items: Mapping[str, uuid.UUID] = field(default_factory=dict)
    """Packet id -> the item it is in this scope."""
    state: Mapping[str, int] = field(default_factory=dict)
    """The scope's consolidated state written, by packet type (``block``, ``line``, ``fact``, ...)."""


@dataclass(frozen=True, slots=True)
class CausalEdge:
    """What tended to follow a reflex (memory-architecture §10.4)."""

    target: uuid.UUID
    action: str
    action_type: str
    strength: float
    """How often the source led to the target: observations / the source's outcomes."""
    gap_seconds: float
    """The mean time between them."""
    observations: int


@dataclass(frozen=True, slots=True)
class Reflex:
    """Procedural memory (memory-architecture §10.3): what was done in a context and how it went."""

    id: uuid.UUID
    scope: Scope
    context: str
    action: str
    action_type: Literal["tool_call", "response_pattern", "delegation"]
    success_count: int
    failure_count: int
    success_rate: float
    last_accessed: Timestamp
    last_success: Timestamp | None
    created_at: Timestamp
    similarity: float | None = None
    """How close its context is to the one asked about (``archive.reflexes.matching``)."""
    score: float | None = None
    """``similarity`` times the smoothed success rate ((successes + 1) / (outcomes + 2)): the order
    ``archive.reflexes.matching`` returns."""
    next: tuple[CausalEdge, ...] = ()
    """What tended to follow it, strongest first."""


@dataclass(frozen=True, slots=True)
class ScopeSummary:
    """One scope and what it holds (``mnemo scopes``): turns, memories (any status), blocks, current
    facts, and the time of its last write (its creation, a turn's arrival, a memory's or a block's)."""

    scope: Scope
    turns: int
    memories: int
    blocks: int
    facts: int
    last_write: Timestamp


@dataclass(frozen=True, slots=True)
class Maturity:
    """How grown-up a scope's memory is (cognitive-plan §3.5), for an agent's escalation threshold."""

    memories: int
    """Live (candidate or active) memories."""
    identity_density: float
    """0-1: the weight centres above 0.7, summed over every live memory; 0 when there are none.
    Revised (weakened) beliefs lower it."""


@dataclass(frozen=True, slots=True)
class TokenInfo:
    """A bearer token as ``mnemo token list`` shows it: never the token itself, nor its hash.
    ``namespace`` None: any namespace of the entity; ``revoked_at`` None: not revoked. A token
    is valid while it is neither revoked nor expired."""

    id: uuid.UUID
    namespace: str | None
    label: str | None
    created_at: Timestamp
    revoked_at: Timestamp | None
    expires_at: Timestamp | None = None
    """When the token stops working (``create_token(expires_at=...)``, ``mnemo token create
    --expires 30d``); None: it never expires."""
    expired: bool = False
    """Whether ``expires_at`` had passed when the list was read (by the database's clock): an
    expired token is refused like an unknown one."""


@dataclass(frozen=True, slots=True)
class ContextItem:
    id: uuid.UUID
    track: Track
    mode: Literal["full", "compressed"]
    text: str  # the rendered line
    tokens: int


@dataclass(frozen=True, slots=True)
class ContextBlock:
    """The context to prepend: ``text``, what went into it, and its size."""

    scope: Scope
    text: str
    tokens: int
    budget: int
    items: tuple[ContextItem, ...]
    refused: bool  # recall found nothing reliable for the attention text

    @property
    def over_budget(self) -> bool:
        return self.tokens > self.budget


@dataclass(frozen=True, slots=True)
class GateOutcome:
    """One exit-gate decision."""

    item_id: uuid.UUID
    content: str
    action: GateAction
    reason: str
    relevance: float | None = None
    similarity: float | None = None
    related_id: uuid.UUID | None = None
    contradiction: str | None = None  # the layer that found it: negation, substitution, embedding, llm
    memory_id: uuid.UUID | None = None  # the memory persisted, reinforced or flagged
    outcome_id: uuid.UUID | None = None
    """The decision's forward-linkable id: :meth:`AsyncArchive.inner.feedback` links an outcome back to it."""


@dataclass(frozen=True, slots=True)
class FlushReport:
    scope: Scope
    outcomes: tuple[GateOutcome, ...]

    def count(self, action: str) -> int:
        return sum(1 for o in self.outcomes if o.action == action)


@dataclass(frozen=True, slots=True)
class Observation:
    """What the entry gate did with one item, and the flush it triggered, if any."""

    item_id: uuid.UUID
    action: EntryAction
    reason: str
    flushed: FlushReport | None = None


@dataclass(frozen=True, slots=True)
class Curation:
    """A curation plan (``version`` None on a dry run, or when nothing would change) and what it
    would change or changed."""

    scope: Scope
    version: int | None
    applied: bool
    counts: dict[str, int]
    changes: tuple[Verdict, ...]


@dataclass(frozen=True, slots=True)
class Fact:
    attribute: str
    value: str
    kind: FactKind
    confidence: float
    mention_count: int
    valid_from: Timestamp | None
    valid_to: Timestamp | None
    source: str
    provenance: tuple[uuid.UUID, ...]

    @property
    def current(self) -> bool:
        return self.valid_to is None


@dataclass(frozen=True, slots=True)
class EntityFacts:
    name: str
    mention_count: int
    facts: tuple[Fact, ...]
    triples: tuple[tuple[str, str, int], ...]  # (predicate, object, mentions), open ones

    @property
    def current(self) -> tuple[Fact, ...]:
        return tuple(f for f in self.facts if f.current)

    @property
    def past(self) -> tuple[Fact, ...]:
        return tuple(f for f in self.facts if not f.current)


@dataclass(frozen=True, slots=True)
class Belief:
    """One step of a derivation chain: ``id`` was derived from ``parent``'s sources."""

    depth: int
    parent: uuid.UUID
    id: uuid.UUID
    kind: str
    content: str | None  # None: forgotten (a turn past retention shows its block, kind "block")
    status: str | None


@dataclass(slots=True)
class NightReport:
    """What one night cycle did in one scope; with ``dry_run``, what it would do (nothing written).

    Retention: ``turns_removed`` raw turns were removed (covered by a block of an earlier night,
    arrived more than ``raw_cycles`` cycles of ``cycle_hours`` ago: normal, meso, elder tier);
    ``turns_kept`` more are covered but stay for now, and a night from ``retention_next`` on
    removes them (unless ``retention_enabled`` is false). A dry run fills ``plan`` with the work
    of the stages whose results only running can report (``turns_to_cut``, ``sessions_to_cut``,
    ``turns_to_mine``, ``sessions_to_mine``, ``memories_to_judge``, ``blocks_to_migrate``,
    ``reflexes_to_prune``). Its counts are what the run then does: each scope-wide stage is planned
    with the run's own function over what the stages before it leave (:mod:`mnemo.night.plan`);
    the blocks, facts and insights the night itself makes are not in the counts after them.

    Each attribute is one stage's (the ``report_fields`` of a stage in
    :mod:`mnemo.night.stage_registry`, which fills it and shows it as its ``row``) or the run's
    (``RUN_FIELDS`` there); a test keeps the two in step.
    """

    scope: Scope
    run_id: uuid.UUID
    as_of: Timestamp
    resumed: bool = False
    turns: int = 0
    turns_scored: int = 0
    sessions: int = 0
    blocks: int = 0
    arcs: int = 0
    open_arcs: int = 0
    continuations: int = 0
    live_turns: int = 0
    facts_new: int = 0
    facts_repeated: int = 0
    facts_closed: int = 0
    triples_new: int = 0
    llm_fallbacks: int = 0
    """Knowledge-stage LLM calls (extraction, supersession) that failed or timed out: the offline result
    stood (issue 40 item 4)."""
    insights: int = 0
    narratives: int = 0
    curation_version: int | None = None
    curation_applied: bool = False
    verdicts: dict[str, int] = field(default_factory=dict)
    decayed_light: int = 0
    decayed_deep: int = 0
    blocks_migrated: int = 0
    """Blocks this night moved to the cortex (long-term tier), with ``lines_migrated`` verbatim lines."""
    lines_migrated: int = 0
    cortex_versions: dict[str, int] = field(default_factory=dict)
    """The cortex table versions the run ended at (a backup restores the cortex at these)."""
    tree_nodes: int = 0
    """Nodes of the cortex's RAPTOR tree after this night (levels 1 and up)."""
    turns_removed: int = 0
    blocks_archived: int = 0
    turns_kept: int = 0
    retention_next: Timestamp | None = None
    retention_enabled: bool = True
    reflexes_pruned: int = 0
    """Reflexes unused for 30 days with fewer than two successes, removed (memory-architecture §10.5)."""
    edges_weakened: int = 0
    edges_dropped: int = 0
    raw_cycles: tuple[int, int, int] = (1, 1, 1)
    cycle_hours: float = 24.0
    seconds: float = 0.0
    stage_seconds: dict[str, float] = field(default_factory=dict)
    skipped: tuple[str, ...] = ()
    dry_run: bool = False
    plan: dict[str, int] = field(default_factory=dict)
    inner: dict[str, Any] = field(default_factory=dict)
    """What the inner-life stage did (:class:`InnerLife`'s counts): promotions, tensions, tuning,
    gut axes, persistent failures, safety events and milestones reached."""

    @computed_field  # type: ignore[prop-decorator]  # serialised with the fields by to_jsonable
    @property
    def turns_per_second(self) -> float:
        return self.turns / self.seconds if self.seconds > 0 else 0.0


# --- the inner life (issue 31; cognitive-plan §4.2-4.7, §5.1-5.3; memory-architecture §10.6.3) --------
@dataclass(frozen=True, slots=True)
class Milestone:
    """One bootstrap readiness milestone (cognitive-plan §5.2) and whether a real event reached it."""

    name: str
    description: str
    reached_at: Timestamp | None = None
    evidence: Mapping[str, Any] = field(default_factory=dict)
    """What showed it: the item or outcome ids of the event."""

    @property
    def reached(self) -> bool:
        return self.reached_at is not None


@dataclass(frozen=True, slots=True)
class Readiness:
    """The ten milestones of a scope, in the seed's order (``mnemo readiness``, ``/readiness``)."""

    scope: Scope
    milestones: tuple[Milestone, ...]

    @property
    def reached(self) -> int:
        return sum(m.reached for m in self.milestones)

    @property
    def ready(self) -> bool:
        return self.reached == len(self.milestones)


@dataclass(frozen=True, slots=True)
class GutAxis:
    """A principal direction of the logged gut deltas (cognitive-plan §5.1)."""

    rank: int
    name: str
    """``hope`` once it correlates with good outcomes (its opposite pole: fear), else ``axis N``; with the memory
    at its pole."""
    variance: float
    correlation: float | None
    deltas: int
    computed_at: Timestamp
    axis: tuple[float, ...] = field(default=(), repr=False, compare=False)
    """The direction itself, a unit vector of the embedding space."""


@dataclass(frozen=True, slots=True)
class Tension:
    """A strong value contradicted by behaviour (cognitive-plan §4.2)."""

    id: uuid.UUID
    content: str
    status: Literal["open", "acknowledged", "resolved"]
    surfaced: int
    value_id: str | None
    created_at: Timestamp


@dataclass(frozen=True, slots=True)
class TuningStep:
    """One parameter change the night proposed (cognitive-plan §4.5), applied or held back."""

    at: Timestamp
    name: Literal["blend", "gate", "sampling"]
    params: Mapping[str, Any]
    applied: bool
    reason: str


@dataclass(frozen=True, slots=True)
class SafetyRecord:
    """A safety event (cognitive-plan §3.9): enforced (it blocked) or shadow (it only logged)."""

    at: Timestamp
    check: str
    enforced: bool
    subject: str
    detail: str
    memory_id: uuid.UUID | None = None


@dataclass(frozen=True, slots=True)
class FailurePatternRecord:
    """A task that kept failing across generations (memory-architecture §10.6.3)."""

    task: str
    lineages: tuple[str, ...]
    generations: tuple[int, ...]
    attempts: int
    failures: int
    modes: Mapping[str, int]
    propagated_failures: int
    reflection: str


@dataclass(frozen=True, slots=True)
class TaskAttempt:
    """One task attempted by a strategy or sub-agent (the frustration ledger)."""

    id: uuid.UUID
    lineage: str
    task: str
    generation: int
    mutation_id: uuid.UUID
    parent_mutation_id: uuid.UUID | None
    mutation: str
    success: bool
    failure_mode: str | None
    turns: int | None
    propagated: bool
    created_at: Timestamp


@dataclass(frozen=True, slots=True)
class InnerLife:
    """What the inspector's inner-life page shows: milestones, gut axes, tensions, the blend's alphas
    over time, the gate's tuning, safety events, promotions waiting for approval, persistent failures."""

    scope: Scope
    readiness: Readiness
    axes: tuple[GutAxis, ...]
    tensions: tuple[Tension, ...]
    alphas: Mapping[str, float]
    """The blend alphas in force (self-tuned, or the defaults)."""
    tuned: bool
    history: tuple[TuningStep, ...]
    safety: tuple[SafetyRecord, ...]
    awaiting_approval: tuple[uuid.UUID, ...]
    failures: tuple[FailurePatternRecord, ...]


@dataclass(frozen=True, slots=True)
class Wandering:
    """One memory the idle loop wandered to (cognitive-plan §4.7), and why."""

    id: uuid.UUID
    content: str
    kind: str
    centre: float
    biases: Mapping[str, float]
    """What drew the sample here: neglected, tension, distant, self."""
    vector: tuple[float, ...] = field(repr=False, compare=False)
    associations: tuple[tuple[uuid.UUID, float, str], ...] = ()
    """Memories reached from it over co-access links (two hops): id, strength, text."""


@dataclass(frozen=True, slots=True)
class HeldInput:
    """An input an agent holds between cycles (pending or scheduled), kept in the database."""

    id: uuid.UUID
    kind: Literal["pending", "scheduled"]
    source: str
    text: str
    urgency: float
    charge: float
    confidence: float
    waited: int
    due_at: Timestamp | None


# --- what the adapters and benchmarks read through the facade (issue 30 item 1, DESIGN §5) --------------


@dataclass(frozen=True, slots=True)
class TurnInput:
    """One turn to import (:meth:`mnemo.AsyncArchive.import_turns`), as parsed from a JSONL or LoCoMo
    file (:meth:`mnemo.AsyncArchive.parse_turns`) or built by a caller."""

    session_id: str
    role: str
    content: str
    speaker: str | None = None
    created_at: datetime | None = None
    turn_number: int | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    # a checked, L2-normalised precomputed vector of the active embedder (not embedded again)
    embedding: np.ndarray | None = field(default=None, compare=False, repr=False)
    idempotency_key: str | None = None
    """The client's name for this turn: a turn whose key the scope already holds is a repeat
    (:mod:`mnemo.cognition.text.turn_identity`; without a key, a hash of its session, role, time and content)."""


@dataclass(frozen=True, slots=True)
class Principal:
    """Who a bearer token speaks for (archive-adr §7 "Sigil Scope";
    :meth:`mnemo.AsyncArchive.access.verify_token`)."""

    entity_id: str
    namespace: str | None  # None: every namespace of the entity
    token_id: uuid.UUID


@dataclass(frozen=True, slots=True)
class ListedMemory:
    """One memory of a page of :meth:`mnemo.AsyncArchive.inspect.memories` (``GET /v1/memories``)."""

    id: uuid.UUID
    kind: MemoryKind
    status: MemoryStatus
    content: str
    created_at: Timestamp
    event_time: Timestamp | None
    anchored: bool
    alpha: float
    beta: float


@dataclass(frozen=True, slots=True)
class MemoryPage:
    """A page of memories, newest first; ``next_cursor``: the next page's cursor (None on the last)."""

    items: tuple[ListedMemory, ...]
    next_cursor: uuid.UUID | None


@dataclass(frozen=True, slots=True)
class Item:
    """A turn (``session``, ``turn``, ``role``, ``speaker``) or a memory (``kind`` ... ``beta``) of a
    scope (:meth:`mnemo.AsyncArchive.inspect.item`)."""

    type: Literal["turn", "memory"]
    id: uuid.UUID
    content: str
    created_at: Timestamp
    kind: MemoryKind | None = None
    status: MemoryStatus | None = None
    event_time: Timestamp | None = None
    anchored: bool | None = None
    alpha: float | None = None
    beta: float | None = None
    session: str | None = None
    turn: int | None = None
    role: Role | None = None
    speaker: str | None = None


@dataclass(frozen=True, slots=True)
class Database:
    """The database an archive uses (:attr:`mnemo.AsyncArchive.inspect.database`): ``url`` holds the
    password (for a process joining the same database, the worker's queue); show ``redacted``."""

    url: str
    redacted: str
    embedded: bool


@dataclass(frozen=True, slots=True)
class JobCatalogue:
    """The background queues and the task names stored with each job (archive-adr §2, §4;
    :attr:`mnemo.AsyncArchive.maintenance.JOBS`): both sides of the queue must agree on them."""

    queues: tuple[str, ...]
    ingest: str
    maintenance: str
    night: str
    embed_turns: str
    reembed: str
    night_cycle: str
    night_scope: str
    retry_stalled: str
