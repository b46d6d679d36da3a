"""The MCP server's tools, by name, in one list (issue 39 item 15: ``mnemo mcp --help``, the README
and the docs each listed a different set).

A light module (no MCP SDK import) so ``mnemo mcp --help`` stays fast; its help text is made
from this list. A test (``tests/integration/test_mcp.py``) compares this list, the help text, the
README and ``docs/mcp.md`` with the tools the server built by
:func:`mnemo.interfaces.mcp.build_server` registers.
"""

from __future__ import annotations

__all__ = ["TOOLS", "listed"]

TOOLS: tuple[str, ...] = (
    "recall",
    "remember",
    "context",
    "record_turn",
    "forget",
    "record_outcome",
    "reflexes_for",
    "feedback",
    "readiness",
    "export_packets",
)
"""Every tool ``mnemo mcp`` serves, in the order the server registers them."""


def listed(names: tuple[str, ...] = TOOLS) -> str:
    """``recall, remember, ... and export_packets``: the tools as a sentence lists them."""
    *others, last = names
    return f"{', '.join(others)} and {last}" if others else last
