"""The LoCoMo benchmark harness end to end on a tiny known conversation (real database and embedder)."""

from __future__ import annotations

from pathlib import Path

from mnemo.bench.locomo import run_locomo
from mnemo.embed import Embeddings
from tests.bench_data import tiny, two


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


async def test_each_conversation_is_asked_the_others_questions_and_refuses_them(
    tmp_path: Path, database_url: str, embeddings: Embeddings
) -> None:
    result = await run_locomo(
        two(tmp_path / "two.json"), embeddings=embeddings, database_url=database_url, baselines=False
    )
    refusal = result["systems"]["mnemo"]["refusal"]
    # 4 and 3 own questions: each conversation gets as many foreign ones as the other has, at most its own
    assert (refusal["n_own"], refusal["n_foreign"]) == (7, 6)
    # every foreign question names people the conversation never mentions
    assert refusal["foreign"] == 100.0 and refusal["unknown names: foreign"] == 100.0
    assert refusal["own single-hop"] == 0.0 and refusal["unknown names: own"] == 0.0
    curve = [refusal["by threshold"][t]["own"] for t in sorted(refusal["by threshold"])]
    assert curve == sorted(curve)  # a higher threshold refuses at least as much
    assert all(v["foreign"] == 100.0 for v in refusal["by threshold"].values())
