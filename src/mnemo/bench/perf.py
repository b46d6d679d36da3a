"""``mnemo bench perf``: ingest throughput, recall latency and ANN quality.

Data are real sentences: the LoCoMo dev turns, expanded to the needed size by
re-attributing them to other speakers on other dates (each copy is a distinct
"Speaker: text" document, so no two vectors are the same unless the text is).
Vectors are real embeddings, cached on disk by text so a second run is quick;
with ``real`` (``--real``, for the 1,000,000-item run of issue 42) only the first
``real`` turns are embedded and every later turn's vector is synthesised from
them (:func:`synthesise`, seeded; the output says so), and a load above
:data:`DEFER_HNSW_ABOVE` rows drops the vector table's HNSW index and builds it
once after the load (its seconds are reported).
Everything runs in throw-away embedded databases; nothing here is a unit test.

Figures, each printed next to the machine's cores:
- ingest: turns/s through the write path (embedding included) next to the raw
  embedder's sentences/s on the same texts in the same run (the ratio is the
  database overhead), and store-only rows/s with precomputed vectors (COPY);
- recall latency p50/p95/p99 per scale, query embedding included and excluded,
  next to an exact NumPy scan over the same vectors;
- ANN quality: recall@10 of the HNSW candidates against exact search, and the
  same with a scope filter that keeps 1% of the rows; and of the read index's
  own dense search (its in-process ANN above ``exact_scan_limit``);
- the read index: build time, memory, and whether it is held; a scope whose
  index alone is over ``index_mb`` is answered through SQL (the output says so,
  and the smallest scale is timed once more under a budget it does not fit).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from mnemo.archive import AsyncArchive
from mnemo.bench.metrics import percentile
from mnemo.cognition.scoring.late import TokenVectors, quantize
from mnemo.config import Settings
from mnemo.embed import Embeddings
from mnemo.models import Scope, TurnInput

__all__ = ["DEFER_HNSW_ABOVE", "build_corpus", "run_perf", "synthesise"]

DEFER_HNSW_ABOVE = 100_000
"""Rows in one load above which the HNSW index is built after the load, not grown row by row."""

NAMES = [
    "Ana",
    "Ben",
    "Chloé",
    "Dev",
    "Emeka",
    "Fatima",
    "Goran",
    "Hana",
    "Ivo",
    "Jun",
    "Kofi",
    "Lena",
    "Mateo",
    "Nadia",
    "Omar",
    "Priya",
    "Quinn",
    "Rosa",
    "Sven",
    "Tara",
    "Umar",
    "Vera",
    "Wen",
    "Ximena",
    "Yusuf",
    "Zoe",
]
SURNAMES = [
    "Silva",
    "Okafor",
    "Novak",
    "Haddad",
    "Kim",
    "Moreau",
    "Rossi",
    "Larsen",
    "Mehta",
    "Tanaka",
    "Kowalski",
    "Nguyen",
    "Osei",
    "Petrov",
    "Quispe",
    "Rahman",
    "Schmidt",
    "Takahashi",
    "Urquhart",
    "Varga",
    "Weber",
    "Xu",
    "Yilmaz",
    "Zhou",
    "Adeyemi",
    "Brennan",
]
Progress = Callable[[str, int, int], None]


def build_corpus(locomo: Path, size: int) -> tuple[list[TurnInput], list[str]]:
    """``size`` turns (LoCoMo turns re-attributed copy by copy) and the LoCoMo questions."""
    text = locomo.read_text(encoding="utf-8")
    base = AsyncArchive.parse_turns(text, fmt="locomo", max_chars=32_000)
    questions = [str(qa["question"]) for sample in json.loads(text) for qa in sample.get("qa", [])]
    turns: list[TurnInput] = []
    copy = 0
    while len(turns) < size:
        for index, turn in enumerate(base):
            if len(turns) == size:
                break
            if copy == 0:
                speaker = turn.speaker
            else:  # 26 x 26 distinct "First Last" speakers before any (speaker, text) pair repeats
                first = NAMES[(index // 7 + copy) % len(NAMES)]
                speaker = f"{first} {SURNAMES[(copy - 1) // len(NAMES) % len(SURNAMES)]}"
            start = turn.created_at or datetime(2023, 1, 1, tzinfo=UTC)
            turns.append(
                TurnInput(
                    session_id=f"c{copy}:{turn.session_id}",
                    role=turn.role,
                    content=turn.content,
                    speaker=speaker,
                    created_at=start + timedelta(days=41 * copy),
                    turn_number=turn.turn_number,
                    metadata={},
                )
            )
        copy += 1
    return turns, questions


def synthesise(real: np.ndarray, count: int, seed: int = 42) -> np.ndarray:
    """``count`` unit vectors made from ``real`` ones (issue 42's 1M run: embedding a million
    texts would take hours): each is a seeded mix of two real vectors, mostly the first, plus a
    little noise, so the set keeps the real one's neighbourhoods without repeating a vector."""
    rng = np.random.default_rng(seed)
    out = np.empty((count, real.shape[1]), dtype=np.float32)
    step = 65_536
    for start in range(0, count, step):
        n = min(step, count - start)
        a, b = rng.integers(0, len(real), n), rng.integers(0, len(real), n)
        w = rng.uniform(0.6, 0.9, (n, 1)).astype(np.float32)
        rows = w * real[a] + (1 - w) * real[b] + rng.normal(0, 0.01, (n, real.shape[1])).astype(np.float32)
        out[start : start + n] = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    return out


