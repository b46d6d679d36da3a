"""The stages of recall, each over the :class:`Candidates` record the previous ones filled in.

Seeds: cognitive-plan §2.5, §2.7, §3.1, §3.8; archive-adr §7 ("The Mentat Refusal",
"Sigil Scope"). :func:`mnemo.recall.pipeline.recall` runs them in order:

1. :func:`check` validates the request (nothing touches the database before);
2. :func:`start_embedding` embeds the query in a worker thread while
3. :func:`retrieve` checks access and gathers lexical, then vector candidates;
4. :func:`fuse` turns both retrievers' scores into one (z-scores or RRF);
5. :func:`smooth_neighbours` lets turns share their session neighbours' scores;
5b. :func:`late_interaction` re-ranks the head by MaxSim over token embeddings;
5c. :func:`time_frame` lifts the head's candidates of the period the question names;
6. :func:`blend` scores the head of the ranking cognitively (activation, weight, recency,
   co-access, noise) and keeps superseded memories below their superseders;
7. :func:`decide` takes the top k, the near misses, and refuses below the threshold;
8. :func:`trace_and_mutate` logs the retrieval and, for the owner, reinforces what was returned;
9. :func:`result` builds the :class:`~mnemo.models.RecallResult` or :class:`~mnemo.models.Refusal`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import random
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np
import psycopg

from mnemo import _dynamics as dynamics
from mnemo._dynamics import history_of, weight_of
from mnemo._runtime import Runtime
from mnemo._validate import check_process, check_query, check_vector, to_utc
from mnemo.cognition.activation import (
    AccessHistory,
    activation,
    base_level,
    logistic_noise,
    partial_match,
    retrieval_probability,
    spreading,
)
from mnemo.cognition.fusion import rrf, zscore_fuse
from mnemo.cognition.late import QUANT, TokenVectors, combine, index_scores, index_tokens, late_scores
from mnemo.cognition.neighbours import smooth
from mnemo.cognition.refusal import judge, proper_names
from mnemo.cognition.relevance import (
    COLD_START_ALPHAS,
    MATURE_ALPHAS,
    blend_weights,
    minmax,
    most_relevant,
    recency,
    relevance_tiers,
    suppressible,
)
from mnemo.cognition.relevance import blend as blend_score
from mnemo.cognition.spreading import spread
from mnemo.cognition.timeframe import in_window, query_window
from mnemo.cognition.weights import DEFAULT
from mnemo.config import Settings
from mnemo.cortex import search as cortex_search
from mnemo.errors import AccessDeniedError, InvalidContentError, Remedy
from mnemo.models import Hit, ItemKind, RecallResult, Refusal, Scope, uuid7
from mnemo.recall.backfill import item_text
from mnemo.store import dynamics as dynamic_rows
from mnemo.store import lexicon, tiers
from mnemo.store import passages as passage_rows
from mnemo.store import scopes as scope_rows
from mnemo.store import search as search_rows
from mnemo.store import token_vectors as token_rows
from mnemo.store import traces as trace_rows
from mnemo.store import vectors as vector_rows
from mnemo.store.pool import retry_conflicts
from mnemo.write.embedding import reads_tokens

__all__ = [
    "ITEM_KINDS",
    "Blended",
    "Candidates",
    "Decision",
    "Request",
    "blend",
    "check",
    "decide",
    "follow_links",
    "fuse",
    "late_interaction",
    "quote",
    "recall_at_level",
    "result",
    "retrieve",
    "smooth_neighbours",
    "start_embedding",
    "time_frame",
    "trace_and_mutate",
]

ITEM_KINDS = ("turn", "memory")
Scored = list[tuple[float, uuid.UUID, dict[str, float]]]


@dataclass(frozen=True, slots=True)
class Request:
    """A checked recall request."""

    scope: Scope
    text: str
    k: int
    kinds: tuple[str, ...]
    hops: int
    reader: str
    """The entity reading: the owner, or a grantee (``as_entity``)."""
    threshold: float
    depth: int
    """How many candidates each retriever returns."""
    read_only: bool
    trace: bool
    given_vector: np.ndarray | None
    cues: Mapping[str, object] | None
    now: datetime
    seed: int | None
    """Fixes this recall's stochastic draws (``scoring="stochastic"``)."""
    expand: bool = False
    """Block hits come back whole instead of as their excerpt."""
    as_of: datetime | None = None
    """The point in time the recall is made at, when the caller gave one: it is :attr:`now`, and
    items written after it are left out."""
    processes: tuple[str, ...] = ()
    """Only items these processes wrote (archive-adr §4 attribution); empty: any process."""

    @property
    def owner_reads(self) -> bool:
        return self.reader == self.scope.entity_id

    @property
    def blocks_by_lines(self) -> bool:
        """Whether blocks answer through their lines: when utterances are searched too, a block's
        lines compete on their own (each a bifocal hit with the block's gist), so the block itself
        is no hit; it would only repeat its best line and spend budget on weaker ones. Memory-only
        recalls and ``expand`` keep block hits."""
        return "turn" in self.kinds and "memory" in self.kinds and not self.expand


