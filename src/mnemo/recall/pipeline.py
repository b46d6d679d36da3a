"""The read path: hybrid search, score fusion, neighbour smoothing, hard refusal, trace.

Seeds: cognitive-plan §2.5, §2.7, §3.1, §3.8 (HNSW + full-text candidates, fused), §4.6
(contextual retrieval), archive-adr §7 ("The Mentat Refusal": below the
threshold the caller gets a refusal, not a guess; "Sigil Scope": every read is
scoped and cross-entity reads need a grant), memory-architecture §1.3, §2.4.

Each stage is one function over the :class:`~mnemo.recall.records.Candidates` record that the
previous ones filled in; :func:`recall` only runs them in order, imported from the module of their
section: :mod:`~mnemo.recall.retrieve` (check, embed, retrieve), :mod:`~mnemo.recall.rank` (fuse,
links, neighbours, late interaction, time, attribution), :mod:`~mnemo.recall.learned` (learned
fusion), :mod:`~mnemo.recall.blend` (the cognitive blend), :mod:`~mnemo.recall.current`,
:mod:`~mnemo.recall.support`, :mod:`~mnemo.recall.decide` (decide, quote, trace, result, and
recall at a level of the cortex tree) and :mod:`~mnemo.recall.answerable`. A new stage (a
re-ranker, another tier) is one more function and one more line here.

Pipeline, in the order :func:`recall` runs it (each piece switchable in
:class:`~mnemo.config.Settings`, measured by ``mnemo bench locomo --ablate``):

1. ``check`` the request (nothing touches the database before); ``start_embedding`` embeds the
   query in a worker thread while
2. ``retrieve`` checks access and gathers candidates of that scope and the active embedder slug
   only: lexical (``lexical``: in-database BM25, or ``ts_rank_cd``), HNSW (cosine) and, in a
   scope of at most ``late_scan_limit`` items, late interaction (``late_retrieval``: MaxSim over
   every item's token embeddings), ``candidate_depth`` each — from the scope's warm read index or
   through SQL (:mod:`~mnemo.recall.first_stage`);
3. ``fuse`` (``fusion``): z-scores of the retrievers over the candidates, lexical weighted by
   ``lexical_weight``, every candidate scored by every retriever exactly — or reciprocal-rank
   fusion (k = ``rrf_k``);
4. ``follow_links``: the items linked to the best ``chain_seeds`` memories join the candidates;
5. ``smooth_neighbours`` (``neighbour_weights``): the top ``neighbour_anchors`` turns bring their
   session neighbours in, and every turn earns a share of its neighbours' scores;
6. the head: ``late_interaction`` re-ranks it by MaxSim over token embeddings (or a
   cross-encoder); ``time_frame`` lifts its candidates of the period the question names;
   ``preferences_asked`` (``advice_preferences``, off by default) lifts, for a request for advice
   about someone, the preference memories about them most similar to it (issue 43);
   ``attribution`` keeps the candidates the requested ``processes`` wrote;
7. ``learned_rank``, the learned fusion (``ranker``): the head's turns and lines put in the order
   of the shipped ranking model over the hand-set rank, neighbours, session evidence, speaker,
   names and period, then spread over sessions (``spread_sessions``);
8. ``blend``, the cognitive blend (cognitive-plan §2.7, §3.1), over the learned order: the top
   ``blend_depth`` candidates, plus memories reached by spreading activation over co-access links
   from the best ``coaccess_seeds`` memories, are scored by ``sum_c w_c * component_c`` over the
   min-max-scaled search score, ACT-R retrieval probability, Beta weight, recency (7-day
   half-life), co-access activation, noise and (with a ``mood``) emotional alignment; ``w`` is a
   Dirichlet draw (``scoring="stochastic"``) or its expectation (``"deterministic"``), cold-start
   or mature alphas; superseded memories stay below their superseders;
9. ``current`` marks stale statements and, for a question about the present, puts each one's
   current statement right above it; ``support`` reads how well the top hits support the
   question's content words;
10. ``decide``: top k; refuse if the question's names are unknown to the scope, if
    (``refuse_unsupported``) a word it is about is never held and no hit matches it, or if the
    best similarity is under the threshold; with an LLM, ``check_answerable`` asks whether the
    hits answer it; ``quote`` gives block hits their matching lines (bifocal hits);
11. ``trace_and_mutate``: the trace and, unless read-only, retrieval-induced mutation
    (cognitive-plan §3.8): the returned memories are reinforced and linked, near misses (blended
    ranks ``max(k, 5) + 1`` to ``near_miss_until``) mildly suppressed. Only the scope's owner
    mutates it; reads through a grant leave it unchanged. Both are written behind the recall
    (issue 42 decision 3): queued in the scope's use queue (:class:`~mnemo._runtime.UseQueue`),
    committed right after the recall returns; the scope's next recall, context or write waits
    for them first (a barrier). ``result`` builds the :class:`~mnemo.models.RecallResult` or
    :class:`~mnemo.models.Refusal`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from datetime import datetime

import numpy as np

from mnemo._runtime import Runtime
from mnemo.models import RecallResult, Refusal, Scope
from mnemo.recall.advice_stage import preferences_asked
from mnemo.recall.answerable import check_answerable
from mnemo.recall.blend import blend
from mnemo.recall.current import current
from mnemo.recall.decide import decide, quote, recall_at_level, result, trace_and_mutate
from mnemo.recall.learned import learned_rank
from mnemo.recall.rank import attribution, follow_links, fuse, late_interaction, smooth_neighbours, time_frame
from mnemo.recall.records import ITEM_KINDS
from mnemo.recall.retrieve import check, retrieve, start_embedding
from mnemo.recall.support import support

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
        return await recall_at_level(rt, scope, query, k, level, as_entity=as_entity, threshold=threshold)
    request = check(
        rt, scope, query, k, as_entity=as_entity, read_only=read_only, threshold=threshold, kinds=kinds,
        trace=trace, query_vector=query_vector, cues=cues, now=now, seed=seed, hops=hops, expand=expand,
        processes=processes, mood=mood,
    )  # fmt: skip
    embedding = start_embedding(rt, request)
    await rt.uses.barrier(request.scope.entity_id, request.scope.namespace)  # what this scope's earlier recalls queued
    async with rt.indexes.reading(), rt.store.connection() as conn:  # a build waits for it (issue 42)
        found = await retrieve(rt, conn, request, embedding)
        await fuse(rt, conn, request, found)
        await follow_links(rt, conn, request, found)
        await smooth_neighbours(rt, conn, request, found)
        await late_interaction(rt, conn, request, found)
        await time_frame(rt, conn, request, found)
        await preferences_asked(rt, conn, request, found)
        await attribution(rt, conn, request, found)
        await learned_rank(rt, conn, request, found)
        blended = await blend(rt, conn, request, found)
        blended = await current(rt, conn, request, found, blended)
        await support(rt, conn, request, found, blended)
        decision = decide(rt, request, found, blended, started)
        decision = await check_answerable(rt, request, decision)  # with an LLM: do the hits answer it?
        decision = await quote(rt, conn, request, found, decision, blended.rows)
    trace_and_mutate(rt, request, decision)  # written behind the recall, in the scope's use queue
    return result(request, decision, blended)