class VectorCache:
    """Embeddings of documents and their token embeddings (int8, as the store keeps them), cached
    on disk by (slug, text) so re-runs skip the model."""

    def __init__(self, directory: Path, embeddings: Embeddings) -> None:
        self.embeddings = embeddings
        key = hashlib.sha256(str(embeddings.slug).encode()).hexdigest()[:12]
        self.path = directory / f"vectors-tokens-{key}.npz"
        self.store: dict[str, tuple[np.ndarray, TokenVectors | None]] = {}
        if self.path.exists():
            with np.load(self.path, allow_pickle=False) as data:
                starts, ids, codes, scales = data["starts"], data["ids"], data["codes"], data["scales"]
                for n, (k, v) in enumerate(zip(data["keys"].tolist(), data["vectors"], strict=True)):
                    a, b = int(starts[n]), int(starts[n + 1])
                    tokens = TokenVectors(ids[a:b], codes[a:b], float(scales[n])) if scales[n] > 0 else None
                    self.store[k] = (v, tokens)

    @staticmethod
    def _key(text: str) -> str:
        return hashlib.sha1(text.encode()).hexdigest()

    async def get(self, texts: Sequence[str], progress: Progress | None = None) -> np.ndarray:
        """The texts' vectors, ``(n, dim)`` float32."""
        return (await self.get_with_tokens(texts, progress))[0]

    async def get_with_tokens(
        self, texts: Sequence[str], progress: Progress | None = None
    ) -> tuple[np.ndarray, list[TokenVectors | None]]:
        """The texts' vectors and token embeddings (None where the embedder gives none)."""
        keys = [self._key(t) for t in texts]
        todo = sorted({k: t for k, t in zip(keys, texts, strict=True) if k not in self.store}.items())
        step = 4096
        for start in range(0, len(todo), step):
            chunk = todo[start : start + step]
            batch = [t for _, t in chunk]
            if self.embeddings.reads_tokens:
                vectors, fresh = await self.embeddings.embed_documents_with_tokens(batch)
                tokens: list[TokenVectors | None] = [quantize(tv) for tv in fresh]
            else:
                vectors, tokens = await self.embeddings.embed_documents(batch), [None] * len(batch)
            self.store.update(zip((k for k, _ in chunk), zip(vectors, tokens, strict=True), strict=True))
            if progress is not None:
                progress("embedding corpus", min(start + step, len(todo)), len(todo))
        if todo:
            self._save()
        return (
            np.stack([self.store[k][0] for k in keys]).astype(np.float32),
            [self.store[k][1] for k in keys],
        )

    def _save(self) -> None:
        entries = list(self.store.values())
        sizes = [0 if tv is None else len(tv.ids) for _, tv in entries]
        width = self.embeddings.dim if not entries or entries[0][1] is None else entries[0][1].vectors.shape[1]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_name(self.path.name + ".partial.npz")
        np.savez(
            partial,
            keys=np.array(list(self.store)),
            vectors=np.stack([v for v, _ in entries]),
            starts=np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64),
            ids=np.concatenate([tv.ids for _, tv in entries if tv is not None] or [np.zeros(0, np.int32)]),
            codes=np.concatenate(
                [tv.vectors for _, tv in entries if tv is not None] or [np.zeros((0, width), np.int8)]
            ),
            scales=np.array([0.0 if tv is None else tv.scale for _, tv in entries], dtype=np.float32),
        )
        os.replace(partial, self.path)


