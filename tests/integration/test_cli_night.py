"""The night-cycle CLI commands (night, curate, facts, believe) in-process against a real database."""

from __future__ import annotations

import json
from pathlib import Path

from tests.integration.test_cli import env, run  # noqa: F401  # the env fixture

JSONL = "\n".join(
    json.dumps({"session": s, "role": r, "speaker": who, "content": c, "created_at": t})
    for s, r, who, c, t in [
        ("s1", "user", "Dana", "I live in Lisbon.", "2026-01-05T10:00:00+00:00"),
        ("s1", "assistant", "Bot", "Lisbon is lovely.", "2026-01-05T10:01:00+00:00"),
        ("s1", "user", "Dana", "I love sailing on weekends.", "2026-01-05T10:02:00+00:00"),
        ("s2", "user", "Dana", "I moved to Porto last week.", "2026-02-05T10:00:00+00:00"),
        ("s2", "assistant", "Bot", "Porto has great food.", "2026-02-05T10:01:00+00:00"),
        ("s2", "user", "Dana", "I love sailing on weekends.", "2026-02-05T10:02:00+00:00"),
    ]
)


def test_night_facts_curate_and_believe(env: dict[str, str], tmp_path: Path) -> None:  # noqa: F811
    path = tmp_path / "dana.jsonl"
    path.write_text(JSONL + "\n")
    assert run(env, "import", str(path))[0] == 0

    code, out, _ = run(env, "night", "--as-of", "2026-02-05T12:00:00+00:00", "--json")
    report = json.loads(out)
    assert code == 0 and report["turns_scored"] == 6 and report["blocks"] >= 2
    assert report["facts_new"] >= 3 and report["facts_repeated"] == 1 and report["curation_version"] == 1
    code, out, _ = run(env, "status", "--json")
    counts = json.loads(out)["counts"]
    assert counts["blocks"] == report["blocks"] and counts["facts"] == 2 and counts["night_runs"] == 1  # Lisbon closed
    code, out, _ = run(env, "night")  # table output, nothing left to do
    assert code == 0 and "night cycle" in out and "0 turns scored" in out

    code, out, _ = run(env, "facts", "Dana", "--json")
    facts = json.loads(out)
    current = {(f["attribute"], f["value"]) for f in facts["facts"] if f["valid_to"] is None}
    past = {(f["attribute"], f["value"]) for f in facts["facts"] if f["valid_to"] is not None}
    assert code == 0 and ("lives in", "Porto") in current and ("lives in", "Lisbon") in past
    code, out, _ = run(env, "facts", "Dana")
    assert code == 0 and "Porto" in out and "Lisbon" in out
    code, _, err = run(env, "facts", "Nobody")
    assert code == 1 and "no entity 'Nobody'" in err

    code, out, _ = run(env, "curate", "--dry-run", "--json")
    dry = json.loads(out)  # the night already applied version 1: nothing left to change
    assert code == 0 and dry["version"] is None and dry["changes"] == [] and set(dry["counts"]) == {"keep"}
    # A new candidate gives the curator something to decide.
    assert run(env, "remember", "Dana is allergic to cats", "--candidate", "--json")[0] == 0
    code, out, _ = run(env, "curate", "--stage-only", "--json")
    staged = json.loads(out)
    assert code == 0 and staged["version"] == 2 and staged["applied"] is False
    code, out, _ = run(env, "curate", "--apply", "2")
    assert code == 0 and "applied curation version 2" in out
    code, _, err = run(env, "curate", "--apply", "2")
    assert code == 1 and "already applied" in err

    code, out, _ = run(env, "recall", "where does Dana live?", "-k", "3", "--json")
    top = json.loads(out)["hits"][0]
    assert code == 0 and top["content"] == "Dana lives in Porto"
    code, out, _ = run(env, "believe", top["id"], "--json")
    chain = json.loads(out)["chain"]
    # The raw turns arrived today, so retention kept them (one cycle from arrival, whatever their
    # event dates): the chain ends at the source turn itself.
    assert code == 0 and [b["kind"] for b in chain] == ["turn"] and chain[0]["content"] == "I moved to Porto last week."
    code, out, _ = run(env, "night", "--all", "--json")
    # Nothing new to score; the scope still has memories to curate and decay.
    assert code == 0 and [(r["scope"], r["turns_scored"]) for r in json.loads(out)] == [("cli/default", 0)]
    code, out, _ = run(env, "night", "--scope", "cli", "--json")
    assert code == 0 and json.loads(out)["scope"] == "cli/default"
    code, _, err = run(env, "night", "--scope", "ghost/x")
    assert code == 1 and "scope ghost/x does not exist" in err
    code, _, err = run(env, "night", "--stages", "surprisal,dreams")
    assert code == 1 and "unknown stages" in err
