"""The inspector's pages, one :class:`fastapi.APIRouter` per area (issue 30 item 6): signing in,
the overview, memories (and the owner's actions on one), recall explained, episodes and the cortex
tree, the records (facts, audit trail, curation), and the inner life (issue 31). Each router is made with the
:class:`~._routes.Pages` it renders through; :func:`mnemo.interfaces.ui.mount` mounts them at ``/ui``.

Seed: issue 17 (the inspector); archive-adr §7 (a reader sees only the scopes its token may read;
the actions are the owner's, each one written to the audit trail).
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from contextlib import suppress
from importlib import resources
from typing import Annotated, Any

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from mnemo._validate import to_utc
from mnemo.cognition.mind.gut import LEAST_DELTAS as GUT_LEAST
from mnemo.errors import AuthenticationError, NotFoundError, UnknownItemError
from mnemo.interfaces.ui import _views as views
from mnemo.interfaces.ui._session import COOKIE, LOGIN_COOKIE, Session
from mnemo.interfaces.ui._ui_support import Acting, Pages, Who
from mnemo.models import MEMORY_KINDS, MEMORY_STATUSES, Scope

__all__ = ["AREAS", "STATIC"]

STATIC = {"htmx-2.0.4.min.js": "text/javascript", "inspector.css": "text/css"}


def _area() -> APIRouter:
    """An area's router: its pages are no part of the API's schema."""
    return APIRouter(include_in_schema=False)


def signing(pages: Pages) -> APIRouter:
    """The sign-in form (a bearer token for a session cookie), signing out, and the static files."""
    router = _area()

    @router.get("/login")
    async def login_form(request: Request) -> Response:
        nonce = views.nonce()
        response = pages.page(request, None, "login.html", nonce=nonce)
        response.set_cookie(LOGIN_COOKIE, nonce, httponly=True, samesite="strict", path="/ui")
        return response

    @router.post("/login")
    async def login(request: Request, token: Annotated[str, Form()], nonce: Annotated[str, Form()]) -> Response:
        if not nonce or request.cookies.get(LOGIN_COOKIE) != nonce:
            return pages.page(
                request, None, "login.html", 403, nonce=views.nonce(), error="The form expired; try again."
            )
        try:
            principal = await pages.archive().access.verify_token(token.strip())
        except AuthenticationError as exc:
            again = views.nonce()
            response = pages.page(request, None, "login.html", 401, nonce=again, error=str(exc))
            response.set_cookie(LOGIN_COOKIE, again, httponly=True, samesite="strict", path="/ui")
            return response
        signed_in = RedirectResponse("/ui/", status_code=303)
        secure = request.url.scheme == "https"
        started = pages.sessions.start(principal)
        signed_in.set_cookie(COOKIE, started, httponly=True, samesite="strict", path="/ui", secure=secure)
        signed_in.delete_cookie(LOGIN_COOKIE, path="/ui")
        return signed_in

    @router.post("/logout")
    async def logout(request: Request, who: Acting) -> Response:
        pages.sessions.end(request.cookies.get(COOKIE))
        response = RedirectResponse("/ui/login", status_code=303)
        response.delete_cookie(COOKIE, path="/ui")
        return response

    @router.get("/static/{name}")
    async def static(name: str) -> Response:
        if name not in STATIC:
            return Response(status_code=404)
        data = resources.files("mnemo.interfaces.ui").joinpath("static", name).read_bytes()
        return Response(data, media_type=STATIC[name], headers={"Cache-Control": "max-age=86400"})

    return router


def home(pages: Pages) -> APIRouter:
    """The overview: every scope the reader may see, the night-cycle queue and the embedder."""
    router = _area()

    @router.get("/")
    async def overview(request: Request, who: Who) -> HTMLResponse:
        async def load() -> dict[str, Any]:
            view = pages.inspector(who)
            scopes = await view.scopes()
            for scope in scopes:
                scope.update(await view.overview(Scope(scope["entity_id"], scope["namespace"])))
            # not archive().status(): it counts every chamber of every entity (0.3 s at 100k rows)
            return {"scopes": scopes, "queue": await view.queue(), "embedder": str(pages.archive().embeddings.slug),
                    "pending": pages.archive().pending_reembed}  # fmt: skip

        return await pages.guarded(request, who, "overview.html", load)

    return router


def memory_pages(pages: Pages) -> APIRouter:
    """The memories of a scope (filtered, paged), one memory explained, and the owner's actions on it."""
    router = _area()

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
            rows, next_key = await pages.inspector(who).memories(scope, before=views.page_key(after), **filters)
            return {"scope": scope, "rows": rows, "next": views.key_text(next_key), "form": request.query_params,
                    "kinds": MEMORY_KINDS, "statuses": MEMORY_STATUSES, "more": bool(after)}  # fmt: skip

        template = "memory_rows.html" if request.headers.get("hx-request") and after else "memories.html"
        return await pages.guarded(request, who, template, load)

    @router.get("/s/{entity}/{namespace}/memory/{memory_id}")
    async def memory(request: Request, who: Who, entity: str, namespace: str, memory_id: str) -> HTMLResponse:
        async def load() -> dict[str, Any]:
            scope = Scope(entity, namespace)
            row = await pages.inspector(who).memory(scope, memory_id)
            archive = pages.archive()
            return {
                "scope": scope,
                "m": row,
                "history": await archive.inspect.why(scope, memory_id),
                "beliefs": await archive.knowledge.why_do_i_believe(scope, memory_id),
                "owner": scope.entity_id == who.principal.entity_id,
                "density": views.density_chart(row["alpha"], row["beta"]),
                "activation": views.activation_chart(
                    row["access_timestamps"], row["created_at"], archive.settings.actr_decay
                ),
            }

        return await pages.guarded(request, who, "memory.html", load)

    @router.post("/s/{entity}/{namespace}/memory/{memory_id}/{action}")
    async def act(request: Request, who: Acting, entity: str, namespace: str, memory_id: str, action: str) -> Response:
        scope = Scope(entity, namespace)
        return await pages.acted(request, who, _memory_action(pages, request, who, scope, memory_id, action))

    return router


