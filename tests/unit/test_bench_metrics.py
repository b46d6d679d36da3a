"""The benchmark harness computes its metrics correctly (the pure metrics; the LoCoMo run: tests/integration)."""

from __future__ import annotations

import pytest

from mnemo.bench.metrics import (
    budget_recall,
    evidence_sessions,
    parse_evidence,
    percentile,
    recall_all_at_k,
    recall_any_at_k,
    recall_at_k,
)


def test_parse_evidence_splits_malformed_entries() -> None:
    assert parse_evidence(["D8:6; D9:17", "D1:3", "D1:3", "junk"]) == ["D8:6", "D9:17", "D1:3"]


def test_recall_at_k() -> None:
    ranking = ["D1:1", "D1:2", "D2:5", "D3:1"]
    assert recall_at_k(ranking, ["D2:5"], 1) == 0.0
    assert recall_at_k(ranking, ["D2:5"], 3) == 1.0
    assert recall_at_k(ranking, ["D1:2", "D9:9"], 10) == 0.5
    assert recall_at_k(ranking, [], 1) == 1.0  # no evidence scores 1
    with pytest.raises(ValueError):
        recall_at_k(ranking, ["D1:1"], 0)


def test_recall_any_at_k_counts_a_question_found_by_any_of_its_evidence() -> None:
    ranking = ["D1:1", "D1:2", "block", "D3:1"]
    assert recall_any_at_k(ranking, ["D1:2", "D9:9"], 1) == 0.0
    assert recall_any_at_k(ranking, ["D1:2", "D9:9"], 2) == 1.0  # half the evidence is enough
    assert recall_any_at_k(ranking, ["D7:7"], 3, {"block": ("D7:7", "D7:8")}) == 1.0  # through a cover
    assert recall_any_at_k(ranking, ["D7:7"], 2, {"block": ("D7:7",)}) == 0.0
    assert recall_any_at_k(ranking, [], 1) == 1.0
    with pytest.raises(ValueError):
        recall_any_at_k(ranking, ["D1:1"], 0)
    # never below the fractional recall, and equal to it for single-evidence questions
    for k in (1, 2, 3, 4):
        assert recall_any_at_k(ranking, ["D1:2", "D3:1"], k) >= recall_at_k(ranking, ["D1:2", "D3:1"], k)
        assert recall_any_at_k(ranking, ["D3:1"], k) == recall_at_k(ranking, ["D3:1"], k)


def test_recall_all_at_k_counts_a_question_only_when_every_evidence_turn_is_found() -> None:
    ranking = ["D1:1", "D4:2", "block", "D3:1"]
    assert recall_all_at_k(ranking, ["D1:1", "D3:1"], 3) == 0.0  # half is not enough
    assert recall_all_at_k(ranking, ["D1:1", "D3:1"], 4) == 1.0
    assert recall_all_at_k(ranking, ["D1:1", "D7:7"], 3, {"block": ("D7:7", "D7:8")}) == 1.0  # through a cover
    assert recall_all_at_k(ranking, [], 1) == 1.0
    with pytest.raises(ValueError):
        recall_all_at_k(ranking, ["D1:1"], 0)
    for k in (1, 2, 3, 4):  # never above the fractional recall, equal to it for one evidence turn
        assert recall_all_at_k(ranking, ["D4:2", "D3:1"], k) <= recall_at_k(ranking, ["D4:2", "D3:1"], k)
        assert recall_all_at_k(ranking, ["D3:1"], k) == recall_at_k(ranking, ["D3:1"], k)


def test_evidence_sessions_counts_the_distinct_sessions_of_the_dia_ids() -> None:
    assert evidence_sessions(["D1:1", "D1:9", "D12:3"]) == 2
    assert evidence_sessions(["D2:2"]) == 1 and evidence_sessions([]) == 0


def test_budget_recall_stops_at_the_first_item_that_does_not_fit() -> None:
    tokens = {"a": 300, "b": 300, "c": 100}
    assert budget_recall(["a", "b", "c"], tokens, ["c"], 500) == 0.0  # b does not fit; c is never reached
    assert budget_recall(["a", "c", "b"], tokens, ["c"], 500) == 1.0
    assert budget_recall(["a", "b"], tokens, ["a", "b"], 600) == 1.0
    assert budget_recall(["a"], tokens, [], 1) == 1.0


def test_percentile() -> None:
    assert percentile([5.0, 1.0, 3.0], 50) == 3.0
    assert percentile(list(map(float, range(101))), 95) == 95.0


def test_foreign_questions_come_from_the_other_conversations_seeded() -> None:
    from mnemo.bench.locomo import Conversation, Question, foreign_questions

    convs = [
        Conversation(f"c{i}", (), tuple(Question(f"q{i}-{j}", 4, ()) for j in range(n)))
        for i, n in enumerate((5, 2, 3))
    ]
    drawn = foreign_questions(convs, seed=1)
    for conv in convs:
        own = set(conv.questions)
        assert not own & set(drawn[conv.sample_id])
        assert len(drawn[conv.sample_id]) == min(len(conv.questions), 5 + 2 + 3 - len(conv.questions))
        assert len(set(drawn[conv.sample_id])) == len(drawn[conv.sample_id])
    assert drawn == foreign_questions(convs, seed=1)
    assert drawn != foreign_questions(convs, seed=2)


def test_questions_asked_at_the_end_are_asked_a_day_after_the_last_turn() -> None:
    from datetime import UTC, datetime, timedelta

    from mnemo.bench.locomo import Conversation, _asked_at
    from mnemo.write.formats import TurnInput

    times = [datetime(2023, 5, 8, 13, 56, tzinfo=UTC), datetime(2023, 6, 2, 10, 5, tzinfo=UTC), None]
    conv = Conversation("c", tuple(TurnInput("s", "user", "hi", created_at=t) for t in times), ())
    assert _asked_at(conv, "end") == datetime(2023, 6, 2, 10, 5, tzinfo=UTC) + timedelta(days=1)
    assert _asked_at(conv, "now") is None
    assert _asked_at(Conversation("e", (), ()), "end") is None
