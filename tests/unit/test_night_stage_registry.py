"""Issue 41 item 2: the night's stages are declared once (:mod:`mnemo.night.stage_registry`), each
in its own module, and every attribute of the night's report is a stage's or the run's."""

from __future__ import annotations

import uuid
from dataclasses import fields
from datetime import UTC, datetime

from mnemo.models import NightReport, Scope
from mnemo.night.stage_registry import RUN_FIELDS, STAGE_NAMES, STAGES


def test_each_stage_is_named_once_and_lives_in_its_own_module() -> None:
    assert len(set(STAGE_NAMES)) == len(STAGES)
    modules = [type(stage).__module__ for stage in STAGES]
    assert len(set(modules)) == len(modules) and all(m.startswith("mnemo.night.") for m in modules)


def test_every_report_attribute_is_a_stage_s_or_the_run_s() -> None:
    attributes = {f.name for f in fields(NightReport)}
    by_stages = {name for stage in STAGES for name in stage.report_fields}
    assert set(RUN_FIELDS) | by_stages == attributes
    assert not set(RUN_FIELDS) & by_stages


def test_a_skipped_stage_still_has_its_row_and_a_stage_without_one_says_none() -> None:
    report = NightReport(scope=Scope("ana"), run_id=uuid.uuid4(), as_of=datetime.now(UTC))
    rows = {stage.name: stage.row(report) for stage in STAGES}
    assert rows["reflexes"] is None  # the table has never shown it; its counts are in the JSON
    assert all(isinstance(text, str) and text for name, text in rows.items() if name != "reflexes")
