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


def test_startup_lines_name_the_database_without_its_password_and_every_schedule() -> None:
    from mnemo.config import Settings
    from mnemo.interfaces.worker import create_app, startup_lines

    url = "postgresql://mnemo:s3cret-pw@db.example:5433/memory"
    app = create_app(Settings(database_url=url, night_cron="15 4 * * *"), url, stalled_after=20)
    lines = startup_lines(app, url, embedded=False, queues=None, concurrency=4)
    text = "\n".join(lines)
    assert "s3cret-pw" not in text
    assert lines[0] == (
        "worker on postgresql://mnemo@db.example:5433/memory (MNEMO_DATABASE_URL); "
        "queues: ingest, maintenance, night; 4 jobs at once"
    )
    assert lines[1:] == [
        "periodic: mnemo.night_cycle at cron '15 4 * * *' (UTC) into queue night",
        "periodic: mnemo.retry_stalled at cron '*/20 * * * * *' (UTC) into queue maintenance",
    ]
    # a worker without the night queue still defers the night; another worker runs it
    only_ingest = startup_lines(app, url, embedded=True, queues=["ingest"])
    assert "(embedded PostgreSQL); queues: ingest; 1 job at once" in only_ingest[0]
    assert only_ingest[1].endswith("into queue night; run by a worker of queue night, not this one")


def test_night_summary_counts_what_the_night_made() -> None:
    import uuid
    from datetime import UTC, datetime

    from mnemo.interfaces.worker import night_summary
    from mnemo.models import NightReport, Scope

    report = NightReport(
        scope=Scope("ana"),
        run_id=uuid.uuid4(),
        as_of=datetime.now(UTC),
        turns=12,
        blocks=2,
        facts_new=3,
        insights=1,
        narratives=0,
        turns_removed=4,
        stage_seconds={"surprisal": 0.1, "blocks": 0.2, "knowledge": 0.3, "insights": 0.1, "curate": 0.0},
        skipped=("curate",),
        resumed=True,
    )
    assert night_summary(report) == (
        "night ran: 4 stages, 12 turns, 2 blocks, 4 memories (3 facts, 1 insights, 0 narratives), "
        "4 raw turns removed (resumed an unfinished run)"
    )
