"""``mnemo bench locomo``: retrieval quality on a LoCoMo-format file, with baselines.

Protocol (LoCoMo paper, Table 3, "dialog" unit):
every conversation goes into a fresh scope through the real write path; every
question runs the real recall path read-only and ranks that conversation's
turns; recall@k is the share of the question's evidence dia_ids in the top k
(a question without evidence scores 1); recall_any@k (``A@k``) is 1 when any
of them is, recall_all@k (``RA@k``, issue 43) when all of them are. "overall 1-4" and
"overall 1-5" are means over the questions of those categories; "evidence in 2+ sessions" over
the questions of categories 1-4 whose evidence sits in two sessions or more.

Baselines in the same run, over the same turns and questions: BM25 (``bm25s``)
over the turn texts, dense cosine with the same embedder over the turn texts,
and their plain reciprocal-rank fusion.

With ``night=True`` (``--night``) every conversation goes through the night
cycle (issue 5) before its questions, and recall searches turns and memories
(blocks, facts, insights). A memory hit stands for the dia_ids of the turns it
was made from (its provenance, followed through insights) and costs its own
tokens; a block or line hit's excerpt stands for the turns it quotes and costs
what they cost as turn hits, so the evidence-in-budget figures compare like
with like; recall@k is
not comparable with the turn-only mode (one block covers several turns).
By default the night cycle's retention removes the raw turns the blocks
cover; ``--set retention=false`` keeps them.

Refusal: every question is asked with the configured refusal threshold (a
refused question is still ranked, by its rejected candidates), and every
conversation is also asked as many *foreign* questions, drawn (seeded) from the
other conversations: questions about people and events it never heard of. The
``refusal`` figures are the share of own and of foreign questions refused.

Lived (``live=True``, ``--live``): the read-only deterministic pass above is the *lab*
figure. After it, on the same scopes (so over the same turns and the same nights), the same
questions are asked as a user lives them: by the scope's owner, mutating (reinforcement,
access history, co-access links, suppression of near misses), with the archive's default
scoring (stochastic), each recall's draws seeded from ``seed``, round and question, each
conversation's questions in their order, then its foreign ones. ``rounds`` asks the whole set
again on the store the earlier rounds left, each round scored on its own. The lab pass ends
before the first lived recall, so no use reaches it; with ``night`` the nights run once, before
both (the lived rounds find what the lab pass found). Only memory hits are reinforced and
linked: turns and a block's lines carry no weights, so over turns alone a lived round differs
from the lab by its scoring only. Ablations (``--ablate``) stay lab-only.

Questions are asked now, or with ``ask_at="end"`` (``--ask-at end``) a day after
each conversation's last turn (recall's ``as_of``): "last week" is then the
conversation's last week, and recency is measured from its end.
"""

from __future__ import annotations

import functools
import json
import random
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from mnemo.archive import AsyncArchive
from mnemo.bench.metrics import (
    budget_recall,
    evidence_sessions,
    mean,
    parse_evidence,
    percentile,
    recall_all_at_k,
    recall_any_at_k,
    recall_at_k,
)
from mnemo.cognition.scoring.fusion import rrf
from mnemo.config import Settings
from mnemo.embed import Embeddings
from mnemo.errors import MalformedImportError
from mnemo.models import Refusal, Scope, TurnInput

__all__ = [
    "ALL_KS",
    "BUDGETS",
    "CATEGORIES",
    "KS",
    "SPREAD",
    "Conversation",
    "bench_settings",
    "load_locomo",
    "run_locomo",
]

KS = (1, 5, 10, 25, 50)
ANY_KS = (5, 10)
ALL_KS = (5, 10)
SPREAD = "evidence in 2+ sessions"
BUDGETS = (500, 1000, 2000)
# --live: the seed of the lived rounds' stochastic scoring (``--seed``)
LIVE_SEED = 20260302
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
Progress = Callable[[str, int, int], None]