@dataclass(slots=True)
class Candidates:
    """Everything the retrievers found, enriched stage by stage."""

    vector: np.ndarray
    kind_of: dict[uuid.UUID, str]
    ids: list[uuid.UUID]
    """The retrievers' candidates (neighbours and spread memories come on top)."""
    vector_rank: dict[uuid.UUID, int]
    lexical_rank: dict[uuid.UUID, int]
    dense_order: list[uuid.UUID]
    lexical_order: list[uuid.UUID]
    similarity: dict[uuid.UUID, float]
    lexical_score: dict[uuid.UUID, float]
    base: dict[uuid.UUID, float] = field(default_factory=dict)
    """The fused search score."""
    final: dict[uuid.UUID, float] = field(default_factory=dict)
    """The fused score after neighbour smoothing (and late interaction)."""
    query_tokens: TokenVectors | None = None
    """The query's token embeddings, when late interaction re-ranks."""
    smoothed: dict[uuid.UUID, float] = field(default_factory=dict)
    """The fused score after neighbour smoothing, before late interaction re-ranked the head."""
    late: dict[uuid.UUID, float] = field(default_factory=dict)
    """Late-interaction (MaxSim) scores of the re-ranked head."""
    in_period: set[uuid.UUID] = field(default_factory=set)
    """Candidates of the period the question names, lifted by :func:`time_frame`."""
    names: dict[str, bool] = field(default_factory=dict)
    """The names the question is about, and whether the scope mentions each (the refusal's evidence)."""
    scanned: dict[uuid.UUID, float] = field(default_factory=dict)
    """Late-interaction scores of every item of the scope, when late interaction retrieved
    (:func:`_late_retrieval`): the fusion's third retriever."""
    facts: scope_rows.RecallFacts | None = None
    """What the recall read of its scope first (which searches it can skip)."""


@dataclass(frozen=True, slots=True)
class Blended:
    """The cognitively scored head of the ranking, best first."""

    scored: Scored
    weights: Mapping[str, float]
    rows: Mapping[uuid.UUID, Mapping[str, Any]]


@dataclass(frozen=True, slots=True)
class Decision:
    hits: tuple[Hit, ...]
    near_misses: list[uuid.UUID]
    best: float | None
    refused: bool
    latency_ms: float
    spare: tuple[Hit, ...] = ()
    """The next candidates after the top k: they move up when a hit is dropped as a repeat."""
    unknown: tuple[str, ...] = ()
    """The question's names the scope never mentions, when the recall is refused for them."""
    relevant: frozenset[uuid.UUID] = frozenset()
    """The k candidates the search ranking alone puts first: a hit among them was returned on its
    relevance, not lifted by use, weight, recency or association (only such hits are reinforced)."""


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
    )


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
    return reads_tokens(rt) and rt.reranker is None


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
        facts = await _facts(conn, scope, request.reader, asked)
        deep = rt.settings.cortex and facts.deep
        lexical = await _lexical(rt, conn, scope, request.text, request.depth, request.kinds)
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
        dense = await vector_rows.search(
            conn, rt.table, rt.embeddings.dim, scope.entity_id, scope.namespace, rt.slug, vector, request.depth
        )
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
    scanned, late = await _late_retrieval(rt, conn, request, query_tokens, facts.indexed)
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
    )


_NO_TOKENS = TokenVectors(np.zeros(0, np.int32), np.zeros((0, 1), np.int8), 1.0 / QUANT)
"""An item whose token rows went away between listing and reading them: it scores 0."""


async def _late_retrieval(
    rt: Runtime, conn: psycopg.AsyncConnection, request: Request, query_tokens: TokenVectors | None, indexed: int
) -> tuple[dict[uuid.UUID, float], dict[uuid.UUID, str]]:
    """Late interaction as a retriever (cognitive-plan §2.6): every turn and memory of the scope
    scored by MaxSim, IDF-weighted over the whole scope, when the scope has at most
    ``late_scan_limit`` of them and their index fits the token cache (``token_cache_mb``;
    :func:`_scannable`). Items without token embeddings yet are left out of the scan (the fusion
    takes them as average on its scale) and read in the background (:mod:`mnemo.recall.backfill`).
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
    items = await vector_rows.scope_items(conn, rt.table, e, ns, slug, request.kinds, cfg.late_scan_limit + 1)
    cache = rt.tokens()
    if not _scannable(cfg, items, cache.max_bytes):
        return {}, {}
    if missing := [i for i, _, size in items if size is None]:
        rt.backfill.request(rt, (e, ns, slug), missing, item_text)
        items = [item for item in items if item[2] is not None]
        if not items:
            return {}, {}
    ids = tuple(i for i, _, _ in items)
    index = cache.index((e, ns, slug), ids)
    if index is None:
        tokens = await token_rows.fetch(conn, e, ns, slug, ids)
        index = index_tokens([tokens.get(i, _NO_TOKENS) for i in ids])
        cache.keep_index((e, ns, slug), ids, index)
    scores = index_scores(query_tokens, index)
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
    the best of its own vector's and its passages' (:mod:`mnemo.cognition.passages`)."""
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
    conn: psycopg.AsyncConnection, scope: Scope, reader: str, names: Sequence[str] | None = None
) -> scope_rows.RecallFacts:
    """Refuse a reader who may not read ``scope``, the same way whether or not it exists (a foreign
    entity cannot probe for scopes). The owner's own empty or not-yet-created scope is no error:
    it holds nothing, so recall refuses (archive-adr §7, "The Mentat Refusal"). For a reader who
    may, what the recall needs to know of the scope, in the same round trip."""
    facts = await scope_rows.recall_facts(conn, scope.entity_id, scope.namespace, reader, names or ())
    if not facts.allowed:
        raise AccessDeniedError(
            f"{reader!r} may not read scope {scope}",
            remedy=Remedy("its owner can grant access with", "grant", (scope, reader)),
        )
    return facts


