"""Signing in to the inspector: sessions, CSRF tokens and the security headers of every page.

A bearer token (``mnemo token create``) is exchanged once, on the sign-in page, for a random
session id in an HttpOnly, SameSite=Strict cookie scoped to ``/ui``; the token itself is never
stored in the browser. Every state-changing request must carry the session's CSRF token (a form
field or the ``X-CSRF-Token`` header htmx sends), and the sign-in form a double-submit token.
Sessions live in the server's memory: a restart signs everyone out.
"""

from __future__ import annotations

import hmac
import secrets
import time
from dataclasses import dataclass, field

from mnemo.models import Principal

__all__ = ["COOKIE", "LOGIN_COOKIE", "SECURITY_HEADERS", "Session", "Sessions"]

COOKIE = "mnemo_ui"
LOGIN_COOKIE = "mnemo_ui_login"
LIFETIME = 12 * 3600

SECURITY_HEADERS = {
    # no inline script or style anywhere: charts are SVG attributes, behaviour is the vendored htmx
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


@dataclass(slots=True)
class Session:
    principal: Principal
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    expires: float = field(default_factory=lambda: time.monotonic() + LIFETIME)

    def check(self, presented: str | None) -> bool:
        return presented is not None and hmac.compare_digest(presented.encode(), self.csrf.encode())


class Sessions:
    """The signed-in browsers of one service."""

    def __init__(self) -> None:
        self._by_id: dict[str, Session] = {}

    def start(self, principal: Principal) -> str:
        self._prune()
        session_id = secrets.token_urlsafe(32)
        self._by_id[session_id] = Session(principal)
        return session_id

    def get(self, session_id: str | None) -> Session | None:
        session = self._by_id.get(session_id or "")
        if session is None or session.expires < time.monotonic():
            return None
        return session

    def end(self, session_id: str | None) -> None:
        self._by_id.pop(session_id or "", None)

    def _prune(self) -> None:
        now = time.monotonic()
        for key in [k for k, s in self._by_id.items() if s.expires < now]:
            del self._by_id[key]