# Each recall piece, switched off: name -> setting overrides (used by `mnemo bench locomo --ablate`).
ABLATIONS: dict[str, dict[str, Any]] = {
    "BM25 (ts_rank_cd instead)": {"lexical": "tsrank"},
    "z-score fusion (RRF instead)": {"fusion": "rrf"},
    "neighbour smoothing": {"neighbour_weights": ()},
    "speaker in turn embeddings": {"turn_context": False},
    "late interaction (MaxSim re-rank and scan)": {"late_interaction": False},
    "late retrieval (MaxSim scan of the scope)": {"late_retrieval": False},
    "refusal of unknown names": {"refuse_unknown_names": False},
    "time-aware queries": {"time_aware": False},
    "passages of long items": {"passages": False},
    "learned fusion (the hand-set head instead)": {"ranker": "hand"},
    "session spreading": {"spread_sessions": False},
    "session representation": {"represent_sessions": False},
    "preferences for a request for advice": {"advice_preferences": False},
    "refusal of what was never said": {"refuse_unsupported": False},
}


@dataclass(frozen=True)
class Question:
    text: str
    category: int
    evidence: tuple[str, ...]


@dataclass(frozen=True)
class Conversation:
    sample_id: str
    turns: tuple[TurnInput, ...]
    questions: tuple[Question, ...]


@dataclass
class SystemRun:
    """One system's rankings: per question (category, ranking of dia_ids), plus latencies."""

    name: str
    rows: list[tuple[int, tuple[str, ...], list[str]]] = field(default_factory=list)
    latencies_ms: list[float] = field(default_factory=list)
    cover: dict[str, tuple[str, ...]] = field(default_factory=dict)  # memory hit -> the dia_ids it stands for
    item_tokens: dict[str, int] = field(default_factory=dict)  # memory hit -> its own token count
    quoted: set[str] = field(default_factory=set)  # excerpt hits: they cost the turns they quote
    night: dict[str, Any] = field(default_factory=dict)
    refused_own: list[bool] = field(default_factory=list)  # per own question, in row order
    refused_foreign: list[bool] = field(default_factory=list)  # per foreign question
    # per own / foreign question: (refused for unknown names, best similarity): the threshold curve
    evidence_own: list[tuple[bool, float | None]] = field(default_factory=list)
    evidence_foreign: list[tuple[bool, float | None]] = field(default_factory=list)


def load_locomo(path: Path, *, max_chars: int = 32_000) -> list[Conversation]:
    text = path.read_text(encoding="utf-8")
    data = json.loads(text)
    if not isinstance(data, list):
        data = [data]
    conversations: list[Conversation] = []
    for sample in data:
        sample_id = str(sample.get("sample_id", f"sample-{len(conversations)}"))
        turns = AsyncArchive.parse_turns(json.dumps(sample), fmt="locomo", max_chars=max_chars, path=str(path))
        questions = []
        for qa in sample.get("qa", []):
            if "question" not in qa or "category" not in qa:
                raise MalformedImportError(f"{sample_id}: a QA item lacks 'question' or 'category'", path=str(path))
            questions.append(
                Question(str(qa["question"]), int(qa["category"]), tuple(parse_evidence(qa.get("evidence", []))))
            )
        conversations.append(Conversation(sample_id, tuple(turns), tuple(questions)))
    return conversations