async def _lexical(
    rt: Runtime, conn: psycopg.AsyncConnection, scope: Scope, text: str, depth: int, kinds: tuple[str, ...]
) -> list[tuple[uuid.UUID, str, float]]:
    if rt.settings.lexical == "bm25":
        return await lexicon.bm25(conn, scope.entity_id, scope.namespace, text, depth, kinds=kinds)
    return await search_rows.lexical(
        conn, scope.entity_id, scope.namespace, text, depth, turns="turn" in kinds, memories="memory" in kinds
    )


async def _lexical_scores(
    rt: Runtime, conn: psycopg.AsyncConnection, scope: Scope, text: str, ids: list[uuid.UUID]
) -> dict[uuid.UUID, float]:
    """Exact lexical scores of specific items (0 when no query term matches)."""
    found: dict[uuid.UUID, float] = dict.fromkeys(ids, 0.0)
    if ids and rt.settings.lexical == "bm25":
        found |= {i: s for i, _, s in await lexicon.bm25(conn, scope.entity_id, scope.namespace, text, 0, ids=ids)}
    return found


async def _score_exactly(
    rt: Runtime, conn: psycopg.AsyncConnection, request: Request, found: Candidates, ids: list[uuid.UUID]
) -> None:
    """Fill in both retrievers' exact scores for ``ids`` (candidates one retriever did not return)."""
    scope = request.scope
    await _similarities(rt, conn, request, found, [i for i in ids if i not in found.similarity])
    found.lexical_score |= await _lexical_scores(
        rt, conn, scope, request.text, [i for i in ids if i not in found.lexical_score]
    )


async def _similarities(
    rt: Runtime, conn: psycopg.AsyncConnection, request: Request, found: Candidates, ids: list[uuid.UUID]
) -> None:
    """Exact cosine similarities of ``ids``: from the hippocampus, then from the cortex for the
    memories whose vectors migrated there (the retrieval chain, memory-architecture §1.3)."""
    scope = request.scope
    found.similarity |= await vector_rows.similarities(conn, rt.table, scope.entity_id, rt.slug, found.vector, ids)
    if rt.settings.passages and (found.facts is None or found.facts.passages):
        longer = await passage_rows.similarities(conn, scope.entity_id, scope.namespace, rt.slug, found.vector, ids)
        found.similarity |= {i: s for i, s in longer.items() if s > found.similarity.get(i, -2.0)}
    deep = [i for i in ids if i not in found.similarity and found.kind_of.get(i) == "memory"]
    if deep and rt.settings.cortex:
        found.similarity |= await cortex_search.cortex_similarities(rt, scope, found.vector, deep)
    lines = [i for i in ids if i not in found.similarity and found.kind_of.get(i) == "line"]
    if lines and rt.settings.cortex:
        found.similarity |= await cortex_search.cortex_line_similarities(rt, scope, found.vector, lines)


# --- 4. fuse ---------------------------------------------------------------------------------------
async def fuse(rt: Runtime, conn: psycopg.AsyncConnection, request: Request, found: Candidates) -> None:
    """One search score per candidate: z-scores of both retrievers, every candidate scored by both
    exactly (``fusion="zscore"``), or reciprocal-rank fusion."""
    cfg = rt.settings
    if cfg.fusion == "zscore":
        await _score_exactly(rt, conn, request, found, found.ids)
        found.base = zscore_fuse(_sources(found), weights={"lexical": cfg.lexical_weight}, reference=found.ids)
    else:
        fused = rrf({"vector": found.dense_order, "lexical": found.lexical_order}, k=cfg.rrf_k)
        found.base = {item.key: item.score for item in fused}  # type: ignore[misc]
    found.final = dict(found.base)


def _sources(found: Candidates) -> dict[str, dict[uuid.UUID, float]]:
    """The retrievers' exact scores of the candidates: cosine, lexical and, when late interaction
    scanned the scope (:func:`_late_retrieval`), MaxSim."""
    sources = {"vector": found.similarity, "lexical": found.lexical_score}
    late = {i: found.scanned[i] for i in found.kind_of if i in found.scanned}
    if late:
        # a candidate the scan did not cover (a cortex line or block) is average on the late scale
        average = sum(late.values()) / len(late)
        sources["late"] = late | {i: average for i in found.kind_of if i not in late}
    return sources


