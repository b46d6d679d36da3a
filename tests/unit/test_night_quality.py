"""Issue 12, defect 14 (night output quality), on the pure pieces: an insight merges only
statements of one claim and represents every source; facts name the speaker, not "my"; a pattern
said often over weeks is promoted on its first night."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from mnemo.cognition.consolidation.curation import Signals, classify
from mnemo.cognition.consolidation.extraction import TurnText, extract
from mnemo.cognition.consolidation.summaries import offline_insight
from mnemo.night.insights import _conflicts
from mnemo.store.curation_versions import CandidateRow
from mnemo.store.links import InsightCandidate

AT = datetime(2024, 5, 6, 10, 0, tzinfo=UTC)
NOW = datetime(2024, 6, 1, tzinfo=UTC)


def fact_row(content: str, attribute: str | None, entity: str | None = "Dana") -> InsightCandidate:
    return InsightCandidate(
        id=uuid.uuid4(),
        kind="semantic",
        content=content,
        entity=entity,
        attribute=attribute,
        provenance=[uuid.uuid4()],
        event_time=AT,
    )


def test_two_dated_events_of_one_person_are_not_one_insight() -> None:
    rows = [
        fact_row("Dana went to jazz festival (on 2024-05-04)", "went to"),
        fact_row("Dana attended folk festival (on 2024-08-17)", "attended"),  # other date, other object
        fact_row("Dana attended jazz festival (on 2024-08-17)", "attended"),  # same object, other date
        fact_row("Dana joined jazz festival (on 2024-05-04)", "joined"),  # same date and object: one event
        fact_row("Sam joined jazz festival (on 2024-05-04)", "joined", entity="Sam"),  # someone else
    ]
    conflicts = _conflicts(rows)
    assert conflicts(0, 1) and conflicts(0, 2) and conflicts(1, 3) and conflicts(3, 4)
    assert not conflicts(0, 3)


def test_plain_memories_that_name_other_places_or_dates_are_two_claims() -> None:
    rows = [
        fact_row("Dana met Sam in Lisbon on 4 May 2024.", None, entity=None),
        fact_row("Dana met Sam in Porto on 17 August 2024.", None, entity=None),
        fact_row("Dana met Sam in Lisbon on 4 May 2024 for coffee.", None, entity=None),
    ]
    conflicts = _conflicts(rows)
    assert conflicts(0, 1) and conflicts(1, 2)
    assert not conflicts(0, 2)


def test_an_insight_represents_every_source() -> None:
    from mnemo.cognition.consolidation.summaries import claim_of

    texts = ["Dana met Sam in Lisbon.", "Dana met Sam and Kim in Lisbon on 4 May 2024."]
    vectors = np.array([[1.0, 0.0], [0.9, 0.1]])
    claims = [claim_of(t) for t in texts]
    # The shorter statement is as central, but it leaves out Kim and the date: the longer one says both.
    assert offline_insight(texts, vectors, claims) == "Insight: " + texts[1]
    apart = ["Dana met Sam in Lisbon.", "Dana met Kim in Lisbon."]
    both = offline_insight(apart, vectors, [claim_of(t) for t in apart])
    assert "Sam" in both and "Kim" in both


def test_facts_name_the_speaker_not_my() -> None:
    turns = [
        TurnText("Dana", "user", "I am going to show my paintings at the town gallery next week.", AT),
        TurnText("Dana", "user", "Yesterday I took my kids camping in the hills.", AT),
        TurnText("Dana", "user", "I went to a jazz festival with a friend of mine yesterday.", AT),
        TurnText("Sam", "assistant", "We took our dog to the beach yesterday.", AT),
    ]
    ex = extract(turns)
    values = {(f.entity, f.attribute): f.value for f in ex.facts}
    assert values[("Dana", "going to")] == "show Dana's paintings at the town gallery"
    assert values[("Dana", "took")] == "Dana's kids camping in the hills"
    assert values[("Dana", "went to")] == "jazz festival with a friend of Dana's"
    assert values[("Sam", "took")] == "Sam's dog to the beach"
    for fact in ex.facts:
        assert not {"my", "me", "mine", "myself", "our", "I"} & set(fact.value.replace("'s", "").split()), fact


def signals(**changes: Any) -> Signals:
    base: dict[str, Any] = {
        "weight_center": 0.2,  # the prior of a new memory
        "access_count": 0,  # never recalled yet
        "last_accessed": None,
        "created_at": NOW - timedelta(hours=1),  # written by tonight's night cycle
        "mention_count": 1,
        "confidence": 0.7,
        "provenance": "user",
        "contradicts_anchor": False,
        "scope_relevance": 0.4,
        "anchored": False,
        "superseded": False,
    }
    return Signals(**{**base, **changes})


def test_a_pattern_said_often_over_weeks_is_promoted_on_its_first_night() -> None:
    pattern = classify(signals(mention_count=6, mention_span_days=35.0), NOW)
    assert pattern.verdict == "promote" and "pattern" in pattern.reasons[-1]
    assert classify(signals(mention_count=6, mention_span_days=2.0), NOW).verdict == "keep"  # one burst
    assert classify(signals(mention_count=2, mention_span_days=35.0), NOW).verdict == "keep"  # said twice
    assert classify(signals(mention_count=6, mention_span_days=35.0, superseded=True), NOW).verdict == "archive"
    assert classify(signals(mention_count=6, mention_span_days=35.0, confidence=0.1), NOW).verdict == "keep"


def candidate(**fact: Any) -> CandidateRow:
    """A memory as the curator reads it; ``fact``: its fact's signals."""
    signals = {"mention_count": None, "fact_source": None, "fact_closed": None, "first_seen": None, "last_seen": None}
    return CandidateRow(
        id=uuid.uuid4(),
        kind="semantic",
        content="Dana lives in Lisbon.",
        status="candidate",
        anchored=False,
        alpha=1.0,
        beta=1.0,
        access_count=0,
        older_access_count=0,
        last_accessed=None,
        created_at=AT,
        source_tag=None,
        source_confidence=0.8,
        metadata={},
        **(signals | fact),
    )


def test_curator_mentions_of_facts_and_insights() -> None:
    from mnemo.night.curator import _mentions

    first, last = NOW - timedelta(days=40), NOW - timedelta(days=5)
    assert _mentions(candidate(mention_count=5, first_seen=first, last_seen=last), {}) == (5, 35.0)
    meta = {"mentions": 3, "first_seen": first.isoformat(), "last_seen": last.isoformat()}
    assert _mentions(candidate(), meta) == (3, 35.0)  # an insight: one mention per source
    assert _mentions(candidate(), {}) == (1, 0.0)
