"""The inspector: web pages to see, question and correct what an agent remembers (issue 17).

Served by ``mnemo serve`` at ``/ui`` with the same tokens and grants as the API
(:mod:`._session`). Server-rendered Jinja2 templates (autoescaped: stored text
is always shown as text, never as markup) and the vendored htmx for partial
updates (search, filters, paging, recall): no build step, no CDN, nothing
downloaded. Charts are SVG drawn on the server (:mod:`.charts`). Pages read
through :meth:`mnemo.AsyncArchive.inspector` and the archive's own API; the
actions (forget, anchor, unanchor, supersede, apply a curation) are the
owner's and each one is written to the audit trail.
"""

from __future__ import annotations

import inspect
import json
import uuid
from collections.abc import Awaitable, Callable
from contextlib import suppress
from importlib import resources
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, Form, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.exceptions import HTTPException

from mnemo._validate import to_utc
from mnemo.archive import AsyncArchive
from mnemo.errors import AccessDeniedError, AuthenticationError, MnemoError, NotFoundError, UnknownItemError
from mnemo.interfaces.ui import _views as views
from mnemo.interfaces.ui._session import COOKIE, LOGIN_COOKIE, SECURITY_HEADERS, Session, Sessions
from mnemo.models import MEMORY_KINDS, MEMORY_STATUSES, Scope

if TYPE_CHECKING:
    from mnemo.admin.inspect import Inspector

__all__ = ["mount"]

STATIC = {"htmx-2.0.4.min.js": "text/javascript", "inspector.css": "text/css"}

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


class _SignIn(Exception):
    """No session: the page answers with a redirect to the sign-in form."""


def _session(request: Request) -> Session:
    found = request.app.state.ui_sessions.get(request.cookies.get(COOKIE))
    if found is None:
        raise _SignIn()
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


