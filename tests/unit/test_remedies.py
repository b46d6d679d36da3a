"""An error's remedy in each face's words (issue 27): the library says the Python call, the command
line the command, the HTTP service the request; a face with no words for a remedy says the problem
alone. Every remedy mnemo raises names a real archive method and has the command line's words."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from mnemo import AccessDeniedError, AsyncArchive, Scope, UnknownItemError
from mnemo.errors import MnemoError, Remedy
from mnemo.interfaces._remedies import CLI, HTTP, say

SRC = Path(__file__).resolve().parents[2] / "src" / "mnemo"
READ = Remedy("its owner can grant access with", "access.grant", (Scope("alice", "diary"), "bob"))
EXPORT = Remedy("its owner can allow it with", "access.grant", (Scope("alice", "diary"), "bob"), {"export": True})


def _resolve(owner: object, dotted: str) -> object:
    """``owner``'s attribute at the dotted path (a core verb, or a feature's: ``access.grant``); None if missing."""
    for part in dotted.split("."):
        owner = getattr(owner, part, None)
    return owner


def test_the_library_says_the_python_call_and_keeps_the_problem_apart() -> None:
    denied = AccessDeniedError("'bob' may not read scope alice/diary", remedy=READ)
    assert str(denied) == (
        "'bob' may not read scope alice/diary; its owner can grant access with "
        "access.grant(Scope('alice', 'diary'), 'bob')"
    )
    assert denied.problem == "'bob' may not read scope alice/diary" and say(denied, "python") == str(denied)
    assert str(AccessDeniedError("x", remedy=EXPORT)).endswith(
        "access.grant(Scope('alice', 'diary'), 'bob', export=True)"
    )
    plain = MnemoError("nothing to do")
    assert str(plain) == plain.problem == say(plain, "cli") == say(plain, "http") == "nothing to do"


BOTH = {"grantee": "bob", "namespace": "diary", "export": True}


@pytest.mark.parametrize(
    ("remedy", "command", "body"),
    [
        (READ, "`mnemo grant bob -e alice -n diary`", {"grantee": "bob", "namespace": "diary"}),
        (EXPORT, "`mnemo grant bob -e alice -n diary --export`", BOTH),
    ],
)
def test_the_command_line_says_the_command_and_http_the_request(remedy: Remedy, command: str, body: dict) -> None:
    denied = AccessDeniedError("'bob' may not read scope alice/diary", remedy=remedy)
    cli, http = say(denied, "cli"), say(denied, "http")
    assert cli == f"'bob' may not read scope alice/diary; {remedy.lead} {command}"
    sent = re.fullmatch(rf"'bob' .*; {remedy.lead} POST /v1/grants (\{{.*\}}) with alice's token", http)
    assert sent is not None and json.loads(sent[1]) == body
    for said in (cli, http):
        assert "grant(" not in said and "Scope(" not in said and "=True" not in said


def test_a_face_without_words_for_a_remedy_says_the_problem_alone() -> None:
    unknown = UnknownItemError("no entity 'Lena'", remedy=Remedy("run it with", "night_cycle", (Scope("alice"),)))
    assert say(unknown, "cli") == "no entity 'Lena'; run it with `mnemo night -e alice -n default`"
    assert say(unknown, "http") == "no entity 'Lena'"  # the service's worker runs nights, not a request


def test_every_remedy_mnemo_raises_is_an_archive_method_with_the_command_lines_words() -> None:
    raised = set()
    for path in SRC.rglob("*.py"):
        raised |= set(re.findall(r'Remedy\(\s*"[^"]*",\s*"([\w.]+)"', path.read_text()))
    assert {"access.grant", "night_cycle"} <= raised
    for action in raised:
        assert callable(_resolve(AsyncArchive, action)), action
        assert action in CLI, f"the command line has no words for the remedy {action!r}"
    assert set(HTTP) <= set(CLI)
