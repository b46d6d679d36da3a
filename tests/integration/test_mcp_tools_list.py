"""One list of MCP tools (issue 39 item 15): ``mnemo mcp --help``, the README and ``docs/mcp.md``
list exactly the tools the server registers, in its order (the help listed 4 of them, the README 7)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from mnemo import Scope, Settings
from mnemo.interfaces.mcp import build_server
from mnemo.interfaces.mcp_tools import TOOLS

ROOT = Path(__file__).parents[2]
LISTED = re.compile(r"with the tools ((?:`\w+`(?:, | and )?)+)")


def _listed(text: str) -> tuple[str, ...]:
    found = LISTED.search(" ".join(text.split()))
    assert found is not None, "no 'with the tools `a`, `b` and `c`' sentence"
    return tuple(re.findall(r"`(\w+)`", found.group(1)))


async def test_the_tool_list_is_the_servers(database_url: str) -> None:
    server = build_server(Settings(database_url=database_url), Scope("mcp-user", "mcp"))  # the archive is not opened
    registered = tuple(t.name for t in await server.list_tools())
    assert registered == TOOLS
    assert _listed((ROOT / "README.md").read_text()) == registered
    assert _listed((ROOT / "docs" / "mcp.md").read_text()) == registered


def test_mcp_help_lists_every_tool() -> None:
    mnemo = str(Path(sys.executable).parent / "mnemo")
    env = {**os.environ, "COLUMNS": "400", "NO_COLOR": "1"}
    done = subprocess.run([mnemo, "mcp", "--help"], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    found = re.search(r"\(tools: ([\w, ]+)\)", " ".join(done.stdout.split()))
    assert found is not None, done.stdout
    assert tuple(re.split(r", | and ", found.group(1))) == TOOLS
