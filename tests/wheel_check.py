"""The checks ``.ci/wheel-check`` makes of the built wheel and of ``mnemo quickstart`` run from it
(issue 30 item 8: a user who never clones the repository gets what ``make demo`` gives).

``python -m tests.wheel_check contents WHEEL``: every file of ``src/mnemo`` (code and package
data: migrations, the sample conversation, the inspector's static files and templates,
``py.typed``) is in the wheel, under the distribution name ``mnemo-archive`` with the version of
``mnemo.__version__`` and the ``mnemo`` command.

``python -m tests.wheel_check quickstart OUTPUT VERSION``: OUTPUT is what ``mnemo quickstart --json``
printed; the sample's facts are recalled, the off-topic question refused, the night made blocks
and facts, the context block holds the anchored rule, and the temporary home is gone.

Each check prints what it found and exits 1 with the reasons when something is wrong."""

from __future__ import annotations

import json
import re
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "mnemo"
DISTRIBUTION = "mnemo-archive"


def package_files() -> set[str]:
    """The files of the source package, as wheel paths (``mnemo/...``), caches left out."""
    return {
        f"mnemo/{path.relative_to(PACKAGE).as_posix()}"
        for path in PACKAGE.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    }


def source_version() -> str:
    match = re.search(r'^__version__ = "([^"]+)"$', (PACKAGE / "__init__.py").read_text(), re.MULTILINE)
    assert match is not None, "no __version__ in src/mnemo/__init__.py"
    return match.group(1)


def check_contents(wheel: Path) -> list[str]:
    """What is wrong with the wheel's files and metadata (empty: nothing)."""
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        info = next(n for n in names if n.endswith(".dist-info/METADATA"))
        metadata = archive.read(info).decode()
        entry_points = archive.read(info.replace("METADATA", "entry_points.txt")).decode()
    problems = [f"missing from the wheel: {name}" for name in sorted(package_files() - names)]
    if f"Name: {DISTRIBUTION}\n" not in metadata:
        problems.append(f"the wheel's distribution name is not {DISTRIBUTION}")
    if f"Version: {source_version()}\n" not in metadata:
        problems.append(f"the wheel's version is not mnemo.__version__ ({source_version()})")
    if "mnemo = mnemo.interfaces.cli:main" not in entry_points:
        problems.append("the wheel has no `mnemo` command")
    data = [n for n in names if n.startswith("mnemo/") and not n.endswith(".py")]
    print(f"{wheel.name}: {len(names)} files, {len(data)} of them package data")
    return problems


def check_quickstart(output: Path, version: str) -> list[str]:
    """What is wrong with ``mnemo quickstart --json``'s answer (empty: nothing)."""
    problems = []
    if version.strip() != f"mnemo {source_version()}":
        problems.append(f"mnemo --version said {version.strip()!r}")
    data = json.loads(output.read_text())
    recalls = {r["query"]: r for r in data["recalls"]}
    allergy = recalls["What is Maya allergic to?"]
    if allergy["refused"] or "shellfish" not in allergy["hits"][0]["content"]:
        problems.append("the recall did not find Maya's shellfish allergy first")
    if not recalls["What is the capital of Australia?"]["refused"]:
        problems.append("the off-topic question was not refused")
    night = data["night"]
    if night["turns"] != 30 or night["blocks"] < 1 or night["facts_new"] < 1:
        made = f"{night['blocks']} blocks and {night['facts_new']} facts of {night['turns']} turns"
        problems.append(f"the night made {made}")
    if "Never share Maya's home address" not in data["context"]["text"]:
        problems.append("the context block lacks the anchored rule")
    if data["kept"] or Path(data["home"]).exists():
        problems.append(f"the temporary home {data['home']} was not deleted")
    print(f"quickstart: {night['blocks']} blocks, {night['facts_new']} facts, {len(recalls)} recalls, home deleted")
    return problems


def main(argv: list[str]) -> int:
    if argv[:1] == ["contents"] and len(argv) == 2:
        problems = check_contents(Path(argv[1]))
    elif argv[:1] == ["quickstart"] and len(argv) == 3:
        problems = check_quickstart(Path(argv[1]), argv[2])
    else:
        print("usage: python -m tests.wheel_check contents WHEEL | quickstart OUTPUT VERSION", file=sys.stderr)
        return 2
    for problem in problems:
        print(f"wheel check: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
