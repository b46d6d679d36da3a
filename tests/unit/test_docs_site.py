"""The documentation site builds and its code blocks keep the convention (issue 30, item 9).

``mkdocs build --strict`` (every link and anchor resolving, every page in the navigation, the
API reference rendered from the docstrings) succeeds; the API reference has an entry for every
name ``mnemo`` exports; every fenced block of README.md and docs/ is a program that runs
(tests/integration/test_docs_run.py), data that parses here, or output; the few that cannot run
say why; and the README stays a page or two, with one example per face.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import mnemo
from tests.docs_blocks import DATA, ROOT, RUN, SHOW, Block, blocks, pages

ALL_BLOCKS = [block for page in pages() for block in blocks(page)]
MAX_NOT_RUN = 6  # installs from PyPI, the make targets, the LoCoMo benchmarks, Citus: no more creep in
FACES = ("Python", "Command line", "HTTP", "MCP", "Pydantic AI", "The reference agent", "The inspector")


def test_the_site_builds_strictly_with_an_api_entry_for_every_public_name(tmp_path: Path) -> None:
    mkdocs = Path(sys.executable).parent / "mkdocs"
    built = subprocess.run(
        [str(mkdocs), "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml"), "--site-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert built.returncode == 0, built.stderr[-4000:]
    api = (tmp_path / "api" / "index.html").read_text(encoding="utf-8")
    anchors = set(re.findall(r'id="(mnemo\.\w+)"', api))
    assert {f"mnemo.{name}" for name in mnemo.__all__} <= anchors
    assert 'id="mnemo.AsyncArchive.recall"' in api  # methods rendered from their docstrings too
    assert (tmp_path / "inspector" / "02-overview.jpg").is_file()  # the screenshots travel with the site


def test_every_page_is_in_the_navigation() -> None:
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    listed = set(re.findall(r":\s+([\w/-]+\.md)\s*$", config, re.MULTILINE))
    on_disk = {str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md")}
    assert listed == on_disk


@pytest.mark.parametrize("block", ALL_BLOCKS, ids=lambda b: b.where)
def test_every_block_runs_parses_or_shows(block: Block) -> None:
    assert block.lang in RUN | DATA | SHOW, f"{block.where}: say what the block is (python, bash, json, toml, text)"
    if block.not_run is not None:
        assert block.lang in RUN, f"{block.where}: only a program can be marked 'not run'"
        assert len(block.not_run.split()) >= 4, f"{block.where}: say why it is not run"
    if block.lang == "json":
        json.loads(block.code)
    if block.lang == "toml":
        tomllib.loads(block.code)


def test_blocks_that_do_not_run_are_few_and_programs_are_most() -> None:
    not_run = [b.where for b in ALL_BLOCKS if b.not_run is not None]
    runs = [b for b in ALL_BLOCKS if b.lang in RUN and b.not_run is None]
    assert 0 < len(not_run) <= MAX_NOT_RUN, not_run
    assert len(runs) >= 20 and {b.lang for b in runs} == RUN


def test_a_not_run_marker_stands_right_above_a_block() -> None:
    for page in pages():
        lines = page.read_text(encoding="utf-8").splitlines()
        for n, line in enumerate(lines):
            if "<!-- not run" in line:
                assert line.strip().endswith("-->") and lines[n + 1].startswith("```"), f"{page.name}:{n + 1}"


def test_the_readme_is_short_with_one_running_example_per_face() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    sections = dict(re.findall(r"^## ([^\n]+)\n(.*?)(?=^## |\Z)", text, re.MULTILINE | re.DOTALL))
    for face in FACES:
        assert re.search(r"^```(python|bash)$", sections[face], re.MULTILINE), f"README: no example under {face}"
    assert "pip install mnemo-archive" in text and "mnemo quickstart" in text
    assert "make demo" in text and "make test" in text