def score(run: SystemRun, tokens: Mapping[str, Mapping[str, int]], sample_of: Sequence[str]) -> dict[str, Any]:
    """Recall@k and budget recall per category and overall."""
    per_question = []
    cover = run.cover or None
    for (category, evidence, ranking), sample in zip(run.rows, sample_of, strict=True):
        # a memory costs its own tokens; an excerpt what the turns it quotes cost as turn hits
        quoted = {key: sum(tokens[sample][d] for d in run.cover[key]) for key in ranking if key in run.quoted}
        costs = {**tokens[sample], **run.item_tokens, **quoted}
        rec = {f"R@{k}": recall_at_k(ranking, evidence, k, cover) for k in KS}
        rec |= {f"A@{k}": recall_any_at_k(ranking, evidence, k, cover) for k in ANY_KS}
        rec |= {f"RA@{k}": recall_all_at_k(ranking, evidence, k, cover) for k in ALL_KS}
        rec |= {f"B@{b}": budget_recall(ranking, costs, evidence, b, cover) for b in BUDGETS}
        per_question.append((category, evidence_sessions(evidence), rec))
    groups: dict[str, list[dict[str, float]]] = {name: [] for name in CATEGORIES.values()}
    groups["overall 1-4"] = []
    groups["overall 1-5"] = []
    groups[SPREAD] = []
    for category, sessions, rec in per_question:
        groups[CATEGORIES.get(category, str(category))].append(rec)
        groups["overall 1-5"].append(rec)
        if category in (1, 2, 3, 4):
            groups["overall 1-4"].append(rec)
            if sessions >= 2:
                groups[SPREAD].append(rec)
    metrics = [f"R@{k}" for k in KS] + [f"A@{k}" for k in ANY_KS] + [f"RA@{k}" for k in ALL_KS]
    metrics += [f"B@{b}" for b in BUDGETS]
    out: dict[str, Any] = {
        group: {"n": len(recs), **{m: round(100 * mean([r[m] for r in recs]), 2) for m in metrics}}
        for group, recs in groups.items()
    }
    if run.refused_own or run.refused_foreign:
        out["refusal"] = refusal_rates(run)
    if run.latencies_ms:
        out["latency_ms"] = {
            "p50": round(percentile(run.latencies_ms, 50), 2),
            "p95": round(percentile(run.latencies_ms, 95), 2),
        }
    return out


def refusal_rates(run: SystemRun) -> dict[str, Any]:
    """The share (%) of own and of foreign questions refused, own also per category."""
    rates: dict[str, Any] = {
        "own": round(100 * mean([float(r) for r in run.refused_own]), 2),
        "foreign": round(100 * mean([float(r) for r in run.refused_foreign]), 2),
        "n_own": len(run.refused_own),
        "n_foreign": len(run.refused_foreign),
    }
    for category, name in CATEGORIES.items():
        own = [float(r) for (c, _, _), r in zip(run.rows, run.refused_own, strict=True) if c == category]
        rates[f"own {name}"] = round(100 * mean(own), 2) if own else None
    rates["unknown names: foreign"] = round(100 * mean([float(n) for n, _ in run.evidence_foreign]), 2)
    rates["unknown names: own"] = round(100 * mean([float(n) for n, _ in run.evidence_own]), 2)
    rates["by threshold"] = {
        f"{t:.2f}": {"own": _refused_at(run.evidence_own, t), "foreign": _refused_at(run.evidence_foreign, t)}
        for t in THRESHOLDS
    }
    return rates


THRESHOLDS = (0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5)


def _refused_at(evidence: Sequence[tuple[bool, float | None]], threshold: float) -> float:
    """The share (%) refused had the similarity threshold been ``threshold`` (names rule as run)."""
    return round(100 * mean([float(names or best is None or best < threshold) for names, best in evidence]), 2)


def _evidence(result: Any) -> tuple[bool, float | None]:
    return bool(getattr(result, "unknown", ())), result.best_similarity


def foreign_questions(conversations: Sequence[Conversation], seed: int = 0) -> dict[str, list[Question]]:
    """Per conversation, as many questions as it has, drawn (seeded) from the other conversations'."""
    out: dict[str, list[Question]] = {}
    for conv in conversations:
        pool = [q for other in conversations if other.sample_id != conv.sample_id for q in other.questions]
        rng = random.Random(f"{seed}:{conv.sample_id}")
        out[conv.sample_id] = rng.sample(pool, min(len(conv.questions), len(pool)))
    return out


@dataclass(frozen=True)
class Asked:
    """A conversation ready for questions: its scope, its turns' ids -> dia_ids, when it is asked."""

    conv: Conversation
    scope: Scope
    dia: Mapping[str, str]
    as_of: datetime | None


