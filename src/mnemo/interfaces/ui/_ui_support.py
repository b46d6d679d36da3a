"""What the inspector's pages share (issue 30 item 6): the templates, the session and CSRF checks,
and :class:`Pages` (render a page, the error page, post/redirect/get). The pages themselves are
in :mod:`._routers`, one :class:`fastapi.APIRouter` per area; :func:`mnemo.interfaces.ui.mount`
puts them together.

Seed: issue 17 (the inspector); archive-adr §7 ("Sigil Scope": a reader sees only what its token
may read).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from jinja2 import Environment, PackageLoader, select_autoescape

from mnemo.archive import AsyncArchive
from mnemo.errors import AccessDeniedError, AuthenticationError, MnemoError, NotFoundError
from mnemo.interfaces.ui import _views as views
from mnemo.interfaces.ui._session import COOKIE, Session, Sessions

if TYPE_CHECKING:
    from mnemo.admin.inspector import Inspector

__all__ = ["Acting", "Pages", "SignIn", "Who"]

_env = Environment(
    loader=PackageLoader("mnemo.interfaces.ui", "templates"),
    autoescape=select_autoescape(default=True, default_for_string=True),
    trim_blocks=True,
    lstrip_blocks=True,
)
_env.filters["when"] = views.when
_env.filters["short"] = views.short
_env.filters["salience"] = views.salience
_env.filters["zone"] = views.zone_text
_env.filters["stages"] = views.night_stages
_env.filters["generations"] = views.generations
_env.filters["modes"] = views.modes


class SignIn(Exception):
    """No session: the page answers with a redirect to the sign-in form."""


async def _session(request: Request) -> Session:
    """The request's session, whose token is still valid: revoking or expiring the token it was made
    from ends it (the next request signs in again)."""
    sessions: Sessions = request.app.state.ui_sessions
    session_id = request.cookies.get(COOKIE)
    found = sessions.get(session_id)
    if found is None:
        raise SignIn()
    try:
        await request.app.state.archive.access.recheck_principal(found.principal)
    except AuthenticationError:
        sessions.end(session_id)
        raise SignIn() from None
    return found


async def _checked(request: Request, found: Annotated[Session, Depends(_session)]) -> Session:
    """A session whose state-changing request carries its CSRF token (form field or header)."""
    presented = request.headers.get("x-csrf-token")
    if presented is None:
        presented = str((await request.form()).get("csrf") or "") or None
    if not found.check(presented):
        raise AccessDeniedError("this action lacks its CSRF token: reload the page and try again")
    return found


Who = Annotated[Session, Depends(_session)]
Acting = Annotated[Session, Depends(_checked)]


class Pages:
    """What every page uses: the archive, the sessions, and the ways a page answers."""

    def __init__(self, archive: Callable[[], AsyncArchive], sessions: Sessions) -> None:
        self.archive = archive
        self.sessions = sessions

    def inspector(self, who: Session) -> Inspector:
        return self.archive().inspect.inspector(who.principal.entity_id, who.principal.namespace)

    def page(
        self, request: Request, who: Session | None, template: str, code: int = 200, **context: Any
    ) -> HTMLResponse:
        body = _env.get_template(template).render(
            who=who.principal if who else None, csrf=who.csrf if who else "", request=request, code=code, **context
        )
        return HTMLResponse(body, status_code=code)

    def error_page(self, request: Request, code: int, message: str) -> HTMLResponse:
        return self.page(request, self.sessions.get(request.cookies.get(COOKIE)), "error.html", code, message=message)

    async def guarded(
        self, request: Request, who: Session, template: str, load: Callable[[], Awaitable[dict[str, Any]]]
    ) -> HTMLResponse:
        """Render ``template`` with what ``load`` reads; a scope the reader may not see, an unknown
        item or bad input renders the error page instead (404 for the first two, the same either way)."""
        try:
            context = await load()
        except MnemoError as exc:
            return self.failure(request, who, exc)
        return self.page(request, who, template, **context)

    def failure(self, request: Request, who: Session, exc: MnemoError) -> HTMLResponse:
        code = 404 if isinstance(exc, NotFoundError) else 403 if isinstance(exc, AccessDeniedError) else 422
        return self.page(request, who, "error.html", code, message=str(exc))

    async def acted(self, request: Request, who: Session, act: Callable[[], Awaitable[str]]) -> Response:
        """Run an action, then go to the page it names (post/redirect/get); its error is shown instead."""
        try:
            target = await act()
        except MnemoError as exc:
            return self.failure(request, who, exc)
        return RedirectResponse(target, status_code=303)
