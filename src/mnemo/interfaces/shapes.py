"""Every JSON shape the interfaces speak, defined once (issue 30 item 3; DESIGN §6).

The HTTP request bodies (unknown fields refused) and response bodies live here; the command
line's ``--json`` output, the MCP tools' results and the HTTP error body use the same
definitions, so one operation gives one JSON whatever face it is asked through (checked by
``tests/integration/test_json_shapes.py``). Where an operation has a public record of
:mod:`mnemo.models`, that record is the shape (its JSON is :func:`~mnemo.models.to_jsonable`).
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from mnemo.models import (
    BackupManifest,
    Belief,
    ContextBlock,
    FailurePatternRecord,
    GutAxis,
    InnerLife,
    MemoryKind,
    MemoryStatus,
    NightReport,
    Readiness,
    RecallResult,
    Reflex,
    Refusal,
    Role,
    SafetyRecord,
    Scope,
    Tension,
    Timestamp,
    TuningStep,
)

MAX_BODY_BYTES = 256 * 1024
IMPORT_PATH = "/v1/import"
MAX_IMPORT_BYTES = 16 * 1024 * 1024  # the import route's body limit (every other route: MAX_BODY_BYTES)
MAX_IMPORT_TURNS = 10_000  # turns in one import request; send a longer history in several
MAX_TEXT_CHARS = 100_000
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:@+-]{0,127}$"
"""An entity id or namespace (the rule :class:`mnemo.models.Scope` enforces)."""
_ONE_LINE = r"^[^\x00-\x1f\x7f-\x9f]+$"  # printable text without line breaks or control characters


# --- the contract: request bodies (unknown fields are refused) and response bodies ------------------
Name = Annotated[str, StringConstraints(pattern=NAME_PATTERN)]
OneLine = Annotated[str, StringConstraints(pattern=_ONE_LINE)]
Process = Annotated[
    str,
    StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:@+-]{0,63}$"),
    Field(description="The subsystem writing (archive-adr §4), e.g. `core`, `simulation:7`."),
]


class _In(BaseModel):
    # A misspelt or smuggled field ("owner") is a 422, not ignored; a value is taken in its own JSON type
    # ("5" is no number, true no integer: issue 39 item 9); times and ids are text in JSON, so those fields
    # say ``strict=False`` and parse ISO 8601 and UUID strings.
    model_config = ConfigDict(extra="forbid", strict=True)


class _Out(BaseModel):
    model_config = ConfigDict(from_attributes=True)  # made from the record of the same fields


_WHEN = (
    "When it happened (ISO-8601; no offset means UTC; default: now), at most the server's clock_skew_hours "
    "(MNEMO_CLOCK_SKEW_HOURS, default 24) ahead of its clock."
)


class RememberIn(_In):
    content: str = Field(min_length=1, max_length=MAX_TEXT_CHARS)
    kind: MemoryKind = "semantic"
    event_time: datetime | None = Field(default=None, strict=False, description=_WHEN)
    namespace: Name | None = Field(default=None, description="One of your namespaces (default: the token's).")
    process: Process | None = None


class TurnIn(_In):
    session: OneLine = Field(max_length=200, description="The conversation this turn belongs to.")
    role: Role
    content: str = Field(min_length=1, max_length=MAX_TEXT_CHARS)
    speaker: OneLine | None = Field(default=None, max_length=256)
    created_at: datetime | None = Field(default=None, strict=False, description=_WHEN)
    namespace: Name | None = None
    process: Process | None = None
    idempotency_key: OneLine | None = Field(
        default=None,
        max_length=200,
        description="Your name for this turn (or the `Idempotency-Key` header): a retry with the same key "
        "stores nothing and answers the turn stored the first time, with `repeat` true.",
    )


_AS_OF = (
    "Recall at this point in time (ISO-8601; no offset means UTC): recency and time expressions are "
    "measured from it, and items written after it are left out."
)


class RecallFields(_In):
    """``RecallIn`` without ``k``, whose maximum is ``settings.max_k`` (the class is made in :func:`create_app`)."""

    query: str = Field(min_length=1, max_length=MAX_TEXT_CHARS)
    namespace: Name | None = None
    owner: Name | None = Field(default=None, description="Read another entity's scope (needs its grant).")
    expand: bool = Field(default=False, description="Block hits come back whole instead of as their quoted lines.")
    level: int | None = Field(
        default=None, ge=0, le=3, description="1-3: the cortex tree's nodes of that level (branch, trunk, canopy)."
    )
    as_of: datetime | None = Field(default=None, strict=False, description=_AS_OF)
    threshold: float | None = Field(
        default=None,
        ge=-1.0,
        le=1.0,
        allow_inf_nan=False,
        description="Refusal threshold for this recall (default: the server's).",
    )
    read_only: bool = Field(default=False, description="No retrieval side effects (no reinforcement or links).")
    processes: list[Process] | None = Field(
        default=None, min_length=1, max_length=32, description="Only items these processes wrote."
    )


class RecallIn(RecallFields):
    """``POST /v1/recall``'s body as a client sends it (``mnemo recall`` to a running service); the
    service's own, made in :func:`mnemo.interfaces._http_routers.reads`, limits ``k`` to its ``max_k``."""

    k: int = Field(default=10, ge=1)