async def run_mnemo(
    conversations: Sequence[Conversation],
    settings: Settings,
    embeddings: Embeddings,
    progress: Progress | None = None,
    *,
    night: bool = False,
    name: str = "mnemo",
    ask_at: str = "now",
    lived: Settings | None = None,
    rounds: int = 1,
    seed: int = 0,
) -> tuple[SystemRun, list[SystemRun]]:
    """The lab pass (read-only, ``settings``), and with ``lived`` settings the lived rounds after it.

    Every conversation is imported (and with ``night`` consolidated) once; the lab pass asks all its
    questions read-only first, so nothing the lived rounds change reaches it. The lived rounds then
    ask the same questions, in the conversation's order, on the same scopes through an archive
    opened with ``lived`` (the archive's default, stochastic scoring, seeded): mutating recall by the
    scope's owner, so each round finds the store as the rounds before it left it."""
    run = SystemRun(name)
    kinds = ("turn", "memory") if night else ("turn",)
    foreign = foreign_questions(conversations)
    per_pass = sum(len(c.questions) + len(foreign[c.sample_id]) for c in conversations)
    total = per_pass * (1 + (rounds if lived is not None else 0))
    done = 0

    def step() -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(name, done, total)

    asked: list[Asked] = []
    archive = await AsyncArchive.open(settings, embeddings=embeddings)
    try:
        for conv in conversations:
            scope = Scope("locomo-night" if night else "locomo", conv.sample_id)
            turns = await archive.import_turns(scope, conv.turns)
            dia = {str(t.id): str(t.metadata.get("dia_id")) for t in turns}
            if night:
                await _nights(archive, scope, run)
                provenance = await archive.inspect.probes().provenance(scope)
                for memory_id, (sources, count) in provenance.items():
                    run.cover[str(memory_id)] = _dia_ids(sources, provenance, dia)
                    run.item_tokens[str(memory_id)] = count
                run.night["memory_tokens"] = run.night.get("memory_tokens", 0) + sum(c for _, c in provenance.values())
            asked.append(Asked(conv, scope, dia, _asked_at(conv, ask_at)))
        provenance_cover = dict(run.cover)
        for a in asked:
            await _ask(archive, a, foreign[a.conv.sample_id], run, kinds, step)
    finally:
        await archive.close()
    if lived is None:
        return run, []
    lived_runs: list[SystemRun] = []
    archive = await AsyncArchive.open(lived, embeddings=embeddings)
    try:
        for r in range(1, rounds + 1):
            lived_run = SystemRun(f"{name}, lived round {r}", cover=dict(provenance_cover))
            lived_run.item_tokens = run.item_tokens
            for i, a in enumerate(asked):
                lived_seed = (seed, r, i)
                await _ask(archive, a, foreign[a.conv.sample_id], lived_run, kinds, step, seed=lived_seed)
            lived_run.night = await _use(archive, asked)
            lived_runs.append(lived_run)
    finally:
        await archive.close()
    return run, lived_runs


async def _ask(
    archive: AsyncArchive,
    a: Asked,
    foreign: Sequence[Question],
    run: SystemRun,
    kinds: tuple[str, ...],
    step: Callable[[], None],
    *,
    seed: tuple[int, int, int] | None = None,
) -> None:
    """Ask ``a``'s questions in order, then its foreign ones: read-only, or (``seed`` given) mutating,
    each recall's stochastic draws seeded from (seed, round, conversation, question)."""
    read_only = seed is None
    for j, q in enumerate((*a.conv.questions, *foreign)):
        own = j < len(a.conv.questions)
        draw = None if seed is None else random.Random(f"{seed[0]}:{seed[1]}:{seed[2]}:{j}").getrandbits(62)
        started = time.perf_counter()
        result = await archive.recall(
            a.scope, q.text, max(KS), read_only=read_only, kinds=kinds, as_of=a.as_of, seed=draw
        )
        if own:
            run.latencies_ms.append((time.perf_counter() - started) * 1000)
            hits = result.candidates if isinstance(result, Refusal) else result.hits
            ranking = [_ranked(run, h, rank, a.dia) for rank, h in enumerate(hits)]
            run.rows.append((q.category, q.evidence, ranking))
            run.refused_own.append(isinstance(result, Refusal))
            run.evidence_own.append(_evidence(result))
        else:
            run.refused_foreign.append(isinstance(result, Refusal))
            run.evidence_foreign.append(_evidence(result))
        step()


