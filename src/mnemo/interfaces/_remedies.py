"""Each interface's words for the call that fixes an error (its :class:`~mnemo.errors.Remedy`).

The library says a remedy in Python (``str(exc)``: ``access.grant(Scope('alice', 'default'), 'bob')``);
the command line says the command that does the same (``mnemo grant bob -e alice -n default``),
the HTTP service the request (``POST /v1/grants {...} with alice's token``). Where an interface has
no words for a remedy (no command or route does it), its user is told the problem alone, never a
call they cannot make. A new remedy gets its words here, one function per interface.

Standard library only: the command line imports it on its fast path.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from typing import Any, Literal

from mnemo.errors import MnemoError, Remedy

__all__ = ["CLI", "HTTP", "Face", "say"]

Face = Literal["python", "cli", "http"]


def _scope_options(scope: Any) -> str:
    return f"-e {shlex.quote(scope.entity_id)} -n {shlex.quote(scope.namespace)}"


def _cli_grant(remedy: Remedy) -> str:
    scope, grantee = remedy.args
    export = " --export" if remedy.options.get("export") else ""
    return f"`mnemo grant {shlex.quote(grantee)} {_scope_options(scope)}{export}`"


def _cli_night(remedy: Remedy) -> str:
    (scope,) = remedy.args
    return f"`mnemo night {_scope_options(scope)}`"


def _http_grant(remedy: Remedy) -> str:
    scope, grantee = remedy.args
    body: dict[str, Any] = {"grantee": grantee, "namespace": scope.namespace}
    if remedy.options.get("export"):
        body["export"] = True
    return f"POST /v1/grants {json.dumps(body)} with {scope.entity_id}'s token"


CLI: dict[str, Callable[[Remedy], str]] = {"access.grant": _cli_grant, "night_cycle": _cli_night}
"""The command for each remedy, by the archive method it names."""
HTTP: dict[str, Callable[[Remedy], str]] = {"access.grant": _http_grant}
"""The request for each remedy (the service runs no night cycle on request: its worker does)."""


def say(exc: MnemoError, face: Face) -> str:
    """``exc``'s message in ``face``'s words: the problem, then its remedy as that face does it."""
    if exc.remedy is None or face == "python":
        return str(exc)
    words = (CLI if face == "cli" else HTTP).get(exc.remedy.action)
    return exc.problem if words is None else f"{exc.problem}; {exc.remedy.lead} {words(exc.remedy)}"
