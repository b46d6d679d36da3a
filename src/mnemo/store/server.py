"""Where the database is: the embedded server, or a configured URL.

Seed: archive-adr §1 "Substrate Bootstrap": a database without a usable
pgvector is a hard start-up error with a clear message.

The embedded server is shared by every mnemo process of one ``MNEMO_HOME`` and
reference-counted by their live pids (:mod:`mnemo.store._owners`): a process
becomes an owner when it first opens it and stops owning it at exit, or
earlier with :func:`release_embedded` (``serve``, ``mcp`` and ``worker`` do so
when SIGTERM or SIGINT ends them); the last live owner stops the server. Dead
owners (SIGKILL, a crash) are pruned by the next start, and a watchdog stops a
server whose owners are all dead.
"""

from __future__ import annotations

import atexit
import logging
import re
import threading
import warnings
from contextlib import suppress
from pathlib import Path
from typing import Any

import psycopg

from mnemo.errors import DatabaseUnavailableError, ExtensionMissingError

__all__ = ["MIN_PGVECTOR", "check_pgvector", "embedded_running", "embedded_url", "parse_version", "release_embedded"]

_log = logging.getLogger(__name__)
MIN_PGVECTOR = (0, 7, 0)
EMBEDDED_DATABASE = "mnemo"


def parse_version(text: str) -> tuple[int, int, int]:
    """``'0.8.5'`` -> ``(0, 8, 5)``; missing parts are 0, suffixes ignored."""
    parts = [int(p) for p in re.findall(r"\d+", text)[:3]]
    if not parts:
        raise ValueError(f"not a version: {text!r}")
    while len(parts) < 3:
        parts.append(0)
    return parts[0], parts[1], parts[2]


# The data directories this process owns a server of (see the module docstring).
_owned: set[Path] = set()
_owned_lock = threading.Lock()


def _owners() -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns when XDG_RUNTIME_DIR is unset
        from mnemo.store import _owners

    return _owners


def release_embedded() -> None:
    """Stop owning the embedded servers this process started or attached to; each one stops when no
    other live process owns it. Idempotent; runs at exit by itself (a later start attaches again)."""
    with _owned_lock:
        while _owned:
            pgdata = _owned.pop()
            try:
                _owners().leave(pgdata)
            except Exception as exc:  # at exit, say what is left behind rather than fail
                _log.warning("could not stop the embedded PostgreSQL in %s: %s", pgdata, exc)


def embedded_running(home: Path) -> bool:
    """Whether an embedded PostgreSQL runs for ``home`` (whoever started it)."""
    return bool(_owners().server_running((home / "pgdata").expanduser().resolve()))


def embedded_url(home: Path) -> str:
    """Start (or attach to) the embedded PostgreSQL under ``home`` and return its URL."""
    try:
        home.mkdir(parents=True, exist_ok=True)
        pgdata = (home / "pgdata").expanduser().resolve()
        with _owned_lock:
            if not _owned:
                atexit.unregister(release_embedded)
                atexit.register(release_embedded)
            _owned.add(pgdata)  # before the start: a signal in between still leaves through release_embedded
            server = _owners().attach(pgdata)
    except Exception as exc:  # the wheel raises plain exceptions; surface one clear error
        raise DatabaseUnavailableError(
            f"could not start the embedded PostgreSQL in {home / 'pgdata'}: {exc}. "
            "Check the directory is writable (set MNEMO_HOME to move it) or set MNEMO_DATABASE_URL."
        ) from exc
    admin_url = server.get_uri()
    try:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (EMBEDDED_DATABASE,)).fetchone()
            if exists is None:  # another mnemo process sharing this home may create it first
                with suppress(psycopg.errors.DuplicateDatabase, psycopg.errors.UniqueViolation):
                    conn.execute(f'CREATE DATABASE "{EMBEDDED_DATABASE}"')
    except psycopg.Error as exc:
        raise DatabaseUnavailableError(f"embedded PostgreSQL started but is not usable: {exc}") from exc
    return str(server.get_uri(EMBEDDED_DATABASE))


async def check_pgvector(conn: psycopg.AsyncConnection) -> str:
    """Make sure pgvector >= 0.7 is installed (installing it if allowed); return its version.

    Raises :class:`ExtensionMissingError` saying exactly what is missing and
    changes nothing when the check fails.
    """
    need = ".".join(map(str, MIN_PGVECTOR))
    row = await (await conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")).fetchone()
    if row is None:
        cur = await conn.execute("SELECT default_version FROM pg_available_extensions WHERE name = 'vector'")
        available = await cur.fetchone()
        if available is None:
            raise ExtensionMissingError(
                f"pgvector is not available on this PostgreSQL server; mnemo needs pgvector >= {need}. "
                "Install it on the server (e.g. the postgresql-NN-pgvector package) or unset "
                "MNEMO_DATABASE_URL to use the embedded server."
            )
        if parse_version(available[0]) < MIN_PGVECTOR:
            raise ExtensionMissingError(
                f"the server offers pgvector {available[0]}, mnemo needs >= {need}; upgrade pgvector."
            )
        try:
            async with conn.transaction():
                await conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        except (psycopg.errors.UniqueViolation, psycopg.errors.DuplicateObject):
            pass  # a concurrent start installed it first ("IF NOT EXISTS" does not cover the race)
        except psycopg.errors.InsufficientPrivilege as exc:
            user = conn.info.user
            raise ExtensionMissingError(
                f"pgvector is not installed in database {conn.info.dbname!r} and role {user!r} may not "
                f"install it. Run 'CREATE EXTENSION vector;' there as a superuser (pgvector >= {need})."
            ) from exc
        row = await (await conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")).fetchone()
        assert row is not None
    version = str(row[0])
    if parse_version(version) < MIN_PGVECTOR:
        raise ExtensionMissingError(
            f"database {conn.info.dbname!r} has pgvector {version}; mnemo needs >= {need}. "
            "Run 'ALTER EXTENSION vector UPDATE;' as a superuser."
        )
    return version
