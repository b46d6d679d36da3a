"""What the inspector's pages compute from records (issue 27): a night's stages, in the order the
night runs them, whatever order its record keeps them in."""

from __future__ import annotations

from mnemo.interfaces.ui._views import night_stages
from mnemo.night.stage_registry import STAGE_NAMES as STAGES


def test_a_finished_night_lists_its_timed_stages_in_pipeline_order_and_nothing_else() -> None:
    seconds = {stage: 0.5 for stage in reversed(STAGES)} | {"tokens": 0.1}  # jsonb keeps no order
    run = {"stages_done": ["insights", "curate", "summary"], "report": {"summary": {"stage_seconds": seconds}}}
    assert night_stages(run) == [(stage, 0.5) for stage in STAGES]


def test_an_unfinished_or_resumed_night_lists_what_its_marks_say_it_did() -> None:
    unfinished = {"stages_done": ["decay", "insights", "curate"], "report": {}}
    assert night_stages(unfinished) == [("insights", None), ("curate", None), ("decay", None)]
    resumed = {  # insights were done by the attempt that crashed: marked, not timed by this one
        "stages_done": ["insights", "curate", "summary"],
        "report": {"summary": {"stage_seconds": {"curate": 2.0, "surprisal": 1.0}}},
    }
    assert night_stages(resumed) == [("surprisal", 1.0), ("insights", None), ("curate", 2.0)]
