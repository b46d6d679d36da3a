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
(:meth:`mnemo.AsyncArchive.parse_turns`), then written by :meth:`mnemo.AsyncArchive.import_turns`,
all or nothing unless ``skip_invalid``.

The shapes live in :mod:`mnemo.interfaces.shapes`, the operations in :mod:`mnemo.interfaces._http_routers`
(one router per area); this module makes the app and answers every error.
"""

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from fastapi import Depends, FastAPI, Request
from fastapi import HTTPException as FastAPIHTTPException
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

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
from mnemo.interfaces import _admission as admission
from mnemo.interfaces import local
from mnemo.interfaces._http_routers import routers
from mnemo.interfaces._http_support import authenticate, known_query
from mnemo.interfaces._remedies import say
from mnemo.interfaces.shapes import (
    IMPORT_PATH,
    MAX_BODY_BYTES,
    MAX_IMPORT_BYTES,
    MAX_IMPORT_TURNS,
    NAME_PATTERN,
    error_body,
)

__all__ = ["IMPORT_PATH", "MAX_BODY_BYTES", "MAX_IMPORT_BYTES", "MAX_IMPORT_TURNS", "NAME_PATTERN", "create_app"]

_log = logging.getLogger("mnemo")

_NAME_RULE = "use 1-128 letters, digits or '_.:@+-', starting with a letter or digit"
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_RETRY_AFTER_SECONDS = 2
"""What a 503 of a database that is away advises (the pool reconnects within a few seconds)."""
_SCOPE_FIELDS = {"namespace", "owner", "grantee"}  # a malformed one is "invalid_scope", as in the archive

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


def _said(request: Request, exc: MnemoError) -> str:
    """``exc``'s message in the words of whoever asked: the request, or the command line's command."""
    return say(exc, "cli" if getattr(request.state, "face", None) == "cli" else "http")


def _error(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(error_body(code, message), status_code=status, headers=headers)


def _log_failure(request: Request, status: int, exc: Exception) -> None:
    """A 500 goes to the server log with its traceback (it is a bug, or a database failure someone
    must look at); a 503 with one line (the database is away, clients retry)."""
    if status == 503:
        _log.warning("%s %s: 503 %s", request.method, request.url.path, exc)
    elif status >= 500:
        _log.error("%s %s: 500", request.method, request.url.path, exc_info=exc)


def _internal() -> JSONResponse:
    return _error(500, "internal", "internal server error; the server log has the details")


def _location(loc: tuple[int | str, ...]) -> str:
    """Where a request's value was wrong, as HTTP says it (``body.budget``)."""
    return ".".join(str(p) for p in loc)


def _option(loc: tuple[int | str, ...]) -> str:
    """The same, as the command line that sent it says it (``--budget``): the local service's client."""
    named = [p for p in loc[1:] if isinstance(p, str)]
    return f"--{named[0].replace('_', '-')}" if named else _location(loc)


def _mnemo_response(request: Request, exc: MnemoError) -> JSONResponse:
    for kind, status, code in _STATUS:
        if isinstance(exc, kind):
            _log_failure(request, status, exc)
            headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
            if status == 503:  # the database is restarting or away: a client may try again shortly
                headers = {"Retry-After": str(_RETRY_AFTER_SECONDS)}
            return _error(status, code, _said(request, exc), headers)
    return _error(500, "internal", str(exc))  # pragma: no cover


class _TooLarge(FastAPIHTTPException):
    """A request body went past its route's limit while it was being read (an HTTP error, so the
    framework answers it as such wherever it surfaces: FastAPI re-raises these from body parsing)."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, _too_large_message(limit), {"Connection": "close"})


def _too_large_message(limit: int) -> str:
    return f"request bodies here are limited to {limit} bytes"


class _BodyLimit:
    """The body-size limit, enforced as the body arrives (pure ASGI, inside the guard, so after it has
    authenticated): a declared length over the limit is answered 413 before anything is read, and a
    chunked body is counted chunk by chunk and cut off at the limit (:class:`_TooLarge`, which the
    framework answers), so an oversized stream never sits in the service's memory."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in _BODY_METHODS:
            await self.app(scope, receive, send)
            return
        limit = MAX_IMPORT_BYTES if scope["path"] == IMPORT_PATH else MAX_BODY_BYTES
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > limit):
            too_large = _error(413, "too_large", _too_large_message(limit), {"Connection": "close"})  # rest unread
            await too_large(scope, receive, send)
            return
        received = 0

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise _TooLarge(limit)
            return message

        await self.app(scope, counted, send)


def _routed(app: FastAPI, request: Request) -> bool:
    """Whether an API operation takes this request (an unknown route or method keeps its 404/405)."""
    return request.url.path.startswith("/v1/") and any(
        route.matches(request.scope)[0] is Match.FULL for route in app.router.routes
    )


def _install_guards(app: FastAPI) -> None:
    """Body-size limit, and every error, whatever raised it, as ``{"error": {"code", "message"}}``."""

    @app.middleware("http")
    async def guard(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        if request.method in _BODY_METHODS and _routed(app, request):
            try:  # who sends a body is known before a byte of it is read
                request.state.principal = await authenticate(request)
            except MnemoError as exc:
                return _mnemo_response(request, exc)
        try:
            return await call_next(request)
        except Exception:
            # A bug. Answered here rather than by Starlette's last-resort handler, which re-raises after
            # answering, so uvicorn would drop the connection (a reset for the client's next request).
            _log.exception("unhandled error on %s %s", request.method, request.url.path)
            return _internal()

    @app.exception_handler(MnemoError)
    async def mnemo_error(request: Request, exc: MnemoError) -> JSONResponse:
        return _mnemo_response(request, exc)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        if malformed := [e for e in errors if e["type"] == "json_invalid"]:  # not JSON at all: the request is bad
            detail = malformed[0].get("ctx", {}).get("error", "not JSON")
            return _error(
                400, "bad_request", f"the body is not valid JSON ({detail}, at {_location(malformed[0]['loc'])})"
            )
        names = [e for e in errors if e["type"] == "string_pattern_mismatch" and e["loc"][-1] in _SCOPE_FIELDS]
        where = _option if getattr(request.state, "face", None) == "cli" else _location
        problems = "; ".join(f"{where(e['loc'])}: " + (_NAME_RULE if e in names else e["msg"]) for e in errors)
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

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.archive = await AsyncArchive.open(admission.sized(settings), embeddings=embeddings)
        try:
            if announce is not None:
                await app.state.archive.embeddings.load_async()  # the first command need not wait for it
                local.write(settings.home, announce)
            yield
        finally:
            if announce is not None:
                local.remove(settings.home, announce.credential)
            archive, app.state.archive = app.state.archive, None
            await archive.close()

    app = FastAPI(title="mnemo", version="0.1.0", lifespan=lifespan)
    app.state.archive, app.state.announce = None, announce
    app.add_middleware(_BodyLimit)  # innermost: counts the body as the route reads it, after the guard's auth
    _install_guards(app)
    admission.install(app, settings)  # a turn at the door, and a connection for every admitted request
    for router in routers(settings):
        app.include_router(router, dependencies=[Depends(known_query)])

    def archive() -> AsyncArchive:
        opened: AsyncArchive | None = app.state.archive
        if opened is None:
            raise KeyError("archive")
        return opened

    from mnemo.interfaces import ui  # the inspector's pages (jinja2 is imported with them)

    ui.mount(app, archive)
    return app
