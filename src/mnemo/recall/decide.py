"""Recall stages 7-9: decide the hits and near misses (refusal: archive-adr §7, "The Mentat
Refusal"), quote blocks and lines (memory-architecture §6), trace and mutate (cognitive-plan §3.8),
build the result; and recall at a level of the cortex tree (memory-architecture §5.4).
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

import psycopg

from mnemo import _dynamics as dynamics
from mnemo._runtime import Runtime
from mnemo._upkeep import note_writes
from mnemo.cognition.scoring.blend_components import BLEND, COMPONENTS, RELEVANCE
from mnemo.cognition.scoring.rank_order import rank_scores, rank_tiers
from mnemo.cognition.scoring.refusal import asked_about, hypothetical, judge, unsupported
from mnemo.cognition.scoring.relevance import (
    most_relevant,
    suppressible,
)
from mnemo.cortex import cortex_search
from mnemo.errors import InvalidContentError
from mnemo.models import Hit, ItemKind, MemoryKind, RecallResult, Refusal, Role, Scope
from mnemo.recall.records import ITEM_KINDS, Blended, Candidates, Decision, RecallRow, Request
from mnemo.recall.retrieve import _facts, check
from mnemo.store import traces as trace_rows
from mnemo.store.dynamics import MemoryState
from mnemo.store.pool import retry_conflicts
from mnemo.store.tiers import LineHit


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
    # a stale statement is never reinforced (issue 40 item 5): it is not among the relevant
    relevant = most_relevant({i: parts[RELEVANCE] for _, i, parts in blended.scored}, request.k) - found.stale
    near = blended.scored[max(request.k, 5) : rt.settings.near_miss_until]
    sims = [h.similarity for h in hits if h.similarity is not None]
    best = max(sims) if sims else None
    cfg = rt.settings
    missing = (  # something never said: a question's focus (a request, a guess want what is relevant)
        unsupported(found.support, cfg.support_threshold, cfg.support_rarity, found.literal)
        if cfg.refuse_unsupported and not hypothetical(request.text)
        else []
    )
    verdict = judge(best, request.threshold, found.names, missing, hypothetical=hypothetical(request.text))
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
        unknown=verdict.unknown if verdict.reason == "unknown names" else (),
        unsupported=verdict.unknown if verdict.reason == "unsupported" else (),
        relevant=relevant,
    )


def _hit(
    request: Request,
    found: Candidates,
    row: RecallRow,
    item_id: uuid.UUID,
    score: float,
    parts: Mapping[str, float],
) -> Hit:
    shown = _shown(row)
    return Hit(
        id=item_id,
        item_kind=_item_kind(found.kind_of[item_id]),
        content=row.content,
        score=score,
        blend=score,
        similarity=found.similarity.get(item_id),
        vector_rank=found.vector_rank.get(item_id),
        lexical_rank=found.lexical_rank.get(item_id),
        lexical_score=found.lexical_score.get(item_id),
        created_at=row.created_at,
        scope=request.scope,
        session_id=shown.session_id,
        turn_number=shown.turn_number,
        role=shown.role,
        speaker=shown.speaker,
        memory_kind=shown.memory_kind,
        token_count=shown.token_count,
        metadata=row.metadata or {},
        neighbour_boost=(found.smoothed or found.final).get(item_id, 0.0) - found.base.get(item_id, 0.0),
        fused=(found.smoothed or found.final).get(item_id),
        late=found.late.get(item_id),
        in_period=item_id in found.in_period,
        **_components(parts),
        compressed=shown.compressed,
        event_time=shown.event_time,
        tier="cortex" if shown.tier == "cortex" else "hippocampus",
    )


def _components(parts: Mapping[str, float]) -> dict[str, Any]:
    """The hit's field per blend component: its score, else what a hit shows when it did not join."""
    return {c.name: parts.get(c.name, c.absent) for c in BLEND}


@dataclasses.dataclass(frozen=True, slots=True)
class _Shown:
    """What a hit shows of its row that only some kinds of row have (None, or 0 tokens, otherwise)."""

    session_id: str | None = None
    turn_number: int | None = None
    role: Role | None = None
    speaker: str | None = None
    memory_kind: MemoryKind | None = None
    token_count: int = 0
    compressed: str | None = None
    event_time: datetime | None = None
    tier: str | None = None


def _shown(row: RecallRow) -> _Shown:
    if isinstance(row, MemoryState):
        return _Shown(
            memory_kind=row.kind,
            token_count=row.token_count,
            compressed=row.compressed,
            event_time=row.event_time,
            tier=row.tier,
        )
    said = _Shown(session_id=row.session_id, turn_number=row.turn_number, role=row.role, speaker=row.speaker)
    if isinstance(row, LineHit):
        return dataclasses.replace(said, tier=row.tier)
    return dataclasses.replace(said, token_count=row.token_count)


async def quote(
    rt: Runtime,
    conn: psycopg.AsyncConnection,
    request: Request,
    found: Candidates,
    decision: Decision,
    rows: Mapping[uuid.UUID, RecallRow],
) -> Decision:
    """Bifocal hits (memory-architecture §6): each block hit quotes its lines that match the query;
    a line hit is its own quote, with its block's gist. A line is paid for once: a block hit drops
    the lines a better hit already shows, and goes when none is left (the next candidate moves up)."""
    ranked = (*decision.hits, *decision.spare)
    quoted = await cortex_search.bifocal(rt, conn, request.scope, found.vector, ranked, expand=request.expand)
    lined = [_lined(h, rows.get(h.id)) for h in quoted]
    hits = cortex_search.once(lined, lambda t: rt.embeddings.count_tokens([t])[0], _stated(rows))[: request.k]
    counts = iter(rt.embeddings.count_tokens([h.content for h in hits if h.item_kind == "line"]))
    hits = [dataclasses.replace(h, token_count=next(counts)) if h.item_kind == "line" else h for h in hits]
    return dataclasses.replace(decision, hits=tuple(hits), spare=())