def _memory_action(
    pages: Pages, request: Request, who: Session, scope: Scope, memory_id: str, action: str
) -> Callable[[], Awaitable[str]]:
    """The owner's ``action`` on one memory (anchor, unanchor, forget, supersede), audited; it
    answers the page to go to next."""
    base = f"/ui/s/{scope.entity_id}/{scope.namespace}"

    async def run() -> str:
        view = pages.inspector(who)
        await view.owned(scope)
        if action in ("anchor", "unanchor"):
            await view.anchor(scope, memory_id, action == "anchor")
            return f"{base}/memory/{memory_id}"
        if action == "forget":
            removed = await pages.archive().forget(scope, memory_id)
            await view.audited(scope, uuid.UUID(str(memory_id)), "forget", {"removed": removed})
            return f"{base}/memories"
        if action == "supersede":
            content = str((await request.form()).get("content") or "")
            new = await pages.archive().remember(scope, content, supersedes=[memory_id])
            await view.audited(scope, new.id, "supersede", {"supersedes": str(memory_id)})
            return f"{base}/memory/{new.id}"
        raise NotFoundError(f"no action {action!r}")

    return run


def recall_pages(pages: Pages) -> APIRouter:
    """Recall, explained: a query's hits with why each ranked where it did (read-only)."""
    router = _area()

    @router.get("/s/{entity}/{namespace}/recall")
    async def recall(request: Request, who: Who, entity: str, namespace: str, q: str = "", k: int = 10) -> HTMLResponse:
        async def load() -> dict[str, Any]:
            scope = Scope(entity, namespace)
            await pages.inspector(who).readable(scope)
            if not q.strip():
                return {"scope": scope, "q": q, "result": None}
            reader = None if scope.entity_id == who.principal.entity_id else who.principal.entity_id
            k_ = max(1, min(k, 50))
            result = await pages.archive().recall(scope, q, k_ + 10, as_entity=reader, read_only=True)
            return {"scope": scope, "q": q, "k": k_} | views.explain(result, k_)

        return await pages.guarded(request, who, "recall.html", load)

    return router


def episode_pages(pages: Pages) -> APIRouter:
    """The episodes of a scope with its cortex tree, and one episode with its surprisal curve."""
    router = _area()

    @router.get("/s/{entity}/{namespace}/episodes")
    async def episodes(request: Request, who: Who, entity: str, namespace: str, before: str = "") -> HTMLResponse:
        async def load() -> dict[str, Any]:
            scope = Scope(entity, namespace)
            rows = await pages.inspector(who).episodes(scope, to_utc(before, label="before") if before else None)
            tree = await pages.archive().inspect.cortex_tree(scope) if rows else []
            return {"scope": scope, "rows": rows, "tree": views.outline(tree)}

        return await pages.guarded(request, who, "episodes.html", load)

    @router.get("/s/{entity}/{namespace}/episode/{block_id}")
    async def episode(request: Request, who: Who, entity: str, namespace: str, block_id: str) -> HTMLResponse:
        async def load() -> dict[str, Any]:
            scope = Scope(entity, namespace)
            row = await pages.inspector(who).episode(scope, block_id)
            return {"scope": scope, "b": row, "curve": views.surprisal_chart(row["turns"], row["flux_metrics"])}

        return await pages.guarded(request, who, "episode.html", load)

    return router


