"""DESIGN §5, checked: dependencies point inward, the faces go through the archive, cognition is pure.

The text of §5: "Dependencies point inward: interfaces, agent, bench → archive → features →
write / recall / night → cortex → store, cognition, embed, llm." :data:`LAYERS` and
:data:`MAY_IMPORT` are that arrow, with the layers it leaves implicit named (each addition says
why in its comment):

- ``records`` (errors, models, config, the input checks) and ``shared`` (the runtime, weight
  dynamics, upkeep) sit under the store and the layers above it;
- ``public`` is the package's ``__init__``: it re-exports the archive and every record its methods
  return, from wherever it is defined (``store``'s ``Extension``, ``admin``'s ``Inspector``,
  ``embed``'s ``Embeddings``: lazily);
- ``night → write``: the night writes what it consolidates through the write path;
- ``agent, interfaces, bench → cognition``: pure functions (the agent's mind, the blend's
  component registry) are usable by any face;
- ``interfaces → agent, bench``: the command line runs the agent and the benches.

Every module of the package has a layer, root modules by name (a new root module is reported until
it is listed). Imports are read as Python runs them: the body of ``if TYPE_CHECKING:`` (or
``if typing.TYPE_CHECKING:``) is annotations only and not counted, its ``else`` branch and imports
inside functions are. The faces (interfaces, bench, agent and the ``benchmarks/`` scripts) never
touch the archive's runtime or any private attribute of another object, and import neither the
store, the runtime nor another package's private module. ``cognition`` imports numpy, scikit-learn
and pure standard modules only, and does no I/O. SQL lives in ``store/`` alone. Each rule has a
self-test that a planted violation fails.
"""

from __future__ import annotations

import ast
import itertools
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

import mnemo

SRC = Path(mnemo.__file__).parent
ROOT = "mnemo"
"""The package: its own name is the ``public`` layer (``__init__``), never a prefix of others."""

LAYERS: dict[str, tuple[str, ...]] = {
    # layer: module prefixes (the longest prefix wins); every root module is named here
    "cognition": ("mnemo.cognition",),
    "records": ("mnemo.errors", "mnemo.models", "mnemo.config", "mnemo._validate"),  # + the input checks
    "io": ("mnemo.embed", "mnemo.llm", "mnemo.rerank", "mnemo._onnx"),
    "store": ("mnemo.store",),
    "shared": ("mnemo._runtime", "mnemo._dynamics", "mnemo._upkeep"),
    "cortex": ("mnemo.cortex",),
    "write": ("mnemo.write",),
    "recall": ("mnemo.recall",),
    "night": ("mnemo.night",),
    "features": ("mnemo.access", "mnemo.admin", "mnemo.inner", "mnemo.portability", "mnemo.reflexes"),
    "archive": ("mnemo.archive", "mnemo._sync"),
    "public": (ROOT,),  # the package's __init__ only
    "agent": ("mnemo.agent",),
    "interfaces": ("mnemo.interfaces",),
    "bench": ("mnemo.bench",),
}

_BELOW_CORTEX = {"shared", "store", "io", "records", "cognition"}  # §5's "store, cognition, embed, llm"
_FACE = {"public", "archive", "records", "io", "cognition"}  # §5: a face goes through the archive
MAY_IMPORT: dict[str, set[str]] = {
    "cognition": set(),
    "records": {"cognition"},  # models hold cognition's StochasticWeight (pure)
    "io": {"records", "cognition"},
    "store": {"records", "cognition"},
    "shared": {"store", "io", "records", "cognition"},  # the runtime holds the store and the models
    "cortex": _BELOW_CORTEX,
    "write": {"cortex"} | _BELOW_CORTEX,
    "recall": {"cortex"} | _BELOW_CORTEX,
    "night": {"write", "cortex"} | _BELOW_CORTEX,  # widening: the night writes through write.remember
    "features": {"night", "recall", "write", "cortex"} | _BELOW_CORTEX,
    "archive": {"features", "night", "recall", "write", "cortex"} | _BELOW_CORTEX,
    "public": {"archive", "features", "records", "io", "cognition", "store"},  # every record the archive returns
    "agent": _FACE,
    "interfaces": {"agent", "bench"} | _FACE,  # widening: `mnemo agent`, `mnemo bench`
    "bench": _FACE,
}
"""Which other layers each layer may import (a layer may always import itself)."""