# --- 4b. structural links ------------------------------------------------------------------------
async def follow_links(rt: Runtime, conn: psycopg.AsyncConnection, request: Request, found: Candidates) -> None:
    """The retrieval chain's structural step (memory-architecture §1.3, §7.4): the items linked to the
    best ``chain_seeds`` memories (``cites``, ``continues``, ``derived_from``, ``thematic``) join the
    candidates, scored on their own by both retrievers, whichever tier holds them."""
    seeds = [i for i in sorted(found.base, key=lambda i: -found.base[i]) if found.kind_of[i] == "memory"]
    seeds = seeds[: rt.settings.chain_seeds]
    if not seeds or rt.settings.fusion != "zscore":
        return
    scope = request.scope
    linked = await tiers.linked_items(conn, scope.entity_id, scope.namespace, seeds)
    new = [(i, kind) for i, kind in linked if i not in found.kind_of and kind in request.kinds]
    if request.blocks_by_lines and new:
        blocks = await tiers.block_memories(conn, scope.entity_id, scope.namespace, [i for i, _ in new])
        new = [(i, kind) for i, kind in new if i not in blocks]
    if not new:
        return
    found.kind_of |= dict(new)
    ids = [i for i, _ in new]
    await _score_exactly(rt, conn, request, found, ids)
    found.ids.extend(ids)
    found.base = zscore_fuse(
        _sources(found),
        weights={"lexical": rt.settings.lexical_weight},
        reference=found.ids,
    )
    found.final = dict(found.base)


# --- 5. neighbour smoothing ------------------------------------------------------------------------
async def smooth_neighbours(rt: Runtime, conn: psycopg.AsyncConnection, request: Request, found: Candidates) -> None:
    """The best utterances (raw turns, and lines that outlived theirs) bring their session
    neighbours in, and every utterance earns a share of its neighbours' scores (``neighbour_weights``)."""
    cfg = rt.settings
    base = found.base
    if not cfg.neighbour_weights or "turn" not in request.kinds or not base:
        return
    scope = request.scope
    ranked = sorted(base, key=lambda i: -base[i])
    said = [i for i in ranked if found.kind_of[i] in ("turn", "line")]
    where, bounds, kinds = await search_rows.positions(
        conn,
        scope.entity_id,
        scope.namespace,
        said,
        said[: cfg.neighbour_anchors] if cfg.fusion == "zscore" else [],
        len(cfg.neighbour_weights),
        lines=found.facts is None or found.facts.lines,
    )
    new = [i for i in where if i not in base]
    if new:
        found.kind_of |= {i: kinds[i] for i in new}
        await _similarities(rt, conn, request, found, new)
        found.lexical_score |= await _lexical_scores(rt, conn, scope, request.text, new)
        found.base = base = zscore_fuse(
            _sources(found),
            weights={"lexical": cfg.lexical_weight},
            reference=found.ids,
        )
    found.final = smooth(base, where, cfg.neighbour_weights, floor=min(base.values()), bounds=bounds)


def _names_asked(rt: Runtime, request: Request) -> list[str] | None:
    """The question's names, whose presence in the scope the refusal weighs (None when refusal is
    off: a threshold of -1, or ``refuse_unknown_names`` false)."""
    if not rt.settings.refuse_unknown_names or request.threshold <= -1.0:
        return None
    return proper_names(request.text)


# --- 5b. late interaction ----------------------------------------------------------------------------
async def late_interaction(rt: Runtime, conn: psycopg.AsyncConnection, request: Request, found: Candidates) -> None:
    """Re-rank the head the blend will score (cognitive-plan §2.6): each candidate's fused score and
    its MaxSim over token embeddings (:mod:`mnemo.cognition.late`), or the configured cross-encoder's
    score (:mod:`mnemo.rerank`), as z-scores, added. Token embeddings come from the cache; a
    candidate missing there is embedded once and cached."""
    final = found.final
    if len(final) < 2 or not rt.settings.late_interaction:
        return
    head = _head(rt, request, final)
    if rt.reranker is not None:
        scored = await _cross_scores(rt, conn, request, head)
    elif found.query_tokens is not None and len(found.query_tokens.ids) > 0:
        tokens = await _token_vectors(rt, conn, request.scope, head)
        read = [i for i in head if i in tokens]
        scored = dict(zip(read, late_scores(found.query_tokens, [tokens[i] for i in read]).tolist(), strict=True))
    else:
        return
    if len(scored) < 2:
        return
    # a head item with no text to read (a cortex block) is taken as average on the late scale
    average = sum(scored.values()) / len(scored)
    combined = combine([final[i] for i in head], [scored.get(i, average) for i in head])
    # the re-ranked head stays above everything else, in its new order
    taken = set(head)
    floor = max((score for i, score in final.items() if i not in taken), default=0.0)
    shift = floor + 1.0 - float(combined.min())
    found.smoothed = final
    found.late = scored
    found.final = final | {i: float(c) + shift for i, c in zip(head, combined, strict=True)}


