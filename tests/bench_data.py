"""A tiny LoCoMo-format conversation with known answers, for the benchmark-harness tests."""

from __future__ import annotations

import json
from pathlib import Path


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


def two(path: Path) -> Path:
    """:func:`tiny` and a second conversation between other people, about other things: each one's
    questions are the other's foreign questions."""
    tiny(path)
    first = json.loads(path.read_text())
    conv = {
        "speaker_a": "Zoe",
        "speaker_b": "Yuri",
        "session_1_date_time": "6:30 pm on 3 April, 2023",
        "session_1": [
            {"speaker": "Zoe", "dia_id": "D1:1", "text": "We took the sailboat out past the lighthouse today."},
            {"speaker": "Yuri", "dia_id": "D1:2", "text": "Did the new jib hold up in that wind?"},
            {"speaker": "Zoe", "dia_id": "D1:3", "text": "It did, though my brother Tomas got seasick."},
        ],
    }
    qa = [
        {"question": "Where did Zoe sail to?", "answer": "the lighthouse", "evidence": ["D1:1"], "category": 4},
        {"question": "What did Yuri ask about the jib?", "answer": "the wind", "evidence": ["D1:2"], "category": 4},
        {"question": "Who got seasick on Zoe's boat?", "answer": "Tomas", "evidence": ["D1:3"], "category": 4},
    ]
    path.write_text(json.dumps([*first, {"sample_id": "tiny-2", "conversation": conv, "qa": qa}]))
    return path
