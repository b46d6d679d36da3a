"""A refusal that knows what was never said (issue 32 item 2): questions whose evidence was removed.

    .venv/bin/python benchmarks/refusal_removed.py path/to/locomo.json --dump removed.pkl [--per 20]

Built from the dev data without new data: every conversation goes into a scope through the real
write path; ``--per`` questions per conversation (categories 1-4 with evidence; drawn with a fixed
seed) are asked twice, on the scope as it is and on a fork of it (``AsyncArchive.portability.fork``) from which
the question's evidence turns were forgotten (``AsyncArchive.forget``); the fork is then discarded.
The first must be answered, the second refused. Every recall is read-only and captures, for each
of the question's content words, how many items of the scope hold it and how well the hits' tokens
match it (:mod:`mnemo.recall.support`), so the rule and its threshold are read off one dump:

- **refused / answered** on both sides at each support threshold (the curve), for the rule
  ``refuse_unsupported`` applies (:func:`mnemo.cognition.scoring.refusal.judge`);
- the same recalls' refusal by the other rules (unknown names, similarity), for the record.

Foreign questions (another conversation's) are measured by ``mnemo bench locomo``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import pickle
import random
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mnemo import AsyncArchive, Refusal, Scope, Settings
from mnemo.bench.locomo import load_locomo
from mnemo.cognition.scoring.refusal import question_words, unsupported

THRESHOLDS = tuple(round(0.20 + 0.05 * n, 2) for n in range(15))
SEED = 32


async def _ask(archive: AsyncArchive, scope: Scope, text: str) -> dict[str, Any]:
    with archive.inspect.probes().capturing() as capture:
        result = await archive.recall(scope, text, 10, read_only=True, kinds=("turn",))
    return {
        "refused": isinstance(result, Refusal),
        "unknown names": bool(result.unknown) if isinstance(result, Refusal) else False,
        "support": capture.support[-1] if capture.support else {},
        "by_hit": capture.by_hit[-1] if capture.by_hit else None,
    }


async def _forked(archive: AsyncArchive, scope: Scope, name: str, evidence: Sequence[str]) -> Scope:
    fork = await archive.portability.fork(scope, name)
    doomed = [
        p["packet_id"]
        async for p in archive.portability.packets(fork)
        if p["packet_type"] == "turn" and (p["metadata"].get("metadata") or {}).get("dia_id") in evidence
    ]
    for item in doomed:
        await archive.forget(fork, item)
    return fork


async def dump(path: Path, per: int, limit: int | None) -> list[dict[str, Any]]:
    conversations = load_locomo(path)[:limit]
    rng = random.Random(SEED)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="mnemo-removed-") as home:
        archive = await AsyncArchive.open(Settings(home=Path(home), scoring="deterministic"))
        try:
            for conv in conversations:
                scope = Scope("removed", conv.sample_id)
                await archive.import_turns(scope, conv.turns)
                asked = [q for q in conv.questions if q.category != 5 and q.evidence]
                for n, q in enumerate(rng.sample(asked, min(per, len(asked)))):
                    kept = await _ask(archive, scope, q.text)
                    fork = await _forked(archive, scope, f"{conv.sample_id}-removed-{n}", q.evidence)
                    try:
                        removed = await _ask(archive, fork, q.text)
                    finally:
                        await archive.portability.discard(fork)
                    rows.append({"conv": conv.sample_id, "question": q.text, "category": q.category,
                                 "kept": kept, "removed": removed})  # fmt: skip
                print(f"{conv.sample_id}: {len(rows)} questions", file=sys.stderr)
        finally:
            await archive.close()
    return rows


def _asked(row: Mapping[str, Any], side: str) -> dict[str, tuple[int, float]]:
    """A recall's captured support, of the words :func:`question_words` picks today (a dump made
    before a change to them is read as if made after)."""
    words = set(question_words(row["question"]))
    return {w: v for w, v in row[side]["support"].items() if w in words}


def curve(rows: Sequence[Mapping[str, Any]], rarity: int) -> list[dict[str, float]]:
    """Refused share on both sides at each threshold: the other rules' refusals, or this rule's."""
    out = []
    for t in THRESHOLDS:
        point = {"threshold": t}
        for side in ("kept", "removed"):
            refused = [r[side]["refused"] or bool(unsupported(_asked(r, side), t, rarity)) for r in rows]
            point[f"{side} refused %"] = round(100 * sum(refused) / len(refused), 1)
        out.append(point)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("locomo", type=Path)
    parser.add_argument("--dump", type=Path, required=True, help="the recalls' captures (made when missing)")
    parser.add_argument("--per", type=int, default=20, help="questions per conversation")
    parser.add_argument("--conversations", type=int)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if not args.dump.exists():
        args.dump.write_bytes(pickle.dumps(asyncio.run(dump(args.locomo, args.per, args.conversations))))
    rows = pickle.loads(args.dump.read_bytes())  # the file this script wrote
    base = {side: round(100 * sum(r[side]["refused"] for r in rows) / len(rows), 1) for side in ("kept", "removed")}
    report = {"questions": len(rows), "refused by the other rules %": base}
    for rarity in (0, 1, 2, 5, 10, 1000):
        report[f"rarity {rarity}"] = curve(rows, rarity)
    text = json.dumps(report, indent=1)
    if args.json:
        args.json.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
