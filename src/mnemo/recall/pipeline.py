"""The read path: hybrid search, score fusion, neighbour smoothing, hard refusal, trace.

Seeds: cognitive-plan §2.5, §2.7, §3.1, §3.8 (HNSW + full-text candidates, fused), §4.6
(contextual retrieval), archive-adr §7 ("The Mentat Refusal": below the
threshold the caller gets a refusal, not a guess; "Sigil Scope": every read is
scoped and cross-entity reads need a grant), memory-architecture §1.3, §2.4.

The stages live in :mod:`mnemo.recall.stages`, one function each over a
:class:`~mnemo.recall.stages.Candidates` record that every stage enriches;
:func:`recall` only runs them in order. A new stage (the long-term tier's
cortex search, a re-ranker) is one more function and one more line here.

Pipeline (each piece switchable in :class:`~mnemo.config.Settings`, measured by
``mnemo bench locomo --ablate``):

1. check access; embed the query;
2. candidates of that scope and the active embedder slug only: HNSW (cosine),
   lexical (``lexical``: in-database BM25, or ``ts_rank_cd``) and, in a scope
   of at most ``late_scan_limit`` items, late interaction (``late_retrieval``:
   MaxSim over every item's token embeddings), ``candidate_depth`` each;
3. fuse (``fusion``): z-scores of the retrievers over the candidates, lexical
   weighted by ``lexical_weight``, every candidate scored by every retriever
   exactly — or reciprocal-rank fusion (k = ``rrf_k``);
4. neighbour smoothing (``neighbour_weights``): the top ``neighbour_anchors``
   turns bring their session neighbours in, and every turn earns a share of
   its neighbours' scores;
5. cognitive blend (cognitive-plan §2.7, §3.1): the top ``blend_depth``
   candidates, plus memories reached by spreading activation over co-access
   links from the best ``coaccess_seeds`` memories, are scored by
   ``sum_c w_c * component_c`` over the min-max-scaled search score, ACT-R
   retrieval probability, Beta weight, recency (7-day half-life), co-access
   activation and noise; ``w`` is a Dirichlet draw (``scoring="stochastic"``)
   or its expectation (``"deterministic"``), cold-start or mature alphas;
5b. learned fusion (``ranker``): the head's turns and lines put in the order of the shipped
   ranking model over the hand-set rank, neighbours, session evidence, speaker, names and period,
   then spread over sessions (``spread_sessions``; :mod:`mnemo.recall.learned`);
6. top k; refuse if the question's names are unknown to the scope, if (``refuse_unsupported``) a
   word it is about is never held and no hit matches it (:mod:`mnemo.recall.support`), or if the
   best similarity is under the threshold; trace;
7. unless read-only, retrieval-induced mutation (cognitive-plan §3.8): the
   returned memories are reinforced and linked, near misses (blended ranks
   ``max(k, 5) + 1`` to ``near_miss_until``) mildly suppressed. Only the
   scope's owner mutates it; reads through a grant leave it unchanged.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from datetime import datetime

import numpy as np

from mnemo._runtime import Runtime
from mnemo._upkeep import note_writes
from mnemo.models import RecallResult, Refusal, Scope
from mnemo.recall import stages
from mnemo.recall.answerable import check_answerable
from mnemo.recall.stages import ITEM_KINDS

__all__ = ["ITEM_KINDS", "recall"]


async def recall(
    rt: Runtime,
    scope: Scope,
    query: object,
    k: int = 10,
    *,
    as_entity: str | None = None,
    read_only: bool = False,
    threshold: float | None = None,
    kinds: tuple[str, ...] = ITEM_KINDS,
    trace: bool = True,
    query_vector: Sequence[float] | np.ndarray | None = None,
    cues: Mapping[str, object] | None = None,
    now: datetime | None = None,
    seed: int | None = None,
    hops: int | None = None,
    expand: bool = False,
    level: int | None = None,
    processes: Sequence[str] | None = None,
    mood: Sequence[float] | np.ndarray | None = None,
) -> RecallResult | Refusal:
    """Recall up to ``k`` items of ``scope`` for ``query``; a :class:`Refusal` below the threshold.

    ``query_vector`` (already embedded with the active model) skips the query embedding. ``cues``
    (e.g. ``{"kind": "preference"}``) penalise candidates whose kind or metadata disagree (ACT-R
    partial matching). ``now`` is the time activation and recency are measured at (default: now);
    ``seed`` fixes the stochastic draws of this one recall; ``hops`` (0-2, default
    ``spreading_hops``) sets how far activation spreads over co-access links; ``processes``
    keeps the items those processes wrote; ``mood`` (a gut direction) sets the blend's emotional
    component to each item's alignment with it.
    """
    started = time.perf_counter()
    if level:
        return await stages.recall_at_level(rt, scope, query, k, level, as_entity=as_entity, threshold=threshold)
    request = stages.check(
        rt, scope, query, k, as_entity=as_entity, read_only=read_only, threshold=threshold, kinds=kinds,
        trace=trace, query_vector=query_vector, cues=cues, now=now, seed=seed, hops=hops, expand=expand,
        processes=processes, mood=mood,
    )  # fmt: skip
    embedding = stages.start_embedding(rt, request)
    async with rt.store.connection() as conn:
        found = await stages.retrieve(rt, conn, request, embedding)
        await stages.fuse(rt, conn, request, found)
        await stages.follow_links(rt, conn, request, found)
        await stages.smooth_neighbours(rt, conn, request, found)
        await stages.late_interaction(rt, conn, request, found)
        await stages.time_frame(rt, conn, request, found)
        await stages.attribution(rt, conn, request, found)
        await stages.learned_rank(rt, conn, request, found)
        blended = await stages.blend(rt, conn, request, found)
        blended = await stages.current(rt, conn, request, found, blended)
        await stages.support(rt, conn, request, found, blended)
        decision = stages.decide(rt, request, found, blended, started)
        decision = await check_answerable(rt, request, decision)  # with an LLM: do the hits answer it?
        decision = await stages.quote(rt, conn, request, found, decision, blended.rows)
        mutated = await stages.trace_and_mutate(rt, conn, request, decision)
    if mutated:
        await note_writes(rt, mutated * 2)  # access/weight rows and their co-access links
    return stages.result(request, decision, blended)
