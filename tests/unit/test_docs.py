"""The user-facing docs work from a clone (issue 12, "also expected"; defect 3's quick start).

README.md, docs/, examples/ and benchmarks/ name no path outside the repository (benchmark
data is an argument the user supplies), every relative link resolves and every repository
file they name exists, the configuration table (docs/configuration.md since issue 30) names
real settings with their real variables, and the README's quick start says what retention
removes and how to turn it off.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mnemo import Settings

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").rglob("*.md"))]
CONFIGURATION = ROOT / "docs" / "configuration.md"
# Named by the pages before the branch that adds it lands (issue 30): remove once it exists.
USER_DOCS = [
    README,
    *sorted((ROOT / "examples").rglob("*.py")),
    *sorted((ROOT / "examples").rglob("*.md")),
    *sorted((ROOT / "benchmarks").glob("*.md")),
    *sorted((ROOT / "benchmarks").glob("*.py")),
    *sorted((ROOT / "docs").rglob("*.md")),
]
MACHINE_PATHS = re.compile(r"\.\./shared|(?<![\w.])shared/bench|/work/|/home/\w|/Users/\w|/root/")


@pytest.mark.parametrize("doc", USER_DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_docs_name_no_path_outside_the_clone(doc: Path) -> None:
    hits = [
        f"{doc.name}:{n}: {line.strip()}"
        for n, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1)
        if MACHINE_PATHS.search(line)
    ]
    assert hits == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_and_repo_paths_exist(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    links = [t for t in re.findall(r"\[[^\]]*\]\(([^)\s]+)\)", text) if not re.match(r"[a-z]+://|mailto:|#", t)]
    paths = re.findall(r"(?<![\w/.])((?:src|tests|examples|benchmarks|docs)/[\w./-]*\w)", text)
    missing = [link for link in links if not (page.parent / link.split("#")[0]).exists()]
    missing += [p for p in paths if not (ROOT / p.split("#")[0]).exists()]
    assert missing == []


def test_the_readme_names_repository_files_and_links_into_the_docs() -> None:
    text = README.read_text(encoding="utf-8")
    assert re.findall(r"(?<![\w/.])((?:src|tests|examples|benchmarks|docs)/[\w./-]*\w)", text)
    linked = set(re.findall(r"\]\((docs/[\w/.-]+\.md)\)", text))
    assert linked == {str(p.relative_to(ROOT)) for p in PAGES[1:]}  # every page is one click away


def _configuration_rows() -> list[tuple[list[str], str]]:
    section = CONFIGURATION.read_text(encoding="utf-8")  # the page is the section the README had
    assert section.startswith("# Configuration")
    rows = []
    for line in section.splitlines():
        if line.startswith("| `"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            rows.append((re.findall(r"`([a-z_]+)`", cells[0]), cells[1]))
    return rows


def test_configuration_table_names_real_settings_and_variables() -> None:
    rows = _configuration_rows()
    assert len(rows) > 20
    fields = Settings.model_fields
    for names, env in rows:
        for name in names:
            assert name in fields, f"docs/configuration.md: no setting {name!r}"
            wildcard = env.endswith("_*`")
            assert wildcard or f"`MNEMO_{name.upper()}`" in env, f"{name}: docs/configuration.md shows {env}"


def test_quick_start_says_what_retention_removes_and_how_to_turn_it_off() -> None:
    text = README.read_text(encoding="utf-8")
    quick_start = text[: text.index("## Python")]
    assert "MNEMO_RETENTION=false" in quick_start
    assert "raw turn" in quick_start and "--dry-run" in quick_start
    field = Settings.model_fields["retention"]
    assert field.default is True  # on by default: which is why the quick start must say it
    assert Settings(retention=False).retention is False
