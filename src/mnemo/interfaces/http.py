"""``mnemo serve``: the HTTP service (FastAPI + uvicorn) with per-identity bearer tokens.

Seed: archive-adr §7 ("Sigil Scope": the server derives the scope from the
token, so a client can never name another entity's scope; "The Grant": reading
another entity's scope needs a grant its owner created; "Shared Scope Is
Exceptional"; "The Mentat Refusal"). Errors are JSON
``{"error": {"code": ..., "message": ...}}`` with stable codes.
"""

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, Field

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
)
from mnemo.interfaces import auth as tokens
from mnemo.models import Hit, Refusal, Scope, to_jsonable

__all__ = ["MAX_BODY_BYTES", "create_app"]

MAX_BODY_BYTES = 256 * 1024

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


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


class RememberIn(BaseModel):
    content: str = Field(max_length=100_000)
    kind: str = "semantic"
    namespace: str | None = None


class TurnIn(BaseModel):
    session: str = Field(max_length=256)
    role: str
    content: str = Field(max_length=100_000)
    speaker: str | None = Field(default=None, max_length=256)
    namespace: str | None = None


class RecallIn(BaseModel):
    query: str = Field(max_length=100_000)
    k: int = Field(default=10, ge=1, le=200)
    namespace: str | None = None
    owner: str | None = Field(default=None, description="Read another entity's scope (needs its grant).")


class ContextIn(BaseModel):
    text: str = Field(max_length=100_000)
    budget: int = Field(default=1000, ge=1, le=100_000)
    namespace: str | None = None
    owner: str | None = None


class GrantIn(BaseModel):
    grantee: str
    namespace: str | None = None


def _hit(h: Hit) -> dict[str, Any]:
    return {
        "id": str(h.id),
        "content": h.content,
        "kind": h.memory_kind or "turn",
        "speaker": h.speaker,
        "time": h.created_at.isoformat(),
        "score": h.score,
        "components": h.components(),
    }


def _install_guards(app: FastAPI) -> None:
    """Body-size limit, and every error as ``{"error": {"code", "message"}}`` with its status."""

    @app.middleware("http")
    async def limit_body(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        length = request.headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > MAX_BODY_BYTES):
            return _error(413, "too_large", f"request bodies are limited to {MAX_BODY_BYTES} bytes")
        if length is None and request.method in ("POST", "PUT", "PATCH"):
            body = await request.body()
            if len(body) > MAX_BODY_BYTES:
                return _error(413, "too_large", f"request bodies are limited to {MAX_BODY_BYTES} bytes")
        return await call_next(request)

    @app.exception_handler(MnemoError)
    async def mnemo_error(_request: Request, exc: MnemoError) -> JSONResponse:
        for kind, status, code in _STATUS:
            if isinstance(exc, kind):
                return _error(status, code, str(exc))
        return _error(500, "internal", str(exc))  # pragma: no cover

    @app.exception_handler(RequestValidationError)
    async def invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
        return _error(422, "invalid_request", problems)


def create_app(settings: Settings, *, embeddings: Embeddings | None = None) -> FastAPI:
    """The FastAPI app; the archive opens with the app (lifespan) and closes with it."""
    held: dict[str, AsyncArchive] = {}

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        held["archive"] = await AsyncArchive.open(settings, embeddings=embeddings)
        try:
            yield
        finally:
            await held.pop("archive").close()

    app = FastAPI(title="mnemo", version="0.1.0", lifespan=lifespan)

    _install_guards(app)

    def archive() -> AsyncArchive:
        return held["archive"]

    async def principal(request: Request) -> tokens.Principal:
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise AuthenticationError("send 'Authorization: Bearer <token>' (create one with mnemo token create)")
        return await tokens.verify(archive().runtime, token.strip())

    Who = Annotated[tokens.Principal, Depends(principal)]

    def own_scope(who: tokens.Principal, namespace: str | None) -> Scope:
        if who.namespace is not None and namespace not in (None, who.namespace):
            raise AccessDeniedError(f"this token is limited to namespace {who.namespace!r}")
        return Scope(who.entity_id, namespace or who.namespace or "default")

    def read_scope(who: tokens.Principal, namespace: str | None, owner: str | None) -> tuple[Scope, str | None]:
        if owner is None or owner == who.entity_id:
            return own_scope(who, namespace), None
        return Scope(owner, namespace or "default"), who.entity_id  # the grant check happens in recall

    @app.get("/health")
    async def health() -> dict[str, Any]:
        problem = await archive().health()
        return {"status": "ok" if problem is None else "degraded", "problem": problem}

    @app.get("/v1/status")
    async def status(who: Who) -> dict[str, Any]:
        rt = archive().runtime
        return {"entity": who.entity_id, "namespace": who.namespace, "embedder": rt.slug}

    @app.post("/v1/memories", status_code=201)
    async def remember(body: RememberIn, who: Who) -> dict[str, Any]:
        memory = await archive().remember(own_scope(who, body.namespace), body.content, kind=body.kind)
        return {"id": str(memory.id), "kind": memory.kind, "scope": str(memory.scope)}

    @app.post("/v1/turns", status_code=201)
    async def record(body: TurnIn, who: Who) -> dict[str, Any]:
        turn = await archive().record_turn(
            own_scope(who, body.namespace), body.session, body.role, body.content, speaker=body.speaker
        )
        return {"id": str(turn.id), "session": turn.session_id, "turn": turn.turn_number}

    @app.post("/v1/recall")
    async def recall(body: RecallIn, who: Who) -> dict[str, Any]:
        scope, reader = read_scope(who, body.namespace, body.owner)
        result = await archive().recall(scope, body.query, body.k, as_entity=reader)
        if isinstance(result, Refusal):
            return {"refused": True, "message": result.message, "hits": []}
        return {"refused": False, "hits": [_hit(h) for h in result.hits]}

    @app.post("/v1/context")
    async def context(body: ContextIn, who: Who) -> dict[str, Any]:
        scope, reader = read_scope(who, body.namespace, body.owner)
        block = await archive().context(scope, body.text, body.budget, as_entity=reader)
        return to_jsonable(block)

    @app.delete("/v1/items/{item_id}")
    async def forget(item_id: uuid.UUID, who: Who, namespace: str | None = None) -> dict[str, Any]:
        return {"forgotten": str(item_id), "removed": await archive().forget(own_scope(who, namespace), item_id)}

    @app.post("/v1/grants", status_code=201)
    async def grant(body: GrantIn, who: Who) -> dict[str, Any]:
        created = await archive().grant(own_scope(who, body.namespace), body.grantee)
        return {"grantee": body.grantee, "created": created}

    @app.delete("/v1/grants/{grantee}")
    async def revoke(grantee: str, who: Who, namespace: str | None = None) -> dict[str, Any]:
        return {"grantee": grantee, "revoked": await archive().revoke(own_scope(who, namespace), grantee)}

    return app
