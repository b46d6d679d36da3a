"""``mnemo serve``: the HTTP service (FastAPI + uvicorn) with per-identity bearer tokens.

Seed: archive-adr §7 ("Sigil Scope": the server derives the scope from the
token, so a client can never name another entity's scope; "The Grant": reading
another entity's scope needs a grant its owner created; "Shared Scope Is
Exceptional"; "The Mentat Refusal").

The contract is the OpenAPI spec (``/openapi.json``): the bearer scheme, every request body
(unknown fields are refused with 422), every response body, and every error status an operation
can answer. Every error, whatever raised it (mnemo, validation, the framework, a bug), is JSON
``{"error": {"code": ..., "message": ...}}`` with a stable code. A foreign scope read without a
grant is a 403 whether or not the scope exists; a read of one's own scope that holds nothing yet is
a refusal (200), not an error. ``k`` is limited by ``settings.max_k``, the limit every interface
uses, so the request models that carry it are built with the app (:func:`create_app`).

Where an operation has a public record of :mod:`mnemo.models` (``Memory``, ``Turn``,
``RecallResult`` or ``Refusal``, ``ContextBlock``, ``MemoryHistory``, ``EntityFacts``), that record
is the response model, so the body is exactly :func:`~mnemo.models.to_jsonable` of it: the JSON that
``mnemo ... --json`` and the MCP tools give for the same operation.

``POST /v1/import`` is the HTTP face of ``mnemo import`` (archive-adr §4, atomic bulk insert): a
batch of turns in the JSONL import format, each checked exactly as a line of a JSONL file is
(:mod:`mnemo.write.formats`), then written by :func:`mnemo.write.importer.import_turns`, all or
nothing unless ``skip_invalid``.
"""

import hmac
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import Depends, FastAPI, Path, Query, Request, Security
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, ConfigDict, Field, StringConstraints
from starlette.exceptions import HTTPException

from mnemo.archive import AsyncArchive
from mnemo.config import Settings
from mnemo.embed import Embeddings
from mnemo.errors import (
    AccessDeniedError,
    AuthenticationError,
    ContentTooLargeError,
    DatabaseUnavailableError,
    InvalidInputError,
    InvalidScopeError,
    MnemoError,
    NotFoundError,
    UnknownScopeError,
)
from mnemo.interfaces import auth as tokens
from mnemo.interfaces import local
from mnemo.interfaces._remedies import say
from mnemo.models import (
    Belief,
    ContextBlock,
    EntityFacts,
    Memory,
    MemoryHistory,
    MemoryKind,
    MemoryStatus,
    RecallResult,
    Reflex,
    Refusal,
    Role,
    Scope,
    Timestamp,
    Turn,
    to_jsonable,
)
from mnemo.recall import listing
from mnemo.write import importer
from mnemo.write.formats import Skipped, TurnInput, VectorSpace, parse_jsonl
from mnemo.write.packet_format import PacketIn

__all__ = ["IMPORT_PATH", "MAX_BODY_BYTES", "MAX_IMPORT_BYTES", "MAX_IMPORT_TURNS", "NAME_PATTERN", "create_app"]

_log = logging.getLogger("mnemo")

MAX_BODY_BYTES = 256 * 1024
IMPORT_PATH = "/v1/import"
MAX_IMPORT_BYTES = 16 * 1024 * 1024  # the import route's body limit (every other route: MAX_BODY_BYTES)
MAX_IMPORT_TURNS = 10_000  # turns in one import request; send a longer history in several
MAX_TEXT_CHARS = 100_000
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:@+-]{0,127}$"
"""An entity id or namespace (the rule :class:`mnemo.models.Scope` enforces)."""
_NAME_RULE = "use 1-128 letters, digits or '_.:@+-', starting with a letter or digit"
_SCOPE_FIELDS = {"namespace", "owner", "grantee"}  # a malformed one is "invalid_scope", as in the archive
_ONE_LINE = r"^[^\x00-\x1f\x7f-\x9f]+$"  # printable text without line breaks or control characters