class ContextIn(_In):
    text: str = Field(min_length=1, max_length=MAX_TEXT_CHARS)
    budget: int = Field(default=1000, ge=1, le=100_000)
    namespace: Name | None = None
    owner: Name | None = Field(default=None, description="Read another entity's scope (needs its grant).")
    as_of: datetime | None = Field(default=None, strict=False, description=_AS_OF)


class ImportTurnIn(_In):
    """One turn of the JSONL import format (README, "A JSONL import file"); every value is checked
    as a line of a JSONL file is, so a bad one is skippable (``skip_invalid``), not a malformed request."""

    # JSON types as sent (no "1" for 1, no true for 1). An unknown field is the turn's problem, not the
    # request's: the JSONL check reports it for that turn, with its "did you mean", and ``skip_invalid``
    # skips just that turn (issue 39 item 12).
    # The spec still says no other field belongs in a turn: one is refused, for that turn.
    model_config = ConfigDict(extra="allow", strict=True, json_schema_extra={"additionalProperties": False})

    content: str | None = Field(default=None, description="The turn's text (required, here or as `text`).")
    text: str | None = Field(default=None, description="Another name for `content`.")
    session: str | int | None = Field(default=None, description='1-200 characters of one line; default "default".')
    session_id: str | int | None = Field(default=None, description="Another name for `session`.")
    role: str | None = Field(default=None, description="user (default), assistant, system or tool.")
    speaker: str | None = Field(default=None, description="Who said it: one line of printable text.")
    created_at: str | None = Field(
        default=None,
        description="ISO-8601 date-time (default: now); naive is UTC. At most the server's clock_skew_hours "
        "(MNEMO_CLOCK_SKEW_HOURS, default 24) ahead of its clock.",
    )
    turn: int | None = Field(
        default=None, description="Its number in the session, unused there (default: the next free one)."
    )
    turn_number: int | None = Field(default=None, description="Another name for `turn`.")
    metadata: dict[str, Any] | None = None
    embedding: list[float] | None = Field(
        default=None, description="A precomputed vector of the active embedder (needs `embedding_model`)."
    )
    embedding_model: str | None = Field(
        default=None, description="The slug of the model that made `embedding` (`GET /v1/status`: embedder)."
    )
    idempotency_key: str | None = Field(
        default=None,
        description="Your name for this turn, once per request: a turn whose key the scope holds is a repeat "
        "(without one: the same session, role, created_at and content). Repeats are skipped and counted.",
    )


class ImportIn(_In):
    turns: list[ImportTurnIn] = Field(min_length=1, max_length=MAX_IMPORT_TURNS)
    skip_invalid: bool = Field(
        default=False, description="Import the valid turns and report the others (default: one bad turn, none)."
    )
    namespace: Name | None = Field(default=None, description="One of your namespaces (default: the token's).")


class GrantIn(_In):
    grantee: Name = Field(description="The entity that may read the scope (not yourself).")
    namespace: Name | None = None
    export: bool = Field(default=False, description="Also let it export the scope's packets (`mnemo export --as`).")


class ErrorDetail(BaseModel):
    code: str = Field(
        description="Stable: unauthenticated, forbidden, not_found, method_not_allowed, too_large, "
        "invalid_request, invalid_input, invalid_scope, bad_request, unavailable, internal."
    )
    message: str = Field(description="What went wrong and what to do about it.")


class ErrorBody(BaseModel):
    """Every error, whatever its status."""

    error: ErrorDetail