# --- 5c. time-aware queries -----------------------------------------------------------------------
async def time_frame(rt: Runtime, conn: psycopg.AsyncConnection, request: Request, found: Candidates) -> None:
    """Rank the head's candidates of the period the question names (:mod:`mnemo.cognition.timeframe`)
    above the rest of the head, each group in its own order."""
    if not rt.settings.time_aware or len(found.final) < 2:
        return
    window = query_window(request.text, request.now)
    if window is None:
        return
    head = _head(rt, request, found.final)
    texts = await search_rows.item_texts(conn, request.scope.entity_id, request.scope.namespace, head)
    inside = [i for i in head if i in texts and in_window(window, texts[i].content, texts[i].at)]
    if not inside or len(inside) == len(head):
        return  # nothing, or everything, is of that period: nothing to tell apart
    scores = [found.final[i] for i in head]
    lift = max(scores) - min(scores) + 1.0
    found.in_period = set(inside)
    found.smoothed = found.smoothed or found.final
    found.final = found.final | {i: found.final[i] + lift for i in inside}


async def attribution(rt: Runtime, conn: psycopg.AsyncConnection, request: Request, found: Candidates) -> None:
    """Keep only the candidates the requested processes wrote (archive-adr §4: a caller can recall
    what one subsystem, e.g. a simulation branch, wrote, or leave it out by naming the others)."""
    if not request.processes or not found.final:
        return
    scope = request.scope
    written = await search_rows.item_processes(conn, scope.entity_id, scope.namespace, list(found.final))
    keep = {i for i, p in written.items() if p in request.processes}
    found.final = {i: s for i, s in found.final.items() if i in keep}
    found.smoothed = {i: s for i, s in found.smoothed.items() if i in keep}


async def _cross_scores(
    rt: Runtime, conn: psycopg.AsyncConnection, request: Request, head: Sequence[uuid.UUID]
) -> dict[uuid.UUID, float]:
    """The cross-encoder's score of each head item that has text here (turns, lines, memories)."""
    texts = await search_rows.item_texts(conn, request.scope.entity_id, request.scope.namespace, head)
    read = [i for i in head if i in texts]
    scores = await rt.reranker.scores(request.text, [item_text(rt, texts[i]) for i in read])
    return dict(zip(read, scores.tolist(), strict=True))


def _head(rt: Runtime, request: Request, scores: Mapping[uuid.UUID, float]) -> list[uuid.UUID]:
    """The top of the search ranking that the blend scores."""
    return sorted(scores, key=lambda i: (-scores[i], str(i)))[: max(rt.settings.blend_depth, request.k * 2)]


async def _token_vectors(
    rt: Runtime, conn: psycopg.AsyncConnection, scope: Scope, ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, TokenVectors]:
    """``ids``' token embeddings, from the cache or the store; the items that have none are asked
    for in the background (:mod:`mnemo.recall.backfill`), never embedded during a recall."""
    e, ns, slug = scope.entity_id, scope.namespace, str(rt.slug)
    cache = rt.tokens()
    found = {k[2]: tv for k, tv in cache.get([(e, ns, i, slug) for i in ids]).items()}
    stored = await token_rows.fetch(conn, e, ns, slug, [i for i in ids if i not in found])
    cache.put({(e, ns, i, slug): tv for i, tv in stored.items()})
    found |= stored
    if missing := [i for i in ids if i not in found]:
        rt.backfill.request(rt, (e, ns, slug), missing, item_text)
    return found


# --- 6. cognitive blend -------------------------------------------------------------------------
async def blend(rt: Runtime, conn: psycopg.AsyncConnection, request: Request, found: Candidates) -> Blended:
    """Score the head of the search ranking, plus memories reached by spreading activation, by the
    blend of search, ACT-R activation, Beta weight, recency, co-access and noise (cognitive-plan §3.1)."""
    cfg = rt.settings
    scope = request.scope
    final = found.final
    head = _head(rt, request, final)
    searched = minmax({i: final[i] for i in head})
    activated = await _spread(rt, conn, request, found, head, searched)
    await _similarities(rt, conn, request, found, [i for i in head if i not in found.similarity])
    turn_rows = await search_rows.hydrate_turns(
        conn, scope.entity_id, scope.namespace, [i for i in head if found.kind_of[i] == "turn"]
    )
    memory_rows = await dynamic_rows.memory_states(
        conn, scope.entity_id, scope.namespace, [i for i in head if found.kind_of[i] == "memory"]
    )
    line_rows = await tiers.hydrate_lines(
        conn, scope.entity_id, scope.namespace, [i for i in head if found.kind_of[i] == "line"]
    )
    mature = bool(memory_rows) and await search_rows.has_at_least(
        conn, scope.entity_id, scope.namespace, cfg.blend_mature_after
    )
    rng = _draws(rt, request)
    weights = blend_weights(
        MATURE_ALPHAS if mature else COLD_START_ALPHAS,
        None if rng is None else np.random.default_rng(rng.getrandbits(64)),
    )
    rows: dict[uuid.UUID, Mapping[str, Any]] = {**line_rows, **memory_rows, **turn_rows}
    scored: Scored = []
    for item_id in head:
        row = rows.get(item_id)
        if row is None or _after(request, row):
            continue
        parts = components(
            cfg, row, found.kind_of[item_id], found.similarity.get(item_id, 0.0), request.now, request.cues, rng
        ) | {"search": searched.get(item_id, 0.0), "coaccess": activated.get(item_id, 0.0)}
        scored.append((blend_score(parts, weights), item_id, parts))
    superseders = _superseders(scored, memory_rows)
    scored = below_superseders(scored, superseders)
    tier_of = _tiers_of(scored, superseders)
    scored.sort(key=lambda x: (tier_of[x[1]], -x[0], str(x[1])))
    return Blended(scored=scored, weights=weights, rows=rows)