def layer_of(module: str) -> str | None:
    """The layer of ``module`` by its longest listed prefix; None when no entry names it."""
    found = [
        (len(prefix), name)
        for name, prefixes in LAYERS.items()
        for prefix in prefixes
        if module == prefix or (prefix != ROOT and module.startswith(prefix + "."))
    ]
    return max(found)[1] if found else None


def _under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def modules(src: Path = SRC) -> Iterator[tuple[str, Path]]:
    for path in sorted(src.rglob("*.py")):
        parts = path.relative_to(src).with_suffix("").parts
        name = ".".join((ROOT, *parts)).removesuffix(".__init__")
        yield name, path


def unplaced(src: Path = SRC) -> list[str]:
    """The modules under ``src`` that no entry of :data:`LAYERS` names."""
    return [module for module, _ in modules(src) if layer_of(module) is None]


def _is_type_checking(test: ast.expr) -> bool:
    """``TYPE_CHECKING`` or ``typing.TYPE_CHECKING``, exactly (not ``not TYPE_CHECKING``)."""
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING" and ast.unparse(test.value) == "typing"


def runtime_nodes(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node of ``tree`` that runs, i.e. all but the bodies of ``if TYPE_CHECKING:``."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for other in node.orelse:  # the else branch runs
                yield other
                yield from runtime_nodes(other)
            continue
        yield node
        yield from runtime_nodes(node)


def imports(module: str, path: Path) -> Iterator[tuple[int, str]]:
    """The project modules ``module`` imports at run time, with their lines."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in runtime_nodes(tree):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names if _under(alias.name, ROOT))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}".rstrip(".")
            if not _under(base, ROOT):
                continue
            for alias in node.names:  # `from mnemo.store import night`: the submodule is what is imported
                if (base, alias.name) == (ROOT, "__version__"):
                    continue  # the version string is metadata, not a dependency
                target = f"{base}.{alias.name}"
                yield node.lineno, target if _is_module(target) else base


def _is_module(name: str) -> bool:
    rel = Path(*name.split(".")[1:])
    return (SRC / rel).with_suffix(".py").is_file() or (SRC / rel / "__init__.py").is_file()


def violations(src: Path = SRC) -> list[str]:
    found: dict[str, None] = {}
    for module, path in modules(src):
        own = layer_of(module)
        for line, target in imports(module, path):
            other = layer_of(target)
            if other != own and (own is None or other not in MAY_IMPORT[own]):
                found[f"{path.relative_to(src.parent)}:{line}: {own} imports {target} ({other})"] = None
    return list(found)


def test_every_module_has_a_layer_and_every_layer_a_rule() -> None:
    assert set(MAY_IMPORT) == set(LAYERS)
    assert unplaced() == []
    seen = {layer_of(m) for m, _ in modules()}
    assert seen == set(LAYERS), f"layers with no module: {set(LAYERS) - seen}"


def test_a_new_root_module_is_reported_until_it_is_listed(tmp_path: Path) -> None:
    (tmp_path / "helpers.py").write_text("X = 1\n")
    (tmp_path / "models.py").write_text("X = 1\n")
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "__init__.py").write_text("")
    assert unplaced(tmp_path) == ["mnemo.helpers", "mnemo.tools"]
    assert layer_of("mnemo") == "public" and layer_of("mnemo._private_thing") is None


def test_dependencies_point_inward() -> None:
    assert violations() == []


def test_the_rule_catches_an_upward_import(tmp_path: Path) -> None:
    assert "write" not in MAY_IMPORT["store"] and layer_of("mnemo.write.remember") == "write"
    assert layer_of("mnemo") == "public" and layer_of("mnemo._sync") == "archive"
    assert layer_of("mnemo.store.night_runs") == "store" and layer_of("mnemo.interfaces.cli.admin") == "interfaces"
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "rows.py").write_text("from mnemo.write import remember\n")
    (tmp_path / "helpers.py").write_text("from mnemo import models\n")
    assert violations(tmp_path) == [
        f"{tmp_path.name}/helpers.py:1: None imports mnemo.models (records)",
        f"{tmp_path.name}/store/rows.py:1: store imports mnemo.write.remember (write)",
    ]


def test_the_table_is_design_5s_arrow() -> None:
    """interfaces, agent, bench → archive → features → write / recall / night → cortex → store,
    cognition, embed, llm; the additions are the ones the module docstring names."""
    arrow = ["archive", "features", "night", "cortex"]  # write and recall sit beside night
    for upper, lower in itertools.pairwise(arrow):
        assert lower in MAY_IMPORT[upper] and upper not in MAY_IMPORT[lower]
    for face in ("interfaces", "agent", "bench"):
        assert MAY_IMPORT[face] & {"features", "night", "write", "recall", "cortex", "store", "shared"} == set()
    assert {"write", "recall"} & (MAY_IMPORT["recall"] | MAY_IMPORT["write"]) == set()
    assert MAY_IMPORT["night"] - _BELOW_CORTEX == {"write", "cortex"}  # the one widening among the three
    assert all(not MAY_IMPORT[layer] & {"agent", "interfaces", "bench"} for layer in LAYERS if layer != "interfaces")


def test_cognition_imports_nothing_from_the_project() -> None:
    found = [f"{m}:{line} {t}" for m, p in modules() if layer_of(m) == "cognition" for line, t in imports(m, p)]
    assert [f for f in found if not f.split()[-1].startswith("mnemo.cognition")] == []


FEATURES_AT_THE_ROOT = {"_dynamics", "_onnx", "_runtime", "_sync", "_upkeep", "_validate"}
"""The private modules that may stay at the package root: shared by every layer (or the sync facade)."""


def test_no_feature_module_sits_loose_at_the_root() -> None:
    loose = {p.stem for p in SRC.glob("_*.py") if p.stem != "__init__"}
    assert loose == FEATURES_AT_THE_ROOT


@pytest.mark.parametrize(
    ("source", "module", "expected"),
    [
        ("from mnemo.store import night_runs\n", "mnemo.write.x", ["mnemo.store.night_runs"]),
        ("from mnemo.store.night_runs import held_scope\n", "mnemo.write.x", ["mnemo.store.night_runs"]),
        ("from . import block_building\n", "mnemo.night.cycle", ["mnemo.night.block_building"]),
        ("from ..store import night_runs\n", "mnemo.night.cycle", ["mnemo.store.night_runs"]),
        ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import mnemo.recall\n", "mnemo.x", []),
        ("import typing\nif typing.TYPE_CHECKING:\n    import mnemo.recall\n", "mnemo.x", []),
        ("def f():\n    from mnemo.recall import scope_index\n", "mnemo.store.x", ["mnemo.recall.scope_index"]),
    ],
)
def test_the_rule_reads_imports_as_python_does(tmp_path: Path, source: str, module: str, expected: list[str]) -> None:
    path = tmp_path / "x.py"
    path.write_text(source)
    assert [t for _, t in imports(module, path)] == expected


@pytest.mark.parametrize(
    "source",
    [
        "from typing import TYPE_CHECKING\nif not TYPE_CHECKING:\n    import mnemo.recall\n",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    pass\nelse:\n    import mnemo.recall\n",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING or True:\n    import mnemo.recall\n",
        "MY_TYPE_CHECKING = True\nif MY_TYPE_CHECKING:\n    import mnemo.recall\n",
    ],
)
def test_only_the_type_checking_body_is_skipped(tmp_path: Path, source: str) -> None:
    path = tmp_path / "x.py"
    path.write_text(source)
    assert [t for _, t in imports("mnemo.store.x", path)] == ["mnemo.recall"]


# --- the faces go through the archive ----------------------------------------------------------------
FACES = ("interfaces", "bench", "agent")
"""The layers that reach the archive through ``AsyncArchive``'s methods and feature attributes only."""

BENCHMARKS = SRC.parents[1] / "benchmarks"
"""The top-level benchmark scripts: they too measure through ``AsyncArchive`` (its ``probes()``)."""

RUNTIME_NAMES = {"runtime", "_rt", "_runtime"}
"""The attributes that hold an archive's runtime (``AsyncArchive``'s and every feature class's)."""

PRIVATE_REACHES_ALLOWED = {"os._exit", "server._tool_manager", "agent._second_opinion"}
"""Private attributes a face may read, none of them the archive's: the standard library's hard exit
(``mnemo serve`` after its shutdown), the MCP SDK's tool registry (``mnemo mcp --help``), and the
agent's own method its tools call (``agent/tools.py``, one package)."""


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def runtime_touches(source: str) -> list[int]:
    """The lines of ``source`` that reach a runtime (``x.runtime``, ``x._rt``, ``x._runtime``) or any
    private attribute of an object not its own (``archive._rt.store``, ``archive.access._rt``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Attribute):
            continue
        own = isinstance(node.value, ast.Name) and node.value.id in {"self", "cls"}
        reach = node.attr in RUNTIME_NAMES or (_private(node.attr) and not own)
        if reach and ast.unparse(node) not in PRIVATE_REACHES_ALLOWED:
            found.append(node.lineno)
    return sorted(set(found))


def _face_paths() -> Iterator[tuple[str, str, Path]]:
    """Every face's files: (module, the package a private module of its own may sit in, path)."""
    for module, path in modules():
        if layer_of(module) in FACES:
            yield module, ".".join(module.split(".")[:2]), path
    for path in sorted(BENCHMARKS.glob("*.py")):
        yield f"benchmarks.{path.stem}", "benchmarks", path


FACE_IMPORTS_ALLOWED = {
    "mnemo._validate": "the input checks every door runs on what a user typed (pure; records layer)",
    "mnemo.store.server": "benchmarks/chaos.py reads the books in PostgreSQL after a SIGKILL (decision pending)",
}
"""Imports a face may make past the rule below, each with its reason."""


def forbidden_imports(module: str, own_package: str, path: Path) -> list[tuple[int, str]]:
    """What ``module`` (a face) imports of the store, the runtime or another package's private
    module or private name (``from mnemo.recall import _hidden``)."""
    found = []
    for line, target in [*imports(module, path), *_private_names(module, path)]:
        if target in FACE_IMPORTS_ALLOWED or _under(target, own_package):
            continue
        if _under(target, "mnemo.store") or any(_private(part) for part in target.split(".")):
            found.append((line, target))
    return sorted(set(found))


def _private_names(module: str, path: Path) -> Iterator[tuple[int, str]]:
    """The private names ``module`` imports from the project that are not modules (those
    :func:`imports` already yields)."""
    for node in runtime_nodes(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and not node.level and _under(node.module or "", ROOT):
            for alias in node.names:
                target = f"{node.module}.{alias.name}"
                if _private(alias.name) and not _is_module(target):
                    yield node.lineno, target


def test_the_faces_never_touch_the_runtime() -> None:
    found = [
        f"{path.relative_to(SRC.parents[1])}:{line}"
        for _, _, path in _face_paths()
        for line in runtime_touches(path.read_text(encoding="utf-8"))
    ]
    assert found == []


def test_the_faces_import_neither_the_store_nor_private_modules() -> None:
    assert len(list(BENCHMARKS.glob("*.py"))) >= 10  # the rule sees the scripts
    found = [
        f"{path.relative_to(SRC.parents[1])}:{line}: {target}"
        for module, package, path in _face_paths()
        for line, target in forbidden_imports(module, package, path)
    ]
    assert found == []


def test_the_runtime_check_catches_a_reach_past_the_archive() -> None:
    assert runtime_touches("async def f(archive):\n    return archive.runtime.store\n") == [2]
    assert runtime_touches("x = archive().runtime\n") == [1]
    assert runtime_touches("x = archive._rt.store\n") == [1]
    assert runtime_touches("x = archive._runtime\n") == [1]
    assert runtime_touches("x = archive.access._rt\n") == [1]
    assert runtime_touches("x = archive._store\n") == [1]
    assert runtime_touches("self._rt = 1\n") == [1]  # a face holds no runtime of its own either
    assert runtime_touches("runtime = 1\nx = archive.settings\ny = self._cache\nz = a.__class__\n") == []


SCRIPTS_MAY_IMPORT = MAY_IMPORT["interfaces"] | {"interfaces"}
"""The benchmark scripts are programs over the package, as the command line is: they import what a
face may, and the faces themselves (the agent, the Pydantic AI tools)."""


def script_violations(path: Path) -> list[str]:
    """The imports of a ``benchmarks/`` script past :data:`SCRIPTS_MAY_IMPORT`."""
    return [
        f"benchmarks/{path.name}:{line}: {target} ({layer_of(target)})"
        for line, target in imports(f"benchmarks.{path.stem}", path)
        if layer_of(target) not in SCRIPTS_MAY_IMPORT and target not in FACE_IMPORTS_ALLOWED
    ]


def test_the_benchmark_scripts_import_as_a_face_does() -> None:
    assert [v for path in sorted(BENCHMARKS.glob("*.py")) for v in script_violations(path)] == []


def test_the_script_check_catches_a_reach_into_the_write_path(tmp_path: Path) -> None:
    path = tmp_path / "bench_x.py"
    path.write_text("from mnemo.write.formats import TurnInput\nfrom mnemo import TurnInput as T\n")
    assert script_violations(path) == ["benchmarks/bench_x.py:1: mnemo.write.formats (write)"]


def test_the_import_check_catches_the_store_and_private_modules(tmp_path: Path) -> None:
    path = tmp_path / "x.py"
    path.write_text(
        "from mnemo.store import pool\nimport mnemo._runtime\nfrom mnemo.recall import _hidden\n"
        "from mnemo.interfaces.cli import _common\nfrom mnemo import Scope\nfrom mnemo._validate import check_id\n"
    )
    found = forbidden_imports("mnemo.interfaces.cli.x", "mnemo.interfaces", path)
    assert found == [(1, "mnemo.store.pool"), (2, "mnemo._runtime"), (3, "mnemo.recall._hidden")]


# --- cognition is pure ----------------------------------------------------------------------------
PURE_MODULES = {
    "__future__", "abc", "bisect", "collections", "copy", "dataclasses", "datetime", "decimal", "enum",
    "fnmatch", "fractions", "functools", "hashlib", "heapq", "itertools", "json", "math", "numbers",
    "numpy", "operator", "random", "re", "sklearn", "statistics", "string", "textwrap", "typing",
    "unicodedata", "uuid", "warnings", "mnemo",
}  # fmt: skip
"""What ``cognition`` may import (top-level names): numpy, scikit-learn and pure standard modules;
no ``os``, ``pathlib``, ``io``, ``socket``, ``urllib``, ``httpx``, ``requests``, ``subprocess``,
``sqlite3``, ``psycopg``, ``asyncio``, ``logging``, ``pickle`` …"""

IO_BUILTINS = {"open", "input", "print", "exec", "eval", "compile", "__import__", "breakpoint"}
"""Builtins that read or write outside the process (or run code read from it)."""

IO_CALLS = {
    "open", "read_text", "write_text", "read_bytes", "write_bytes", "unlink", "mkdir", "rmdir", "touch", "iterdir",
    "glob", "rglob", "fromfile", "tofile", "loadtxt", "savetxt", "genfromtxt", "memmap", "load", "save",
    "savez", "savez_compressed", "dump", "urlopen", "connect", "execute", "system", "popen",
}  # fmt: skip
"""Methods that read or write outside the process, on any object (a path, numpy, a connection)."""


def io_in_cognition(path: Path) -> list[str]:
    """The I/O module imports and I/O calls of ``path``, as ``line: what``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names = [node.module or ""]
        found += [f"{node.lineno}: import {n}" for n in names if n.split(".")[0] not in PURE_MODULES]
        if isinstance(node, ast.Call):
            func = node.func
            if (isinstance(func, ast.Name) and func.id in IO_BUILTINS) or (
                isinstance(func, ast.Attribute) and func.attr in IO_CALLS
            ):
                found.append(f"{node.lineno}: {ast.unparse(func)}()")
    return found


def test_cognition_does_no_io() -> None:
    found = [
        f"{path.relative_to(SRC.parent)}:{what}"
        for module, path in modules()
        if layer_of(module) == "cognition"
        for what in io_in_cognition(path)
    ]
    assert found == []


@pytest.mark.parametrize(
    "source",
    [
        "def f(p):\n    return open(p).read()\n",
        "def f(p):\n    return p.read_text()\n",
        "def f(p, t):\n    p.write_text(t)\n",
        "def f(p):\n    return p.read_bytes()\n",
        "def f(p):\n    return p.open()\n",
        "import socket\n",
        "from urllib.request import urlopen\n",
        "import httpx\n",
        "import requests\n",
        "import subprocess\n",
        "import os\n",
        "from os import path\n",
        "import sqlite3\n",
        "import psycopg\n",
        "from pathlib import Path\n",
        "import numpy as np\ndef f(p):\n    return np.load(p)\n",
    ],
)
def test_the_purity_check_sees_io(tmp_path: Path, source: str) -> None:
    path = tmp_path / "x.py"
    path.write_text(source)
    assert io_in_cognition(path) != []


def test_the_purity_check_lets_pure_code_be(tmp_path: Path) -> None:
    path = tmp_path / "x.py"
    path.write_text("import math\nimport numpy as np\nfrom mnemo.cognition.text import timex\nx = np.log(math.e)\n")
    assert io_in_cognition(path) == []


# --- SQL lives only in the store ----------------------------------------------------------------------
SQL = re.compile(
    r"""^(?:\s|\(|--[^\n]*(?:\n|$))*          # blanks, opening brackets, `--` comment lines
    (?:SELECT\b.*?\bFROM\b
      |INSERT\s+INTO\b
      |UPDATE\s+[\w."]+\s+SET\b
      |DELETE\s+FROM\b
      |WITH\s+(?:RECURSIVE\s+)?[\w"]+\s*(?:\([^)]*\)\s*)?AS\s*(?:NOT\s+)?(?:MATERIALIZED\s+)?\(
      |TRUNCATE\s+(?:TABLE\s+(?:ONLY\s+)?[\w."]+|(?:ONLY\s+)?[\w"]+\.[\w"]+)
      |COPY\s*\(
      |COPY\s+[\w."]+(?:\s*\([^)]*\))?\s+(?:FROM|TO)\s+(?:STDIN|STDOUT|PROGRAM|')
      |CREATE\s+(?:OR\s+REPLACE\s+|UNIQUE\s+|TEMP\w*\s+)*(?:TABLE|INDEX|VIEW|SCHEMA|FUNCTION|TRIGGER|EXTENSION)\b
      |ALTER\s+(?:TABLE|INDEX|SCHEMA|SYSTEM)\b
      |DROP\s+(?:TABLE|INDEX|VIEW|SCHEMA|FUNCTION|TRIGGER|EXTENSION)\b
    )""",
    re.I | re.S | re.X,
)
"""An SQL statement, in any case, after blanks, brackets and ``--`` comment lines."""


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring constants of ``tree`` (prose, where "select … from" is English)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def sql_outside_the_store(path: Path) -> list[int]:
    """Lines of ``path`` holding a string (not a docstring) that is an SQL statement."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    prose = _docstrings(tree)
    return sorted(
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in prose
        and SQL.match(node.value)
    )


def test_sql_lives_only_in_the_store() -> None:
    found = [
        f"{path.relative_to(SRC.parent)}:{line}"
        for module, path in modules()
        if layer_of(module) != "store"
        for line in sql_outside_the_store(path)
    ]
    assert found == []


def test_the_sql_check_sees_a_statement(tmp_path: Path) -> None:
    path = tmp_path / "x.py"
    lines = ['Q = """', "  SELECT count(*) FROM mnemo.memories WHERE entity_id = %s", '"""', 'DOC = "Select a scope"']
    path.write_text("\n".join(lines))
    assert sql_outside_the_store(path) == [1]


@pytest.mark.parametrize(
    "statement",
    [
        "WITH RECURSIVE up(id) AS (SELECT 1 UNION SELECT id + 1 FROM up) SELECT * FROM up",
        "WITH recent AS (SELECT id FROM mnemo.turns) SELECT * FROM recent",
        "-- the newest first\nSELECT id FROM mnemo.turns ORDER BY id DESC",
        "(SELECT id FROM mnemo.turns) UNION (SELECT id FROM mnemo.memories)",
        "TRUNCATE mnemo.turns",
        "truncate table mnemo.turns",
        "COPY mnemo.turns (id, content) FROM STDIN",
        "copy mnemo.turns to stdout",
        "DELETE FROM mnemo.turns WHERE id = %s",
        "delete from mnemo.turns",
        "UPDATE mnemo.memories SET weight = 1",
        'update "mnemo"."memories" set weight = 1',
        "INSERT INTO mnemo.turns (id) VALUES (%s)",
        "insert into mnemo.turns values (1)",
        "select id from mnemo.turns",
        "CREATE INDEX ON mnemo.turns (id)",
        "ALTER TABLE mnemo.turns ADD COLUMN x int",
        "DROP TABLE mnemo.turns",
    ],
)
def test_the_sql_check_sees_every_form(tmp_path: Path, statement: str) -> None:
    path = tmp_path / "x.py"
    path.write_text(f"Q = {statement!r}\n")
    assert sql_outside_the_store(path) == [1]


@pytest.mark.parametrize(
    "text",
    ["Select a scope", "update the weights", "copy the packets", "with care", "delete it", "--json", "(a note)"],
)
def test_the_sql_check_lets_prose_be(tmp_path: Path, text: str) -> None:
    path = tmp_path / "x.py"
    docstring = '"""Select memories from the scope; update mnemo.x set y."""'
    path.write_text(f"{docstring}\nQ = {text!r}\n")
    assert sql_outside_the_store(path) == []