class HealthOut(BaseModel):
    status: Literal["ok", "degraded"]
    problem: str | None


class StatusOut(BaseModel):
    entity: str
    namespace: str | None
    embedder: str


class ForgetOut(BaseModel):
    forgotten: uuid.UUID
    removed: dict[str, int]


class OutcomeIn(_In):
    context: str = Field(min_length=1, max_length=MAX_TEXT_CHARS, description="The situation the action was taken in.")
    action: OneLine = Field(max_length=2000, description="What was done (a tool call, a response pattern, ...).")
    success: bool
    action_type: Literal["tool_call", "response_pattern", "delegation"] = "tool_call"
    follows: uuid.UUID | None = Field(default=None, strict=False, description="The reflex that came just before.")
    namespace: Name | None = None


class ReflexQueryIn(_In):
    context: str = Field(min_length=1, max_length=MAX_TEXT_CHARS)
    k: int = Field(default=5, ge=1, le=50)
    read_only: bool = Field(default=False, description="Consulting keeps reflexes from pruning unless read-only.")
    namespace: Name | None = None


class ReflexesOut(BaseModel):
    reflexes: list[Reflex]


class ProcessForgetOut(BaseModel):
    process: str
    removed: dict[str, int]


class SkippedOut(BaseModel):
    index: int = Field(description="The turn's position in the request's `turns`, counting from 0.")
    reason: str


class ImportOut(BaseModel):
    """What an import wrote (the fields of ``mnemo import --json``)."""

    scope: str
    turns: int = Field(description="Turns written.")
    sessions: int = Field(description="Sessions they went to.")
    seconds: float
    skipped: list[SkippedOut] = Field(description="The turns left out (with skip_invalid), in request order.")
    skipped_repeats: int = Field(
        description="Turns the scope already held (a retried request, the same history sent again): not stored."
    )


class GrantOut(BaseModel):
    grantee: str
    created: bool


class RevokeOut(BaseModel):
    grantee: str
    revoked: bool


class ListedMemoryOut(_Out):
    id: uuid.UUID
    kind: MemoryKind
    status: MemoryStatus
    content: str
    created_at: Timestamp
    event_time: Timestamp | None
    anchored: bool
    alpha: float
    beta: float


class MemoriesOut(BaseModel):
    items: list[ListedMemoryOut] = Field(description="Newest first.")
    next_cursor: uuid.UUID | None = Field(description="Pass as ``cursor`` for the next page; null on the last.")


class ItemOut(_Out):
    """A turn (``session``, ``turn``, ``role``, ``speaker``) or a memory (``kind`` ... ``beta``)."""

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


class GrantsOut(BaseModel):
    scope: str
    grantees: list[str] = Field(description="Sorted; empty when the scope holds nothing yet.")


class BelieveOut(BaseModel):
    id: uuid.UUID
    chain: list[Belief] = Field(description="What the memory was derived from, step by step.")


# --- the command line's and MCP's answers that the HTTP service does not give ------------------------


class FileSkippedOut(BaseModel):
    line: int | None = Field(description="The file's line (None for formats without lines: LoCoMo).")
    reason: str


class FileImportOut(BaseModel):
    """``mnemo import --json``: what importing a file wrote."""

    scope: str
    format: str
    turns: int
    sessions: int
    seconds: float
    skipped: list[FileSkippedOut]
    skipped_repeats: int = Field(description="Turns the scope already held (the file imported before): not stored.")


class PurgeOut(BaseModel):
    """``mnemo purge --json``: the scope purged (``entity/*``: every namespace) and the rows removed."""

    purged: str
    removed: dict[str, int]


class ReembedQueuedOut(BaseModel):
    """``mnemo reembed --background --json``: the job queued (None: one was already waiting)."""

    job: int | None
    queued: bool


class ReembedOut(BaseModel):
    """``mnemo reembed --json``: items re-embedded, and those still waiting."""

    reembedded: int
    pending: int


class CurationAppliedOut(BaseModel):
    """``mnemo curate --apply --json``: the version applied and how many memories changed status."""

    version: int
    changed: int


class BackupOut(BaseModel):
    """``mnemo backup --json`` (and ``restore``, ``backup verify``): the file and its manifest."""

    file: str
    bytes: int
    seconds: float | None
    manifest: BackupManifest


class ForkOut(BaseModel):
    """``mnemo fork --json``: the new scope and the one it branched from."""

    fork: str
    parent: str


