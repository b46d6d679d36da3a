"""DESIGN §6 and issue 30 item 3, checked: every JSON shape the interfaces speak is defined once, in
:mod:`mnemo.interfaces.shapes`. No module under ``interfaces/`` prints a dict it builds on the
spot (``print_json({...})``), and no MCP tool answers one (``return {...}``): each says which
shape it answers instead.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import mnemo
from mnemo.interfaces.mcp_tools import TOOLS
from mnemo.interfaces.shapes import RecallIn, RememberIn, request_body

INTERFACES = Path(mnemo.__file__).parent / "interfaces"
_BUILT = (ast.Dict, ast.DictComp)


def printed_dicts(source: str) -> list[int]:
    """The lines of ``source`` that call ``print_json`` with a dict built in the call."""
    return [
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and (getattr(node.func, "id", None) == "print_json" or getattr(node.func, "attr", None) == "print_json")
        and any(isinstance(arg, _BUILT) for arg in node.args)
    ]


def _is_tool(function: ast.AST) -> bool:
    decorators = getattr(function, "decorator_list", [])
    return any(isinstance(d, ast.Call) and getattr(d.func, "attr", None) == "tool" for d in decorators)


def _own_returns(function: ast.AST) -> list[ast.Return]:
    """The ``return`` statements of ``function`` itself (not of the functions nested in it)."""
    found: list[ast.Return] = []
    stack = list(ast.iter_child_nodes(function))
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        if isinstance(node, ast.Return):
            found.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return found


def returned_dicts(source: str) -> list[int]:
    """The lines of ``source`` where an MCP tool (``@server.tool()``) returns a dict built there."""
    tools = [n for n in ast.walk(ast.parse(source)) if _is_tool(n)]
    return sorted(r.lineno for tool in tools for r in _own_returns(tool) if isinstance(r.value, _BUILT))


def test_no_interface_prints_a_dict_it_builds() -> None:
    found = [
        f"{path.relative_to(INTERFACES.parent)}:{line}"
        for path in sorted(INTERFACES.rglob("*.py"))
        for line in printed_dicts(path.read_text(encoding="utf-8"))
    ]
    assert found == []


def test_no_mcp_tool_answers_a_dict_it_builds() -> None:
    source = (INTERFACES / "mcp.py").read_text(encoding="utf-8")
    assert len([n for n in ast.walk(ast.parse(source)) if _is_tool(n)]) == len(TOOLS)  # the rule sees every tool
    assert returned_dicts(source) == []


def test_the_rules_catch_a_dict_built_on_the_spot() -> None:
    assert printed_dicts('print_json({"a": 1})\nprint_json(dump(Shape(a=1)))\n') == [1]
    assert printed_dicts("x.print_json({k: v for k, v in y})\n") == [1]
    tool = (
        "def tools(server):\n"
        "    @server.tool()\n"
        "    async def t(n: int) -> dict:\n"
        "        def inner():\n"
        "            return {'nested': 1}\n"
        "        if n:\n"
        "            return {'a': n}\n"
        "        return dump(Shape(a=n))\n"
    )
    assert returned_dicts(tool) == [7]


def test_a_request_body_names_only_the_shapes_fields() -> None:
    body = request_body(RecallIn, query="tea?", k=3, owner=None)
    assert body == {"query": "tea?", "k": 3, "owner": None}
    assert list(body) == ["query", "k", "owner"]  # the order given
    with pytest.raises(TypeError, match="RememberIn has no field contents"):
        request_body(RememberIn, contents="a misspelt field")
