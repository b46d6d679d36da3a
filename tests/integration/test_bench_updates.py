"""``mnemo bench updates`` end to end on a tiny life (real database and embedder): every stage is
scored, and each question's figures agree with the hits it records."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mnemo.bench.updates import METRICS, STAGES, names, run_updates
from mnemo.embed import Embeddings

# every turn is under 80 characters: the hits the JSON records are the whole contents
SESSIONS = [
    ("jose-1", "2025-02-03T18:00:00+00:00", [
        ("user", "Hi, I'm José. I live in Kiel, up by the Baltic coast."),
        ("assistant", "Nice to meet you, José! How is life in Kiel?"),
        ("user", "Good. My sister Lena visits me every spring."),
        ("assistant", "Lovely, I hope you two have fun."),
    ]),
    ("jose-2", "2025-06-10T18:00:00+00:00", [
        ("user", "I bake sourdough bread every weekend now."),
        ("assistant", "What flour do you use for it?"),
        ("user", "Mostly rye, it is what my grandmother used."),
        ("assistant", "A good tradition to keep."),
    ]),
    ("jose-3", "2025-11-20T18:00:00+00:00", [
        ("user", "Big news: we relocated to Lisbon last month!"),
        ("assistant", "Congratulations! How do you like Lisbon?"),
        ("user", "The light is wonderful and Lena already came to visit."),
        ("assistant", "That sounds like a happy move."),
    ]),
]  # fmt: skip

QUESTIONS = [
    {"id": "jose-c01", "type": "changed", "question": "Where does José live now?", "current": ["jose-3:1"],
     "stale": ["jose-1:1"], "current_values": ["Lisbon"], "stale_values": ["Kiel"]},
    {"id": "jose-u01", "type": "unchanged", "question": "What is José's sister called?",
     "evidence": ["jose-1:3"], "values": ["Lena"]},
    {"id": "jose-n01", "type": "never", "question": "What is José's blood type?", "focus": "blood type",
     "nearest": []},
]  # fmt: skip


def tiny_life(path: Path) -> Path:
    sessions = [{"session": s, "date": d, "turns": [list(t) for t in turns]} for s, d, turns in SESSIONS]
    life = {"person": "José Ruiz", "user": "José", "other": "Assistant", "sessions": sessions, "questions": QUESTIONS}
    path.write_text(json.dumps(life, ensure_ascii=False), encoding="utf-8")
    return path


def _agrees(question: dict[str, Any], stage: dict[str, Any]) -> None:
    """The question's metrics as the hits it records show them (its top 5, whole contents)."""
    m, top = stage["metrics"], [content for _, content, _ in stage["top"]]
    assert not (stage["refused"] and top)  # a refused recall has no hits
    assert m["refused"] == stage["refused"] and (stage["message"] is not None) == stage["refused"]
    if question["type"] == "unchanged":
        assert m["value_top1"] == names(top[0] if top else "", question["values"])
        assert m["value_top5"] == any(names(c, question["values"]) for c in top)
    if question["type"] == "changed":
        current = [names(c, question["current_values"]) for c in top]
        stale = [names(c, question["stale_values"]) for c in top]
        assert m["current_top5"] == any(current)
        named = [cur for cur, old in zip(current, stale, strict=True) if cur or old]
        if named:  # the first hit naming a value is within the top 5
            assert (m["current_first"], m["stale_above"]) == (named[0], not named[0])


async def test_every_stage_is_scored_as_its_hits_show(
    tmp_path: Path, database_url: str, embeddings: Embeddings
) -> None:
    result = await run_updates(
        tiny_life(tmp_path / "jose.json"), embeddings=embeddings, database_url=database_url, rounds=1, seed=0
    )
    assert list(result["stages"]) == list(STAGES) and result["lives"]["José Ruiz"]["entity"] == "jose"
    assert result["lives"]["José Ruiz"]["turns"] == 12 and result["knobs"]["rounds"] == 1
    for name, stage in result["stages"].items():
        overall = stage["overall"]
        assert stage["lives"]["José Ruiz"] == overall  # one life: its breakdown is the whole
        for kind, metrics in METRICS.items():
            rows = [q["stages"][name]["metrics"] for q in result["questions"] if q["type"] == kind]
            for metric in metrics:
                assert overall[kind][metric]["count"] == sum(r[metric] for r in rows)
                assert overall[kind][metric]["n"] == len(rows)
        answerable = [q["stages"][name]["refused"] for q in result["questions"] if q["type"] != "never"]
        assert overall["answerable_refused"]["count"] == sum(answerable)
    for question in result["questions"]:
        for stage in question["stages"].values():
            _agrees(question, stage)
        assert len(question["lived_rounds"]) == 1  # the round before the night a week later
    lived = result["stages"]["lived"]
    assert len(lived["rounds"]) == 1 and lived["nights"]["as_of"] > result["stages"]["night"]["nights"]["as_of"]
    assert result["stages"]["night"]["nights"]["blocks"] > 0  # the night consolidated the life
    assert lived["nights"]["use"]["accesses"] > 0  # the owner's lived recalls left their use


def test_the_command_runs_the_chosen_stages_and_refuses_an_unknown_one(tmp_path: Path, database_url: str) -> None:
    from typer.testing import CliRunner

    from mnemo.interfaces.cli import app

    env = {"MNEMO_DATABASE_URL": database_url, "MNEMO_HOME": str(tmp_path)}
    life, out = tiny_life(tmp_path / "jose.json"), tmp_path / "out.json"
    bad = CliRunner().invoke(app, ["bench", "updates", str(life), "--stages", "turns,dawn"], env=env)
    assert bad.exit_code == 2 and "choose from turns, night, lived" in bad.stderr
    done = CliRunner().invoke(app, ["bench", "updates", str(life), "--stages", "turns", "--json", str(out)], env=env)
    assert done.exit_code == 0, done.stderr
    assert "current first" in done.stdout and list(json.loads(out.read_text())["stages"]) == ["turns"]
