"""The read path: hybrid search, fusion, hard refusal, trace.

Seeds: cognitive-plan §2.5 (HNSW + full-text candidates fused with RRF, k=60,
top-50 from each list), archive-adr §7 ("The Mentat Refusal": below the
threshold the caller gets a refusal, not a guess; "Sigil Scope": every read is
scoped and cross-entity reads need a grant), memory-architecture §2.4.

Pipeline: check access -> embed the query -> {HNSW candidates, full-text
candidates} of that scope and the active embedder slug only -> RRF -> top k ->
hydrate with similarity -> refuse if the best similarity is under the
threshold -> append a trace row.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from mnemo.cognition.fusion import rrf
from mnemo.errors import AccessDeniedError, InvalidContentError, UnknownScopeError
from mnemo.models import Hit, RecallResult, Refusal, Scope, uuid7
from mnemo.runtime import Runtime
from mnemo.store import scopes as scope_rows
from mnemo.store import search as search_rows
from mnemo.store import traces as trace_rows
from mnemo.store import vectors as vector_rows
from mnemo.validate import check_content

__all__ = ["recall"]

ITEM_KINDS = ("turn", "memory")


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
) -> RecallResult | Refusal:
    """Recall up to ``k`` items of ``scope`` for ``query``; a :class:`Refusal` below the threshold."""
    started = time.perf_counter()
    text = check_content(query, max_chars=rt.settings.max_content_chars, label="query")
    if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= rt.settings.max_k:
        raise InvalidContentError(f"k must be an integer between 1 and {rt.settings.max_k}, not {k!r}")
    if not kinds or any(kind not in ITEM_KINDS for kind in kinds):
        raise InvalidContentError(f"kinds must be a non-empty subset of {ITEM_KINDS}")
    reader = scope.entity_id if as_entity is None else Scope(as_entity).entity_id
    limit = threshold if threshold is not None else rt.settings.refusal_threshold
    depth = max(rt.settings.candidate_depth, k)
    query_vector = await rt.embeddings.embed_query(text)

    async with rt.store.connection() as conn:
        exists, allowed = await scope_rows.read_access(conn, scope.entity_id, scope.namespace, reader)
        if not exists:
            raise UnknownScopeError(f"scope {scope} does not exist (nothing was ever stored there)")
        if not allowed:
            raise AccessDeniedError(
                f"{reader!r} may not read scope {scope}; its owner can grant access with "
                f"grant(Scope({scope.entity_id!r}, {scope.namespace!r}), {reader!r})"
            )
        dense = await vector_rows.search(
            conn, rt.table, rt.embeddings.dim, scope.entity_id, scope.namespace, rt.slug, query_vector, depth
        )
        dense = [d for d in dense if d[1] in kinds]
        lexical = await search_rows.lexical(
            conn,
            scope.entity_id,
            scope.namespace,
            text,
            depth,
            turns="turn" in kinds,
            memories="memory" in kinds,
        )
        fused = rrf({"vector": [d[0] for d in dense], "lexical": [x[0] for x in lexical]}, k=rt.settings.rrf_k)
        kind_of = {d[0]: d[1] for d in dense} | {x[0]: x[1] for x in lexical}
        similarity = {d[0]: d[2] for d in dense}
        lexical_score = {x[0]: x[2] for x in lexical}
        top = fused[: k * 2]  # head-room: a memory may have been archived since it was indexed
        ids: list[uuid.UUID] = [item.key for item in top]  # type: ignore[misc]
        missing = [i for i in ids if i not in similarity]
        similarity |= await vector_rows.similarities(conn, rt.table, scope.entity_id, rt.slug, query_vector, missing)
        turn_rows = await search_rows.hydrate_turns(
            conn, scope.entity_id, scope.namespace, [i for i in ids if kind_of[i] == "turn"]
        )
        memory_rows = await search_rows.hydrate_memories(
            conn, scope.entity_id, scope.namespace, [i for i in ids if kind_of[i] == "memory"]
        )

        hits: list[Hit] = []
        for item in top:
            item_id: uuid.UUID = item.key  # type: ignore[assignment]
            row: dict[str, Any] | None = turn_rows.get(item_id) or memory_rows.get(item_id)
            if row is None:
                continue
            hits.append(
                Hit(
                    id=item_id,
                    item_kind="turn" if kind_of[item_id] == "turn" else "memory",
                    content=row["content"],
                    score=item.score,
                    similarity=similarity.get(item_id),
                    vector_rank=item.ranks.get("vector"),
                    lexical_rank=item.ranks.get("lexical"),
                    lexical_score=lexical_score.get(item_id),
                    created_at=row["created_at"],
                    scope=scope,
                    session_id=row.get("session_id"),
                    turn_number=row.get("turn_number"),
                    role=row.get("role"),
                    speaker=row.get("speaker"),
                    memory_kind=row.get("memory_kind"),
                    token_count=row.get("token_count", 0),
                    metadata=row.get("metadata") or {},
                )
            )
            if len(hits) == k:
                break

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
    if refused:
        return Refusal(
            query=text,
            scope=scope,
            best_similarity=best,
            threshold=limit,
            latency_ms=latency_ms,
            candidates=tuple(hits),
        )
    return RecallResult(query=text, scope=scope, hits=tuple(hits), best_similarity=best, latency_ms=latency_ms)