def _lat(values: list[float]) -> dict[str, float]:
    return {f"p{p}": round(percentile(values, p), 2) for p in (50, 95, 99)}


async def _ingest(
    archive: AsyncArchive, turns: list[TurnInput], vectors: np.ndarray, rounds: int = 3
) -> dict[str, Any]:
    emb = archive.embeddings
    texts = [emb.turn_text(t.content, t.speaker) for t in turns]
    await emb.embed_documents(texts[:256])  # warm-up: the first forward passes are slower

    async def raw_rate() -> float:
        started = time.perf_counter()
        await emb.embed_documents(texts)
        return len(texts) / (time.perf_counter() - started)

    # Machine load drifts by +-15% between runs on 2 cores: each round times the raw embedder before
    # and after the write path, and the medians over the rounds are reported.
    raws, writes, ratios = [], [], []
    for round_ in range(rounds):
        before = await raw_rate()
        started = time.perf_counter()
        await archive.import_turns(Scope("perf", f"ingest{round_}"), turns)
        write = len(turns) / (time.perf_counter() - started)
        raw = (before + await raw_rate()) / 2
        raws.append(raw)
        writes.append(write)
        ratios.append(write / raw)
    started = time.perf_counter()
    await archive.import_turns(Scope("perf", "copy"), turns, vectors=vectors)
    store_only = len(turns) / (time.perf_counter() - started)
    return {
        "turns": len(turns),
        "rounds": rounds,
        "raw_embedder_per_s": round(float(np.median(raws)), 1),
        "write_path_per_s": round(float(np.median(writes)), 1),
        "write_vs_raw": round(float(np.median(ratios)), 3),
        "write_vs_raw_per_round": [round(r, 3) for r in ratios],
        "store_only_rows_per_s": round(store_only, 1),
    }


async def _backends(
    embeddings: Embeddings, baseline: Embeddings, texts: list[str], questions: list[str], rounds: int = 3
) -> dict[str, Any]:
    """The active backend against the baseline (PyTorch) on the same texts, interleaved: per-query
    time (with token embeddings, as recall asks), documents per second as the write path embeds
    them (with token embeddings), and how far apart their vectors are."""
    qs = questions[:200]
    for emb in (embeddings, baseline):  # warm-up
        await emb.embed_documents_with_tokens(texts[:64])
        for q in qs[:10]:
            await emb.embed_query_with_tokens(q)
    times: dict[str, list[float]] = {"now": [], "baseline": []}
    for q in qs:
        for name, emb in (("now", embeddings), ("baseline", baseline)):
            t0 = time.perf_counter()
            await emb.embed_query_with_tokens(q)
            times[name].append((time.perf_counter() - t0) * 1000)
    rates: dict[str, list[float]] = {"now": [], "baseline": []}
    for _ in range(rounds):
        for name, emb in (("now", embeddings), ("baseline", baseline)):
            t0 = time.perf_counter()
            await emb.embed_documents_with_tokens(texts)
            rates[name].append(len(texts) / (time.perf_counter() - t0))
    ours = await embeddings.embed_documents(texts)
    theirs = await baseline.embed_documents(texts)
    return {
        "backend": embeddings.backend,
        "baseline": baseline.backend,
        "query_ms": _lat(times["now"]),
        "baseline_query_ms": _lat(times["baseline"]),
        "documents_per_s": round(float(np.median(rates["now"])), 1),
        "baseline_documents_per_s": round(float(np.median(rates["baseline"])), 1),
        "documents": len(texts),
        "least_cosine_to_baseline": round(float(np.min(np.sum(ours * theirs, axis=1))), 7),
    }