def _lined(hit: Hit, row: RecallRow | None) -> Hit:
    """A line hit as its own quote (:func:`~mnemo.cortex.cortex_search.line_hit`); any other hit as it is."""
    return cortex_search.line_hit(hit, row) if hit.item_kind == "line" and isinstance(row, LineHit) else hit


def _stated(rows: Mapping[uuid.UUID, RecallRow]) -> dict[uuid.UUID, set[uuid.UUID]]:
    """Per fact memory among ``rows``, the turns it was read from (its provenance)."""
    stated: dict[uuid.UUID, set[uuid.UUID]] = {}
    for item_id, row in rows.items():
        if isinstance(row, MemoryState) and "fact_id" in (row.metadata or {}) and row.provenance:
            with contextlib.suppress(ValueError, TypeError):
                stated[item_id] = {uuid.UUID(str(t)) for t in row.provenance}
    return stated


def _item_kind(kind: str) -> ItemKind:
    return "turn" if kind == "turn" else "line" if kind == "line" else "memory"


# --- 8. trace and mutate ---------------------------------------------------------------------------
def trace_and_mutate(rt: Runtime, request: Request, decision: Decision) -> None:
    """Queue the retrieval's trace and, unless read-only, a refusal or a grantee's read, the
    reinforcement and links of the returned memories and the mild suppression of the near misses
    (cognitive-plan §3.8), written behind the recall (issue 42 decision 3): the scope's use queue
    (:class:`~mnemo._runtime.UseQueue`) commits them right after it returns, in order, before the
    scope's next recall, context or write. Both go in one transaction that commits without waiting
    for the disk (:func:`~mnemo.store.traces.commit_lazily`), its statements pipelined."""
    scope = request.scope
    mutates = not (decision.refused or request.read_only or not rt.settings.mutation or not request.owner_reads)
    # Use strengthens, being returned does not: a memory the blend lifted into the top k over more
    # relevant ones is not reinforced for it (else every lift would feed the next one).
    memories = [h.id for h in decision.hits if h.item_kind == "memory" and h.id in decision.relevant] if mutates else []
    if not request.trace and not (memories or (mutates and decision.near_misses)):
        return

    async def statements(conn: psycopg.AsyncConnection) -> None:
        if request.trace:
            await _trace(conn, request, decision)
        if mutates:
            await dynamics.mutate_after_recall(
                conn, rt.settings, scope, memories, decision.near_misses, query=request.text, now=request.now
            )

    queue_use(rt, scope, statements, rows=len(memories) * 2)  # access/weight rows and their co-access links


def queue_use(
    rt: Runtime, scope: Scope, statements: Callable[[psycopg.AsyncConnection], Awaitable[None]], *, rows: int
) -> None:
    """Queue a recall's or a context's use in the scope's use queue (issue 42 decision 3):
    ``statements`` run in one transaction that commits without waiting for the disk
    (:func:`~mnemo.store.traces.commit_lazily`), pipelined (the statements whose results are not
    read go to the server together), retried on conflicts; then ``rows`` written rows count toward
    the statistics refresh."""

    async def write() -> None:
        async with rt.store.connection() as conn, conn.pipeline(), conn.transaction():
            await trace_rows.commit_lazily(conn)
            await statements(conn)

    async def use() -> None:
        await retry_conflicts(write)
        if rows:
            await note_writes(rt, rows)

    rt.uses.submit((scope.entity_id, scope.namespace), use)


async def _trace(conn: psycopg.AsyncConnection, request: Request, decision: Decision) -> None:
    scope = request.scope
    await trace_rows.record_retrieval(
        conn,
        trace_id=request.trace_id,
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
        read_only=request.read_only or not request.owner_reads,  # a grantee's read never mutates
        parts=None if decision.refused else [_parts(h) for h in decision.hits],
    )


def _parts(hit: Hit) -> dict[str, float]:
    """A hit's blend components, as the alphas' tuning reads them back (cognitive-plan §4.5)."""
    return {c: round(float(getattr(hit, c)), 4) for c in COMPONENTS}


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


def _unsupported_message(question: str, words: Sequence[str]) -> str:
    return f"Nothing the archive holds speaks of {asked_about(question, words)}."


def in_rank_order(hits: Sequence[Hit], tiers: Mapping[uuid.UUID, int]) -> tuple[Hit, ...]:
    """The hits, in the order recall put them, with the score a person reads (issue 40 item 7):
    :func:`~mnemo.cognition.scoring.rank_order.rank_scores` of their blend scores, and the relevance tier they were
    ranked in (:func:`~mnemo.cognition.scoring.rank_order.rank_tiers`)."""
    shown = rank_scores([h.score if h.blend is None else h.blend for h in hits])
    ranked = rank_tiers([tiers.get(h.id) for h in hits])
    return tuple(dataclasses.replace(h, score=s, relevance_tier=t) for h, s, t in zip(hits, shown, ranked, strict=True))


def result(request: Request, decision: Decision, blended: Blended) -> RecallResult | Refusal:
    decision = dataclasses.replace(decision, hits=in_rank_order(decision.hits, blended.tiers))
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
        if decision.unsupported:
            return dataclasses.replace(
                refusal,
                unsupported=decision.unsupported,
                message=_unsupported_message(request.text, decision.unsupported),
            )
        return refusal
    return RecallResult(
        query=request.text,
        scope=request.scope,
        hits=decision.hits,
        best_similarity=decision.best,
        latency_ms=decision.latency_ms,
        weights=blended.weights,
        outcome_id=request.trace_id if request.trace else None,
    )
