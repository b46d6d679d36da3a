"""Issue 12: retention counts from arrival (pure rules) and context leaves out an insight that
repeats the memories placed beside it."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from mnemo.cognition.consolidation.curation import RetentionPolicy, raw_cutoff, raw_keep
from mnemo.models import Hit, Scope
from mnemo.recall.context import _hit_line, _repeats

NOW = datetime(2026, 11, 23, 12, tzinfo=UTC)
LONG_AGO = datetime(2023, 5, 1, tzinfo=UTC)


def test_raw_keep_is_the_tier_cycles_and_the_cutoff_follows_it() -> None:
    policy = RetentionPolicy(cycle=timedelta(hours=12), meso_raw_cycles=3)
    assert raw_keep("normal", policy) == timedelta(hours=12)
    assert raw_keep("meso", policy) == timedelta(hours=36)
    assert raw_cutoff("meso", NOW, policy) == NOW - timedelta(hours=36)


def hit(content: str, kind: str = "semantic", **metadata: object) -> Hit:
    return Hit(
        id=uuid.uuid4(),
        item_kind="memory",
        content=content,
        score=0.5,
        similarity=0.5,
        vector_rank=1,
        lexical_rank=None,
        lexical_score=None,
        created_at=NOW,
        scope=Scope("a"),
        memory_kind=kind,  # type: ignore[arg-type]
        metadata=metadata,
        event_time=LONG_AGO if kind != "insight" else None,
    )


def test_a_line_is_dated_by_the_event_time() -> None:
    assert _hit_line(hit("Dana sails"), "Dana sails").startswith("- [2023-05-01 · semantic]")
    assert _hit_line(hit("x", "insight"), "x").startswith("- [2026-11-23 · insight]")  # no event time


def test_an_insight_beside_its_sources_is_a_repeat() -> None:
    a, b, other = hit("Dana loves sailing on weekends"), hit("Dana loves sailing at weekends"), hit("Dana is 30")
    both = hit("Insight: Dana loves sailing on weekends", "insight", sources=[str(a.id), str(b.id)])
    assert _repeats([a, both, b], set()) == both.id  # every source placed
    assert _repeats([both, other], {str(a.id), str(b.id)}) == both.id  # placed in another section
    assert _repeats([a, both], set()) == both.id  # it says what a placed source says
    novel = hit("Dana sails most weekends with her sister", "insight", sources=[str(a.id), str(b.id)])
    assert _repeats([a, novel, other], set()) is None  # one source missing, and it adds something
    assert _repeats([novel, other], set()) is None
