"""The inspector: web pages to see, question and correct what an agent remembers (issue 17).

Served by ``mnemo serve`` at ``/ui`` with the same tokens and grants as the API
(:mod:`._session`). Server-rendered Jinja2 templates (autoescaped: stored text
is always shown as text, never as markup) and the vendored htmx for partial
updates (search, filters, paging, recall): no build step, no CDN, nothing
downloaded. Charts are SVG drawn on the server (:mod:`.charts`). Pages read
through :meth:`mnemo.AsyncArchive.inspect.inspector` and the archive's own API; the
actions (forget, anchor, unanchor, supersede, apply a curation) are the
owner's and each one is written to the audit trail.

The pages are one router per area (:mod:`._routers`), sharing :class:`._routes.Pages`;
:func:`mount` adds them, the security headers, and the error page every error under
``/ui`` answers with (issue 30 item 6).
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import APIRouter, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, RedirectResponse, Response
from starlette.exceptions import HTTPException

from mnemo.archive import AsyncArchive
from mnemo.errors import MnemoError
from mnemo.interfaces.ui._session import SECURITY_HEADERS, Sessions
from mnemo.interfaces.ui._ui_pages import AREAS
from mnemo.interfaces.ui._ui_support import Pages, SignIn

__all__ = ["mount"]

Handler = Callable[[Request, Any], Response | Awaitable[Response]]


def _in_ui(request: Request) -> bool:
    return request.url.path == "/ui" or request.url.path.startswith("/ui/")


def _as_pages(app: FastAPI, render: Callable[[Request, int, str], Response]) -> None:
    """Every error under ``/ui`` (a refused CSRF token, bad form fields, an unknown page, …) answers
    the error page, with the status and message the API's JSON answer would have had."""
    for kind in (MnemoError, RequestValidationError, HTTPException):
        answer_json = app.exception_handlers.get(kind)
        if answer_json is not None:
            app.add_exception_handler(kind, _page_or(answer_json, render))


def _page_or(answer_json: Handler, render: Callable[[Request, int, str], Response]) -> Handler:
    async def handler(request: Request, exc: Any) -> Response:
        answer = answer_json(request, exc)
        answer = await answer if inspect.isawaitable(answer) else answer
        if not _in_ui(request) or not isinstance(answer, JSONResponse):
            return answer
        return render(request, answer.status_code, str(json.loads(bytes(answer.body))["error"]["message"]))

    return handler


async def _headers(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
    """The security headers of every page (:data:`._session.SECURITY_HEADERS`)."""
    response = await call_next(request)
    if _in_ui(request):
        response.headers.update(SECURITY_HEADERS)
    return response


async def _sign_in(request: Request, exc: Exception) -> Response:
    """No session (:class:`._routes.SignIn`): to the sign-in form."""
    return RedirectResponse("/ui/login", status_code=303)


async def _bare() -> Response:
    return RedirectResponse("/ui/", status_code=308)


def mount(app: FastAPI, archive: Callable[[], AsyncArchive]) -> None:
    """Add the inspector's pages under ``/ui`` to ``app``."""
    sessions = Sessions()
    app.state.ui_sessions = sessions
    pages = Pages(archive, sessions)
    app.middleware("http")(_headers)
    app.add_exception_handler(SignIn, _sign_in)
    _as_pages(app, pages.error_page)
    app.add_api_route("/ui", _bare, methods=["GET"], include_in_schema=False, name="bare")
    router = APIRouter(prefix="/ui", include_in_schema=False)
    for area in AREAS:
        router.include_router(area(pages))
    app.include_router(router)
