"""``mnemo bench spread`` (issue 43) end to end on a tiny conversation of three sessions and the
shipped set's loader (real database and embedder)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mnemo.bench.spread import KINDS, load_spread, run_spread
from mnemo.embed import Embeddings
from mnemo.errors import MalformedImportError

TURNS = {
    1: ["I adopted a greyhound called Comet last spring.", "Ben repainted his kitchen a bright yellow."],
    2: ["We watched the football final at my cousin's flat.", "Comet has a new friend: we took in a tabby cat, Miso."],
    3: ["My sister is moving to Toronto in June.", "And a third pet joined us: a parrot named Kiwi."],
}


def _conversation(path: Path) -> Path:
    conv: dict[str, object] = {"speaker_a": "Ana", "speaker_b": "Ben"}
    for s, texts in TURNS.items():
        conv[f"session_{s}_date_time"] = f"9:00 am on {s} March, 2023"
        conv[f"session_{s}"] = [
            {"speaker": "Ana", "dia_id": f"D{s}:{n}", "text": text} for n, text in enumerate(texts, start=1)
        ]
    path.write_text(json.dumps([{"sample_id": "tiny-1", "conversation": conv, "qa": []}]))
    return path


def _set(directory: Path, questions: list[dict[str, object]]) -> Path:
    directory.mkdir(exist_ok=True)
    (directory / "locomo-dev.json").write_text(json.dumps({"questions": questions}))
    return directory


PETS = {
    "id": "t1",
    "sample_id": "tiny-1",
    "kind": "count",
    "question": "How many pets does Ana have?",
    "evidence": ["D1:1", "D2:2", "D3:2"],
}


async def test_a_question_spread_over_three_sessions_is_scored_on_all_its_evidence(
    tmp_path: Path, database_url: str, embeddings: Embeddings
) -> None:
    data = _conversation(tmp_path / "tiny.json")
    spread = _set(tmp_path / "set", [PETS, {**PETS, "id": "t2", "kind": "change", "evidence": ["D1:1", "D9:9"]}])
    with pytest.raises(MalformedImportError, match=r"no turns \['D9:9'\]"):
        await run_spread(spread, embeddings=embeddings, locomo=data, database_url=database_url)
    _set(spread, [PETS])
    result = await run_spread(spread, embeddings=embeddings, locomo=data, database_url=database_url, live=True)
    assert (result["conversations"], result["questions"]) == (1, 1)
    mnemo = result["systems"]["mnemo"]
    # six turns: all three pets are in any top 10, so the question is answered whole, lab and lived
    assert mnemo["overall"]["RA@10"] == 100.0 and mnemo["count"]["n"] == 1 and mnemo["locomo"]["n"] == 1
    assert result["systems"]["mnemo, lived"]["overall"]["RA@10"] == 100.0
    assert result["live"] == {"seed": 0, "scoring": "stochastic"}
    assert set(result["systems"]) == {"mnemo", "mnemo, lived", "bm25s", "dense", "bm25s+dense rrf"}


def test_the_shipped_set_names_only_turns_that_exist() -> None:
    root = Path(__file__).resolve().parents[1] / "data"
    loaded = load_spread(root / "spread", None, root / "lives")
    asked = [q for _, conv in loaded for q in conv.questions]
    assert len(asked) >= 40 and {q.category for q in asked} <= set(range(len(KINDS)))
    for q in asked:  # every question but a preference is spread over two sessions or more
        assert KINDS[q.category] == "preference" or len({e.split(":")[0] for e in q.evidence}) >= 2, q


def test_bench_spread_on_the_command_line_refuses_what_it_cannot_run(tmp_path: Path, database_url: str) -> None:
    from typer.testing import CliRunner

    from mnemo.interfaces.cli import app

    env = {"MNEMO_DATABASE_URL": database_url, "MNEMO_HOME": str(tmp_path)}
    runner = CliRunner()
    spread = _set(tmp_path / "set", [PETS])
    for args, message in (
        ([str(spread)], "give --locomo, --lives or both"),
        ([str(tmp_path / "nowhere"), "--lives", str(tmp_path)], "does not exist"),
        ([str(spread), "--locomo", str(tmp_path / "none.json")], "does not exist"),
    ):
        result = runner.invoke(app, ["bench", "spread", *args], env=env)
        said = " ".join(result.stderr.replace("│", " ").split())  # rich's error box wraps long paths
        assert result.exit_code == 2 and message in said, (args, result.stderr)
    data = _conversation(tmp_path / "tiny.json")
    out = tmp_path / "spread.json"
    result = runner.invoke(app, ["bench", "spread", str(spread), "--locomo", str(data), "--json", str(out)], env=env)
    assert result.exit_code == 0, result.stderr
    assert "count (1)" in result.stdout
    assert json.loads(out.read_text())["systems"]["mnemo"]["overall"]["n"] == 1