_STATUS: list[tuple[type[Exception], int, str]] = [
    (AuthenticationError, 401, "unauthenticated"),
    (AccessDeniedError, 403, "forbidden"),
    (NotFoundError, 404, "not_found"),
    (ContentTooLargeError, 413, "too_large"),
    (InvalidScopeError, 422, "invalid_scope"),
    (InvalidInputError, 422, "invalid_input"),
    (DatabaseUnavailableError, 503, "unavailable"),  # retry later: the database is restarting or gone
    (MnemoError, 500, "internal"),
]
# Framework errors (unknown route, wrong method, ...) keep their status and get a code too.
_HTTP_CODES = {
    400: "bad_request",
    401: "unauthenticated",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "too_large",
    415: "unsupported_media_type",
    422: "invalid_request",
    503: "unavailable",
}


LOCAL = uuid.UUID(int=0)
"""The token id of requests made with the local service's credential (the command line)."""


def _local_principal(request: Request) -> tokens.Principal:
    entity = request.headers.get(local.ENTITY_HEADER)
    if not entity:
        raise AuthenticationError(f"the local credential needs the entity in the {local.ENTITY_HEADER} header")
    request.state.face = "cli"  # the command line asks: its errors say the command, not the request
    return tokens.Principal(Scope(entity).entity_id, None, LOCAL)


def _said(request: Request, exc: MnemoError) -> str:
    """``exc``'s message in the words of whoever asked: the request, or the command line's command."""
    return say(exc, "cli" if getattr(request.state, "face", None) == "cli" else "http")


def _error(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status, headers=headers)


def _log_failure(request: Request, status: int, exc: Exception) -> None:
    """A 500 goes to the server log with its traceback (it is a bug, or a database failure someone
    must look at); a 503 with one line (the database is away, clients retry)."""
    if status == 503:
        _log.warning("%s %s: 503 %s", request.method, request.url.path, exc)
    elif status >= 500:
        _log.error("%s %s: 500", request.method, request.url.path, exc_info=exc)


def _internal() -> JSONResponse:
    return _error(500, "internal", "internal server error; the server log has the details")


# --- the contract: request bodies (unknown fields are refused) and response bodies ------------------
Name = Annotated[str, StringConstraints(pattern=NAME_PATTERN)]
OneLine = Annotated[str, StringConstraints(pattern=_ONE_LINE)]
Process = Annotated[
    str,
    StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:@+-]{0,63}$"),
    Field(description="The subsystem writing (archive-adr §4), e.g. `core`, `simulation:7`."),
]


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")  # a misspelt or smuggled field ("owner") is a 422, not ignored


class RememberIn(_In):
    content: str = Field(min_length=1, max_length=MAX_TEXT_CHARS)
    kind: MemoryKind = "semantic"
    namespace: Name | None = Field(default=None, description="One of your namespaces (default: the token's).")
    process: Process | None = None


class TurnIn(_In):
    session: OneLine = Field(max_length=200, description="The conversation this turn belongs to.")
    role: Role
    content: str = Field(min_length=1, max_length=MAX_TEXT_CHARS)
    speaker: OneLine | None = Field(default=None, max_length=256)
    namespace: Name | None = None
    process: Process | None = None


_AS_OF = (
    "Recall at this point in time (ISO-8601; no offset means UTC): recency and time expressions are "
    "measured from it, and items written after it are left out."
)


class _RecallFields(_In):
    """``RecallIn`` without ``k``, whose maximum is ``settings.max_k`` (the class is made in :func:`create_app`)."""

    query: str = Field(min_length=1, max_length=MAX_TEXT_CHARS)
    namespace: Name | None = None
    owner: Name | None = Field(default=None, description="Read another entity's scope (needs its grant).")
    expand: bool = Field(default=False, description="Block hits come back whole instead of as their quoted lines.")
    level: int | None = Field(
        default=None, ge=0, le=3, description="1-3: the cortex tree's nodes of that level (branch, trunk, canopy)."
    )
    as_of: datetime | None = Field(default=None, description=_AS_OF)
    threshold: float | None = Field(
        default=None, ge=-1.0, le=1.0, description="Refusal threshold for this recall (default: the server's)."
    )
    read_only: bool = Field(default=False, description="No retrieval side effects (no reinforcement or links).")
    processes: list[Process] | None = Field(
        default=None, min_length=1, max_length=32, description="Only items these processes wrote."
    )


