"""Service commands: ``serve`` (HTTP), ``mcp``, ``worker`` and the ``token`` group.

The servers' own packages (uvicorn, mcp, procrastinate) are imported inside the
commands, so ``mnemo --help`` stays fast.

SIGTERM (systemd, docker, ``kill``) and SIGINT (Ctrl-C) end ``serve``, ``mcp``
and ``worker`` cleanly, with exit status 0: the server inside finishes its
graceful shutdown where it has one (uvicorn, procrastinate), and then this
process stops owning the embedded PostgreSQL, which stops when no other live
mnemo process uses it (:func:`_stops_on_signals`).
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from types import FrameType
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from mnemo.errors import MnemoError
from mnemo.interfaces.cli._common import (
    EntityOpt,
    JsonOpt,
    NamespaceOpt,
    err,
    fail_cleanly,
    open_archive,
    out,
    print_json,
)
from mnemo.models import Scope, to_jsonable

__all__ = ["register"]

_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


@contextmanager
def _stops_on_signals(*, exit_at_once: bool = False) -> Iterator[None]:
    """SIGTERM and SIGINT end the block with ``SystemExit(0)``; then leave the embedded server.

    A server inside that handles these signals itself (uvicorn, procrastinate) shuts down first and
    then hands the signal on (uvicorn re-raises it once its own handlers are removed): here it ends
    the process with status 0 instead of killing it, so the exit path below still runs. Without this,
    SIGTERM killed the process outright and the embedded PostgreSQL kept running with a dead owner.
    ``exit_at_once``: after a signal, end the process as soon as the server is left (``os._exit``),
    for the MCP stdio server, whose reader thread stays blocked on stdin and would keep it alive.
    """
    from mnemo.store.server import release_embedded

    signalled = False

    def stop(signum: int, frame: FrameType | None) -> None:
        nonlocal signalled
        signalled = True
        raise SystemExit(0)

    if threading.current_thread() is not threading.main_thread():  # only the main thread may set handlers
        try:
            yield
        finally:
            release_embedded()
        return
    previous = {sig: signal.signal(sig, stop) for sig in _STOP_SIGNALS}
    try:
        yield
    finally:
        for sig in _STOP_SIGNALS:  # a second Ctrl-C must not cut the server's stop short
            signal.signal(sig, signal.SIG_IGN)
        try:
            release_embedded()
        finally:
            if signalled and exit_at_once:
                logging.shutdown()
                for stream in (sys.stdout, sys.stderr):
                    with suppress(Exception):
                        stream.flush()
                os._exit(0)
            for sig, handler in previous.items():
                signal.signal(sig, handler)


def register(app: typer.Typer) -> None:
    """Add ``mcp``, ``worker``, ``serve`` and the ``token`` group to ``app``."""
    app.command()(serve)
    app.command()(mcp)
    app.command()(worker)
    tokens = typer.Typer(no_args_is_help=True, help="Bearer tokens for mnemo serve.")
    tokens.command("create")(token_create)
    tokens.command("revoke")(token_revoke)
    tokens.command("list")(token_list)
    app.add_typer(tokens, name="token")


@fail_cleanly
def mcp(
    entity: EntityOpt = "default",
    namespace: NamespaceOpt = "default",
    http: Annotated[bool, typer.Option("--http", help="Serve streamable HTTP instead of stdio.")] = False,
    host: Annotated[str, typer.Option(help="HTTP host (with --http).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="HTTP port (with --http).")] = 8765,
    auth: Annotated[
        bool,
        typer.Option("--auth", help="With --http: require a bearer token (mnemo token create); it sets the scope."),
    ] = False,
) -> None:
    """Serve one scope's memory to MCP clients (tools: recall, remember, context, forget)."""
    from mnemo.config import load_settings
    from mnemo.interfaces.mcp import build_server

    if auth and not http:
        raise typer.BadParameter("--auth needs --http (stdio has no bearer tokens)", param_hint="--auth")
    logging.basicConfig(level=logging.WARNING, format="mnemo: %(message)s", stream=sys.stderr)
    server = build_server(load_settings(), Scope(entity, namespace), auth=auth, url=f"http://{host}:{port}")
    with _stops_on_signals(exit_at_once=not http):
        if http:
            server.run("streamable-http", host=host, port=port)
        else:
            server.run("stdio")


