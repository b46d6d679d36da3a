"""The queue chamber's frozen procrastinate schema matches the pinned procrastinate (no database;
the worker itself: tests/integration/test_worker.py)."""

from __future__ import annotations

import tomllib
from importlib import metadata, resources
from pathlib import Path


def test_frozen_queue_schema_is_the_pinned_procrastinate_schema() -> None:
    migration = resources.files("mnemo.store").joinpath("migrations/0007_queue.sql").read_text()
    version = metadata.version("procrastinate")
    begin, end = f"-- BEGIN procrastinate {version} schema.sql\n", f"-- END procrastinate {version} schema.sql\n"
    assert begin in migration and end in migration, f"0007_queue.sql is not procrastinate {version}'s schema"
    frozen = migration.split(begin, 1)[1].split(end, 1)[0]
    installed = resources.files("procrastinate.sql").joinpath("schema.sql").read_text()
    assert frozen.rstrip("\n") == installed.rstrip("\n"), "procrastinate changed: add a migration with its upgrade SQL"
    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    assert f"procrastinate=={version}" in pyproject["project"]["dependencies"]