async def _use(archive: AsyncArchive, asked: Sequence[Asked]) -> dict[str, Any]:
    """What use has left in the lived scopes so far: reinforcements by recall, accesses, co-access links."""
    entity, namespaces = asked[0].scope.entity_id, [a.scope.namespace for a in asked]
    return dict(await archive.inspect.probes().use(entity, namespaces))


def _lived_round(run: SystemRun, tokens: Mapping[str, Mapping[str, int]], sample_of: Sequence[str]) -> dict[str, Any]:
    """One lived round's scores, and what use has left in the store by its end."""
    return {"scores": score(run, tokens, sample_of), "use": run.night}


def _asked_at(conv: Conversation, ask_at: str) -> datetime | None:
    """``as_of`` for the conversation's questions: None (now), or a day after its last turn."""
    if ask_at == "now":
        return None
    times = [t.created_at for t in conv.turns if t.created_at is not None]
    return max(times) + timedelta(days=1) if times else None


# The second night of a --night run: a week and a day later, when the first night's raw turns have
# expired (retention) and its blocks are old enough to migrate to the cortex (memory-architecture §5.3).
LATER = timedelta(days=8)
# A night may be dated no further ahead of the clock than a write: the bench's archive allows the
# simulated week (and a day) of skew, so its second night can run.
_SIMULATED_SKEW_HOURS = (LATER + timedelta(days=1)) / timedelta(hours=1)


async def _nights(archive: AsyncArchive, scope: Scope, run: SystemRun) -> None:
    """The night cycle as a user lives it: tonight, then again a week later (retention, migration)."""
    first = await archive.night_cycle(scope)
    later = await archive.night_cycle(scope, as_of=first.as_of + LATER)
    for report in (first, later):
        for key in ("blocks", "arcs", "facts_new", "insights", "turns_removed", "blocks_migrated", "tree_nodes"):
            run.night[key] = run.night.get(key, 0) + getattr(report, key)
        run.night["seconds"] = run.night.get("seconds", 0.0) + report.seconds
    for stage, seconds in first.stage_seconds.items():
        spent = run.night.setdefault("first_night_stage_seconds", {})
        spent[stage] = round(spent.get(stage, 0.0) + seconds, 2)
    run.night["turns"] = run.night.get("turns", 0) + first.turns
    run.night["first_night_seconds"] = run.night.get("first_night_seconds", 0.0) + first.seconds
    run.night["turns_per_second"] = round(run.night["turns"] / max(run.night["first_night_seconds"], 1e-9), 1)


def _ranked(run: SystemRun, hit: Any, rank: int, dia: Mapping[str, str]) -> str:
    """A hit's key in the ranking: a turn's dia_id; a line or block hit's excerpt, which stands for
    the turns it quotes and costs what they cost as turn hits (their text; a context gives every
    hit, turn or excerpt line, its time and speaker alike); any other memory, its id (covered by its provenance)."""
    if hit.item_kind == "turn":
        return str(hit.metadata.get("dia_id"))
    if hit.excerpt:
        # the excerpt depends on the question: one key per question and rank
        key = f"{hit.id}#{len(run.rows)}:{rank}"
        run.cover[key] = tuple(dia[str(line.turn_id)] for line in hit.excerpt if str(line.turn_id) in dia)
        run.quoted.add(key)
        return key
    return str(hit.id)


def _dia_ids(
    sources: Sequence[str], provenance: Mapping[Any, tuple[list[str], int]], dia: Mapping[str, str], depth: int = 0
) -> tuple[str, ...]:
    """The dia_ids a memory stands for: its source turns, or (insights, narratives) its source memories'."""
    found: list[str] = []
    for source in sources:
        if source in dia:
            found.append(dia[source])
        elif depth < 3:
            for key, (inner, _) in provenance.items():
                if str(key) == source:
                    found.extend(_dia_ids(inner, provenance, dia, depth + 1))
    return tuple(dict.fromkeys(found))


