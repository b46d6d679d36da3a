"""The wheel stands alone (issue 30 item 8): distribution ``mnemo-archive`` (``mnemo`` is taken on
PyPI), import name and command ``mnemo``, and every file the package reads at run time (migrations,
the sample conversation, the inspector's static files and templates, ``py.typed``) shipped as
package data. ``.ci/wheel-check`` builds the real wheel and runs ``mnemo quickstart`` from it;
these tests keep the declarations and that check's own verdicts honest without a build."""

from __future__ import annotations

import tomllib
import zipfile
from pathlib import Path

from tests import wheel_check

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_every_file_the_package_reads_is_package_data() -> None:
    package = wheel_check.PACKAGE
    patterns = PYPROJECT["tool"]["setuptools"]["package-data"]["mnemo"]
    shipped = {path for pattern in patterns for path in package.glob(pattern) if path.is_file()}
    data = {
        path
        for path in package.rglob("*")
        if path.is_file() and path.suffix not in (".py", ".pyc") and "__pycache__" not in path.parts
    }
    assert sorted(str(p.relative_to(package)) for p in data - shipped) == []
    names = {path.relative_to(package).as_posix() for path in shipped}
    assert {"py.typed", "data/sample_conversation.jsonl", "store/migrations/0001_chambers.sql"} <= names
    assert {"interfaces/ui/templates/base.html", "interfaces/ui/static/inspector.css"} <= names


def test_the_distribution_is_mnemo_archive_with_the_package_version_and_command() -> None:
    project = PYPROJECT["project"]
    assert project["name"] == "mnemo-archive" and project["dynamic"] == ["version"]
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "mnemo.__version__"}
    assert project["scripts"] == {"mnemo": "mnemo.interfaces.cli:main"}
    assert any(dep.startswith("build") for dep in project["optional-dependencies"]["dev"])  # wheel-check builds


def fake_wheel(path: Path, *, leave_out: str = "", name: str = "mnemo-archive") -> Path:
    version = wheel_check.source_version()
    info = f"mnemo_archive-{version}.dist-info"
    with zipfile.ZipFile(path, "w") as wheel:
        for file in sorted(wheel_check.package_files() - {leave_out}):
            wheel.writestr(file, "")
        wheel.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        wheel.writestr(f"{info}/entry_points.txt", "[console_scripts]\nmnemo = mnemo.interfaces.cli:main\n")
    return path


def test_the_wheel_check_names_a_missing_data_file_and_a_wrong_name(tmp_path: Path) -> None:
    assert wheel_check.check_contents(fake_wheel(tmp_path / "whole.whl")) == []
    missing = "mnemo/store/migrations/0018_scope_versions.sql"
    assert wheel_check.check_contents(fake_wheel(tmp_path / "short.whl", leave_out=missing)) == [
        f"missing from the wheel: {missing}"
    ]
    assert wheel_check.check_contents(fake_wheel(tmp_path / "named.whl", name="mnemo")) == [
        "the wheel's distribution name is not mnemo-archive"
    ]


def test_ci_runs_the_wheel_check_after_the_tests() -> None:
    steps = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line.startswith("make ")]
    assert steps == ["make test", "make wheel-check"]
    script = (ROOT / ".ci" / "wheel-check").read_text()
    assert "torch==2.13.0" in script and script.index("torch==2.13.0") < script.index('install -q "$WHEEL"')
    assert 'cd "$WORK"' in script and "quickstart --json" in script


def test_the_license_is_an_spdx_expression_the_build_backend_keeps_supporting() -> None:
    """Issue 39 item 15: ``license = { text = ... }`` is deprecated by setuptools (builds stop after
    2027-02-18); PEP 639 wants an SPDX expression, which needs setuptools 77 or later."""
    from packaging.licenses import canonicalize_license_expression
    from packaging.requirements import Requirement

    license_ = PYPROJECT["project"]["license"]
    assert isinstance(license_, str) and canonicalize_license_expression(license_) == "Apache-2.0"
    assert all(not c.startswith("License ::") for c in PYPROJECT["project"].get("classifiers", []))
    (backend,) = [Requirement(r) for r in PYPROJECT["build-system"]["requires"] if r.startswith("setuptools")]
    assert not backend.specifier.contains("76.9") and backend.specifier.contains("77.0")
