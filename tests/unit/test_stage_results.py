"""Issue 30 item 4: the night's scope-wide stages return typed results, and a resumed run reads
what a stage recorded (its JSON in ``night_runs.report``) back into the same type."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

import pytest

from mnemo.cortex.block_migration import MigrationStats
from mnemo.cortex.tree import TreeStats
from mnemo.night.curator import CurationStats
from mnemo.night.decay import DecayStats
from mnemo.night.insights import InsightStats
from mnemo.night.retention import RetentionStats
from mnemo.night.stage_protocol import restored as _restored
from mnemo.store.reflexes import PruneStats

RESULTS = [
    InsightStats(insights=2, narratives=1, sources=5),
    CurationStats(version=3, verdicts={"keep": 4, "promote": 1}, applied=True),
    DecayStats(light=7, deep=2),
    MigrationStats(migrated=3, lines=40, removed=1, versions={"blocks_384": 2}),
    TreeStats(nodes=9, levels=2, versions={"tree_384": 1}),
    RetentionStats(turns_removed=12, blocks_archived=2, turns_kept=30, next_due="2026-01-02T00:00:00+00:00"),
    PruneStats(pruned=1, weakened=4, edges_dropped=2),
]


@pytest.mark.parametrize("result", RESULTS, ids=lambda r: type(r).__name__)
def test_a_recorded_stage_reads_back_as_what_it_was(result: Any) -> None:
    recorded = json.loads(json.dumps(asdict(result)))
    assert _restored(type(result), recorded) == result


def test_a_record_from_an_older_run_keeps_the_defaults_it_lacks_and_drops_what_is_gone() -> None:
    assert _restored(CurationStats, {"version": 2, "retired": True}) == CurationStats(version=2)
    assert _restored(DecayStats, {}) == DecayStats()