def run_bm25(conversations: Sequence[Conversation]) -> SystemRun:
    try:
        import bm25s
    except ImportError as exc:  # a dev dependency: the benchmark baseline only
        raise RuntimeError("the BM25 baseline needs bm25s: pip install 'mnemo[dev]'") from exc
    run = SystemRun("bm25s")
    for conv in conversations:
        ids = [str(t.metadata["dia_id"]) for t in conv.turns]
        retriever = bm25s.BM25()
        retriever.index(
            bm25s.tokenize([t.content for t in conv.turns], stopwords="en", show_progress=False), show_progress=False
        )
        k = min(max(KS), len(ids))
        for q in conv.questions:
            started = time.perf_counter()
            tokens = bm25s.tokenize([q.text], stopwords="en", show_progress=False)
            if len(tokens.vocab) == 0:
                ranking: list[str] = []
            else:
                docs, _ = retriever.retrieve(tokens, k=k, show_progress=False)
                ranking = [ids[i] for i in docs[0]]
            run.latencies_ms.append((time.perf_counter() - started) * 1000)
            run.rows.append((q.category, q.evidence, ranking))
    return run


async def run_dense(conversations: Sequence[Conversation], embeddings: Embeddings) -> SystemRun:
    run = SystemRun("dense")
    for conv in conversations:
        ids = [str(t.metadata["dia_id"]) for t in conv.turns]
        matrix = await embeddings.embed_documents([t.content for t in conv.turns])
        for q in conv.questions:
            started = time.perf_counter()
            query = await embeddings.embed_query(q.text)
            order = np.argsort(-(matrix @ query), kind="stable")[: max(KS)]
            run.latencies_ms.append((time.perf_counter() - started) * 1000)
            run.rows.append((q.category, q.evidence, [ids[i] for i in order]))
    return run


def run_fusion(a: SystemRun, b: SystemRun) -> SystemRun:
    run = SystemRun(f"{a.name}+{b.name} rrf")
    for (category, evidence, ra), (_, _, rb) in zip(a.rows, b.rows, strict=True):
        run.rows.append((category, evidence, [str(i.key) for i in rrf({"a": ra, "b": rb})][: max(KS)]))
    return run


async def run_locomo(
    path: Path,
    *,
    embeddings: Embeddings,
    overrides: Mapping[str, Any] | None = None,
    database_url: str | None = None,
    baselines: bool = True,
    progress: Progress | None = None,
    night: bool = False,
    ask_at: str = "now",
    live: bool = False,
    rounds: int = 1,
    seed: int = LIVE_SEED,
    conversations_limit: int | None = None,
) -> dict[str, Any]:
    """Run the benchmark; returns every figure (what ``--json`` writes).

    ``live``: after the lab pass, ``rounds`` lived rounds on the same scopes (see :func:`run_mnemo`),
    scored alike under ``result["lived"]``. ``conversations_limit``: only the first that many
    conversations (foreign questions are drawn from them alone)."""
    if rounds < 1:
        raise ValueError("rounds must be >= 1")
    if conversations_limit is not None and conversations_limit < 1:
        raise ValueError("conversations_limit must be >= 1")
    conversations = load_locomo(path)[:conversations_limit]
    tokens = _turn_tokens(conversations, embeddings)
    sample_of = [c.sample_id for c in conversations for _ in c.questions]
    with tempfile.TemporaryDirectory(prefix="mnemo-locomo-") as home:
        settings, lived = bench_settings(Path(home), database_url, overrides, live=live, seed=seed)
        passes = functools.partial(
            run_mnemo, conversations, settings, embeddings, progress, lived=lived, rounds=rounds, seed=seed,
            ask_at=ask_at,
        )  # fmt: skip
        started = time.perf_counter()
        mnemo_run, mnemo_lived = await passes(night=night)
        seconds = time.perf_counter() - started
        # --night: the turn-only run beside it, in the same invocation (another entity, same database)
        turn_run, turn_lived = await passes(name="mnemo turns") if night else (None, [])
    runs = {"mnemo": (mnemo_run, mnemo_lived)} | ({"mnemo turns only": (turn_run, turn_lived)} if turn_run else {})
    systems = {name: score(run, tokens, sample_of) for name, (run, _) in runs.items()}
    lived_systems = {name: [_lived_round(r, tokens, sample_of) for r in rs] for name, (_, rs) in runs.items()}
    if baselines:
        systems |= await _baselines(conversations, embeddings, tokens, sample_of)
    return {
        "dataset": str(path),
        "conversations": len(conversations),
        "turns": sum(len(c.turns) for c in conversations),
        "questions": len(sample_of),
        "embedder": str(embeddings.slug),
        "settings": {k: v for k, v in settings.model_dump(mode="json").items() if k not in {"home", "database_url"}},
        "mnemo_seconds": round(seconds, 1),
        "asked_at": ask_at,
        "night": (mnemo_run.night | {"turn_tokens": sum(sum(t.values()) for t in tokens.values())})
        if mnemo_run.night
        else None,
        "systems": systems,
        "lived": _lived_report(lived, rounds, seed, lived_systems),
        "anchor": ANCHOR,
    }