def fact_pages(pages: Pages) -> APIRouter:
    """The facts known about a name, with their timeline."""
    router = _area()

    @router.get("/s/{entity}/{namespace}/facts")
    async def facts(request: Request, who: Who, entity: str, namespace: str, name: str = "") -> HTMLResponse:
        async def load() -> dict[str, Any]:
            scope = Scope(entity, namespace)
            known = await pages.inspector(who).entities(scope)  # who may not read the scope is stopped here
            found = None
            if name.strip():
                with suppress(UnknownItemError):  # nothing known about that name: said on the page
                    found = await pages.archive().knowledge.facts(scope, name.strip())
            return {"scope": scope, "name": name, "facts": found, "timeline": views.fact_timeline(found),
                    "entities": known, "limit": pages.inspector(who).ENTITIES}  # fmt: skip

        return await pages.guarded(request, who, "facts.html", load)

    return router


def audit_pages(pages: Pages) -> APIRouter:
    """The audit trail (weights, safety, actions), and the curation versions with the owner's apply."""
    router = _area()

    @router.get("/s/{entity}/{namespace}/audit")
    async def audit(
        request: Request, who: Who, entity: str, namespace: str, what: str = "weights", enforced: str = "",
        reason: str = "",
    ) -> HTMLResponse:  # fmt: skip
        async def load() -> dict[str, Any]:
            scope = Scope(entity, namespace)
            kind = what if what in ("weights", "safety", "actions") else "weights"
            rows = await pages.inspector(who).audit(
                scope, what=kind, enforced=views.tristate(enforced), reason=reason.strip() or None
            )
            return {"scope": scope, "rows": rows, "what": kind, "form": request.query_params}

        return await pages.guarded(request, who, "audit.html", load)

    @router.get("/s/{entity}/{namespace}/curation")
    async def curation(request: Request, who: Who, entity: str, namespace: str) -> HTMLResponse:
        async def load() -> dict[str, Any]:
            scope = Scope(entity, namespace)
            versions = await pages.inspector(who).curation(scope)
            return {"scope": scope, "versions": versions, "owner": scope.entity_id == who.principal.entity_id}

        return await pages.guarded(request, who, "curation.html", load)

    @router.post("/s/{entity}/{namespace}/curation/{version}/apply")
    async def apply(request: Request, who: Acting, entity: str, namespace: str, version: int) -> Response:
        scope = Scope(entity, namespace)

        async def load() -> str:
            view = pages.inspector(who)
            await view.owned(scope)
            changed = await pages.archive().knowledge.apply_curation(scope, version)
            await view.audited(scope, None, "apply_curation", {"version": version, "changed": changed})
            return f"/ui/s/{scope.entity_id}/{scope.namespace}/curation"

        return await pages.acted(request, who, load)

    return router


def inner_pages(pages: Pages) -> APIRouter:
    """The inner life (issue 31): readiness milestones, gut axes, tensions, the blend's alphas and
    their tuning, safety events, promotions awaiting approval and persistent failures (read-only)."""
    router = _area()

    @router.get("/s/{entity}/{namespace}/inner")
    async def inner(request: Request, who: Who, entity: str, namespace: str) -> HTMLResponse:
        async def load() -> dict[str, Any]:
            scope = Scope(entity, namespace)
            await pages.inspector(who).readable(scope)  # who may not read the scope is stopped here
            archive = pages.archive()
            life = await archive.inner.life(scope)
            chart = views.alphas_chart(life.history)
            awaiting = [(m, (await archive.inspect.item(scope, m)).content) for m in life.awaiting_approval]
            return {"scope": scope, "life": life, "awaiting": awaiting, "chart": chart,
                    "alphas": views.alpha_shares(life.alphas, chart),
                    "tuning": list(reversed(life.history)),
                    "min_outcomes": archive.settings.tuning_min_outcomes, "self_tuning": archive.settings.self_tuning,
                    "least_deltas": GUT_LEAST}  # fmt: skip

        return await pages.guarded(request, who, "inner.html", load)

    return router


AREAS = (signing, home, memory_pages, recall_pages, episode_pages, fact_pages, audit_pages, inner_pages)
"""The areas, in the order their routes are matched."""
