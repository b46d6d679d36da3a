"""The HTTP service's routes, one :class:`fastapi.APIRouter` per area (issue 30 item 6), and what
they share: the archive of the app, the caller's principal, the scopes a token may use, and the
errors each operation can answer. :func:`mnemo.interfaces.http.create_app` puts them together.

Seed: archive-adr §7 ("Sigil Scope": the scope comes from the token; "The Grant").
"""

import hmac
import json
import uuid
from typing import Annotated, Any

from fastapi import Depends, Request, Security
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from mnemo.archive import AsyncArchive
from mnemo.errors import AccessDeniedError, AuthenticationError, InvalidInputError
from mnemo.interfaces import local
from mnemo.interfaces.shapes import (
    MAX_BODY_BYTES,
    MAX_IMPORT_BYTES,
    MAX_IMPORT_TURNS,
    ErrorBody,
    ImportIn,
    SkippedOut,
)
from mnemo.models import Principal, Scope, TurnInput

__all__ = [
    "IMPORT",
    "LOCAL",
    "READ",
    "WRITE",
    "Arch",
    "Who",
    "authenticate",
    "errors",
    "import_batch",
    "json_errors",
    "known_query",
]

LOCAL = uuid.UUID(int=0)
"""The token id of requests made with the local service's credential (the command line)."""


def archive_of(request: Request) -> AsyncArchive:
    """The archive the app opened (lifespan)."""
    archive: AsyncArchive = request.app.state.archive
    return archive


Arch = Annotated[AsyncArchive, Depends(archive_of)]

bearer = HTTPBearer(
    scheme_name="bearer",
    description="A token from `mnemo token create`; it names the entity (and maybe the namespace) it acts for.",
    auto_error=False,  # a missing token is mnemo's AuthenticationError: the one error shape
)


def _local_principal(request: Request) -> Principal:
    entity = request.headers.get(local.ENTITY_HEADER)
    if not entity:
        raise AuthenticationError(f"the local credential needs the entity in the {local.ENTITY_HEADER} header")
    request.state.face = "cli"  # the command line asks: its errors say the command, not the request
    return Principal(Scope(entity).entity_id, None, LOCAL)


async def principal(
    request: Request, credentials: Annotated[HTTPAuthorizationCredentials | None, Security(bearer)]
) -> Principal:
    """Who the request's bearer token speaks for (or the command line, with the local credential);
    a request that sends a body was authenticated before its body was read (:func:`authenticate`)."""
    known: Principal | None = getattr(request.state, "principal", None)
    if known is not None:
        return known
    return await _authenticated(request, credentials.credentials if credentials else None)


async def authenticate(request: Request) -> Principal:
    """The request's principal from its ``Authorization`` header alone (nothing of the body)."""
    scheme, _, presented = request.headers.get("authorization", "").partition(" ")
    return await _authenticated(request, presented if scheme.lower() == "bearer" else None)


async def _authenticated(request: Request, presented: str | None) -> Principal:
    if presented is None or not presented.strip():
        raise AuthenticationError("send 'Authorization: Bearer <token>' (create one with mnemo token create)")
    presented = presented.strip()
    announce: local.LocalService | None = request.app.state.announce
    if announce is not None and hmac.compare_digest(presented.encode(), announce.credential.encode()):
        return _local_principal(request)
    return await archive_of(request).access.verify_token(presented)


Who = Annotated[Principal, Depends(principal)]


def own_scope(who: Principal, namespace: str | None) -> Scope:
    """The caller's own scope ``namespace`` (default: the token's, else ``default``)."""
    if who.namespace is not None and namespace not in (None, who.namespace):
        raise AccessDeniedError(f"this token is limited to namespace {who.namespace!r}")
    return Scope(who.entity_id, namespace or who.namespace or "default")


def read_scope(who: Principal, namespace: str | None, owner: str | None) -> tuple[Scope, str | None]:
    """The scope a read names, and the reader when it is another entity's (the grant check happens in recall)."""
    if owner is None or owner == who.entity_id:
        return own_scope(who, namespace), None
    return Scope(owner, namespace or "default"), who.entity_id


_WHY = {
    400: "The body cannot be read (not UTF-8).",
    401: "Missing, malformed, unknown or revoked bearer token.",
    403: "The token may not use that scope (another namespace, or a foreign scope without a grant).",
    404: "No such item or scope.",
    413: f"The request body is over {MAX_BODY_BYTES} bytes.",
    422: "The request is invalid (unknown field, wrong type, bad value, malformed scope name).",
    500: "A bug; the server log has the details.",
    503: "The database is unavailable (code unavailable), or every turn at the door is taken (code busy, with "
    "Retry-After); retry later.",
}


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The OpenAPI responses of these error statuses (and 500)."""
    return {status: {"model": ErrorBody, "description": _WHY[status]} for status in (*statuses, 500)}


def json_errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The errors of a route whose own body is not JSON (they still are)."""
    body = {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}
    return {status: {"description": _WHY[status], "content": body} for status in (*statuses, 500)}


READ = errors(400, 401, 403, 413, 422, 503)
WRITE = errors(400, 401, 403, 404, 413, 422, 503)  # 404: the scope does not exist and auto_create_scopes is off
IMPORT = {
    **WRITE,
    413: {"model": ErrorBody, "description": f"The request body is over {MAX_IMPORT_BYTES} bytes."},
    422: {
        "model": ErrorBody,
        "description": f"The request is invalid (unknown field, wrong type, over {MAX_IMPORT_TURNS} turns), or a "
        "turn is (without skip_invalid; nothing was imported), or none is, or an explicit turn number is taken.",
    },
}


def import_batch(body: ImportIn, archive: AsyncArchive) -> tuple[list[TurnInput], list[SkippedOut]]:
    """The valid turns of ``body`` and the skipped ones, every turn checked as a line of a JSONL import
    (line ``i + 1`` is ``turns[i]``). Without ``skip_invalid`` one bad turn refuses the whole batch."""
    lines = "\n".join(json.dumps(turn.model_dump(exclude_unset=True)) for turn in body.turns)
    problems: list[tuple[int | None, str]] = []
    settings, embeddings = archive.settings, archive.embeddings
    turns = archive.parse_turns(
        lines,
        max_chars=settings.max_content_chars,
        path="turns",
        skipped=problems,
        space=(str(embeddings.slug), embeddings.dim),
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


def known_query(request: Request) -> None:
    """A query parameter the operation does not take is refused (``GET /v1/memories?owner=maya`` is
    not the caller's own page: issue 39 item 9), as an unknown body field is."""
    route = request.scope.get("route")
    if not isinstance(route, APIRoute):
        return
    taken = set(_query_names(route.dependant))
    unknown = sorted(set(request.query_params) - taken)
    if unknown:
        takes = ", ".join(sorted(taken)) or "none"
        raise InvalidInputError(f"unknown query parameter {unknown[0]!r}; this operation takes: {takes}")


def _query_names(dependant: Dependant) -> list[str]:
    """The query parameters an operation takes, its dependencies' included."""
    own = [p.alias for p in dependant.query_params]
    return own + [name for sub in dependant.dependencies for name in _query_names(sub)]
