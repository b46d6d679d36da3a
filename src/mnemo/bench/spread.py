"""``mnemo bench spread``: questions whose evidence is spread over several sessions (issue 43).

Seeds: cognitive-plan §4.6 (contextual retrieval: a question's evidence can sit in several
sessions). The set is ours (``tests/data/spread``, written by hand): questions over the LoCoMo dev
conversations (turns named by dia_id; the conversations are read from the file given, never
copied) and over the lives (``tests/data/lives``, turns named ``<session>:<n>``), each labelled with
every evidence turn, of a kind: count, list, comparison, every-time, change, both, preference.

Each conversation and life goes into a fresh scope through the real write path and its questions
are recalled over its turns exactly as ``mnemo bench locomo`` asks (:func:`mnemo.bench.locomo.run_mnemo`:
the lab pass read-only and deterministic, with ``live`` a lived round after it, mutating and
stochastic, seeded; with ``night`` after the night cycle, memory hits standing for the turns they were
made from), beside BM25, dense and their plain reciprocal-rank fusion over the same turns.
Figures per kind, per source and overall: R@5 / R@10 (the share of the evidence in the top k) and
recall_all@5 / @10 (all of it).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from mnemo.bench.locomo import (
    Conversation,
    Question,
    SystemRun,
    bench_settings,
    load_locomo,
    run_bm25,
    run_dense,
    run_fusion,
    run_mnemo,
)
from mnemo.bench.metrics import mean, recall_all_at_k, recall_at_k
from mnemo.bench.updates import load_lives
from mnemo.embed import Embeddings
from mnemo.errors import MalformedImportError

__all__ = ["KINDS", "load_spread", "run_spread"]

KINDS = ("count", "list", "comparison", "every-time", "change", "both", "preference")
KS = (5, 10)
Progress = Callable[[str, int, int], None]


def _questions(path: Path, key: str) -> dict[str, list[Question]]:
    """The questions of one set file, by the conversation or life (``key``) they are about; a kind is
    kept as its place in :data:`KINDS` (the harness's category)."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))["questions"]
        by: dict[str, list[Question]] = {}
        for q in raw:
            if q["kind"] not in KINDS or not q["evidence"]:
                raise ValueError(f"question {q.get('id')!r}: kind {q['kind']!r} or no evidence")
            by.setdefault(str(q[key]), []).append(
                Question(str(q["question"]), KINDS.index(q["kind"]), tuple(q["evidence"]))
            )
    except (OSError, KeyError, TypeError, ValueError) as exc:
        raise MalformedImportError(f"{path.name}: not a spread question set ({exc})", path=str(path)) from exc
    return by


def _checked(conv: Conversation, where: str) -> Conversation:
    turns = {str(t.metadata.get("dia_id")) for t in conv.turns}
    missing = sorted({e for q in conv.questions for e in q.evidence} - turns)
    if missing:
        raise MalformedImportError(f"{where}: {conv.sample_id} has no turns {missing}", path=where)
    return conv


def load_spread(
    directory: Path, locomo: Path | None = None, lives: Path | None = None
) -> list[tuple[str, Conversation]]:
    """The set's conversations, each with its spread questions only, as ``(source, conversation)``:
    the LoCoMo dev conversations (from ``locomo``, when given) and the lives (from ``lives``)."""
    out: list[tuple[str, Conversation]] = []
    if locomo is not None:
        asked = _questions(directory / "locomo-dev.json", "sample_id")
        for conv in load_locomo(locomo):
            if conv.sample_id in asked:
                out.append(("locomo", _checked(replace(conv, questions=tuple(asked[conv.sample_id])), str(locomo))))
    if lives is not None:
        asked = _questions(directory / "lives.json", "life")
        for life in load_lives(lives):
            if life.entity in asked:
                turns = tuple(replace(t, metadata={**t.metadata, "dia_id": t.metadata["ref"]}) for t in life.turns)
                out.append(("lives", _checked(Conversation(life.entity, turns, tuple(asked[life.entity])), str(lives))))
    if not out:
        raise MalformedImportError(f"no questions of {directory} match the conversations given", path=str(directory))
    return out


def score(run: SystemRun, sources: Sequence[str]) -> dict[str, Any]:
    """R@k and recall_all@k per kind, per source and overall (``sources``: each question's, in row order)."""
    groups: dict[str, list[dict[str, float]]] = {"overall": []}
    cover = run.cover or None  # after a night, a memory hit stands for the turns it was made from
    for (kind, evidence, ranking), source in zip(run.rows, sources, strict=True):
        rec = {f"R@{k}": recall_at_k(ranking, evidence, k, cover) for k in KS}
        rec |= {f"RA@{k}": recall_all_at_k(ranking, evidence, k, cover) for k in KS}
        for group in ("overall", source, KINDS[kind]):
            groups.setdefault(group, []).append(rec)
    return {
        group: {"n": len(recs), **{m: round(100 * mean([r[m] for r in recs]), 1) for m in recs[0]}}
        for group, recs in groups.items()
    }


async def run_spread(
    directory: Path,
    *,
    embeddings: Embeddings,
    locomo: Path | None = None,
    lives: Path | None = None,
    overrides: Mapping[str, Any] | None = None,
    database_url: str | None = None,
    live: bool = False,
    night: bool = False,
    seed: int = 0,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Run the set; returns every figure (what ``--json`` writes). ``night``: every conversation goes
    through the night cycle first and recall searches turns and memories (a memory hit stands for the
    turns it was made from, as in ``mnemo bench locomo --night``)."""
    loaded = load_spread(directory, locomo, lives)
    conversations = [c for _, c in loaded]
    sources = [source for source, c in loaded for _ in c.questions]
    with tempfile.TemporaryDirectory(prefix="mnemo-spread-") as home:
        settings, lived = bench_settings(Path(home), database_url, overrides, live=live, seed=seed)
        lab, rounds = await run_mnemo(
            conversations, settings, embeddings, progress, lived=lived, seed=seed, night=night
        )
    bm25 = run_bm25(conversations)
    dense = await run_dense(conversations, embeddings)
    systems = {"mnemo": score(lab, sources)}
    if rounds:
        systems["mnemo, lived"] = score(rounds[0], sources)
    systems |= {
        "bm25s": score(bm25, sources),
        "dense": score(dense, sources),
        "bm25s+dense rrf": score(run_fusion(bm25, dense), sources),
    }
    return {
        "set": str(directory),
        "conversations": len(conversations),
        "questions": len(sources),
        "embedder": str(embeddings.slug),
        "live": {"seed": seed, "scoring": lived.scoring} if lived is not None else None,
        "night": lab.night or None,
        "systems": systems,
    }
