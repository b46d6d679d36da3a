"""Issue 39 item 15: ``mnemo --home ./scratch status`` in the docs left a database in the clone. No
command in the docs' shell blocks points ``--home`` or ``MNEMO_HOME`` at a path inside the working
directory: a temporary directory (``"$(mktemp -d)"``), a variable, or a path under ``~`` or ``/``."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parents[2]
BLOCK = re.compile(r"^```(?:bash|sh|console|shell)\n(.*?)^```", re.M | re.S)
HOME = re.compile(r"(?:--home[ =]|MNEMO_HOME=)(\"[^\"]*\"|'[^']*'|\S+)")


def _homes(text: str) -> list[str]:
    return [m.group(1).strip("\"'") for block in BLOCK.findall(text) for m in HOME.finditer(block)]


def test_no_documented_command_keeps_a_home_in_the_working_directory() -> None:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    found = {(page.name, home) for page in pages for home in _homes(page.read_text())}
    assert found  # the docs do show --home
    placeholder = str.isupper  # "--home PATH" in a comment
    inside = {(p, home) for p, home in found if not (home.startswith(("/", "~", "$")) or placeholder(home))}
    assert not inside, f"a home inside the clone: {sorted(inside)}"


def test_the_rule_catches_a_relative_home() -> None:
    assert _homes("```bash\nmnemo --home ./scratch status\nMNEMO_HOME=data mnemo status\n```\n") == [
        "./scratch",
        "data",
    ]
