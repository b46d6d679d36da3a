"""The scoring of ``mnemo bench updates`` (issue 40 item 1) on made-up hit lists."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mnemo.bench.updates import Seen, fold, judge, load_lives, names, summarize
from mnemo.errors import MalformedImportError

CHANGED: dict[str, Any] = {
    "id": "x-c01",
    "type": "changed",
    "question": "Where does José live now?",
    "current": ["s-3:1"],
    "stale": ["s-1:1"],
    "current_values": ["Lisbon"],
    "stale_values": ["Kiel"],
}


def hit(content: str, *refs: str, kind: str = "turn") -> Seen:
    return Seen(kind, content, 0.5, frozenset(refs))


def test_folding_ignores_case_and_accents() -> None:
    assert fold("JOSÉ Müller") == "jose muller"
    assert names("josé moved here", ["Jose"]) and names("Jose moved here", ["José"])


def test_values_match_as_whole_words_only() -> None:
    assert not names("We hiked in Kielder forest", ["Kiel"])
    assert names("We moved from Kiel, finally.", ["Kiel"])
    assert names("I gave up chess", ["gave up"]) and not names("I gave upkeep", ["gave up"])
    assert not names("anything", ["", "  "])  # an empty value names nothing


def test_current_named_after_stale_is_not_current_first() -> None:
    hits = [hit("Nothing about it"), hit("I live in Kiel", "s-1:1"), hit("We moved to Lisbon", "s-3:1")]
    m = judge(CHANGED, hits, refused=False)
    assert (m["current_first"], m["stale_above"], m["current_top5"], m["current_first_turns"]) == (
        False,
        True,
        True,
        False,
    )


def test_a_hit_naming_both_values_names_the_current_one() -> None:
    hits = [hit("From Kiel to Lisbon: we moved!"), hit("Kiel is cold")]
    m = judge(CHANGED, hits, refused=False)
    assert m["current_first"] and not m["stale_above"]


def test_stale_with_no_current_is_stale_above_and_nothing_named_is_neither() -> None:
    m = judge(CHANGED, [hit("Kiel again")], refused=False)
    assert m["stale_above"] and not m["current_first"] and not m["current_top5"]
    m = judge(CHANGED, [hit("the weather")], refused=False)
    assert not m["stale_above"] and not m["current_first"]


def test_current_top5_counts_the_first_five_only() -> None:
    hits = [hit(f"filler {i}") for i in range(5)] + [hit("Lisbon")]
    assert not judge(CHANGED, hits, refused=False)["current_top5"]
    assert judge(CHANGED, hits[1:], refused=False)["current_top5"]


def test_current_first_turns_reads_the_evidence_turns_not_the_words() -> None:
    # a memory made from the new turn, in words naming no value, comes before the old turn
    hits = [hit("home is by the sea now", "s-3:1", kind="memory:fact"), hit("I live in Kiel", "s-1:1")]
    m = judge(CHANGED, hits, refused=False)
    assert m["current_first_turns"] and not m["current_first"] and m["stale_above"]


def test_a_refused_recall_has_no_hits() -> None:
    m = judge(CHANGED, [hit("We moved to Lisbon", "s-3:1")], refused=True)
    assert m["refused"] and not any(m[k] for k in ("current_first", "stale_above", "current_top5"))


def test_unchanged_past_and_never() -> None:
    unchanged = {"type": "unchanged", "values": ["Lena"], "evidence": []}
    m = judge(unchanged, [hit("my aunt"), hit("Lena called")], refused=False)
    assert (m["value_top1"], m["value_top5"]) == (False, True)
    past = {"type": "past", "values": ["Kiel"], "other_values": ["Lisbon"], "evidence": []}
    assert not judge(past, [hit("Lisbon now"), hit("Kiel then")], refused=False)["past_first"]
    assert judge(past, [hit("from Kiel to Lisbon")], refused=False)["past_first"]
    never = {"type": "never", "focus": "blood type"}
    assert judge(never, [], refused=True) == {"refused": True}


def test_summary_counts_and_answerable_refusals() -> None:
    rows = [
        ("changed", judge(CHANGED, [hit("Lisbon")], refused=False)),
        ("changed", judge(CHANGED, [hit("Kiel")], refused=False)),
        ("changed", judge(CHANGED, [], refused=True)),
        ("never", {"refused": True}),
        ("never", {"refused": False}),
    ]
    s = summarize(rows)
    assert s["changed"]["current_first"] == {"pct": 33.3, "count": 1, "n": 3}
    assert s["changed"]["stale_above"]["count"] == 1
    assert s["never"]["refused"] == {"pct": 50.0, "count": 1, "n": 2}
    assert s["answerable_refused"] == {"pct": 33.3, "count": 1, "n": 3}  # the never questions are not answerable
    assert s["unchanged"]["n"] == 0 and s["unchanged"]["value_top1"]["pct"] is None


def _life(path: Path, **changes: Any) -> Path:
    life = {
        "person": "José Ruiz",
        "user": "José",
        "sessions": [
            {"session": "s-1", "date": "2025-01-12T19:00:00+00:00", "turns": [["user", "Hi"], ["assistant", "Hello"]]}
        ],
        "questions": [{"id": "q", "type": "unchanged", "question": "?", "evidence": ["s-1:1"], "values": ["Hi"]}],
    } | changes
    path.write_text(json.dumps(life))
    return path


def test_a_life_is_dated_two_minutes_a_turn_and_scoped_by_the_folded_first_name(tmp_path: Path) -> None:
    (life,) = load_lives(_life(tmp_path / "jose.json"))
    assert life.entity == "jose"
    first, second = life.turns
    assert (first.metadata["ref"], second.metadata["ref"]) == ("s-1:1", "s-1:2")
    assert second.created_at is not None and first.created_at is not None
    assert (second.created_at - first.created_at).total_seconds() == 120
    assert (first.speaker, second.speaker, second.role) == ("José", "Assistant", "assistant")


def test_a_question_naming_a_missing_turn_is_refused(tmp_path: Path) -> None:
    bad = [{"id": "q", "type": "unchanged", "question": "?", "evidence": ["s-1:9"], "values": ["Hi"]}]
    with pytest.raises(MalformedImportError, match="s-1:9"):
        load_lives(_life(tmp_path / "bad.json", questions=bad))
