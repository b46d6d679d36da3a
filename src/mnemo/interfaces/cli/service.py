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
import re
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from datetime import UTC, datetime, timedelta
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
from mnemo.interfaces.mcp_tools import listed
from mnemo.interfaces.shapes import TokenOut, dump
from mnemo.models import Scope, TokenInfo, to_jsonable

__all__ = ["parse_duration", "register"]

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
    from mnemo.archive import AsyncArchive

    release_embedded = AsyncArchive.maintenance.release_embedded

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
    app.command()(ui)
    app.command(help=f"Serve one scope's memory to MCP clients (tools: {listed()}).")(mcp)
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
    """Serve one scope's memory to MCP clients (the tools: see mnemo.interfaces.mcp_tools)."""
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


_LOG_LEVELS = ("debug", "info", "warning", "error")
# procrastinate's own line per job (start, outcome with its traceback): mnemo.worker reports each job
_PROCRASTINATE_JOB_LINES = frozenset({"start_job", "job_success", "job_error", "job_error_retry"})


def _not_a_job_line(record: logging.LogRecord) -> bool:
    """Drop procrastinate's own per-job lines: ``mnemo.worker`` reports each job once."""
    return getattr(record, "action", None) not in _PROCRASTINATE_JOB_LINES


@contextmanager
def _worker_logging(level: int, *, verbose: bool) -> Iterator[None]:
    """Log ``mnemo.*`` at ``level`` to stderr for the block, and procrastinate's warnings (all of its
    lines with ``verbose`` or at debug, else without its per-job lines); restored afterwards."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    everything = verbose or level <= logging.DEBUG
    if not everything:
        handler.addFilter(_not_a_job_line)
    levels = {"mnemo": level, "procrastinate": level if everything else max(level, logging.WARNING)}
    saved = []
    for name, lvl in levels.items():
        logger = logging.getLogger(name)
        saved.append((logger, logger.level, logger.propagate))
        logger.setLevel(lvl)
        logger.addHandler(handler)
        logger.propagate = False  # one line each, whatever the root logger has
    try:
        yield
    finally:
        for logger, lvl, propagate in saved:
            logger.removeHandler(handler)
            logger.setLevel(lvl)
            logger.propagate = propagate


def _log_level(log_level: str | None, quiet: bool, verbose: bool) -> int:
    """The ``mnemo worker`` log level from its options (INFO by default: one line per job)."""
    if quiet and (verbose or log_level is not None):
        raise typer.BadParameter("--quiet cannot be combined with --verbose or --log-level", param_hint="--quiet")
    if quiet:
        return logging.WARNING
    if log_level is None:
        return logging.INFO
    if log_level.lower() not in _LOG_LEVELS:
        raise typer.BadParameter(f"choose one of {', '.join(_LOG_LEVELS)}", param_hint="--log-level")
    return int(logging.getLevelName(log_level.upper()))


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
    log_level: Annotated[
        str | None,
        typer.Option(
            "--log-level", help="debug, info (default: one line per job), warning or error.", show_default=False
        ),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", help="Only warnings and errors (--log-level warning).")] = False,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Also procrastinate's own lines (job start, worker start/stop).")
    ] = False,
) -> None:
    """Run background jobs: embeddings of turns stored with MNEMO_INGEST_MODE=async, re-embeds, and the
    night cycle on its schedule (MNEMO_NIGHT_CRON). Logs to stderr what it connects to, then one line
    per finished job (task, scope, what it did, duration) or its error. Ctrl-C / SIGTERM finish the
    running jobs, then stop. Run more workers, here or on other machines, to scale out."""
    import asyncio

    level = _log_level(log_level, quiet, verbose)
    from mnemo.interfaces.worker import run_worker

    with _worker_logging(level, verbose=verbose), _stops_on_signals():  # procrastinate handles signals once it runs
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
    concurrency: Annotated[
        int | None,
        typer.Option(
            "--concurrency",
            min=1,
            max=256,
            help="Requests answered at once (MNEMO_HTTP_CONCURRENCY, default 8); the connection pool holds one "
            "connection for each, plus MNEMO_POOL_RESERVE (default 2) of its own for background work such as "
            "read index builds.",
            show_default=False,
        ),
    ] = None,
    queue_seconds: Annotated[
        float | None,
        typer.Option(
            "--queue-seconds",
            min=0,
            max=20,
            help="How long a request over --concurrency waits, in arrival order, before it is answered 503 "
            "(code busy) with a Retry-After header (MNEMO_HTTP_QUEUE_SECONDS, default 5).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Serve the HTTP API (OpenAPI at /docs) and the inspector (/ui); every request needs a token
    from `mnemo token create`. At most --concurrency requests are answered at once; the next wait
    at the door for up to --queue-seconds, then get 503 busy with Retry-After, never a pool time-out."""
    import copy

    import uvicorn
    import uvicorn.config

    from mnemo.config import load_settings
    from mnemo.interfaces import local
    from mnemo.interfaces.http import create_app

    given = {"http_concurrency": concurrency, "http_queue_seconds": queue_seconds}
    config = load_settings(**{name: value for name, value in given.items() if value is not None})
    near = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)
    # commands of this machine find the service through MNEMO_HOME (mnemo.interfaces.local)
    announce = local.LocalService(
        url=f"http://{f'[{near}]' if ':' in near else near}:{port}",
        pid=os.getpid(),
        database=local.database_of(config.database_url, config.home),
        credential=local.new_credential(),
    )
    logging.basicConfig(level=logging.WARNING, format="mnemo: %(message)s", stream=sys.stderr)
    shown = f"[{host}]" if ":" in host else host  # an IPv6 address goes in brackets in a URL
    err.print(
        f"mnemo serving on http://{shown}:{port} (OpenAPI at /docs, the inspector at /ui/)",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
    log_config = copy.deepcopy(uvicorn.config.LOGGING_CONFIG)
    log_config["handlers"]["access"]["stream"] = "ext://sys.stderr"  # stdout stays clean, as for every command
    with _stops_on_signals():  # uvicorn shuts down gracefully first, then hands the signal on
        # info: uvicorn's access log, one line per request (and its start/stop lines), on stderr
        uvicorn.run(
            create_app(config, announce=announce),
            host=host,
            port=port,
            log_level="info",
            access_log=True,
            log_config=log_config,
        )


def ui(
    port: Annotated[int, typer.Option(help="Port of the service to start.")] = 8080,
) -> None:
    """Open the inspector: start `mnemo serve` on this machine (127.0.0.1) and print the inspector's
    address; sign in there with a token from `mnemo token create ENTITY`."""
    err.print(f"the inspector: http://127.0.0.1:{port}/ui/  (Ctrl-C stops it)", markup=False, highlight=False)
    serve(host="127.0.0.1", port=port)


_DURATION = re.compile(r"(-?)([0-9]+)([mhdw]?)")
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
_LONGEST = timedelta(days=36500)
_FORMS = "write a whole number and a unit, e.g. 90m, 12h, 30d or 2w"


def parse_duration(text: str) -> timedelta:
    """``90m``, ``12h``, ``30d``, ``2w``: a positive duration of at most 100 years
    (``mnemo token create --expires``); :class:`ValueError` with the reason otherwise."""
    match = _DURATION.fullmatch(text.strip().lower())
    if match is None:
        raise ValueError(f"{text!r} is not a duration: {_FORMS}")
    sign, amount, unit = match.group(1), int(match.group(2)), match.group(3)
    if amount == 0:
        raise ValueError(f"{text!r} is zero: a token must live a while (omit --expires for one that never expires)")
    if sign:
        raise ValueError(f"{text!r} is negative: the expiry must lie ahead, e.g. 30d")
    if not unit:
        raise ValueError(f"{text!r} has no unit: {_FORMS}")
    try:
        duration = timedelta(**{_UNITS[unit]: amount})
    except OverflowError:
        duration = _LONGEST + _LONGEST
    if duration > _LONGEST:
        raise ValueError(f"{text!r} is longer than 100 years (omit --expires for a token that never expires)")
    return duration


def _when(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


@fail_cleanly
def token_create(
    entity: Annotated[str, typer.Argument(help="The entity the token speaks for.")],
    namespace: Annotated[str | None, typer.Option("--namespace", "-n", help="Limit it to one namespace.")] = None,
    label: Annotated[str | None, typer.Option(help="A note to recognise it by.")] = None,
    expires: Annotated[
        str | None,
        typer.Option(
            "--expires", help="Stop working after this long: 90m, 12h, 30d, 2w (default: never).", show_default=False
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Create a bearer token (printed once; only its hash is stored)."""
    expires_at = None
    if expires is not None:
        try:
            expires_at = datetime.now(UTC) + parse_duration(expires)
        except ValueError as exc:
            raise typer.BadParameter(str(exc), param_hint="--expires") from None
    with open_archive() as archive:
        token, token_id = archive.access.create_token(entity, namespace=namespace, label=label, expires_at=expires_at)
    if as_json:
        expiry = None if expires_at is None else expires_at.isoformat()
        shown = TokenOut(token=token, id=str(token_id), entity=entity, namespace=namespace, expires_at=expiry)
        print_json(dump(shown))
        return
    out.print(token, markup=False, highlight=False)
    lasts = "" if expires_at is None else f", valid until {_when(expires_at)}"
    err.print(
        Text(
            f"token {token_id} for {entity}{'/' + namespace if namespace else ''}{lasts}: "
            "store it now, it is not shown again"
        ),
        soft_wrap=True,
    )


@fail_cleanly
def token_revoke(
    entity: Annotated[str, typer.Argument(help="The token's entity.")],
    token_id: Annotated[str, typer.Argument(help="The token's id (from create).")],
) -> None:
    """Revoke a token: requests with it get 401 from now on."""
    with open_archive() as archive:
        done = archive.access.revoke_token(entity, token_id)
    if not done:
        raise MnemoError(f"no active token {token_id} for {entity}")
    out.print(f"revoked {token_id}")


@fail_cleanly
def token_list(
    entity: Annotated[str, typer.Argument(help="The tokens' entity.")],
    as_json: JsonOpt = False,
) -> None:
    """List an entity's tokens (ids, namespaces, labels, dates, expiry; expired ones marked EXPIRED); never
    the tokens themselves."""
    Scope(entity)  # a bad id is a clean error before the archive opens
    with open_archive() as archive:
        rows = archive.access.tokens(entity)
    if as_json:
        print_json([to_jsonable(row) for row in rows])
        return
    if not rows:
        err.print(Text(f"no tokens for {entity}"))
        return
    table = Table(title=Text(f"tokens of {entity}"))
    for col in ("id", "namespace", "label", "created", "revoked", "expires"):
        table.add_column(col, no_wrap=col != "label")
    for row in rows:
        table.add_row(
            str(row.id),
            Text(row.namespace or "(any)"),
            Text(row.label or ""),
            row.created_at.strftime("%Y-%m-%d %H:%M"),
            "-" if row.revoked_at is None else row.revoked_at.strftime("%Y-%m-%d %H:%M"),
            _expiry_cell(row),
        )
    out.print(table)


def _expiry_cell(row: TokenInfo) -> Text:
    """``never``, the expiry time, or the expiry time marked ``EXPIRED`` once it has passed."""
    if row.expires_at is None:
        return Text("never")
    shown = row.expires_at.strftime("%Y-%m-%d %H:%M")
    return Text.assemble(shown, (" EXPIRED", "bold red")) if row.expired else Text(shown)
