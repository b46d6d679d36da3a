"""Recall stages 1-3: check the request, embed the query, retrieve candidates (lexical, dense,
passages, the cortex, the late-interaction scan). Seeds: cognitive-plan §2.5, §2.6; archive-adr §7
("Sigil Scope": access is checked before anything is read).
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

import numpy as np
import psycopg

from mnemo._runtime import Runtime
from mnemo._validate import check_process, check_query, check_vector, to_utc
from mnemo.cognition.scoring.bm25 import average_length
from mnemo.cognition.scoring.late import TokenVectors, index_scores
from mnemo.cognition.scoring.refusal import proper_names
from mnemo.config import Settings
from mnemo.cortex import cortex_search
from mnemo.embed import int8_product
from mnemo.errors import AccessDeniedError, InvalidContentError, Remedy
from mnemo.models import Scope
from mnemo.recall.first_stage import FirstStage, IndexedStage, SqlStage
from mnemo.recall.records import ITEM_KINDS, Candidates, Request
from mnemo.store import passage_vectors as passage_rows
from mnemo.store import scopes as scope_rows
from mnemo.store import search as search_rows
from mnemo.store import tiers


# --- 1. check ---------------------------------------------------------------------------------
def check(
    rt: Runtime,
    scope: Scope,
    query: object,
    k: int,
    *,
    as_entity: str | None,
    read_only: bool,
    threshold: float | None,
    kinds: tuple[str, ...],
    trace: bool,
    query_vector: Sequence[float] | np.ndarray | None,
    cues: Mapping[str, object] | None,
    now: datetime | None,
    seed: int | None,
    hops: int | None,
    expand: bool = False,
    processes: Sequence[str] | None = None,
    mood: Sequence[float] | np.ndarray | None = None,
) -> Request:
    """Validate every argument; raise :class:`InvalidInputError` before anything is read."""
    cfg = rt.settings
    text = check_query(query, max_chars=cfg.max_content_chars)
    if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= cfg.max_k:
        raise InvalidContentError(f"k must be an integer between 1 and {cfg.max_k}, not {k!r}")
    if not kinds or any(kind not in ITEM_KINDS for kind in kinds):
        raise InvalidContentError(f"kinds must be a non-empty subset of {ITEM_KINDS}")
    hops = cfg.spreading_hops if hops is None else hops
    if not isinstance(hops, int) or isinstance(hops, bool) or not 0 <= hops <= 2:
        raise InvalidContentError(f"hops must be 0, 1 or 2, not {hops!r}")
    reader = scope.entity_id if as_entity is None else Scope(as_entity).entity_id
    given = None if query_vector is None else check_vector(query_vector, rt.embeddings.dim)
    as_of = None if now is None else to_utc(now, label="as_of")
    # a turn that left the day table lives on as its block's verbatim line: asking for turns finds both
    searched = (*kinds, "line") if "turn" in kinds else tuple(kinds)
    if isinstance(processes, str):
        raise InvalidContentError("processes must be a list of process ids, not one string")
    wanted = tuple(dict.fromkeys(check_process(p) for p in processes or ()))
    return Request(
        scope=scope,
        text=text,
        k=k,
        kinds=tuple(dict.fromkeys(searched)),
        hops=hops,
        reader=reader,
        threshold=threshold if threshold is not None else cfg.refusal_threshold,
        depth=max(cfg.candidate_depth, k),
        read_only=read_only,
        trace=trace,
        given_vector=given,
        cues=cues,
        now=as_of or datetime.now(UTC),
        seed=seed,
        expand=bool(expand),
        as_of=as_of,
        processes=wanted,
        mood=None if mood is None else _unit(check_vector(mood, rt.embeddings.dim)),
    )


def _unit(vector: np.ndarray) -> np.ndarray:
    norm = float(np.linalg.norm(vector))
    if norm < 1e-12:
        raise InvalidContentError("mood must be a non-zero vector")
    return np.asarray(vector, dtype=np.float32) / norm


# --- 2-3. embed and retrieve -----------------------------------------------------------------------
def start_embedding(
    rt: Runtime, request: Request
) -> asyncio.Future[tuple[np.ndarray | None, TokenVectors | None]] | None:
    """Embed the query in a worker thread, with its token embeddings when late interaction re-ranks
    (None when the caller gave its vector and nothing else is needed)."""
    tokens = _late(rt)
    if request.given_vector is not None and not tokens:
        return None
    return asyncio.ensure_future(_embed_query(rt, request.text, tokens, request.given_vector is None))


def _late(rt: Runtime) -> bool:
    """Whether the query's token embeddings are needed: items keep theirs and MaxSim, not a
    cross-encoder, re-ranks (and scans)."""
    return rt.reads_tokens and rt.reranker is None


async def _embed_query(
    rt: Runtime, text: str, tokens: bool, vector: bool
) -> tuple[np.ndarray | None, TokenVectors | None]:
    if tokens:
        embedded, query_tokens = await rt.embeddings.embed_query_with_tokens(text)
        return (embedded if vector else None), query_tokens
    return await rt.embeddings.embed_query(text), None


async def retrieve(
    rt: Runtime,
    conn: psycopg.AsyncConnection,
    request: Request,
    embedding: asyncio.Future[tuple[np.ndarray | None, TokenVectors | None]] | None,
) -> Candidates:
    """Check read access, run the lexical retriever while the query is embedded, then HNSW (and the
    cortex's), then the late-interaction scan."""
    scope = request.scope
    try:
        asked = _names_asked(rt, request)
        facts = await _facts(conn, scope, request.reader, asked, request.text)
        deep = rt.settings.cortex and facts.deep
        stage = await first_stage(rt, conn, scope, facts)
        lexical = await _lexical(rt, conn, stage, scope, request.text, request.depth, request.kinds)
        names = facts.known if asked is not None else {}
        embedded, query_tokens = await embedding if embedding is not None else (None, None)
        vector = request.given_vector if request.given_vector is not None else embedded
        assert vector is not None
    except BaseException:
        if embedding is not None and not embedding.done():
            embedding.cancel()
            with contextlib.suppress(BaseException):
                await embedding
        raise
    # the hippocampus's HNSW and, when the scope has a long-term tier, the cortex, at the same time
    cortex = (
        asyncio.ensure_future(
            cortex_search.cortex_neighbours(rt, scope, vector, request.depth, blocks=not request.blocks_by_lines)
        )
        if deep
        else None
    )
    try:
        dense = await stage.dense(vector, request.depth)
    except BaseException:
        if cortex is not None:
            cortex.cancel()
            with contextlib.suppress(BaseException):
                await cortex
        raise
    dense = [d for d in dense if d[1] in request.kinds]
    if rt.settings.passages and facts.passages:
        dense = await _with_passages(rt, conn, request, vector, dense)
    if cortex is not None:
        dense = _with_cortex(request, dense, *(await cortex))
    if request.blocks_by_lines:
        dense, lexical = await _without_blocks(conn, scope, dense, lexical)
    scanned, late = await _late_retrieval(rt, conn, stage, request, query_tokens, facts.indexed)
    kind_of = {d[0]: d[1] for d in dense} | {x[0]: x[1] for x in lexical} | late
    return Candidates(
        scanned=scanned,
        vector=vector,
        kind_of=kind_of,
        ids=list(kind_of),
        vector_rank={d[0]: rank for rank, d in enumerate(dense, start=1)},
        lexical_rank={x[0]: rank for rank, x in enumerate(lexical, start=1)},
        dense_order=[d[0] for d in dense],
        lexical_order=[x[0] for x in lexical],
        similarity={d[0]: d[2] for d in dense},
        lexical_score={x[0]: x[2] for x in lexical},
        query_tokens=query_tokens,
        names=names,
        facts=facts,
        stage=stage,
    )


async def first_stage(
    rt: Runtime, conn: psycopg.AsyncConnection, scope: Scope, facts: scope_rows.RecallFacts
) -> FirstStage:
    """The scope's warm read index caught up to the version the facts read, else SQL (and the
    index is built in the background: :class:`mnemo.recall.scope_index.ReadIndexes`)."""
    e, ns = scope.entity_id, scope.namespace
    sql = SqlStage(rt, conn, e, ns, exact=facts.indexed <= rt.settings.exact_scan_limit)
    index = await rt.indexes.warm(rt, conn, (e, ns, rt.slug), (facts.version, facts.epoch))
    if index is None:
        return sql
    docs, total = facts.indexed, facts.total_len
    return IndexedStage(index, sql, facts.terms if total is not None else (), docs, average_length(docs, total or 0))


async def _late_retrieval(
    rt: Runtime,
    conn: psycopg.AsyncConnection,
    stage: FirstStage,
    request: Request,
    query_tokens: TokenVectors | None,
    indexed: int,
) -> tuple[dict[uuid.UUID, float], dict[uuid.UUID, str]]:
    """Late interaction as a retriever (cognitive-plan §2.6): every turn and memory of the scope
    scored by MaxSim, IDF-weighted over the whole scope, when the scope has at most
    ``late_scan_limit`` of them and their index fits the token cache (``token_cache_mb``;
    :func:`_scannable`). Items without token embeddings yet are left out of the scan (the fusion
    takes them as average on its scale) and read in the background (:mod:`mnemo.write.backfill`).
    Returns every scanned item's score and the best ``depth`` with their kinds (no blocks when
    their lines answer for them); both empty when off. ``indexed`` (the items the scope's postings
    hold, a lower bound on its size) spares a large scope the listing."""
    cfg = rt.settings
    if not cfg.late_retrieval or query_tokens is None or not len(query_tokens.ids):  # no tokens: see _late
        return {}, {}
    if indexed > cfg.late_scan_limit:
        return {}, {}
    scope = request.scope
    e, ns, slug = scope.entity_id, scope.namespace, str(rt.slug)
    items = await stage.scope_items(request.kinds, cfg.late_scan_limit + 1)
    if not _scannable(cfg, items, rt.tokens().max_bytes):
        return {}, {}
    if missing := [i for i, _, size in items if size is None]:
        rt.backfill.request(rt, (e, ns, slug), missing)
        items = [item for item in items if item[2] is not None]
        if not items:
            return {}, {}
    ids = tuple(i for i, _, _ in items)
    index = await stage.token_index(request.kinds, items)
    scores = index_scores(query_tokens, index, int8_product)  # int8 x int8 (issue 42, decision 1)
    scanned = dict(zip(ids, scores.tolist(), strict=True))
    # the best first; ties in id order (the items' order), so the ranking is deterministic
    best = {items[int(n)][0]: items[int(n)][1] for n in np.argsort(-scores, kind="stable")[: request.depth]}
    memories = [i for i, kind in best.items() if kind == "memory"]
    if request.blocks_by_lines and memories:
        for block in await tiers.block_memories(conn, e, ns, memories):
            best.pop(block, None)
    return scanned, best


def _scannable(cfg: Settings, items: Sequence[tuple[uuid.UUID, str, int | None]], room: int) -> bool:
    """Whether late retrieval scans the scope: it has items, no more than ``late_scan_limit``, and
    the token embeddings it has fit the cache."""
    if not items or len(items) > cfg.late_scan_limit:
        return False
    return sum(size for _, _, size in items if size is not None) <= room


async def _with_passages(
    rt: Runtime,
    conn: psycopg.AsyncConnection,
    request: Request,
    vector: np.ndarray,
    dense: list[tuple[uuid.UUID, str, float]],
) -> list[tuple[uuid.UUID, str, float]]:
    """Long items found by their later passages join the dense ranking; an item's similarity is
    the best of its own vector's and its passages' (:mod:`mnemo.cognition.text.passages`)."""
    scope = request.scope
    found = await passage_rows.search(conn, scope.entity_id, scope.namespace, rt.slug, vector, request.depth)
    if not found:
        return dense
    best = {d[0]: d for d in dense}
    for item_id, kind, sim in found:
        if kind in request.kinds and (item_id not in best or sim > best[item_id][2]):
            best[item_id] = (item_id, kind, sim)
    return sorted(best.values(), key=lambda d: (-d[2], str(d[0])))[: request.depth]


def _with_cortex(
    request: Request,
    dense: list[tuple[uuid.UUID, str, float]],
    blocks: list[tuple[uuid.UUID, float]],
    lines: list[tuple[uuid.UUID, float]],
) -> list[tuple[uuid.UUID, str, float]]:
    """The retrieval chain's second step (memory-architecture §1.3): the cortex's blocks and lines
    nearest to the query join the hippocampus's, one ranking by similarity (an item both tiers
    return, a raw turn that is also a migrated line, counts once, as the raw turn)."""
    if "memory" in request.kinds:
        dense = [*dense, *((i, "memory", sim) for i, sim in blocks)]
    if "line" in request.kinds:
        dense = [*dense, *((i, "line", sim) for i, sim in lines[: request.depth])]
    seen: set[uuid.UUID] = set()
    merged = []
    for item in sorted(dense, key=lambda d: (-d[2], d[1] == "line", str(d[0]))):
        if item[0] not in seen:
            seen.add(item[0])
            merged.append(item)
    return merged


async def _without_blocks(
    conn: psycopg.AsyncConnection,
    scope: Scope,
    dense: list[tuple[uuid.UUID, str, float]],
    lexical: list[tuple[uuid.UUID, str, float]],
) -> tuple[list[tuple[uuid.UUID, str, float]], list[tuple[uuid.UUID, str, float]]]:
    """Both retrievers' candidates less the blocks' memory rows (:attr:`Request.blocks_by_lines`)."""
    memories = [i for i, kind, _ in (*dense, *lexical) if kind == "memory"]
    blocks = await tiers.block_memories(conn, scope.entity_id, scope.namespace, memories)
    if not blocks:
        return dense, lexical
    return [d for d in dense if d[0] not in blocks], [x for x in lexical if x[0] not in blocks]


async def _facts(
    conn: psycopg.AsyncConnection, scope: Scope, reader: str, names: Sequence[str] | None = None, text: str = ""
) -> scope_rows.RecallFacts:
    """Refuse a reader who may not read ``scope``, the same way whether or not it exists (a foreign
    entity cannot probe for scopes). The owner's own empty or not-yet-created scope is no error:
    it holds nothing, so recall refuses (archive-adr §7, "The Mentat Refusal"). For a reader who
    may, what the recall needs to know of the scope, in the same round trip."""
    facts = await scope_rows.recall_facts(conn, scope.entity_id, scope.namespace, reader, names or (), text)
    if not facts.allowed:
        raise AccessDeniedError(
            f"{reader!r} may not read scope {scope}",
            remedy=Remedy("its owner can grant access with", "access.grant", (scope, reader)),
        )
    return facts


async def _lexical(
    rt: Runtime,
    conn: psycopg.AsyncConnection,
    stage: FirstStage,
    scope: Scope,
    text: str,
    depth: int,
    kinds: tuple[str, ...],
) -> list[tuple[uuid.UUID, str, float]]:
    if rt.settings.lexical == "bm25":
        return await stage.lexical(text, depth, kinds)
    return await search_rows.lexical(
        conn, scope.entity_id, scope.namespace, text, depth, turns="turn" in kinds, memories="memory" in kinds
    )


async def _lexical_scores(rt: Runtime, found: Candidates, text: str, ids: list[uuid.UUID]) -> dict[uuid.UUID, float]:
    """Exact lexical scores of specific items (0 when no query term matches)."""
    scores: dict[uuid.UUID, float] = dict.fromkeys(ids, 0.0)
    if ids and rt.settings.lexical == "bm25":
        scores |= await found.stage.lexical_scores(text, ids)
    return scores


async def _score_exactly(
    rt: Runtime, conn: psycopg.AsyncConnection, request: Request, found: Candidates, ids: list[uuid.UUID]
) -> None:
    """Fill in both retrievers' exact scores for ``ids`` (candidates one retriever did not return)."""
    await _similarities(rt, conn, request, found, [i for i in ids if i not in found.similarity])
    found.lexical_score |= await _lexical_scores(
        rt, found, request.text, [i for i in ids if i not in found.lexical_score]
    )


async def _similarities(
    rt: Runtime, conn: psycopg.AsyncConnection, request: Request, found: Candidates, ids: list[uuid.UUID]
) -> None:
    """Exact cosine similarities of ``ids``: from the hippocampus, then from the cortex for the
    memories whose vectors migrated there (the retrieval chain, memory-architecture §1.3)."""
    scope = request.scope
    found.similarity |= await found.stage.similarities(found.vector, ids)
    if rt.settings.passages and (found.facts is None or found.facts.passages):
        longer = await passage_rows.similarities(conn, scope.entity_id, scope.namespace, rt.slug, found.vector, ids)
        found.similarity |= {i: s for i, s in longer.items() if s > found.similarity.get(i, -2.0)}
    deep = [i for i in ids if i not in found.similarity and found.kind_of.get(i) == "memory"]
    if deep and rt.settings.cortex:
        found.similarity |= await cortex_search.cortex_similarities(rt, scope, found.vector, deep)
    lines = [i for i in ids if i not in found.similarity and found.kind_of.get(i) == "line"]
    if lines and rt.settings.cortex:
        found.similarity |= await cortex_search.cortex_line_similarities(rt, scope, found.vector, lines)


def _names_asked(rt: Runtime, request: Request) -> list[str] | None:
    """The question's names, whose presence in the scope the refusal weighs (None when refusal is
    off: a threshold of -1, or ``refuse_unknown_names`` false)."""
    if not rt.settings.refuse_unknown_names or request.threshold <= -1.0:
        return None
    return proper_names(request.text)
