"""Reflexes: procedural memory any agent can use (issue 18 item 8).

Seed: memory-architecture §10.3-10.5. ``record_outcome`` counts what happened
when an action was taken in a context (the reflex is made on its first
outcome; ``follows`` names the reflex that came just before, which grows the
causal edge between them); ``reflexes_for`` returns the reflexes whose
contexts are nearest to a new one, ranked by similarity times their smoothed
success rate, with what tended to follow each. The night prunes them
(its ``reflexes`` stage, :func:`mnemo.store.reflexes.prune`). Everything is scoped and attributed like any other write.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from mnemo._runtime import Runtime
from mnemo._validate import check_content, check_id, check_text, to_utc
from mnemo.errors import InvalidContentError, UnknownItemError
from mnemo.models import CausalEdge, Reflex, Scope
from mnemo.store import reflexes as reflex_rows
from mnemo.write.remember import ensure_scope

__all__ = ["ACTION_TYPES", "record_outcome", "reflexes_for"]

ACTION_TYPES = ("tool_call", "response_pattern", "delegation")
MAX_K = 50


async def record_outcome(
    rt: Runtime,
    scope: Scope,
    context: object,
    action: object,
    *,
    success: bool,
    action_type: str = "tool_call",
    follows: uuid.UUID | str | None = None,
    at: datetime | str | None = None,
) -> Reflex:
    """Count one outcome of ``action`` taken in ``context``; returns the reflex as it now stands."""
    text = check_content(context, max_chars=rt.settings.max_content_chars, label="context")
    act = check_text(action, label="action", max_chars=2000)
    if action_type not in ACTION_TYPES:
        raise InvalidContentError(f"action_type must be one of {', '.join(ACTION_TYPES)}, not {action_type!r}")
    if not isinstance(success, bool):
        raise InvalidContentError(f"success must be true or false, not {success!r}")
    before = None if follows is None else check_id(follows, label="follows")
    when = datetime.now(UTC) if at is None else to_utc(at, label="at")
    vector = (await rt.embeddings.embed_documents([text]))[0]
    async with rt.store.transaction() as conn:
        await ensure_scope(conn, rt, scope)
        row = await reflex_rows.upsert(
            conn, scope.entity_id, scope.namespace, context=text, action=act, action_type=action_type,
            slug=rt.slug, vector=vector, success=success, at=when,
        )  # fmt: skip
        if before is not None and not await reflex_rows.link(
            conn, scope.entity_id, scope.namespace, before, row.id, when
        ):
            raise UnknownItemError(f"no reflex {before} in scope {scope} to follow")
    return _reflex(scope, row)


async def reflexes_for(
    rt: Runtime, scope: Scope, context: object, k: int = 5, *, read_only: bool = False
) -> list[Reflex]:
    """The ``k`` reflexes of ``scope`` that best fit ``context``: similarity times the smoothed
    success rate, best first, each with its strongest causal edges. Consulting them keeps them
    from the night's pruning unless ``read_only``."""
    text = check_content(context, max_chars=rt.settings.max_content_chars, label="context")
    if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= MAX_K:
        raise InvalidContentError(f"k must be an integer between 1 and {MAX_K}, not {k!r}")
    vector = await rt.embeddings.embed_query(text)
    async with rt.store.connection() as conn:
        rows = await reflex_rows.candidates(conn, scope.entity_id, scope.namespace, rt.slug, vector, k * 4)
        score = {r.id: float(r.similarity) * (r.success_count + 1) / (r.total_count + 2) for r in rows}
        best = sorted(rows, key=lambda r: (-score[r.id], str(r.id)))[:k]
        edges = await reflex_rows.edges_from(conn, scope.entity_id, [r.id for r in best])
        if best and not read_only:
            await reflex_rows.touch(conn, scope.entity_id, [r.id for r in best], datetime.now(UTC))
    following: dict[uuid.UUID, list[CausalEdge]] = {}
    for e in edges:
        following.setdefault(e.source_id, []).append(
            CausalEdge(
                e.target_id,
                e.action,
                e.action_type,
                float(e.strength),
                float(e.gap_seconds),
                int(e.observations),
            )
        )
    return [_reflex(scope, r, tuple(following.get(r.id, ())), score=score[r.id]) for r in best]


def _reflex(
    scope: Scope, row: reflex_rows.ReflexRow, following: tuple[CausalEdge, ...] = (), *, score: float | None = None
) -> Reflex:
    return Reflex(
        id=row.id,
        scope=scope,
        context=row.context,
        action=row.action,
        action_type=row.action_type,
        success_count=int(row.success_count),
        failure_count=int(row.failure_count),
        success_rate=float(row.success_rate),
        last_accessed=row.last_accessed,
        last_success=row.last_success,
        created_at=row.created_at,
        similarity=float(row.similarity) if isinstance(row, reflex_rows.ReflexMatch) else None,
        score=score,
        next=following,
    )