async def _mutation(
    archive: AsyncArchive, sql: AsyncArchive, turns: list[TurnInput], questions: list[str], queries: int
) -> dict[str, Any]:
    """A mutating recall (reinforcement, co-access links, near-miss suppression, the audit rows)
    against a read-only one, on a scope of memories with use histories (the warm-up recalls are
    the owner's), each question asked both ways in turn through the read index, and read-only
    through SQL alone (``sql``: the same database with ``index=false``) beside them."""
    scope = Scope("perf", "mutation")
    for turn in turns:
        await archive.remember(scope, turn.content)
    await archive.inspect.probes().settle()
    await archive.maintenance.warm(scope)
    qs = (questions * (queries // max(1, len(questions)) + 1))[:queries]
    for q in qs[:50]:
        await archive.recall(scope, q, 10, threshold=-1.0)
        await sql.recall(scope, q, 10, read_only=True, threshold=-1.0)
    times: dict[str, list[float]] = {"read_only": [], "mutating": [], "sql": []}
    for n, q in enumerate(qs):
        order = ("read_only", "mutating", "sql") if n % 2 else ("mutating", "sql", "read_only")
        for way in order:
            t0 = time.perf_counter()
            await (sql if way == "sql" else archive).recall(scope, q, 10, read_only=way != "mutating", threshold=-1.0)
            times[way].append((time.perf_counter() - t0) * 1000)
    return {
        "memories": len(turns),
        "queries": len(qs),
        "read_only_ms": _lat(times["read_only"]),
        "mutating_ms": _lat(times["mutating"]),
        "sql_read_only_ms": _lat(times["sql"]),
        "mutating_extra_ms_p50": round(float(np.median(times["mutating"]) - np.median(times["read_only"])), 2),
        "mutating_extra_ms_p95": round(percentile(times["mutating"], 95) - percentile(times["read_only"], 95), 2),
    }


async def _scale(
    archive: AsyncArchive,
    sql: AsyncArchive,
    turns: list[TurnInput],
    vectors: np.ndarray,
    tokens: list[TokenVectors | None],
    questions: list[str],
    queries: int,
    progress: Progress | None,
) -> dict[str, Any]:
    probes = archive.inspect.probes()
    size = len(turns)
    main, rare = Scope("perf", f"main{size}"), Scope("perf", f"rare{size}")
    chunk = 20_000
    rare_n = max(10, size // 100)
    pick = np.random.default_rng(7).choice(size, rare_n, replace=False)
    stored_at = time.perf_counter()
    async with contextlib.AsyncExitStack() as load:
        # the graph is built in memory when it fits: about 2 KiB a row of 384 dimensions (1M: 2 GB)
        memory = max(1024, size // 500)
        hnsw = await load.enter_async_context(probes.hnsw_after_load(memory)) if size > DEFER_HNSW_ABOVE else {}
        for start in range(0, size, chunk):
            await archive.import_turns(
                main,
                turns[start : start + chunk],
                vectors=vectors[start : start + chunk],
                token_vectors=tokens[start : start + chunk],
            )
            if progress is not None:
                progress(f"storing {size:,}", min(start + chunk, size), size)
        # a scope holding 1% as many rows as the main one, in the same vector table
        await archive.import_turns(
            rare, [turns[int(i)] for i in pick], vectors=vectors[pick], token_vectors=[tokens[int(i)] for i in pick]
        )
    store_s = time.perf_counter() - stored_at

    t0 = time.perf_counter()
    facts = await probes.read_index_facts(main)
    build_s = time.perf_counter() - t0
    index_bytes = facts["bytes"]
    qs = (questions * (queries // max(1, len(questions)) + 1))[:queries]
    qvecs = np.stack([await archive.embeddings.embed_query(q) for q in qs])
    for q in qs[:20]:  # warm-up: caches, plans
        await archive.recall(main, q, 10, read_only=True, threshold=-1.0)
        await sql.recall(main, q, 10, read_only=True, threshold=-1.0)
    full: list[float] = []
    warm: list[float] = []
    sql_full: list[float] = []
    sql_warm: list[float] = []
    for q, v in zip(qs, qvecs, strict=True):  # interleaved: the same load on both ways
        ways = ((archive, full, None), (sql, sql_full, None), (archive, warm, v), (sql, sql_warm, v))
        for way, times, vector in ways:
            t0 = time.perf_counter()
            await way.recall(main, q, 10, read_only=True, threshold=-1.0, query_vector=vector)
            times.append((time.perf_counter() - t0) * 1000)
    stored = vectors.astype(np.float16).astype(np.float32)  # what halfvec holds
    numpy_ms = []
    for v in qvecs:
        t0 = time.perf_counter()
        scores = stored @ v
        top = np.argpartition(-scores, 10)[:10]
        top[np.argsort(-scores[top])]
        numpy_ms.append((time.perf_counter() - t0) * 1000)

    async def ann_recall(scope: Scope, subset: np.ndarray) -> tuple[float, float]:
        hits, complete = [], 0
        for v, found in zip(qvecs[:200], await probes.dense_search(scope, qvecs[:200], 10), strict=True):
            exact = np.sort(subset @ v)[::-1][:10]
            # tie-aware: an ANN hit counts when it is at least as close as the exact 10th neighbour
            hits.append(sum(1 for sim in found if sim >= exact[-1] - 1e-3) / 10)
            complete += len(found) == 10
        return float(np.mean(hits)), complete / min(200, len(qvecs))

    ann, _ = await ann_recall(main, stored)
    ann_filtered, complete = await ann_recall(rare, stored[pick])
    index_ann = None
    if facts["held"]:
        index_hits = []
        for v, found in zip(qvecs[:200], await probes.index_dense_search(main, qvecs[:200], 10), strict=True):
            exact = np.sort(stored @ v)[::-1][:10]
            index_hits.append(sum(1 for sim in found if sim >= exact[-1] - 1e-3) / 10)
        index_ann = round(float(np.mean(index_hits)), 4)
    budget_mb = round(facts["budget"] / 2**20, 1)
    return {
        "memories": size,
        "queries": len(qs),
        "recall_ms_with_embedding": _lat(full),
        "recall_ms_without_embedding": _lat(warm),
        "sql_recall_ms_with_embedding": _lat(sql_full),
        "sql_recall_ms_without_embedding": _lat(sql_warm),
        "store_s": round(store_s, 1),
        "hnsw_build_s": round(hnsw["hnsw_build_s"], 1) if "hnsw_build_s" in hnsw else None,
        "index_build_s": round(build_s, 2),
        "index_mb": round(index_bytes / 2**20, 1),
        "index_held": facts["held"],
        "index_dense": "ANN (usearch), re-scored exactly" if facts["ann"] else "exact scan",
        "index_ann_recall_at_10": index_ann,
        "index_budget_mb": budget_mb,
        "index_note": None
        if facts["held"]
        else f"the scope's read index ({index_bytes / 2**20:.1f} MiB) is over index_mb ({budget_mb} MiB): "
        "not kept, every recall of this scope is answered through SQL",
        "numpy_exact_scan_ms": _lat(numpy_ms),
        "ann_recall_at_10": round(ann, 4),
        "ann_recall_at_10_filtered_1pct": round(ann_filtered, 4),
        "filtered_queries_with_10_results": round(complete, 4),
        "ef_search": archive.settings.hnsw_ef_search,
    }


async def _over_budget(
    archive: AsyncArchive, size: int, index_bytes: int, questions: list[str], queries: int
) -> dict[str, Any]:
    """What a scope whose index is over ``index_mb`` does: its index is built, refused, and its
    recalls are answered through SQL (``archive`` opened with a budget half the index's size)."""
    probes = archive.inspect.probes()
    main = Scope("perf", f"main{size}")
    facts = await probes.read_index_facts(main)
    qs = (questions * (queries // max(1, len(questions)) + 1))[:queries]
    for q in qs[:10]:
        await archive.recall(main, q, 10, read_only=True, threshold=-1.0)
    times = []
    for q in qs:
        t0 = time.perf_counter()
        await archive.recall(main, q, 10, read_only=True, threshold=-1.0)
        times.append((time.perf_counter() - t0) * 1000)
    return {
        "memories": size,
        "index_mb": round(index_bytes / 2**20, 1),
        "budget_mb": archive.settings.index_mb,
        "index_held": facts["held"],
        "answered_through": "SQL (the index was built, found over index_mb, and not kept)"
        if not facts["held"]
        else "the read index (it fit after all)",
        "queries": len(qs),
        "recall_ms_with_embedding": _lat(times),
    }


async def run_perf(
    locomo: Path,
    *,
    embeddings: Embeddings,
    scales: Sequence[int] = (10_000, 100_000),
    real: int | None = None,
    baseline: Embeddings | None = None,
    ingest_turns: int = 2_000,
    mutation_memories: int = 2_000,
    queries: int = 1_000,
    cache_dir: Path | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    largest = max([*scales, ingest_turns])
    turns, questions = build_corpus(locomo, largest)
    cache = VectorCache(cache_dir or Path(tempfile.gettempdir()) / "mnemo-bench-cache", embeddings)
    embedded = largest if real is None else min(largest, max(real, ingest_turns))
    texts = [embeddings.turn_text(t.content, t.speaker) for t in turns[:embedded]]
    vectors, tokens = await cache.get_with_tokens(texts, progress)
    result: dict[str, Any] = {"cores": os.cpu_count(), "embedder": str(embeddings.slug), "scales": []}
    result["vectors"] = {"real": embedded, "synthesised": largest - embedded}
    if largest > embedded:
        result["vectors"]["note"] = (
            f"the vectors of turns {embedded + 1:,} to {largest:,} are synthesised from the {embedded:,} real "
            "embeddings (seeded mixes of two, plus noise; no token embeddings): latency and memory figures, "
            "not quality ones"
        )
        vectors = np.concatenate([vectors, synthesise(vectors, largest - embedded)])
        tokens = [*tokens, *([None] * (largest - embedded))]
    with tempfile.TemporaryDirectory(prefix="mnemo-perf-") as home:
        archive = await AsyncArchive.open(Settings(home=Path(home) / "ingest"), embeddings=embeddings)
        try:
            result["ingest"] = await _ingest(archive, turns[:ingest_turns], vectors[:ingest_turns])
            if baseline is not None:
                texts = [embeddings.turn_text(t.content, t.speaker) for t in turns[:ingest_turns]]
                result["embedding"] = await _backends(embeddings, baseline, texts, questions)
            if mutation_memories:
                sql = await AsyncArchive.open(Settings(home=Path(home) / "ingest", index=False), embeddings=embeddings)
                try:
                    memories = turns[:mutation_memories]
                    result["mutation"] = await _mutation(archive, sql, memories, questions, min(queries, 500))
                finally:
                    await sql.close()
        finally:
            await archive.close()
        for size in sorted(scales):
            archive = await AsyncArchive.open(Settings(home=Path(home) / f"s{size}"), embeddings=embeddings)
            sql = await AsyncArchive.open(Settings(home=Path(home) / f"s{size}", index=False), embeddings=embeddings)
            try:
                part = (turns[:size], vectors[:size], tokens[:size])
                result["scales"].append(await _scale(archive, sql, *part, questions, queries, progress))
            finally:
                await sql.close()
                await archive.close()
            first = result["scales"][0]
            if size == min(scales) and first["index_held"]:
                budget = int(first["index_mb"] // 2)  # the same scope, under a budget its index does not fit
                tight = await AsyncArchive.open(
                    Settings(home=Path(home) / f"s{size}", index_mb=budget), embeddings=embeddings
                )
                try:
                    index_bytes = int(first["index_mb"] * 2**20)
                    result["over_budget"] = await _over_budget(tight, size, index_bytes, questions, min(queries, 200))
                finally:
                    await tight.close()
    return result
