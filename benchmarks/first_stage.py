"""First-stage scorers over a whole conversation (issue 14 items 1, 3, 4): which way of scoring every
turn finds the evidence, before fusion, smoothing or the blend.

    .venv/bin/python benchmarks/first_stage.py path/to/locomo.json [--json out.json]

Every turn of a conversation is scored against each question by:

- ``dense``: the bundled MiniLM's single vector (cosine), turns read as ``"Speaker: text"``;
- ``late``: MaxSim over the same model's token embeddings, IDF over the conversation's turns (what
  ``late_retrieval`` scans);
- ``dense, when`` / ``late, when``: the same with a contextual key, ``"Speaker (8 May 2023): text"``
  (item 3's preamble: who and when);
- ``late + rocchio``: a second round (item 4) whose query vector is the question's plus the mean of
  the first round's best 3 turns' vectors, its cosine z-scored and added to the late scores;
- ``late + late feedback``: a second late round whose query tokens are the question's plus the
  best 3 turns' tokens (entity and key-phrase hop in token space), z-scored and added.

Reports R@10 / R@50 per category (fractional evidence recall, as ``mnemo bench locomo``). The 3
feedback turns are the common pseudo-relevance-feedback depth, not tuned here. Deterministic.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections import defaultdict
from pathlib import Path

import numpy as np

from mnemo.bench.locomo import CATEGORIES, Conversation, load_locomo
from mnemo.bench.metrics import mean, recall_at_k
from mnemo.cognition.scoring.late import TokenVectors, combine, late_scores, quantize
from mnemo.embed import Embeddings, load_embedder

FEEDBACK = 3


def _keys(conv: Conversation, when: bool) -> list[str]:
    return [
        f"{t.speaker} ({t.created_at:%d %B %Y}): {t.content}" if when and t.created_at else f"{t.speaker}: {t.content}"
        for t in conv.turns
    ]


def _feedback_tokens(query: TokenVectors, turns: list[TokenVectors], best: np.ndarray) -> TokenVectors:
    parts = [query, *(turns[int(i)] for i in best)]
    rows = [np.asarray(p.vectors, dtype=np.float32) * np.float32(p.scale) for p in parts]
    return TokenVectors(np.concatenate([p.ids for p in parts]), np.concatenate(rows), 1.0)


async def _scores(conv: Conversation, embeddings: Embeddings) -> dict[str, list[np.ndarray]]:
    """Per scorer, one array of turn scores per question."""
    out: dict[str, list[np.ndarray]] = defaultdict(list)
    keyed = {}
    for when in (False, True):
        vectors, tokens = await embeddings.embed_documents_with_tokens(_keys(conv, when))
        keyed[when] = (np.asarray(vectors), [quantize(t) for t in tokens])
    for q in conv.questions:
        vector, query_tokens = await embeddings.embed_query_with_tokens(q.text)
        for when, suffix in ((False, ""), (True, ", when")):
            vectors, tokens = keyed[when]
            out["dense" + suffix].append(vectors @ np.asarray(vector))
            out["late" + suffix].append(late_scores(query_tokens, tokens))
        vectors, tokens = keyed[False]
        late = out["late"][-1]
        best = np.argsort(-late)[:FEEDBACK]
        moved = np.asarray(vector) + vectors[best].mean(axis=0)
        out["late + rocchio"].append(combine(late, vectors @ (moved / np.linalg.norm(moved))))
        again = late_scores(_feedback_tokens(query_tokens, tokens, best), tokens)
        out["late + late feedback"].append(combine(late, again))
    return out


async def run(path: Path) -> dict[str, dict[str, float]]:
    embeddings = load_embedder()
    found: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for conv in load_locomo(path):
        ids = [str(t.metadata["dia_id"]) for t in conv.turns]
        for name, per_question in (await _scores(conv, embeddings)).items():
            for q, scores in zip(conv.questions, per_question, strict=True):
                ranking = [ids[i] for i in np.argsort(-scores, kind="stable")[:50]]
                for k in (10, 50):
                    value = recall_at_k(ranking, q.evidence, k)
                    found[name][f"{CATEGORIES.get(q.category, q.category)} R@{k}"].append(value)
                    found[name][f"overall R@{k}"].append(value)
    return {name: {key: round(100 * mean(v), 1) for key, v in rows.items()} for name, rows in found.items()}


def _cell(row: dict[str, float], column: str) -> str:
    return f"{row.get(column + ' R@10', 0.0):.1f} / {row.get(column + ' R@50', 0.0):.1f}"


def _table(results: dict[str, dict[str, float]]) -> str:
    columns = ["overall", *CATEGORIES.values()]
    lines = ["| scorer | " + " | ".join(columns) + " |", "|---" * (len(columns) + 1) + "|"]
    lines += [f"| {name} | " + " | ".join(_cell(row, c) for c in columns) + " |" for name, row in results.items()]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    results = asyncio.run(run(args.path))
    print("R@10 / R@50 per category, every turn of each conversation scored")
    print(_table(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