ANCHOR = {
    "name": "LoCoMo paper, DRAGON, dialog, all 10 conversations, all categories",
    "R@5": 56.7,
    "R@10": 66.2,
    "R@25": 76.7,
    "R@50": 82.7,
}


def _turn_tokens(conversations: Sequence[Conversation], embeddings: Embeddings) -> dict[str, dict[str, int]]:
    """Per conversation, each turn's token count by its dialogue id."""
    return {
        c.sample_id: dict(
            zip(
                (str(t.metadata["dia_id"]) for t in c.turns),
                embeddings.count_tokens([t.content for t in c.turns]),
                strict=True,
            )
        )
        for c in conversations
    }


def bench_settings(
    home: Path, database_url: str | None, overrides: Mapping[str, Any] | None, *, live: bool, seed: int
) -> tuple[Settings, Settings | None]:
    """The lab's settings (deterministic unless told otherwise) and, with ``live``, the lived rounds'
    (the archive's default scoring, stochastic, seeded; every other setting as the lab's)."""
    ahead = {"clock_skew_hours": _SIMULATED_SKEW_HOURS}  # the second night is a simulated week ahead
    lab = Settings(
        home=home, database_url=database_url, **(ahead | {"scoring": "deterministic"} | dict(overrides or {}))
    )
    if not live:
        return lab, None
    default = Settings.model_fields["scoring"].default
    return lab, Settings(
        home=home, database_url=database_url, **(ahead | {"scoring": default, "seed": seed} | dict(overrides or {}))
    )


async def _baselines(
    conversations: Sequence[Conversation],
    embeddings: Embeddings,
    tokens: Mapping[str, Mapping[str, int]],
    sample_of: Sequence[str],
) -> dict[str, Any]:
    """BM25, dense cosine and their reciprocal-rank fusion, scored alike."""
    bm25_run = run_bm25(conversations)
    dense_run = await run_dense(conversations, embeddings)
    return {
        "bm25s": score(bm25_run, tokens, sample_of),
        "dense": score(dense_run, tokens, sample_of),
        "bm25s+dense rrf": score(run_fusion(bm25_run, dense_run), tokens, sample_of),
    }


def _lived_report(lived: Settings | None, rounds: int, seed: int, systems: Mapping[str, Any]) -> dict[str, Any] | None:
    if lived is None:
        return None
    return {
        "rounds": rounds,
        "seed": seed,
        "scoring": lived.scoring,
        "order": "import (and --night's nights) once; the lab pass read-only; then each round asks every "
        "conversation's questions in order, then its foreign ones, by the owner, mutating, on the same scopes",
        "systems": dict(systems),
    }
