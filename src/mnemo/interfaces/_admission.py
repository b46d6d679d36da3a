"""Admission at the door of ``mnemo serve`` (issue 39 item 6): at most ``http_concurrency``
requests are answered at once, and the connection pool holds a connection for each of them, so an
admitted request never waits for a connection (a wait that used to last the pool's whole 30 s
time-out and end in a 503 after every restart).

A request over the limit waits in arrival order for up to ``http_queue_seconds``; if no request
has finished by then it is answered at once with a 503 whose JSON body says why (code ``busy``)
and whose ``Retry-After`` header says when to try again. Background work (a scope's read index
build, the token backfill) has its own reserved connections (``pool_reserve``,
:meth:`mnemo.store.pool.Store.background`), so it neither waits behind requests nor takes theirs.
"""

from __future__ import annotations

import asyncio

from fastapi import FastAPI
from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from mnemo.config import Settings
from mnemo.interfaces.shapes import error_body

__all__ = ["RETRY_AFTER_SECONDS", "Admission", "install", "sized"]

RETRY_AFTER_SECONDS = 1
"""What a refused request's ``Retry-After`` says: a turn comes free as soon as any request ends."""


def sized(settings: Settings) -> Settings:
    """``settings`` with a pool that lends a connection to every admitted request at once."""
    if settings.pool_max_size >= settings.http_concurrency:
        return settings
    return settings.model_copy(update={"pool_max_size": settings.http_concurrency})


class Admission:
    """Pure ASGI: at most ``limit`` HTTP requests inside ``app`` at once; the next ones wait, first
    come first in, at most ``wait`` seconds each, then get a 503 ``busy`` with ``Retry-After``."""

    def __init__(self, app: ASGIApp, *, limit: int, wait: float) -> None:
        self.app = app
        self.limit = limit
        self.wait = wait
        self._turns = asyncio.Semaphore(limit)  # fair: a newcomer never overtakes a waiting request

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if not await self._admitted():
            await self._busy()(scope, receive, send)
            return
        try:
            await self.app(scope, receive, send)
        finally:
            self._turns.release()

    async def _admitted(self) -> bool:
        """Take a turn, waiting at most :attr:`wait` seconds; False when none came free in time."""
        if not self._turns.locked():
            await self._turns.acquire()  # free now: no wait, whatever the wait allowed
            return True
        try:
            async with asyncio.timeout(self.wait):
                await self._turns.acquire()  # a turn granted as the time runs out is given back
        except TimeoutError:
            return False
        return True

    def _busy(self) -> JSONResponse:
        waited = f"{self.wait:g} s" if self.wait else "no time"
        message = (
            f"the service is busy: it answers {self.limit} requests at once and this one waited {waited} for a "
            f"turn; retry after {RETRY_AFTER_SECONDS} s (MNEMO_HTTP_CONCURRENCY raises the limit, "
            "MNEMO_HTTP_QUEUE_SECONDS the wait)"
        )
        headers = {"Retry-After": str(RETRY_AFTER_SECONDS)}
        return JSONResponse(error_body("busy", message), status_code=503, headers=headers)


def install(app: FastAPI, settings: Settings) -> None:
    """Admit ``app``'s requests as ``settings`` say (``http_concurrency``, ``http_queue_seconds``)."""
    app.add_middleware(Admission, limit=settings.http_concurrency, wait=settings.http_queue_seconds)
