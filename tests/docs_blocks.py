"""The fenced code blocks of README.md and docs/ (issue 30, item 9: "every code block in the docs
runs in a test, so the docs cannot drift").

The convention, checked by tests/unit/test_docs_site.py and run by tests/integration/test_docs_run.py:

- ``python`` and ``bash`` blocks are programs: each runs, in document order, against one fresh
  ``MNEMO_HOME`` per page (python blocks of a page share one interpreter, so the embedding model
  loads once per page);
- ``json`` and ``toml`` blocks are data: they must parse;
- ``text`` and ``console`` blocks show output or a picture: never run;
- a python or bash block that cannot run in a test (it installs from PyPI, needs the LoCoMo file,
  a Citus cluster, hours) is preceded by ``<!-- not run: REASON -->``; such blocks stay few.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUN = frozenset({"python", "bash"})
DATA = frozenset({"json", "toml"})
SHOW = frozenset({"text", "console"})
NOT_RUN = re.compile(r"^<!-- not run: (?P<reason>.+?) -->$")
_FENCE = re.compile(r"^(?P<indent> *)(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`\s]*)")


@dataclass(frozen=True)
class Block:
    """One fenced block: where it opens (1-based line), its language and code, and the reason it is
    not run (``None`` for a block that runs)."""

    page: Path
    line: int
    lang: str
    code: str
    not_run: str | None

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def pages() -> list[Path]:
    """README.md and every page of the documentation site."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of ``page``, in order; an unclosed fence is an error."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        end = _closing(lines, i, opening["fence"], page)
        indent = len(opening["indent"])
        code = "\n".join(line[indent:] for line in lines[i + 1 : end]) + "\n"
        found.append(Block(page, i + 1, opening["info"].lower(), code, _reason(lines, i)))
        i = end + 1
    return found


def _closing(lines: list[str], start: int, fence: str, page: Path) -> int:
    for j in range(start + 1, len(lines)):
        if lines[j].strip().startswith(fence[0] * len(fence)) and not lines[j].strip().strip(fence[0]):
            return j
    raise ValueError(f"{page.name}:{start + 1}: the code block never closes")


def _reason(lines: list[str], start: int) -> str | None:
    """The ``not run`` reason on the line right above the fence, if any."""
    above = lines[start - 1].strip() if start > 0 else ""
    match = NOT_RUN.match(above)
    return match["reason"].strip() if match else None
