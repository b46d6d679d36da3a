"""Recall stages 7-9: decide the hits and near misses (refusal: archive-adr §7, "The Mentat
Refusal"), quote blocks and lines (memory-architecture §6), trace and mutate (cognitive-plan §3.8),
build the result; and recall at a level of the cortex tree (memory-architecture §5.4).
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import psycopg

from mnemo import _dynamics as dynamics
from mnemo._runtime import Runtime
from mnemo.cognition.refusal import judge
from mnemo.cognition.relevance import (
    most_relevant,
    suppressible,
)
from mnemo.cortex import search as cortex_search
from mnemo.errors import InvalidContentError
from mnemo.models import Hit, ItemKind, RecallResult, Refusal, Scope, uuid7
from mnemo.recall.records import ITEM_KINDS, Blended, Candidates, Decision, Request
from mnemo.recall.retrieve import _facts, check
from mnemo.store import traces as trace_rows
from mnemo.store.pool import retry_conflicts


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
