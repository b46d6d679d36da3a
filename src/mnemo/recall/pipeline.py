"""The read path: hybrid search, score fusion, neighbour smoothing, hard refusal, trace.

Seeds: cognitive-plan §2.5, §2.7, §3.1, §3.8 (HNSW + full-text candidates, fused), §4.6
(contextual retrieval), archive-adr §7 ("The Mentat Refusal": below the
threshold the caller gets a refusal, not a guess; "Sigil Scope": every read is
scoped and cross-entity reads need a grant), memory-architecture §1.3, §2.4.

Pipeline (each piece switchable in :class:`~mnemo.config.Settings`, measured by
``mnemo bench locomo --ablate``):

1. check access; embed the query;
2. candidates of that scope and the active embedder slug only: HNSW (cosine)
   and lexical (``lexical``: in-database BM25, or ``ts_rank_cd``),
   ``candidate_depth`` each;
3. fuse (``fusion``): z-scores of both retrievers over the candidates, lexical
   weighted by ``lexical_weight``, every candidate scored by both retrievers
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
6. top k; refuse if the best similarity is under the threshold; trace;
7. unless read-only, retrieval-induced mutation (cognitive-plan §3.8): the
   returned memories are reinforced and linked, near misses (blended ranks
   ``max(k, 5) + 1`` to ``near_miss_until``) mildly suppressed. Only the
   scope's owner mutates it; reads through a grant leave it unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
import psycopg

from mnemo import _dynamics as dynamics
from mnemo._dynamics import history_of, weight_of
from mnemo._runtime import Runtime
from mnemo._upkeep import note_writes
from mnemo._validate import check_content, check_vector
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
from mnemo.cognition.neighbours import smooth
from mnemo.cognition.relevance import COLD_START_ALPHAS, MATURE_ALPHAS, blend, blend_weights, minmax, recency
from mnemo.cognition.spreading import spread
from mnemo.cognition.weights import DEFAULT
from mnemo.config import Settings
from mnemo.errors import AccessDeniedError, InvalidContentError, UnknownScopeError
from mnemo.models import Hit, RecallResult, Refusal, Scope, uuid7
from mnemo.store import dynamics as dynamic_rows
from mnemo.store import lexicon
from mnemo.store import scopes as scope_rows
from mnemo.store import search as search_rows
from mnemo.store import traces as trace_rows
from mnemo.store import vectors as vector_rows

__all__ = ["ITEM_KINDS", "recall"]

ITEM_KINDS = ("turn", "memory")


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
) -> RecallResult | Refusal:
    """Recall up to ``k`` items of ``scope`` for ``query``; a :class:`Refusal` below the threshold.

    ``query_vector`` (already embedded with the active model) skips the query embedding. ``cues``
    (e.g. ``{"kind": "preference"}``) penalise candidates whose kind or metadata disagree (ACT-R
    partial matching). ``now`` is the time activation and recency are measured at (default: now);
    ``seed`` fixes the stochastic draws of this one recall; ``hops`` (0-2, default
    ``spreading_hops``) sets how far activation spreads over co-access links.
    """
    started = time.perf_counter()
    cfg = rt.settings
    text = check_content(query, max_chars=cfg.max_content_chars, label="query")
    if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= cfg.max_k:
        raise InvalidContentError(f"k must be an integer between 1 and {cfg.max_k}, not {k!r}")
    if not kinds or any(kind not in ITEM_KINDS for kind in kinds):
        raise InvalidContentError(f"kinds must be a non-empty subset of {ITEM_KINDS}")
    kinds = tuple(dict.fromkeys(kinds))
    hops = cfg.spreading_hops if hops is None else hops
    if not isinstance(hops, int) or isinstance(hops, bool) or not 0 <= hops <= 2:
        raise InvalidContentError(f"hops must be 0, 1 or 2, not {hops!r}")
    reader = scope.entity_id if as_entity is None else Scope(as_entity).entity_id
    limit = threshold if threshold is not None else cfg.refusal_threshold
    depth = max(cfg.candidate_depth, k)
    given = None if query_vector is None else check_vector(query_vector, rt.embeddings.dim)
    # The query is embedded in a worker thread while the database checks access and runs the
    # lexical retriever, which needs no vector.
    embedding = None if given is not None else asyncio.ensure_future(rt.embeddings.embed_query(text))

    async with rt.store.connection() as conn:
        try:
            exists, allowed = await scope_rows.read_access(conn, scope.entity_id, scope.namespace, reader)
            if not exists:
                raise UnknownScopeError(f"scope {scope} does not exist (nothing was ever stored there)")
            if not allowed:
                raise AccessDeniedError(
                    f"{reader!r} may not read scope {scope}; its owner can grant access with "
                    f"grant(Scope({scope.entity_id!r}, {scope.namespace!r}), {reader!r})"
                )
            lexical = await _lexical(rt, conn, scope, text, depth, kinds)
            if embedding is not None:
                qv = await embedding
            else:
                assert given is not None
                qv = given
        except BaseException:
            if embedding is not None and not embedding.done():
                embedding.cancel()
                with contextlib.suppress(BaseException):
                    await embedding
            raise
        dense = await vector_rows.search(
            conn, rt.table, rt.embeddings.dim, scope.entity_id, scope.namespace, rt.slug, qv, depth
        )
        dense = [d for d in dense if d[1] in kinds]
        kind_of = {d[0]: d[1] for d in dense} | {x[0]: x[1] for x in lexical}
        vector_rank = {d[0]: rank for rank, d in enumerate(dense, start=1)}
        lexical_rank = {x[0]: rank for rank, x in enumerate(lexical, start=1)}
        similarity = {d[0]: d[2] for d in dense}
        lexical_score = {x[0]: x[2] for x in lexical}
        candidates = list(kind_of)

        if cfg.fusion == "zscore":
            similarity |= await vector_rows.similarities(
                conn, rt.table, scope.entity_id, rt.slug, qv, [i for i in candidates if i not in similarity]
            )
            lexical_score |= await _lexical_scores(
                rt, conn, scope, text, [i for i in candidates if i not in lexical_score]
            )
            base = zscore_fuse(
                {"vector": similarity, "lexical": lexical_score}, weights={"lexical": cfg.lexical_weight}
            )
        else:
            base = {
                item.key: item.score  # type: ignore[misc]
                for item in rrf({"vector": [d[0] for d in dense], "lexical": [x[0] for x in lexical]}, k=cfg.rrf_k)
            }

        final = dict(base)
        if cfg.neighbour_weights and "turn" in kinds and base:
            ranked = sorted(base, key=lambda i: -base[i])
            anchors = [i for i in ranked if kind_of[i] == "turn"][: cfg.neighbour_anchors]
            expand = anchors if cfg.fusion == "zscore" else []
            where, bounds = await search_rows.positions(
                conn,
                scope.entity_id,
                scope.namespace,
                [i for i in candidates if kind_of[i] == "turn"],
                expand,
                len(cfg.neighbour_weights),
            )
            new = [i for i in where if i not in base]
            if new:
                kind_of |= dict.fromkeys(new, "turn")
                similarity |= await vector_rows.similarities(conn, rt.table, scope.entity_id, rt.slug, qv, new)
                lexical_score |= await _lexical_scores(rt, conn, scope, text, new)
                base = zscore_fuse(
                    {"vector": similarity, "lexical": lexical_score},
                    weights={"lexical": cfg.lexical_weight},
                    reference=candidates,
                )
            final = smooth(base, where, cfg.neighbour_weights, floor=min(base.values()), bounds=bounds)

        # --- cognitive blend over the head of the search ranking (cognitive-plan §3.1) ---------
        when = now or datetime.now(UTC)
        rng = (random.Random(seed) if seed is not None else rt.child_rng()) if cfg.scoring == "stochastic" else None
        head = sorted(final, key=lambda i: (-final[i], str(i)))[: max(cfg.blend_depth, k * 2)]
        memory_head = [i for i in head if kind_of[i] == "memory"]
        activated: dict[uuid.UUID, float] = {}
        searched = minmax({i: final[i] for i in head})
        if memory_head and cfg.coaccess_seeds:
            seeds = memory_head[: cfg.coaccess_seeds]
            links = await dynamics.neighbours(conn, cfg, scope, seeds, when, hops=hops)
            if links:
                activated = spread({i: searched[i] for i in seeds}, links, hops=hops)
                for extra in activated:
                    if extra not in kind_of:
                        kind_of[extra] = "memory"
                        head.append(extra)
        missing = [i for i in head if i not in similarity]
        similarity |= await vector_rows.similarities(conn, rt.table, scope.entity_id, rt.slug, qv, missing)
        turn_rows = await search_rows.hydrate_turns(
            conn, scope.entity_id, scope.namespace, [i for i in head if kind_of[i] == "turn"]
        )
        memory_rows = await dynamic_rows.memory_states(
            conn, scope.entity_id, scope.namespace, [i for i in head if kind_of[i] == "memory"]
        )
        mature = bool(memory_rows) and await search_rows.has_at_least(
            conn, scope.entity_id, scope.namespace, cfg.blend_mature_after
        )
        weights = blend_weights(
            MATURE_ALPHAS if mature else COLD_START_ALPHAS,
            None if rng is None else np.random.default_rng(rng.getrandbits(64)),
        )
        scored: list[tuple[float, uuid.UUID, dict[str, float]]] = []
        for item_id in head:
            row: dict[str, Any] | None = turn_rows.get(item_id) or memory_rows.get(item_id)
            if row is None:
                continue
            parts = _components(cfg, row, kind_of[item_id], similarity.get(item_id, 0.0), when, cues, rng) | {
                "search": searched.get(item_id, 0.0),
                "coaccess": activated.get(item_id, 0.0),
            }
            scored.append((blend(parts, weights), item_id, parts))
        scored = _below_superseders(scored, memory_rows)
        scored.sort(key=lambda x: (-x[0], str(x[1])))

        hits: list[Hit] = []
        for score, item_id, parts in scored[:k]:
            row = turn_rows.get(item_id) or memory_rows.get(item_id)
            assert row is not None
            hits.append(
                Hit(
                    id=item_id,
                    item_kind="turn" if kind_of[item_id] == "turn" else "memory",
                    content=row["content"],
                    score=score,
                    similarity=similarity.get(item_id),
                    vector_rank=vector_rank.get(item_id),
                    lexical_rank=lexical_rank.get(item_id),
                    lexical_score=lexical_score.get(item_id),
                    created_at=row["created_at"],
                    scope=scope,
                    session_id=row.get("session_id"),
                    turn_number=row.get("turn_number"),
                    role=row.get("role"),
                    speaker=row.get("speaker"),
                    memory_kind=row.get("kind"),
                    token_count=row.get("token_count", 0),
                    metadata=row.get("metadata") or {},
                    neighbour_boost=final.get(item_id, 0.0) - base.get(item_id, 0.0),
                    fused=final.get(item_id),
                    search=parts["search"],
                    activation=parts["activation"],
                    weight=parts["weight"],
                    recency=parts["recency"],
                    coaccess=parts["coaccess"],
                    noise=parts["noise"],
                    compressed=row.get("compressed"),
                )
            )
        near_misses = [i for _, i, _ in scored[max(k, 5) : cfg.near_miss_until] if kind_of[i] == "memory"]

        sims = [h.similarity for h in hits if h.similarity is not None]
        best = max(sims) if sims else None
        refused = best is None or best < limit
        latency_ms = (time.perf_counter() - started) * 1000
        if trace:
            await trace_rows.record_retrieval(
                conn,
                trace_id=uuid7(),
                entity_id=scope.entity_id,
                namespace=scope.namespace,
                reader=reader,
                query=text,
                k=k,
                outcome="refusal" if refused else "hits",
                best_similarity=best,
                threshold=limit,
                hit_ids=[] if refused else [h.id for h in hits],
                latency_ms=latency_ms,
                read_only=read_only,
            )
        mutated = 0
        if not refused and not read_only and cfg.mutation and reader == scope.entity_id:
            async with conn.transaction():
                await dynamics.mutate_after_recall(
                    conn,
                    cfg,
                    scope,
                    [h.id for h in hits if h.item_kind == "memory"],
                    near_misses,
                    query=text,
                    now=when,
                )
            mutated = sum(1 for h in hits if h.item_kind == "memory")
    if mutated:
        await note_writes(rt, mutated * 2)  # access/weight rows and their co-access links
    if refused:
        return Refusal(
            query=text,
            scope=scope,
            best_similarity=best,
            threshold=limit,
            latency_ms=latency_ms,
            candidates=tuple(hits),
        )
    return RecallResult(
        query=text, scope=scope, hits=tuple(hits), best_similarity=best, latency_ms=latency_ms, weights=weights
    )


def _below_superseders(
    scored: list[tuple[float, uuid.UUID, dict[str, float]]], memory_rows: Mapping[uuid.UUID, Mapping[str, Any]]
) -> list[tuple[float, uuid.UUID, dict[str, float]]]:
    """A superseded memory never outranks a memory that superseded it when both are candidates
    (it keeps its own score when its superseder did not come up: still recallable)."""
    score = {i: sc for sc, i, _ in scored}
    superseders: dict[uuid.UUID, list[uuid.UUID]] = {}
    for item_id, row in memory_rows.items():
        for text in (row.get("metadata") or {}).get("superseded_by") or ():
            with contextlib.suppress(ValueError, TypeError):
                newer = uuid.UUID(str(text))
                if newer in score and item_id in score:
                    superseders.setdefault(item_id, []).append(newer)
    for _ in range(len(superseders)):  # chains A <- B <- C settle in at most this many passes
        changed = False
        for item_id, newers in superseders.items():
            cap = min(score[n] for n in newers) - 1e-6
            if score[item_id] > cap:
                score[item_id], changed = cap, True
        if not changed:
            break
    return [(score[i], i, parts) for _, i, parts in scored]


def _components(
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