class ContextIn(_In):
    text: str = Field(min_length=1, max_length=MAX_TEXT_CHARS)
    budget: int = Field(default=1000, ge=1, le=100_000)
    namespace: Name | None = None
    owner: Name | None = Field(default=None, description="Read another entity's scope (needs its grant).")
    as_of: datetime | None = Field(default=None, description=_AS_OF)


class ImportTurnIn(_In):
    """One turn of the JSONL import format (README, "A JSONL import file"); every value is checked
    as a line of a JSONL file is, so a bad one is skippable (``skip_invalid``), not a malformed request."""

    model_config = ConfigDict(extra="forbid", strict=True)  # JSON types as sent: no "1" for 1, no true for 1

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
    follows: uuid.UUID | None = Field(default=None, description="The reflex that came just before.")
    namespace: Name | None = None


class ReflexQueryIn(_In):
    context: str = Field(min_length=1, max_length=MAX_TEXT_CHARS)
    k: int = Field(default=5, ge=1, le=50)
    read_only: bool = Field(default=False, description="Consulting keeps reflexes from pruning unless read-only.")
    namespace: Name | None = None


class ReflexesOut(BaseModel):
    reflexes: list[Reflex]


class NDJSONResponse(StreamingResponse):
    """A stream of JSON lines."""

    media_type = "application/x-ndjson"


class Packet(PacketIn):
    """A bifocal packet (memory-architecture §6.2): prose, vectors, metadata, references."""


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


class GrantOut(BaseModel):
    grantee: str
    created: bool


class RevokeOut(BaseModel):
    grantee: str
    revoked: bool


class ListedMemoryOut(BaseModel):
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


class ItemOut(BaseModel):
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


_WHY = {
    400: "The body cannot be read (not UTF-8).",
    401: "Missing, malformed, unknown or revoked bearer token.",
    403: "The token may not use that scope (another namespace, or a foreign scope without a grant).",
    404: "No such item or scope.",
    413: f"The request body is over {MAX_BODY_BYTES} bytes.",
    422: "The request is invalid (unknown field, wrong type, bad value, malformed scope name).",
    500: "A bug; the server log has the details.",
    503: "The database is unavailable; retry later.",
}


def _errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    return {status: {"model": ErrorBody, "description": _WHY[status]} for status in (*statuses, 500)}