def mount(app: FastAPI, archive: Callable[[], AsyncArchive]) -> None:
    """Add the inspector's pages under ``/ui`` to ``app``."""
    sessions = Sessions()
    app.state.ui_sessions = sessions
    router = APIRouter(prefix="/ui", include_in_schema=False)

    @app.middleware("http")
    async def headers(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        response = await call_next(request)
        if _in_ui(request):
            response.headers.update(SECURITY_HEADERS)
        return response

    @app.exception_handler(_SignIn)
    async def sign_in(request: Request, exc: _SignIn) -> Response:
        return RedirectResponse("/ui/login", status_code=303)

    def inspector(who: Session) -> Inspector:
        return archive().inspector(who.principal.entity_id, who.principal.namespace)

    def page(request: Request, who: Session | None, template: str, code: int = 200, **context: Any) -> HTMLResponse:
        body = _env.get_template(template).render(
            who=who.principal if who else None, csrf=who.csrf if who else "", request=request, code=code, **context
        )
        return HTMLResponse(body, status_code=code)

    def error_page(request: Request, code: int, message: str) -> HTMLResponse:
        return page(request, sessions.get(request.cookies.get(COOKIE)), "error.html", code, message=message)

    _as_pages(app, error_page)

    async def guarded(
        request: Request, who: Session, template: str, load: Callable[[], Awaitable[dict[str, Any]]]
    ) -> HTMLResponse:
        """Render ``template`` with what ``load`` reads; a scope the reader may not see, an unknown
        item or bad input renders the error page instead (404 for the first two, the same either way)."""
        try:
            context = await load()
        except MnemoError as exc:
            return failure(request, who, exc)
        return page(request, who, template, **context)

    def failure(request: Request, who: Session, exc: MnemoError) -> HTMLResponse:
        code = 404 if isinstance(exc, NotFoundError) else 403 if isinstance(exc, AccessDeniedError) else 422
        return page(request, who, "error.html", code, message=str(exc))

    async def acted(request: Request, who: Session, act: Callable[[], Awaitable[str]]) -> Response:
        """Run an action, then go to the page it names (post/redirect/get); its error is shown instead."""
        try:
            target = await act()
        except MnemoError as exc:
            return failure(request, who, exc)
        return RedirectResponse(target, status_code=303)

    # --- sign in ------------------------------------------------------------------------------

    @app.get("/ui", include_in_schema=False)
    async def bare() -> Response:
        return RedirectResponse("/ui/", status_code=308)

    @router.get("/login")
    async def login_form(request: Request) -> Response:
        nonce = views.nonce()
        response = page(request, None, "login.html", nonce=nonce)
        response.set_cookie(LOGIN_COOKIE, nonce, httponly=True, samesite="strict", path="/ui")
        return response

    @router.post("/login")
    async def login(request: Request, token: Annotated[str, Form()], nonce: Annotated[str, Form()]) -> Response:
        if not nonce or request.cookies.get(LOGIN_COOKIE) != nonce:
            return page(request, None, "login.html", 403, nonce=views.nonce(), error="The form expired; try again.")
        try:
            principal = await archive().verify_token(token.strip())
        except AuthenticationError as exc:
            again = views.nonce()
            response = page(request, None, "login.html", 401, nonce=again, error=str(exc))
            response.set_cookie(LOGIN_COOKIE, again, httponly=True, samesite="strict", path="/ui")
            return response
        signed_in = RedirectResponse("/ui/", status_code=303)
        secure = request.url.scheme == "https"
        started = sessions.start(principal)
        signed_in.set_cookie(COOKIE, started, httponly=True, samesite="strict", path="/ui", secure=secure)
        signed_in.delete_cookie(LOGIN_COOKIE, path="/ui")
        return signed_in

    @router.post("/logout")
    async def logout(request: Request, who: Acting) -> Response:
        sessions.end(request.cookies.get(COOKIE))
        response = RedirectResponse("/ui/login", status_code=303)
        response.delete_cookie(COOKIE, path="/ui")
        return response

    @router.get("/static/{name}")
    async def static(name: str) -> Response:
        if name not in STATIC:
            return Response(status_code=404)
        data = resources.files("mnemo.interfaces.ui").joinpath("static", name).read_bytes()
        return Response(data, media_type=STATIC[name], headers={"Cache-Control": "max-age=86400"})

    # --- overview -------------------------------------------------------------------------------

    @router.get("/")
    async def overview(request: Request, who: Who) -> HTMLResponse:
        async def load() -> dict[str, Any]:
            view = inspector(who)
            scopes = await view.scopes()
            for scope in scopes:
                scope.update(await view.overview(Scope(scope["entity_id"], scope["namespace"])))
            # not archive().status(): it counts every chamber of every entity (0.3 s at 100k rows)
            return {"scopes": scopes, "queue": await view.queue(), "embedder": str(archive().embeddings.slug),
                    "pending": archive().pending_reembed}  # fmt: skip

        return await guarded(request, who, "overview.html", load)

    # --- memories ---------------------------------------------------------------------------------

    @router.get("/s/{entity}/{namespace}/memories")
    async def memories(
        request: Request,
        who: Who,
        entity: str,
        namespace: str,
        q: str = "",
        kind: str = "",
        status: str = "",
        anchored: str = "",
        tier: str = "",
        since: str = "",
        until: str = "",
        after: Annotated[str, Query(description="the previous page's last key")] = "",
    ) -> HTMLResponse:
        async def load() -> dict[str, Any]:
            scope = Scope(entity, namespace)
            filters = views.memory_filters(q, kind, status, anchored, tier, since, until)
            rows, next_key = await inspector(who).memories(scope, before=views.page_key(after), **filters)
            return {"scope": scope, "rows": rows, "next": views.key_text(next_key), "form": request.query_params,
                    "kinds": MEMORY_KINDS, "statuses": MEMORY_STATUSES, "more": bool(after)}  # fmt: skip

        template = "memory_rows.html" if request.headers.get("hx-request") and after else "memories.html"
        return await guarded(request, who, template, load)

    @router.get("/s/{entity}/{namespace}/memory/{memory_id}")
    async def memory(request: Request, who: Who, entity: str, namespace: str, memory_id: str) -> HTMLResponse:
        async def load() -> dict[str, Any]:
            scope = Scope(entity, namespace)
            row = await inspector(who).memory(scope, memory_id)
            history = await archive().why(scope, memory_id)
            beliefs = await archive().why_do_i_believe(scope, memory_id)
            decay = archive().settings.actr_decay
            return {
                "scope": scope,
                "m": row,
                "history": history,
                "beliefs": beliefs,
                "owner": scope.entity_id == who.principal.entity_id,
                "density": views.density_chart(row["alpha"], row["beta"]),
                "activation": views.activation_chart(row["access_timestamps"], row["created_at"], decay),
            }

        return await guarded(request, who, "memory.html", load)

    @router.post("/s/{entity}/{namespace}/memory/{memory_id}/{action}")
    async def act(request: Request, who: Acting, entity: str, namespace: str, memory_id: str, action: str) -> Response:
        scope = Scope(entity, namespace)
        base = f"/ui/s/{scope.entity_id}/{scope.namespace}"

        async def load() -> str:
            view = inspector(who)
            await view.owned(scope)
            if action in ("anchor", "unanchor"):
                await view.anchor(scope, memory_id, action == "anchor")
                return f"{base}/memory/{memory_id}"
            if action == "forget":
                removed = await archive().forget(scope, memory_id)
                await view.audited(scope, uuid.UUID(str(memory_id)), "forget", {"removed": removed})
                return f"{base}/memories"
            if action == "supersede":
                content = str((await request.form()).get("content") or "")
                new = await archive().remember(scope, content, supersedes=[memory_id])
                await view.audited(scope, new.id, "supersede", {"supersedes": str(memory_id)})
                return f"{base}/memory/{new.id}"
            raise NotFoundError(f"no action {action!r}")

        return await acted(request, who, load)

    # --- recall, explained ----------------------------------------------------------------------

    @router.get("/s/{entity}/{namespace}/recall")
    async def recall(request: Request, who: Who, entity: str, namespace: str, q: str = "", k: int = 10) -> HTMLResponse:
        async def load() -> dict[str, Any]:
            scope = Scope(entity, namespace)
            await inspector(who).readable(scope)
            if not q.strip():
                return {"scope": scope, "q": q, "result": None}
            reader = None if scope.entity_id == who.principal.entity_id else who.principal.entity_id
            k_ = max(1, min(k, 50))
            result = await archive().recall(scope, q, k_ + 10, as_entity=reader, read_only=True)
            return {"scope": scope, "q": q, "k": k_} | views.explain(result, k_)

        return await guarded(request, who, "recall.html", load)

    # --- episodes and the cortex tree ------------------------------------------------------------

    @router.get("/s/{entity}/{namespace}/episodes")
    async def episodes(request: Request, who: Who, entity: str, namespace: str, before: str = "") -> HTMLResponse:
        async def load() -> dict[str, Any]:
            scope = Scope(entity, namespace)
            rows = await inspector(who).episodes(scope, to_utc(before, label="before") if before else None)
            tree = await archive().cortex_tree(scope) if rows else []
            return {"scope": scope, "rows": rows, "tree": views.outline(tree)}

        return await guarded(request, who, "episodes.html", load)

    @router.get("/s/{entity}/{namespace}/episode/{block_id}")
    async def episode(request: Request, who: Who, entity: str, namespace: str, block_id: str) -> HTMLResponse:
        async def load() -> dict[str, Any]:
            scope = Scope(entity, namespace)
            row = await inspector(who).episode(scope, block_id)
            return {"scope": scope, "b": row, "curve": views.surprisal_chart(row["turns"], row["flux_metrics"])}

        return await guarded(request, who, "episode.html", load)

    # --- facts, audit, curation -------------------------------------------------------------------

    @router.get("/s/{entity}/{namespace}/facts")
    async def facts(request: Request, who: Who, entity: str, namespace: str, name: str = "") -> HTMLResponse:
        async def load() -> dict[str, Any]:
            scope = Scope(entity, namespace)
            known = await inspector(who).entities(scope)  # who may not read the scope is stopped here
            found = None
            if name.strip():
                with suppress(UnknownItemError):  # nothing known about that name: said on the page
                    found = await archive().facts(scope, name.strip())
            return {"scope": scope, "name": name, "facts": found, "timeline": views.fact_timeline(found),
                    "entities": known, "limit": inspector(who).ENTITIES}  # fmt: skip

        return await guarded(request, who, "facts.html", load)

    @router.get("/s/{entity}/{namespace}/audit")
    async def audit(
        request: Request, who: Who, entity: str, namespace: str, what: str = "weights", enforced: str = "",
        reason: str = "",
    ) -> HTMLResponse:  # fmt: skip
        async def load() -> dict[str, Any]:
            scope = Scope(entity, namespace)
            kind = what if what in ("weights", "safety", "actions") else "weights"
            rows = await inspector(who).audit(
                scope, what=kind, enforced=views.tristate(enforced), reason=reason.strip() or None
            )
            return {"scope": scope, "rows": rows, "what": kind, "form": request.query_params}

        return await guarded(request, who, "audit.html", load)

    @router.get("/s/{entity}/{namespace}/curation")
    async def curation(request: Request, who: Who, entity: str, namespace: str) -> HTMLResponse:
        async def load() -> dict[str, Any]:
            scope = Scope(entity, namespace)
            versions = await inspector(who).curation(scope)
            return {"scope": scope, "versions": versions, "owner": scope.entity_id == who.principal.entity_id}

        return await guarded(request, who, "curation.html", load)

    @router.post("/s/{entity}/{namespace}/curation/{version}/apply")
    async def apply(request: Request, who: Acting, entity: str, namespace: str, version: int) -> Response:
        scope = Scope(entity, namespace)

        async def load() -> str:
            view = inspector(who)
            await view.owned(scope)
            changed = await archive().apply_curation(scope, version)
            await view.audited(scope, None, "apply_curation", {"version": version, "changed": changed})
            return f"/ui/s/{scope.entity_id}/{scope.namespace}/curation"

        return await acted(request, who, load)

    app.include_router(router)
