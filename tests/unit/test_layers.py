"""DESIGN §5, checked: dependencies point inward, and features live in the package of their layer.

interfaces → archive → admin → night → write/recall → cortex → the shared runtime → store,
cognition, embed, llm. ``cognition`` imports nothing from the project. Imports under
``if TYPE_CHECKING:`` are annotations, not dependencies, and are not counted; imports inside
functions are.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

import mnemo

SRC = Path(mnemo.__file__).parent

LAYERS: dict[str, tuple[str, ...]] = {
    # layer: module prefixes (the longest prefix wins)
    "cognition": ("mnemo.cognition",),
    "records": ("mnemo.errors", "mnemo.models", "mnemo.config"),
    "io": ("mnemo.embed", "mnemo.llm", "mnemo.rerank", "mnemo._onnx", "mnemo._validate"),
    "store": ("mnemo.store",),
    "shared": ("mnemo._runtime", "mnemo._dynamics", "mnemo._upkeep"),
    "cortex": ("mnemo.cortex",),
    "write": ("mnemo.write",),
    "recall": ("mnemo.recall",),
    "night": ("mnemo.night",),
    "features": ("mnemo.access", "mnemo.admin", "mnemo.inner", "mnemo.portability", "mnemo.reflexes"),
    "archive": ("mnemo.archive", "mnemo._sync"),
    "public": ("mnemo",),
    "agent": ("mnemo.agent",),
    "interfaces": ("mnemo.interfaces",),
    "bench": ("mnemo.bench",),
}

_BELOW_FEATURES = {"shared", "store", "io", "records", "cognition"}
MAY_IMPORT: dict[str, set[str]] = {
    "cognition": set(),
    "records": {"cognition"},
    "io": {"records", "cognition"},
    "store": {"records", "cognition"},
    "shared": {"store", "io", "records", "cognition"},
    "cortex": _BELOW_FEATURES,
    "write": {"cortex"} | _BELOW_FEATURES,
    "recall": {"cortex"} | _BELOW_FEATURES,
    "night": {"write", "cortex"} | _BELOW_FEATURES,
    "features": {"night", "recall", "write", "cortex"} | _BELOW_FEATURES,
    "archive": {"features", "night", "recall", "write", "cortex"} | _BELOW_FEATURES,
    "public": {"archive", "store", "records", "io", "cognition"},
    "agent": {"public", "archive", "records", "io", "cognition"},
    "interfaces": {"agent", "bench", "public", "archive", "records", "io", "cognition"},
    "bench": {"public", "archive", "records", "io", "cognition"},
}
"""Which other layers each layer may import (a layer may always import itself)."""


def layer_of(module: str) -> str:
    best = max(
        ((name, prefix) for name, prefixes in LAYERS.items() for prefix in prefixes if _under(module, prefix)),
        key=lambda pair: len(pair[1]),
    )
    return best[0]


def _under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(SRC.rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        name = ".".join(("mnemo", *parts)).removesuffix(".__init__")
        yield name, path


def _type_checking_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for inner in node.body:
                lines.update(range(inner.lineno, (inner.end_lineno or inner.lineno) + 1))
    return lines


def imports(module: str, path: Path) -> Iterator[tuple[int, str]]:
    """The project modules ``module`` imports at run time, with their lines."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _type_checking_lines(tree)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skip:
            continue
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names if _under(alias.name, "mnemo"))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}".rstrip(".")
            if not _under(base, "mnemo"):
                continue
            for alias in node.names:  # `from mnemo.store import night`: the submodule is what is imported
                if (base, alias.name) == ("mnemo", "__version__"):
                    continue  # the version string is metadata, not a dependency
                target = f"{base}.{alias.name}"
                yield node.lineno, target if _is_module(target) else base


def _is_module(name: str) -> bool:
    rel = Path(*name.split(".")[1:])
    return (SRC / rel).with_suffix(".py").is_file() or (SRC / rel / "__init__.py").is_file()


def violations() -> list[str]:
    found: dict[str, None] = {}
    for module, path in modules():
        own = layer_of(module)
        for line, target in imports(module, path):
            other = layer_of(target)
            if other != own and other not in MAY_IMPORT[own]:
                found[f"{path.relative_to(SRC.parent)}:{line}: {own} imports {target} ({other})"] = None
    return list(found)


def test_every_module_has_a_layer_and_every_layer_a_rule() -> None:
    assert set(MAY_IMPORT) == set(LAYERS)
    seen = {layer_of(m) for m, _ in modules()}
    assert seen == set(LAYERS), f"layers with no module: {set(LAYERS) - seen}"


def test_dependencies_point_inward() -> None:
    assert violations() == []


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
        ("def f():\n    from mnemo.recall import index\n", "mnemo.store.x", ["mnemo.recall.index"]),
    ],
)
def test_the_rule_reads_imports_as_python_does(tmp_path: Path, source: str, module: str, expected: list[str]) -> None:
    path = tmp_path / "x.py"
    path.write_text(source)
    assert [t for _, t in imports(module, path)] == expected


def test_the_rule_catches_an_upward_import() -> None:
    assert "write" not in MAY_IMPORT["store"] and layer_of("mnemo.write.remember") == "write"
    assert layer_of("mnemo") == "public" and layer_of("mnemo._sync") == "archive"
    assert layer_of("mnemo.store.night_runs") == "store" and layer_of("mnemo.interfaces.cli.admin") == "interfaces"


FACES = ("interfaces", "bench")
"""The layers that reach the archive through ``AsyncArchive``'s methods only (DESIGN §5)."""


def runtime_touches(source: str) -> list[int]:
    """The lines of ``source`` that read or write an attribute named ``runtime``."""
    tree = ast.parse(source)
    return [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr == "runtime"]


def test_interfaces_and_benches_never_touch_the_runtime() -> None:
    found = [
        f"{path.relative_to(SRC.parent)}:{line}"
        for module, path in modules()
        if layer_of(module) in FACES
        for line in runtime_touches(path.read_text(encoding="utf-8"))
    ]
    assert found == []


BENCHMARKS = SRC.parents[1] / "benchmarks"
"""The top-level benchmark scripts: they too measure through ``AsyncArchive`` (its ``probes()``)."""


def test_the_benchmark_scripts_never_touch_the_runtime() -> None:
    scripts = sorted(BENCHMARKS.glob("*.py"))
    assert len(scripts) >= 10  # the rule sees the scripts
    found = [
        f"benchmarks/{path.name}:{line}"
        for path in scripts
        for line in runtime_touches(path.read_text(encoding="utf-8"))
    ]
    assert found == []


def test_the_runtime_check_catches_a_reach_past_the_archive() -> None:
    assert runtime_touches("async def f(archive):\n    return archive.runtime.store\n") == [2]
    assert runtime_touches("x = archive().runtime\n") == [1]
    assert runtime_touches("runtime = 1\nx = archive.settings\n") == []


SQL = re.compile(
    r"^\s*(SELECT|INSERT\s+INTO|UPDATE\s+[\w.]+\s+SET|DELETE\s+FROM|WITH\s+\w+\s+AS|CREATE|ALTER|DROP)\b", re.I
)


def sql_outside_the_store(path: Path) -> list[int]:
    """Lines of ``path`` holding a string that is an SQL statement."""
    return [
        node.lineno
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and SQL.match(node.value)
        and re.search(r"\b(FROM|INTO|SET|TABLE|INDEX)\b", node.value)
    ]


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