class TokenOut(BaseModel):
    """``mnemo token create --json``: the token (shown once) and what it is bound to."""

    token: str
    id: str
    entity: str
    namespace: str | None
    expires_at: str | None


class DemoOut(BaseModel):
    """``mnemo demo --json``: the sample conversation's recalls, context block and night cycle."""

    recalls: list[RecallResult | Refusal]
    context: ContextBlock
    night: NightReport


class DemoHomeOut(DemoOut):
    """``mnemo demo --fresh --json``: also the home it ran in, and whether it was kept."""

    home: str
    kept: bool


class PacketsOut(BaseModel):
    """MCP ``export_packets``: one page of bifocal packets (memory-architecture §6.2)."""

    packets: list[dict[str, Any]]
    next: str | None = Field(description="Pass as ``after`` for the next page; None on the last.")


def request_body(shape: type[_In], **fields: Any) -> dict[str, Any]:
    """The JSON body of a request of ``shape`` as a client sends it: the fields given, in that order
    (a name the shape lacks is a ``TypeError`` here); the service checks the values."""
    unknown = fields.keys() - shape.model_fields.keys()
    if unknown:
        raise TypeError(f"{shape.__name__} has no field {', '.join(sorted(unknown))}")
    return dict(fields)


def dump(shape: BaseModel) -> dict[str, Any]:
    """``shape`` as the JSON-ready dict every face prints or answers."""
    return shape.model_dump(mode="json")


def error_body(code: str, message: str) -> dict[str, Any]:
    """The body of every error, on every face: ``{"error": {"code", "message"}}``."""
    return ErrorBody(error=ErrorDetail(code=code, message=message)).model_dump()


# --- the inner life (issue 31) -----------------------------------------------------------------------
class FeedbackIn(_In):
    outcome_id: uuid.UUID = Field(
        strict=False, description="What the outcome links back to: a recall's outcome_id, a gut delta's."
    )
    value: float = Field(default=1.0, ge=-1, le=1, allow_inf_nan=False, description="-1 went badly .. 1 went well.")
    used: list[Annotated[uuid.UUID, Field(strict=False)]] = Field(
        default_factory=list, max_length=100, description="The recalled items used."
    )
    kind: Literal["feedback", "task"] = "feedback"
    detail: str = Field(default="", max_length=2000)
    namespace: Name | None = None


class FeedbackOut(BaseModel):
    id: uuid.UUID


class MilestoneOut(BaseModel):
    name: str
    description: str
    reached: bool
    reached_at: Timestamp | None
    evidence: dict[str, Any]


class ReadinessOut(BaseModel):
    """The ten bootstrap readiness milestones (``GET /v1/readiness``, ``mnemo readiness --json``)."""

    entity_id: str
    namespace: str
    reached: int
    ready: bool
    milestones: list[MilestoneOut]

    @classmethod
    def of(cls, found: Readiness) -> ReadinessOut:
        return cls(
            entity_id=found.scope.entity_id, namespace=found.scope.namespace, reached=found.reached, ready=found.ready,
            milestones=[MilestoneOut(name=m.name, description=m.description, reached=m.reached,
                                     reached_at=m.reached_at, evidence=dict(m.evidence)) for m in found.milestones],
        )  # fmt: skip


class InnerOut(BaseModel):
    """The inner life (``GET /v1/inner``); its ``readiness`` is :class:`ReadinessOut`, the one shape of
    ``GET /v1/readiness`` (issue 39 item 15: the two answered the same milestones in two shapes)."""

    scope: Scope
    readiness: ReadinessOut
    axes: tuple[GutAxis, ...]
    tensions: tuple[Tension, ...]
    alphas: dict[str, float]
    tuned: bool
    history: tuple[TuningStep, ...]
    safety: tuple[SafetyRecord, ...]
    awaiting_approval: tuple[uuid.UUID, ...]
    failures: tuple[FailurePatternRecord, ...]

    @classmethod
    def of(cls, life: InnerLife) -> InnerOut:
        return cls(
            scope=life.scope, readiness=ReadinessOut.of(life.readiness), axes=life.axes, tensions=life.tensions,
            alphas=dict(life.alphas), tuned=life.tuned, history=life.history, safety=life.safety,
            awaiting_approval=life.awaiting_approval, failures=life.failures,
        )  # fmt: skip