def _tiers_of(scored: Scored, superseders: Mapping[uuid.UUID, Sequence[uuid.UUID]]) -> dict[uuid.UUID, int]:
    """Relevance first: the candidates' tiers of about equal search relevance
    (:func:`~mnemo.cognition.relevance.relevance_tiers`), a superseded memory at best in the tier of
    the memory that superseded it (it never outranks it)."""
    tier_of = relevance_tiers({i: parts["search"] for _, i, parts in scored})
    for item_id, newers in superseders.items():
        tier_of[item_id] = max([tier_of[item_id], *(tier_of[n] for n in newers)])
    return tier_of


def _after(request: Request, row: Mapping[str, Any]) -> bool:
    """Whether an item happened after the point in time the recall is made at (``as_of``), by its event
    time (DESIGN §2 "Time"): a turn's own time, a memory's ``event_time`` (a derived memory's: its
    sources'), else when it was written. A night that ran later still leaves its work visible at the
    time of what it was made from."""
    when = row.get("event_time") or row.get("created_at")
    return request.as_of is not None and isinstance(when, datetime) and when > request.as_of


def _draws(rt: Runtime, request: Request) -> random.Random | None:
    """This recall's generator (``scoring="stochastic"``), or None for expected values."""
    if rt.settings.scoring != "stochastic":
        return None
    return random.Random(request.seed) if request.seed is not None else rt.child_rng()


async def _spread(
    rt: Runtime,
    conn: psycopg.AsyncConnection,
    request: Request,
    found: Candidates,
    head: list[uuid.UUID],
    searched: Mapping[Any, float],
) -> dict[uuid.UUID, float]:
    """Co-access activation spread from the best memories; memories it reaches join ``head``."""
    cfg = rt.settings
    memory_head = [i for i in head if found.kind_of[i] == "memory"]
    if not memory_head or not cfg.coaccess_seeds:
        return {}
    seeds = memory_head[: cfg.coaccess_seeds]
    links = await dynamics.neighbours(conn, cfg, request.scope, seeds, request.now, hops=request.hops)
    if not links:
        return {}
    activated = spread({i: searched[i] for i in seeds}, links, hops=request.hops)
    for extra in activated:
        if extra not in found.kind_of:
            found.kind_of[extra] = "memory"
            head.append(extra)
    return activated


def _superseders(
    scored: Scored, memory_rows: Mapping[uuid.UUID, Mapping[str, Any]]
) -> dict[uuid.UUID, list[uuid.UUID]]:
    """Per superseded candidate, the candidates that superseded it."""
    present = {i for _, i, _ in scored}
    superseders: dict[uuid.UUID, list[uuid.UUID]] = {}
    for item_id, row in memory_rows.items():
        for text in (row.get("metadata") or {}).get("superseded_by") or ():
            with contextlib.suppress(ValueError, TypeError):
                newer = uuid.UUID(str(text))
                if newer in present and item_id in present:
                    superseders.setdefault(item_id, []).append(newer)
    return superseders


def below_superseders(scored: Scored, superseders: Mapping[uuid.UUID, Sequence[uuid.UUID]]) -> Scored:
    """A superseded memory never outranks a memory that superseded it when both are candidates
    (it keeps its own score when its superseder did not come up: still recallable);
    ``superseders``: per superseded candidate, the candidates that superseded it."""
    score = {i: sc for sc, i, _ in scored}
    for _ in range(len(superseders)):  # chains A <- B <- C settle in at most this many passes
        changed = False
        for item_id, newers in superseders.items():
            cap = min(score[n] for n in newers) - 1e-6
            if score[item_id] > cap:
                score[item_id], changed = cap, True
        if not changed:
            break
    return [(score[i], i, parts) for _, i, parts in scored]


