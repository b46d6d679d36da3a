"""The benchmark harness computes its metrics correctly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mnemo.bench.locomo import run_locomo
from mnemo.bench.metrics import budget_recall, parse_evidence, percentile, recall_at_k
from mnemo.embed import Embeddings


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


def test_budget_recall_stops_at_the_first_item_that_does_not_fit() -> None:
    tokens = {"a": 300, "b": 300, "c": 100}
    assert budget_recall(["a", "b", "c"], tokens, ["c"], 500) == 0.0  # b does not fit; c is never reached
    assert budget_recall(["a", "c", "b"], tokens, ["c"], 500) == 1.0
    assert budget_recall(["a", "b"], tokens, ["a", "b"], 600) == 1.0
    assert budget_recall(["a"], tokens, [], 1) == 1.0


def test_percentile() -> None:
    assert percentile([5.0, 1.0, 3.0], 50) == 3.0
    assert percentile(list(map(float, range(101))), 95) == 95.0


def tiny(path: Path) -> Path:
    conv = {
        "speaker_a": "Ana",
        "speaker_b": "Ben",
        "session_1_date_time": "9:00 am on 1 March, 2023",
        "session_1": [
            {"speaker": "Ana", "dia_id": "D1:1", "text": "I finally adopted a greyhound, his name is Comet."},
            {"speaker": "Ben", "dia_id": "D1:2", "text": "I spent the weekend repainting my kitchen yellow."},
            {"speaker": "Ana", "dia_id": "D1:3", "text": "My sister is moving to Toronto in June."},
            {"speaker": "Ben", "dia_id": "D1:4", "text": "I ran my first half marathon in under two hours."},
        ],
    }
    qa = [
        {"question": "What is the name of Ana's dog?", "answer": "Comet", "evidence": ["D1:1"], "category": 4},
        {"question": "What colour did Ben paint the kitchen?", "answer": "yellow", "evidence": ["D1:2"], "category": 4},
        {"question": "Where is Ana's sister moving?", "answer": "Toronto", "evidence": ["D1:3"], "category": 1},
        {
            "question": "What did Ana say about the weather?",
            "evidence": [],
            "category": 5,
            "adversarial_answer": "none",
        },
    ]
    path.write_text(json.dumps([{"sample_id": "tiny-1", "conversation": conv, "qa": qa}]))
    return path


async def test_locomo_harness_on_a_known_conversation(
    tmp_path: Path, database_url: str, embeddings: Embeddings
) -> None:
    result = await run_locomo(tiny(tmp_path / "tiny.json"), embeddings=embeddings, database_url=database_url)
    assert (result["conversations"], result["turns"], result["questions"]) == (1, 4, 4)
    mnemo = result["systems"]["mnemo"]
    # each answer is one distinctive turn: found first, and everything is within the top 5 of 4 turns
    assert mnemo["overall 1-5"]["R@1"] == 100.0
    assert mnemo["single-hop"]["n"] == 2 and mnemo["multi-hop"]["n"] == 1 and mnemo["temporal"]["n"] == 0
    assert mnemo["overall 1-4"]["n"] == 3 and mnemo["overall 1-5"]["n"] == 4
    assert mnemo["overall 1-5"]["R@5"] == 100.0 and mnemo["overall 1-5"]["B@500"] == 100.0
    assert set(result["systems"]) == {"mnemo", "bm25s", "dense", "bm25s+dense rrf"}
    assert mnemo["latency_ms"]["p50"] > 0
