"""Recall stages 4-5c: fuse the retrievers' scores, follow structural links, smooth over session
neighbours, re-rank the head by late interaction, lift the period a question names, keep the
requested processes. Seeds: cognitive-plan §2.5, §2.6; memory-architecture §1.3, §7.4.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence

import psycopg

from mnemo._runtime import Runtime
from mnemo.cognition.scoring.fusion import rrf, zscore_fuse
from mnemo.cognition.scoring.late import TokenVectors, combine, late_scores
from mnemo.cognition.scoring.neighbours import smooth
from mnemo.cognition.scoring.timeframe import in_window, query_window
from mnemo.embed import int8_product
from mnemo.models import Scope
from mnemo.recall.first_stage import FirstStage
from mnemo.recall.records import Candidates, Request
from mnemo.recall.retrieve import _lexical_scores, _score_exactly, _similarities
from mnemo.store import search as search_rows
from mnemo.store import tiers
from mnemo.store import token_vectors as token_rows


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
    ranked = sorted(base, key=lambda i: -base[i])
    said = [i for i in ranked if found.kind_of[i] in ("turn", "line")]
    where, bounds, kinds = await found.stage.positions(
        said,
        said[: cfg.neighbour_anchors] if cfg.fusion == "zscore" else [],
        len(cfg.neighbour_weights),
        lines=found.facts is None or found.facts.lines,
    )
    new = [i for i in where if i not in base]
    if new:
        found.kind_of |= {i: kinds[i] for i in new}
        await _similarities(rt, conn, request, found, new)
        found.lexical_score |= await _lexical_scores(rt, found, request.text, new)
        found.base = base = zscore_fuse(
            _sources(found),
            weights={"lexical": cfg.lexical_weight},
            reference=found.ids,
        )
    found.positions, found.bounds = dict(where), dict(bounds)
    found.final = smooth(base, where, cfg.neighbour_weights, floor=min(base.values()), bounds=bounds)


# --- 5b. late interaction ----------------------------------------------------------------------------
async def late_interaction(rt: Runtime, conn: psycopg.AsyncConnection, request: Request, found: Candidates) -> None:
    """Re-rank the head the blend will score (cognitive-plan §2.6): each candidate's fused score and
    its MaxSim over token embeddings (:mod:`mnemo.cognition.scoring.late`), or the configured cross-encoder's
    score (:mod:`mnemo.rerank`), as z-scores, added. Token embeddings come from the cache; a
    candidate missing there is embedded once and cached."""
    final = found.final
    if len(final) < 2 or not rt.settings.late_interaction:
        return
    head = _head(rt, request, final)
    if rt.reranker is not None:
        scored = await _cross_scores(rt, conn, request, head)
    elif found.query_tokens is not None and len(found.query_tokens.ids) > 0:
        tokens = await _token_vectors(rt, conn, found.stage, request.scope, head)
        read = [i for i in head if i in tokens]
        late = late_scores(found.query_tokens, [tokens[i] for i in read], int8_product)  # int8 (issue 42, decision 1)
        scored = dict(zip(read, late.tolist(), strict=True))
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
    """Rank the head's candidates of the period the question names (:mod:`mnemo.cognition.scoring.timeframe`)
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
    scores = await rt.reranker.scores(request.text, [rt.item_text(texts[i]) for i in read])
    return dict(zip(read, scores.tolist(), strict=True))


def _head(rt: Runtime, request: Request, scores: Mapping[uuid.UUID, float]) -> list[uuid.UUID]:
    """The top of the search ranking that the blend scores: ``blend_depth`` candidates whatever k is
    asked, so the first hits rank the same for a caller asking 10 as for one asking 50 (issue 42);
    a k above ``blend_depth`` deepens it to k."""
    return sorted(scores, key=lambda i: (-scores[i], str(i)))[: max(rt.settings.blend_depth, request.k)]


async def _token_vectors(
    rt: Runtime, conn: psycopg.AsyncConnection, stage: FirstStage | None, scope: Scope, ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, TokenVectors]:
    """``ids``' token embeddings, from the scope's read index, the cache or the store; the items that
    have none are asked for in the background (:mod:`mnemo.write.backfill`), never embedded
    during a recall."""
    e, ns, slug = scope.entity_id, scope.namespace, str(rt.slug)
    cache = rt.tokens()
    found = stage.held_tokens(ids) if stage is not None else {}
    found |= {k[2]: tv for k, tv in cache.get([(e, ns, i, slug) for i in ids if i not in found]).items()}
    stored = await token_rows.fetch(conn, e, ns, slug, [i for i in ids if i not in found])
    cache.put({(e, ns, i, slug): tv for i, tv in stored.items()})
    found |= stored
    if missing := [i for i in ids if i not in found]:
        rt.backfill.request(rt, (e, ns, slug), missing)
    return found
