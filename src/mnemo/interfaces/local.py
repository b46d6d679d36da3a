"""The running local service, found by the command line through the data directory.

Seeds: memory-architecture §2.1 ("microseconds, zero network round-trip": the memory is already
loaded beside the model), cognitive-plan §2.2.

``mnemo serve`` writes ``service.json`` into ``MNEMO_HOME`` once its archive is open: the
address, its process id, which database it serves, and a fresh local credential (256 random bits,
the file readable by its owner only: whoever can read it can read the database files beside it
too). The file goes when the service stops. A command such as ``mnemo recall`` finds the file,
checks that the process is alive and serves the database the command would open, and sends its
request there with the credential and the entity it acts for: it answers in a fraction of a
second instead of starting PostgreSQL and loading the model. Without a service, or with
``MNEMO_USE_SERVICE=0``, commands open the archive themselves, as before.

Standard library only: this module is imported on the command line's fast path.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import socket
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "CREDENTIAL_HEADER",
    "ENTITY_HEADER",
    "SERVICE_FILE",
    "LocalService",
    "ServiceError",
    "database_of",
    "find",
    "new_credential",
    "remove",
    "write",
]

SERVICE_FILE = "service.json"
ENTITY_HEADER = "X-Mnemo-Entity"
"""With the local credential: the entity the command acts for (the command line may act for any)."""
CREDENTIAL_HEADER = "Authorization"


class ServiceError(Exception):
    """The service answered with an error: ``status`` and its ``{"error": {"code", "message"}}``."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


@dataclass(frozen=True, slots=True)
class LocalService:
    url: str
    pid: int
    database: str
    credential: str

    def call(self, method: str, path: str, entity: str, body: Any = None, timeout: float = 60.0) -> Any:
        """The JSON answer to one request; :class:`ServiceError` for an error answer, ``OSError``
        when the service cannot be reached."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header(CREDENTIAL_HEADER, f"Bearer {self.credential}")
        request.add_header(ENTITY_HEADER, entity)
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=timeout) as answer:
                return json.loads(answer.read() or b"null")
        except urllib.error.HTTPError as exc:
            try:
                error = json.loads(exc.read())["error"]
                raise ServiceError(exc.code, str(error["code"]), str(error["message"])) from None
            except (ValueError, KeyError, TypeError):
                raise ServiceError(exc.code, "internal", f"the service answered {exc.code}") from None


def new_credential() -> str:
    return "mnemo-local." + secrets.token_urlsafe(32)


def database_of(database_url: str | None, home: Path) -> str:
    """Which database a service or a command uses: its URL, or the embedded one under ``home``."""
    return database_url or f"embedded:{Path(home).expanduser().absolute()}"


def write(home: Path, service: LocalService) -> None:
    """Announce ``service`` in ``home`` (atomically, readable by the owner only)."""
    home.mkdir(parents=True, exist_ok=True)
    partial = home / f".{SERVICE_FILE}.{os.getpid()}"
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as file:
        json.dump({"url": service.url, "pid": service.pid, "database": service.database,
                   "credential": service.credential}, file)  # fmt: skip
    os.replace(partial, home / SERVICE_FILE)


def remove(home: Path, credential: str) -> None:
    """Withdraw the announcement, if it is still this service's."""
    path = home / SERVICE_FILE
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        if json.loads(path.read_text())["credential"] == credential:
            path.unlink()


def find(home: Path, database: str) -> LocalService | None:
    """The service announced in ``home`` when its process is alive and it serves ``database``
    and accepts connections (and ``MNEMO_USE_SERVICE`` is not off); None otherwise."""
    if os.environ.get("MNEMO_USE_SERVICE", "").strip().lower() in ("0", "false", "no", "off"):
        return None
    try:
        found = json.loads((home / SERVICE_FILE).read_text())
        service = LocalService(str(found["url"]), int(found["pid"]), str(found["database"]), str(found["credential"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if service.database != database or not _alive(service.pid) or not _listening(service.url):
        return None
    return service


def _listening(url: str) -> bool:
    """Whether something accepts connections at ``url`` (a process that reused a dead service's
    pid does not): a command then opens the archive instead of failing."""
    parsed = urllib.parse.urlsplit(url)
    try:
        with socket.create_connection((parsed.hostname or "127.0.0.1", parsed.port or 80), timeout=0.5):
            return True
    except OSError:
        return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