def components(
    cfg: Settings,
    row: Mapping[str, Any],
    item_kind: str,
    similarity: float,
    now: datetime,
    cues: Mapping[str, object] | None,
    rng: random.Random | None,
) -> dict[str, float]:
    """ACT-R activation, weight, recency and noise of one candidate (turns have the prior weight and a
    single trace at their time)."""
    if item_kind == "memory":
        weight = weight_of(row)
        history = history_of(row)
        last = row.get("last_accessed") or row.get("event_time") or row["created_at"]
        attributes: dict[str, object] = {**(row.get("metadata") or {}), "kind": row["kind"]}
    else:
        weight = DEFAULT
        history = AccessHistory(row["created_at"].timestamp())
        last = row["created_at"]
        attributes = {
            **(row.get("metadata") or {}),
            "kind": "turn",
            "role": row.get("role"),
            "speaker": row.get("speaker"),
        }
    a = activation(
        base_level(history, now.timestamp(), cfg.actr_decay),
        spreading(similarity, cfg.actr_spreading),
        partial_match(attributes, cues or {}, cfg.actr_mismatch),
        logistic_noise(rng, cfg.actr_noise) if rng is not None else 0.0,
    )
    return {
        "activation": retrieval_probability(a, cfg.actr_tau, cfg.actr_noise),
        "weight": weight.observe(rng) if rng is not None else weight.center,
        "recency": recency((now - last).total_seconds(), cfg.recency_half_life_days * 86400),
        "noise": rng.random() if rng is not None else 0.5,
    }


# --- 7. decide ---------------------------------------------------------------------------------------
def decide(rt: Runtime, request: Request, found: Candidates, blended: Blended, started: float) -> Decision:
    """The top k as hits, the near misses below them, and a refusal when the best similarity among
    the hits is under the threshold."""
    top = blended.scored[: request.k]
    hits = tuple(_hit(request, found, blended.rows[item_id], item_id, score, parts) for score, item_id, parts in top)
    spare = tuple(
        _hit(request, found, blended.rows[item_id], item_id, score, parts)
        for score, item_id, parts in blended.scored[request.k : 2 * request.k]
    )
    relevant = most_relevant({i: parts["search"] for _, i, parts in blended.scored}, request.k)
    near = blended.scored[max(request.k, 5) : rt.settings.near_miss_until]
    sims = [h.similarity for h in hits if h.similarity is not None]
    best = max(sims) if sims else None
    verdict = judge(best, request.threshold, found.names)
    return Decision(
        hits=hits,
        near_misses=[
            i
            for _, i, _ in near
            if found.kind_of[i] == "memory" and suppressible(i, relevant, found.similarity, request.threshold)
        ],
        best=best,
        refused=verdict.refused,
        latency_ms=(time.perf_counter() - started) * 1000,
        spare=spare,
        unknown=verdict.unknown,
        relevant=relevant,
    )


def _hit(
    request: Request,
    found: Candidates,
    row: Mapping[str, Any],
    item_id: uuid.UUID,
    score: float,
    parts: Mapping[str, float],
) -> Hit:
    return Hit(
        id=item_id,
        item_kind=_item_kind(found.kind_of[item_id]),
        content=row["content"],
        score=score,
        similarity=found.similarity.get(item_id),
        vector_rank=found.vector_rank.get(item_id),
        lexical_rank=found.lexical_rank.get(item_id),
        lexical_score=found.lexical_score.get(item_id),
        created_at=row["created_at"],
        scope=request.scope,
        session_id=row.get("session_id"),
        turn_number=row.get("turn_number"),
        role=row.get("role"),
        speaker=row.get("speaker"),
        memory_kind=row.get("kind"),
        token_count=row.get("token_count", 0),
        metadata=row.get("metadata") or {},
        neighbour_boost=(found.smoothed or found.final).get(item_id, 0.0) - found.base.get(item_id, 0.0),
        fused=(found.smoothed or found.final).get(item_id),
        late=found.late.get(item_id),
        in_period=item_id in found.in_period,
        search=parts["search"],
        activation=parts["activation"],
        weight=parts["weight"],
        recency=parts["recency"],
        coaccess=parts["coaccess"],
        noise=parts["noise"],
        compressed=row.get("compressed"),
        event_time=row.get("event_time"),
        tier="cortex" if row.get("tier") == "cortex" else "hippocampus",
    )


async def quote(
    rt: Runtime,
    conn: psycopg.AsyncConnection,
    request: Request,
    found: Candidates,
    decision: Decision,
    rows: Mapping[uuid.UUID, Mapping[str, Any]],
) -> Decision:
    """Bifocal hits (memory-architecture §6): each block hit quotes its lines that match the query;
    a line hit is its own quote, with its block's gist. A line is paid for once: a block hit drops
    the lines a better hit already shows, and goes when none is left (the next candidate moves up)."""
    ranked = (*decision.hits, *decision.spare)
    quoted = await cortex_search.bifocal(rt, conn, request.scope, found.vector, ranked, expand=request.expand)
    lined = [cortex_search.line_hit(h, rows[h.id]) if h.item_kind == "line" and h.id in rows else h for h in quoted]
    hits = cortex_search.once(lined, lambda t: rt.embeddings.count_tokens([t])[0], _stated(rows))[: request.k]
    counts = iter(rt.embeddings.count_tokens([h.content for h in hits if h.item_kind == "line"]))
    hits = [dataclasses.replace(h, token_count=next(counts)) if h.item_kind == "line" else h for h in hits]
    return dataclasses.replace(decision, hits=tuple(hits), spare=())


