"""Issue 39 item 14: the docs had no picture of the inspector's inner-life page. Every picture the docs
show exists, and the inner-life page shows the inspector's (taken by the browser tests in Chromium)."""

from __future__ import annotations

import re
from pathlib import Path

DOCS = Path(__file__).parents[2] / "docs"
IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)")


def test_every_picture_the_docs_show_exists() -> None:
    shown = [(page, page.parent / src) for page in DOCS.rglob("*.md") for src in IMAGE.findall(page.read_text())]
    assert shown
    assert [str(path) for _, path in shown if not path.is_file()] == []


def test_the_inner_life_page_pictures_the_inspectors_inner_page() -> None:
    pictures = IMAGE.findall((DOCS / "inner-life.md").read_text())
    assert "inspector/18-inner-life.jpg" in pictures
    jpeg = (DOCS / "inspector" / "18-inner-life.jpg").read_bytes()
    assert jpeg[:3] == b"\xff\xd8\xff" and len(jpeg) > 50_000  # a real full-page JPEG, not a placeholder
