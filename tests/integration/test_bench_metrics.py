"""The LoCoMo benchmark harness end to end on a tiny known conversation (real database and embedder)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mnemo.bench.locomo import run_locomo
from mnemo.embed import Embeddings
from tests.bench_data import tiny, two
from tests.conftest import new_database


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
    assert mnemo["overall 1-5"]["RA@5"] == 100.0  # one evidence turn each: all of it is found
    assert mnemo["evidence in 2+ sessions"]["n"] == 0  # one session: no question's evidence spans two
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


def _use(url: str) -> tuple[int, int, int]:
    """(weight changes by recall, accesses, memories) in the database: what use has left in it."""
    import psycopg

    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT (SELECT count(*) FROM traces.weight_changes WHERE reason = 'recalled'), "
            "(SELECT coalesce(sum(access_count), 0) FROM mnemo.memories), (SELECT count(*) FROM mnemo.memories)"
        ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1]), int(row[2])


def _figures(scores: dict[str, Any]) -> str:
    """The quality figures (everything but the latencies), comparable (an empty category's NaN included)."""
    return json.dumps({group: value for group, value in scores.items() if group != "latency_ms"}, sort_keys=True)


async def test_the_lab_pass_after_the_night_leaves_the_store_as_it_found_it(
    tmp_path: Path, pg_admin_url: str, template_url: str, embeddings: Embeddings
) -> None:
    lab_url = new_database(pg_admin_url)
    lab = await run_locomo(
        two(tmp_path / "two.json"), embeddings=embeddings, database_url=lab_url, baselines=False, night=True
    )
    assert lab["lived"] is None
    reinforced, accesses, memories = _use(lab_url)
    assert memories > 0  # the night made memories the questions find ...
    assert (reinforced, accesses) == (0, 0)  # ... and the read-only pass left no use on them
    # the same run with lived rounds after it: the lab rows are the same figures
    live_url = new_database(pg_admin_url)
    live = await run_locomo(
        two(tmp_path / "two.json"),
        embeddings=embeddings,
        database_url=live_url,
        baselines=False,
        night=True,
        live=True,
        rounds=3,
    )
    for name in ("mnemo", "mnemo turns only"):
        assert _figures(live["systems"][name]) == _figures(lab["systems"][name])
    lived = live["lived"]
    assert (lived["rounds"], lived["scoring"]) == (3, "stochastic")
    assert set(lived["systems"]) == {"mnemo", "mnemo turns only"}
    rounds = lived["systems"]["mnemo"]
    assert len(rounds) == 3
    for r in rounds:  # every lived round is scored as the lab is: the same questions, groups and refusal counts
        scores = r["scores"]
        assert {g: scores[g]["n"] for g in scores if "n" in scores[g]} == {
            g: v["n"] for g, v in lab["systems"]["mnemo"].items() if "n" in v
        }
        assert (scores["refusal"]["n_own"], scores["refusal"]["n_foreign"]) == (7, 6)
    # use accumulates: each round reinforces what it recalls on top of the rounds before it
    recalled = [r["use"]["weight_changes_recalled"] for r in rounds]
    accessed = [r["use"]["accesses"] for r in rounds]
    assert 0 < recalled[0] < recalled[1] < recalled[2]
    assert 0 < accessed[0] < accessed[1] < accessed[2]
    assert _use(live_url)[:2] == (recalled[2], accessed[2])
    # over turns alone nothing carries a weight: the lived rounds use no memory
    assert all(r["use"]["accesses"] == 0 for r in lived["systems"]["mnemo turns only"])


async def test_the_lived_rounds_are_reproducible_with_their_seed(
    tmp_path: Path, pg_admin_url: str, template_url: str, embeddings: Embeddings
) -> None:
    data = two(tmp_path / "two.json")

    async def lived(seed: int) -> list[dict[str, Any]]:
        result = await run_locomo(
            data,
            embeddings=embeddings,
            database_url=new_database(pg_admin_url),
            baselines=False,
            night=True,
            live=True,
            rounds=2,
            seed=seed,
        )
        return [
            {"scores": _figures(r["scores"]), "use": r["use"]}
            for name in ("mnemo", "mnemo turns only")
            for r in result["lived"]["systems"][name]
        ]

    first = await lived(7)
    assert first == await lived(7)
    assert first[0]["use"]["weight_changes_recalled"] > 0


async def test_live_rejects_bad_rounds_and_limits_conversations(
    tmp_path: Path, database_url: str, embeddings: Embeddings
) -> None:
    data = two(tmp_path / "two.json")
    with pytest.raises(ValueError, match="rounds must be >= 1"):
        await run_locomo(data, embeddings=embeddings, database_url=database_url, live=True, rounds=0)
    one = await run_locomo(
        data, embeddings=embeddings, database_url=database_url, baselines=False, live=True, conversations_limit=1
    )
    assert (one["conversations"], one["questions"]) == (1, 4)
    [lived] = one["lived"]["systems"]["mnemo"]
    assert lived["scores"]["overall 1-5"]["n"] == 4
    assert lived["use"]["accesses"] == 0  # turns only: no memory to use


def test_bench_locomo_live_on_the_command_line(tmp_path: Path, database_url: str) -> None:
    from typer.testing import CliRunner

    from mnemo.interfaces.cli import app

    data = tiny(tmp_path / "tiny.json")
    env = {"MNEMO_DATABASE_URL": database_url, "MNEMO_HOME": str(tmp_path)}
    runner = CliRunner()

    def run(*args: str) -> tuple[int, str, str]:
        result = runner.invoke(app, ["bench", "locomo", str(data), *args], env=env)
        return result.exit_code, result.stdout, result.stderr

    for flags, message in (
        (("--rounds", "2"), "only the lived rounds take it; add --live"),
        (("--seed", "3"), "only the lived rounds take it; add --live"),
        (("--live", "--rounds", "0"), "must be at least 1, not 0"),
        (("--conversations", "0"), "must be at least 1, not 0"),
    ):
        code, _, err = run(*flags)
        assert code == 2 and message in " ".join(err.split()), (flags, err)
        assert flags[-2] in err
    out = tmp_path / "live.json"
    code, stdout, err = run("--live", "--rounds", "2", "--seed", "5", "--no-baselines", "--json", str(out))
    assert code == 0, err
    for label in ("mnemo (lab)", "mnemo, lived round 1", "mnemo, lived round 2"):
        assert label in stdout
    result = json.loads(out.read_text())
    assert (result["lived"]["seed"], len(result["lived"]["systems"]["mnemo"])) == (5, 2)
    assert result["lived"]["systems"]["mnemo"][1]["scores"]["overall 1-5"]["n"] == 4