def _json_errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The errors of a route whose own body is not JSON (they still are)."""
    body = {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}
    return {status: {"description": _WHY[status], "content": body} for status in (*statuses, 500)}


_READ = _errors(400, 401, 403, 413, 422, 503)
_WRITE = _errors(400, 401, 403, 404, 413, 422, 503)  # 404: the scope does not exist and auto_create_scopes is off
_IMPORT = {
    **_WRITE,
    413: {"model": ErrorBody, "description": f"The request body is over {MAX_IMPORT_BYTES} bytes."},
    422: {
        "model": ErrorBody,
        "description": f"The request is invalid (unknown field, wrong type, over {MAX_IMPORT_TURNS} turns), or a "
        "turn is (without skip_invalid; nothing was imported), or none is, or an explicit turn number is taken.",
    },
}


def _import_batch(body: ImportIn, settings: Settings, space: VectorSpace) -> tuple[list[TurnInput], list[SkippedOut]]:
    """The valid turns of ``body`` and the skipped ones, every turn checked as a line of a JSONL import
    (line ``i + 1`` is ``turns[i]``). Without ``skip_invalid`` one bad turn refuses the whole batch."""
    lines = "\n".join(json.dumps(turn.model_dump(exclude_unset=True)) for turn in body.turns)
    problems: list[Skipped] = []
    turns = parse_jsonl(
        lines,
        max_chars=settings.max_content_chars,
        path="turns",
        skipped=problems,
        space=space,
        skew_hours=settings.clock_skew_hours,
    )
    skipped = [SkippedOut(index=(line or 1) - 1, reason=reason) for line, reason in problems]
    if skipped and not body.skip_invalid:
        more = f" (and {len(skipped) - 1} more)" if len(skipped) > 1 else ""
        raise InvalidInputError(
            f"turns[{skipped[0].index}]: {skipped[0].reason}{more}; nothing was imported "
            "(send skip_invalid: true to import the valid turns)"
        )
    if not turns:
        raise InvalidInputError(
            f"no valid turns: all {len(skipped)} were skipped (first: turns[{skipped[0].index}]: "
            f"{skipped[0].reason}); nothing was imported"
        )
    return turns, skipped


def _install_guards(app: FastAPI) -> None:
    """Body-size limit, and every error, whatever raised it, as ``{"error": {"code", "message"}}``."""

    @app.middleware("http")
    async def guard(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        limit = MAX_IMPORT_BYTES if request.url.path == IMPORT_PATH else MAX_BODY_BYTES
        too_large = _error(413, "too_large", f"request bodies here are limited to {limit} bytes")
        length = request.headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > limit):
            return too_large
        if length is None and request.method in ("POST", "PUT", "PATCH"):
            body = await request.body()
            if len(body) > limit:
                return too_large
        try:
            return await call_next(request)
        except Exception:
            # A bug. Answered here rather than by Starlette's last-resort handler, which re-raises after
            # answering, so uvicorn would drop the connection (a reset for the client's next request).
            _log.exception("unhandled error on %s %s", request.method, request.url.path)
            return _internal()

    @app.exception_handler(MnemoError)
    async def mnemo_error(request: Request, exc: MnemoError) -> JSONResponse:
        for kind, status, code in _STATUS:
            if isinstance(exc, kind):
                _log_failure(request, status, exc)
                challenge = {"WWW-Authenticate": "Bearer"} if status == 401 else None
                return _error(status, code, _said(request, exc), challenge)
        return _error(500, "internal", str(exc))  # pragma: no cover

    @app.exception_handler(RequestValidationError)
    async def invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        names = [e for e in errors if e["type"] == "string_pattern_mismatch" and e["loc"][-1] in _SCOPE_FIELDS]
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: " + (_NAME_RULE if e in names else e["msg"]) for e in errors
        )
        return _error(422, "invalid_scope" if errors and len(names) == len(errors) else "invalid_request", problems)

    @app.exception_handler(HTTPException)
    async def framework(_request: Request, exc: HTTPException) -> JSONResponse:
        code = _HTTP_CODES.get(exc.status_code, "internal" if exc.status_code >= 500 else "bad_request")
        return _error(exc.status_code, code, str(exc.detail), dict(exc.headers or {}) or None)

    @app.exception_handler(Exception)
    async def bug(_request: Request, _exc: Exception) -> JSONResponse:
        return _internal()  # last resort (a failure in the guard itself); Starlette logs the traceback


def create_app(
    settings: Settings, *, embeddings: Embeddings | None = None, announce: local.LocalService | None = None
) -> FastAPI:
    """The FastAPI app; the archive opens with the app (lifespan) and closes with it.

    ``announce`` (``mnemo serve``): once the archive is open, the service is announced in
    ``settings.home`` for the command line (:mod:`mnemo.interfaces.local`), and its credential is
    accepted for any entity named in the ``X-Mnemo-Entity`` header; withdrawn when it stops."""
    held: dict[str, AsyncArchive] = {}

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        held["archive"] = await AsyncArchive.open(settings, embeddings=embeddings)
        try:
            if announce is not None:
                await held["archive"].embeddings.load_async()  # the first command need not wait for it
                local.write(settings.home, announce)
            yield
        finally:
            if announce is not None:
                local.remove(settings.home, announce.credential)
            await held.pop("archive").close()

    app = FastAPI(title="mnemo", version="0.1.0", lifespan=lifespan)

    _install_guards(app)

    def archive() -> AsyncArchive:
        return held["archive"]

    bearer = HTTPBearer(
        scheme_name="bearer",
        description="A token from `mnemo token create`; it names the entity (and maybe the namespace) it acts for.",
        auto_error=False,  # a missing token is mnemo's AuthenticationError: the one error shape
    )

    async def principal(
        request: Request,
        credentials: Annotated[HTTPAuthorizationCredentials | None, Security(bearer)],
    ) -> tokens.Principal:
        if credentials is None or not credentials.credentials.strip():
            raise AuthenticationError("send 'Authorization: Bearer <token>' (create one with mnemo token create)")
        presented = credentials.credentials.strip()
        if announce is not None and hmac.compare_digest(presented.encode(), announce.credential.encode()):
            return _local_principal(request)
        return await tokens.verify(archive().runtime, presented)

    Who = Annotated[tokens.Principal, Depends(principal)]

    class RecallIn(_RecallFields):
        """Made here: ``k`` is limited by ``settings.max_k``, and the spec shows that maximum."""

        k: int = Field(
            default=min(10, settings.max_k),
            ge=1,
            le=settings.max_k,
            description=f"How many hits, at most {settings.max_k} (the server's max_k).",
        )

    NamespaceQuery = Annotated[Name | None, Query(description="One of your namespaces (default: the token's).")]

    def own_scope(who: tokens.Principal, namespace: str | None) -> Scope:
        if who.namespace is not None and namespace not in (None, who.namespace):
            raise AccessDeniedError(f"this token is limited to namespace {who.namespace!r}")
        return Scope(who.entity_id, namespace or who.namespace or "default")

    def read_scope(who: tokens.Principal, namespace: str | None, owner: str | None) -> tuple[Scope, str | None]:
        if owner is None or owner == who.entity_id:
            return own_scope(who, namespace), None
        return Scope(owner, namespace or "default"), who.entity_id  # the grant check happens in recall

    @app.get("/health", responses=_errors(503))
    async def health() -> HealthOut:
        problem = await archive().health()
        return HealthOut(status="ok" if problem is None else "degraded", problem=problem)

    @app.get("/v1/local/status", include_in_schema=False)
    async def local_status(who: Who) -> Any:
        """The archive's whole status, for ``mnemo status`` through the local credential only."""
        if who.token_id != LOCAL:
            raise AccessDeniedError("only the command line of this machine may read the whole archive's status")
        return to_jsonable(await archive().status())

    @app.get("/v1/status", responses=_errors(401, 503))
    async def status(who: Who) -> StatusOut:
        rt = archive().runtime
        return StatusOut(entity=who.entity_id, namespace=who.namespace, embedder=rt.slug)

    @app.post("/v1/memories", status_code=201, responses=_WRITE)
    async def remember(body: RememberIn, who: Who) -> Memory:
        """The memory stored (or, for an identical one already there, reinforced)."""
        return await archive().remember(
            own_scope(who, body.namespace), body.content, kind=body.kind, process=body.process
        )

    @app.post("/v1/turns", status_code=201, responses=_WRITE)
    async def record(body: TurnIn, who: Who) -> Turn:
        """The turn recorded, with its number in the session."""
        return await archive().record_turn(
            own_scope(who, body.namespace),
            body.session,
            body.role,
            body.content,
            speaker=body.speaker,
            process=body.process,
        )

    @app.post(IMPORT_PATH, status_code=201, responses=_IMPORT)
    async def import_turns(body: ImportIn, who: Who) -> ImportOut:
        """Import a batch of turns (the JSONL import format) into your own scope: all or nothing, unless
        ``skip_invalid``, which imports the valid turns and reports each one left out with its reason.
        Everything is embedded first; the rows are then written in one short transaction."""
        scope = own_scope(who, body.namespace)
        started = time.perf_counter()
        rt = archive().runtime
        turns, skipped = _import_batch(body, rt.settings, (rt.slug, rt.embeddings.dim))
        await importer.import_turns(rt, scope, turns)
        return ImportOut(
            scope=str(scope),
            turns=len(turns),
            sessions=len({t.session_id for t in turns}),
            seconds=round(time.perf_counter() - started, 3),
            skipped=skipped,
        )

    @app.post("/v1/recall", responses=_READ)
    async def recall(body: RecallIn, who: Who) -> RecallResult | Refusal:
        """Hits best first, or a refusal when nothing stored is reliable (also in a scope that holds
        nothing yet). A foreign scope without a grant is a 403, whether or not it exists."""
        scope, reader = read_scope(who, body.namespace, body.owner)
        return await archive().recall(
            scope,
            body.query,
            body.k,
            as_entity=reader,
            expand=body.expand,
            level=body.level,
            as_of=body.as_of,
            threshold=body.threshold,
            read_only=body.read_only,
            processes=body.processes,
        )

    @app.post("/v1/context", responses=_READ)
    async def context(body: ContextIn, who: Who) -> ContextBlock:
        """The memory block to prepend for ``text``; empty with ``refused`` when memory holds nothing
        reliable (also in a scope that holds nothing yet)."""
        scope, reader = read_scope(who, body.namespace, body.owner)
        return await archive().context(scope, body.text, body.budget, as_entity=reader, as_of=body.as_of)

    @app.delete("/v1/items/{item_id}", responses=_errors(401, 403, 404, 422, 503))
    async def forget(item_id: uuid.UUID, who: Who, namespace: NamespaceQuery = None) -> ForgetOut:
        return ForgetOut(forgotten=item_id, removed=await archive().forget(own_scope(who, namespace), item_id))

    @app.get(
        "/v1/export",
        responses=_json_errors(401, 403, 404, 422, 503)
        | {200: {"model": Packet, "description": "One packet per line."}},
        response_class=NDJSONResponse,
    )
    async def export(who: Who, namespace: NamespaceQuery = None) -> NDJSONResponse:
        """Your scope as bifocal packets, one JSON line each (``mnemo import-packets`` reads them); 404
        when your scope holds nothing yet."""
        scope = own_scope(who, namespace)
        packets = archive().packets(scope)
        first = await anext(packets, None)  # access and unknown-scope errors come here, before the stream

        async def lines() -> AsyncIterator[bytes]:
            if first is None:
                return
            yield (json.dumps(first, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
            async for packet in packets:
                yield (json.dumps(packet, ensure_ascii=False, separators=(",", ":")) + "\n").encode()

        return NDJSONResponse(lines())

    @app.post("/v1/reflexes/outcomes", status_code=201, responses=_WRITE)
    async def record_outcome(body: OutcomeIn, who: Who) -> Reflex:
        """Count one outcome of an action taken in a context (procedural memory); the reflex with its counts."""
        return await archive().record_outcome(
            own_scope(who, body.namespace),
            body.context,
            body.action,
            success=body.success,
            action_type=body.action_type,
            follows=body.follows,
        )

    @app.post("/v1/reflexes/search", responses=_READ)
    async def reflexes_for(body: ReflexQueryIn, who: Who) -> ReflexesOut:
        """The reflexes that fit a context best, with what tended to follow each."""
        scope = own_scope(who, body.namespace)
        found = await archive().reflexes_for(scope, body.context, body.k, read_only=body.read_only)
        return ReflexesOut(reflexes=found)

    @app.delete("/v1/processes/{process}", responses=_errors(401, 403, 422, 503))
    async def forget_process(process: Process, who: Who, namespace: NamespaceQuery = None) -> ProcessForgetOut:
        """Remove every turn and memory ``process`` wrote in your scope, and what was derived from them."""
        removed = await archive().forget_process(own_scope(who, namespace), process)
        return ProcessForgetOut(process=process, removed=removed)

    @app.get("/v1/memories", responses=_errors(401, 403, 422, 503))
    async def memories(
        who: Who,
        namespace: NamespaceQuery = None,
        limit: Annotated[int, Query(ge=1, le=listing.MAX_PAGE, description="Page size.")] = 50,
        cursor: Annotated[uuid.UUID | None, Query(description="The previous page's next_cursor.")] = None,
    ) -> MemoriesOut:
        """Your memories (any status), newest first, a page at a time; empty when the scope holds nothing."""
        rows, following = await listing.memories(
            archive().runtime, own_scope(who, namespace), limit=limit, cursor=cursor
        )
        return MemoriesOut(items=[ListedMemoryOut.model_validate(r) for r in rows], next_cursor=following)

    @app.get("/v1/items/{item_id}", responses=_errors(401, 403, 404, 422, 503))
    async def item(item_id: uuid.UUID, who: Who, namespace: NamespaceQuery = None) -> ItemOut:
        """One turn or memory of your scope (404 when your scope holds no such item)."""
        return ItemOut.model_validate(await listing.item(archive().runtime, own_scope(who, namespace), item_id))

    @app.get("/v1/memories/{memory_id}/why", responses=_errors(401, 403, 404, 422, 503))
    async def why(memory_id: uuid.UUID, who: Who, namespace: NamespaceQuery = None) -> MemoryHistory:
        """A memory's weight history from the audit log."""
        return await archive().why(own_scope(who, namespace), memory_id)

    @app.get("/v1/memories/{memory_id}/believe", responses=_errors(401, 403, 404, 422, 503))
    async def believe(memory_id: uuid.UUID, who: Who, namespace: NamespaceQuery = None) -> BelieveOut:
        """The chain an insight, narrative or fact was derived from, down to the turns."""
        chain = await archive().why_do_i_believe(own_scope(who, namespace), memory_id)
        return BelieveOut(id=memory_id, chain=list(chain))

    @app.get("/v1/facts/{entity}", responses=_errors(401, 403, 404, 422, 503))
    async def facts(
        entity: Annotated[OneLine, Path(min_length=1, max_length=512, description="Who or what the facts are about.")],
        who: Who,
        namespace: NamespaceQuery = None,
    ) -> EntityFacts:
        """Current and past facts, and triples, about one entity (extracted by the night cycle)."""
        return await archive().facts(own_scope(who, namespace), entity)

    @app.get("/v1/grants", responses=_errors(401, 403, 422, 503))
    async def grantees(who: Who, namespace: NamespaceQuery = None) -> GrantsOut:
        """The entities that may read your scope."""
        scope = own_scope(who, namespace)
        try:
            names = await archive().grants(scope)
        except UnknownScopeError:
            names = []  # a scope that holds nothing yet has no grants: not an error
        return GrantsOut(scope=str(scope), grantees=names)

    @app.post("/v1/grants", status_code=201, responses=_WRITE)
    async def grant(body: GrantIn, who: Who) -> GrantOut:
        """Let ``grantee`` read one of your scopes (one that holds something: else 404)."""
        created = await archive().grant(own_scope(who, body.namespace), body.grantee, export=body.export)
        return GrantOut(grantee=body.grantee, created=created)

    @app.delete("/v1/grants/{grantee}", responses=_errors(401, 403, 422, 503))
    async def revoke(
        grantee: Annotated[Name, Path(description="The entity whose grant is withdrawn.")],
        who: Who,
        namespace: NamespaceQuery = None,
    ) -> RevokeOut:
        return RevokeOut(grantee=grantee, revoked=await archive().revoke(own_scope(who, namespace), grantee))

    from mnemo.interfaces import ui  # the inspector's pages (jinja2 is imported with them)

    ui.mount(app, archive)
    return app