@fail_cleanly
def worker(
    concurrency: Annotated[int, typer.Option("--concurrency", "-c", min=1, max=64, help="Jobs run at once.")] = 1,
    queue: Annotated[
        list[str] | None, typer.Option("--queue", "-q", help="ingest, maintenance or night (repeatable; default all).")
    ] = None,
    wait: Annotated[bool, typer.Option("--wait/--no-wait", help="--no-wait: stop once the queues are empty.")] = True,
    heartbeat: Annotated[float, typer.Option(min=0.1, help="Seconds between liveness updates.")] = 10.0,
    stalled_after: Annotated[
        float, typer.Option(min=0.2, help="A worker silent this long is presumed dead; its jobs run again.")
    ] = 30.0,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log every job.")] = False,
) -> None:
    """Run background jobs: embeddings of turns stored with MNEMO_INGEST_MODE=async, re-embeds, and the
    night cycle on its schedule (MNEMO_NIGHT_CRON). Ctrl-C / SIGTERM finish the running jobs, then stop.
    Run more workers, here or on other machines, to scale out."""
    import asyncio

    from mnemo.interfaces.worker import run_worker

    level = logging.INFO if verbose else logging.WARNING
    logging.basicConfig(level=level, format="%(asctime)s %(name)s: %(message)s", stream=sys.stderr)
    logging.getLogger("procrastinate").setLevel(level)
    with _stops_on_signals():  # procrastinate's own handlers take over once the worker runs
        recovered = asyncio.run(
            run_worker(
                queues=queue or None,
                concurrency=concurrency,
                wait=wait,
                heartbeat=heartbeat,
                stalled_after=stalled_after,
            )
        )
    err.print(f"worker stopped{f' (re-queued {recovered} stalled jobs at start)' if recovered else ''}")


@fail_cleanly
def serve(
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port.")] = 8080,
) -> None:
    """Serve the HTTP API (OpenAPI at /docs); every request needs a token from `mnemo token create`."""
    import copy

    import uvicorn
    import uvicorn.config

    from mnemo.config import load_settings
    from mnemo.interfaces.http import create_app

    logging.basicConfig(level=logging.WARNING, format="mnemo: %(message)s", stream=sys.stderr)
    shown = f"[{host}]" if ":" in host else host  # an IPv6 address goes in brackets in a URL
    err.print(
        f"mnemo serving on http://{shown}:{port} (OpenAPI at /docs)", markup=False, highlight=False, soft_wrap=True
    )
    log_config = copy.deepcopy(uvicorn.config.LOGGING_CONFIG)
    log_config["handlers"]["access"]["stream"] = "ext://sys.stderr"  # stdout stays clean, as for every command
    with _stops_on_signals():  # uvicorn shuts down gracefully first, then hands the signal on
        # info: uvicorn's access log, one line per request (and its start/stop lines), on stderr
        uvicorn.run(
            create_app(load_settings()),
            host=host,
            port=port,
            log_level="info",
            access_log=True,
            log_config=log_config,
        )


@fail_cleanly
def token_create(
    entity: Annotated[str, typer.Argument(help="The entity the token speaks for.")],
    namespace: Annotated[str | None, typer.Option("--namespace", "-n", help="Limit it to one namespace.")] = None,
    label: Annotated[str | None, typer.Option(help="A note to recognise it by.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Create a bearer token (printed once; only its hash is stored)."""
    with open_archive() as archive:
        token, token_id = archive.create_token(entity, namespace=namespace, label=label)
    if as_json:
        print_json({"token": token, "id": str(token_id), "entity": entity, "namespace": namespace})
        return
    out.print(token, markup=False, highlight=False)
    err.print(
        f"token {token_id} for {entity}{'/' + namespace if namespace else ''}: store it now, it is not shown again"
    )


@fail_cleanly
def token_revoke(
    entity: Annotated[str, typer.Argument(help="The token's entity.")],
    token_id: Annotated[str, typer.Argument(help="The token's id (from create).")],
) -> None:
    """Revoke a token: requests with it get 401 from now on."""
    with open_archive() as archive:
        done = archive.revoke_token(entity, token_id)
    if not done:
        raise MnemoError(f"no active token {token_id} for {entity}")
    out.print(f"revoked {token_id}")


@fail_cleanly
def token_list(
    entity: Annotated[str, typer.Argument(help="The tokens' entity.")],
    as_json: JsonOpt = False,
) -> None:
    """List an entity's tokens (ids, namespaces, labels, dates); never the tokens themselves."""
    Scope(entity)  # a bad id is a clean error before the archive opens
    with open_archive() as archive:
        rows = archive.tokens(entity)
    if as_json:
        print_json([to_jsonable(row) for row in rows])
        return
    if not rows:
        err.print(Text(f"no tokens for {entity}"))
        return
    table = Table(title=Text(f"tokens of {entity}"))
    for col in ("id", "namespace", "label", "created", "revoked"):
        table.add_column(col, no_wrap=col != "label")
    for row in rows:
        table.add_row(
            str(row.id),
            Text(row.namespace or "(any)"),
            Text(row.label or ""),
            row.created_at.strftime("%Y-%m-%d %H:%M"),
            "-" if row.revoked_at is None else row.revoked_at.strftime("%Y-%m-%d %H:%M"),
        )
    out.print(table)
