"""The agent's read-only docs tool (issue 18 item 10, cognitive-plan §4.10): it reads and lists
inside its roots and nothing else; no path, link or name gets out."""

from __future__ import annotations

from pathlib import Path

import pytest

from mnemo import AccessDeniedError, ConfigurationError, InvalidInputError, NotFoundError
from mnemo.agent import DocsTool


@pytest.fixture
def tool(tmp_path: Path) -> DocsTool:
    docs = tmp_path / "docs"
    (docs / "guide").mkdir(parents=True)
    (docs / "notes.md").write_text("# Notes\nDecision: YES.\n")
    (docs / "guide" / "loop.md").write_text("the loop " * 100)
    (docs / "image.bin").write_bytes(b"\x89PNG\x00\x00")
    (tmp_path / "secret.txt").write_text("do not read")
    (docs / "escape").symlink_to(tmp_path / "secret.txt")
    (docs / "outside").symlink_to(tmp_path)
    return DocsTool.of(docs)


def test_it_lists_and_reads_inside_its_roots(tool: DocsTool) -> None:
    assert tool.list() == ["docs/"]
    assert tool.list("docs") == ["escape", "guide/", "image.bin", "notes.md", "outside/"]
    assert "Decision: YES." in tool.read("docs/notes.md")
    cut = tool.read("docs/guide/loop.md", max_bytes=50)
    assert cut.startswith("the loop") and cut.endswith("[… cut at 50 bytes]")


@pytest.mark.parametrize(
    ("path", "error"),
    [
        ("docs/../secret.txt", AccessDeniedError),
        ("docs/guide/../../secret.txt", AccessDeniedError),
        ("docs/escape", AccessDeniedError),  # a link that points out
        ("docs/outside/secret.txt", AccessDeniedError),
        ("/etc/passwd", AccessDeniedError),
        ("docs/\x00x", AccessDeniedError),
        ("elsewhere/notes.md", NotFoundError),
        ("docs/missing.md", NotFoundError),
        ("docs/image.bin", InvalidInputError),
        ("docs/guide", InvalidInputError),
    ],
)
def test_it_refuses_everything_else(tool: DocsTool, path: str, error: type[Exception]) -> None:
    with pytest.raises(error):
        tool.read(path)


def test_roots_must_be_directories_with_distinct_names(tmp_path: Path) -> None:
    (tmp_path / "a" / "docs").mkdir(parents=True)
    (tmp_path / "b" / "docs").mkdir(parents=True)
    with pytest.raises(ConfigurationError, match="distinct"):
        DocsTool.of(tmp_path / "a" / "docs", tmp_path / "b" / "docs")
    with pytest.raises(ConfigurationError, match="not a directory"):
        DocsTool.of(tmp_path / "nothing")