def _stated(rows: Mapping[uuid.UUID, Mapping[str, Any]]) -> dict[uuid.UUID, set[uuid.UUID]]:
    """Per fact memory among ``rows``, the turns it was read from (its provenance)."""
    stated: dict[uuid.UUID, set[uuid.UUID]] = {}
    for item_id, row in rows.items():
        if "fact_id" in (row.get("metadata") or {}) and row.get("provenance"):
            with contextlib.suppress(ValueError, TypeError):
                stated[item_id] = {uuid.UUID(str(t)) for t in row["provenance"]}
    return stated


def _item_kind(kind: str) -> ItemKind:
    return "turn" if kind == "turn" else "line" if kind == "line" else "memory"


# --- 8. trace and mutate ---------------------------------------------------------------------------
async def trace_and_mutate(rt: Runtime, conn: psycopg.AsyncConnection, request: Request, decision: Decision) -> int:
    """Log the retrieval; unless read-only, a refusal or a grantee's read, reinforce and link the
    returned memories and mildly suppress the near misses (cognitive-plan §3.8). Both go in one
    transaction that commits without waiting for the disk (:func:`~mnemo.store.traces.commit_lazily`:
    atomic and ordered; only a crash of the database machine within a fraction of a second can lose
    it), its statements pipelined. Returns how many memories were reinforced."""
    scope = request.scope
    mutates = not (decision.refused or request.read_only or not rt.settings.mutation or not request.owner_reads)
    # Use strengthens, being returned does not: a memory the blend lifted into the top k over more
    # relevant ones is not reinforced for it (else every lift would feed the next one).
    memories = [h.id for h in decision.hits if h.item_kind == "memory" and h.id in decision.relevant] if mutates else []
    if not request.trace and not (memories or (mutates and decision.near_misses)):
        return 0

    async def write() -> None:
        # pipeline mode: the statements whose results are not read go to the server together
        async with conn.pipeline(), conn.transaction():
            await trace_rows.commit_lazily(conn)
            if request.trace:
                await _trace(conn, request, decision)
            if mutates:
                await dynamics.mutate_after_recall(
                    conn, rt.settings, scope, memories, decision.near_misses, query=request.text, now=request.now
                )

    await retry_conflicts(write)
    return len(memories)


async def _trace(conn: psycopg.AsyncConnection, request: Request, decision: Decision) -> None:
    scope = request.scope
    await trace_rows.record_retrieval(
        conn,
        trace_id=uuid7(),
        entity_id=scope.entity_id,
        namespace=scope.namespace,
        reader=request.reader,
        query=request.text,
        k=request.k,
        outcome="refusal" if decision.refused else "hits",
        best_similarity=decision.best,
        threshold=request.threshold,
        hit_ids=[] if decision.refused else [h.id for h in decision.hits],
        latency_ms=decision.latency_ms,
        read_only=request.read_only,
    )


# --- recall at a level of the cortex tree -------------------------------------------------------
async def recall_at_level(
    rt: Runtime,
    scope: Scope,
    query: object,
    k: int,
    level: int,
    *,
    as_entity: str | None,
    threshold: float | None,
) -> RecallResult | Refusal:
    """``retrieve_at_level`` (memory-architecture §5.4): the tree nodes of ``level`` nearest to the
    query, read-only, under the same access rules and refusal threshold as any recall."""
    if not isinstance(level, int) or isinstance(level, bool) or not 0 <= level <= 3:
        raise InvalidContentError(f"level must be 0 (items), 1 (branch), 2 (trunk) or 3 (canopy), not {level!r}")
    started = time.perf_counter()
    request = check(
        rt, scope, query, k, as_entity=as_entity, read_only=True, threshold=threshold, kinds=ITEM_KINDS,
        trace=False, query_vector=None, cues=None, now=None, seed=None, hops=None,
    )  # fmt: skip
    async with rt.store.connection() as conn:
        deep = rt.settings.cortex and (await _facts(conn, scope, request.reader)).deep
    vector = await rt.embeddings.embed_query(request.text)
    hits = tuple(await cortex_search.at_level(rt, scope, vector, level, k)) if deep else ()
    best = max((h.similarity or 0.0 for h in hits), default=None)
    latency = (time.perf_counter() - started) * 1000
    if best is None or best < request.threshold:
        return Refusal(request.text, scope, best, request.threshold, latency, candidates=hits)
    return RecallResult(request.text, scope, hits, best, latency, weights={})


# --- 9. result ------------------------------------------------------------------------------------
def _unknown_message(names: Sequence[str]) -> str:
    listed = ", ".join(names[:-1]) + (" or " if len(names) > 1 else "") + names[-1]
    return f"The archive holds nothing that mentions {listed}."


def result(request: Request, decision: Decision, blended: Blended) -> RecallResult | Refusal:
    if decision.refused:
        refusal = Refusal(
            query=request.text,
            scope=request.scope,
            best_similarity=decision.best,
            threshold=request.threshold,
            latency_ms=decision.latency_ms,
            candidates=decision.hits,
        )
        if decision.unknown:
            return dataclasses.replace(refusal, unknown=decision.unknown, message=_unknown_message(decision.unknown))
        return refusal
    return RecallResult(
        query=request.text,
        scope=request.scope,
        hits=decision.hits,
        best_similarity=decision.best,
        latency_ms=decision.latency_ms,
        weights=blended.weights,
    )
