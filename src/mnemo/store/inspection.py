"""What the inspector shows (issue 17): read-only views of one scope, and the audited actions.

Seeds: archive-adr §2 (the traces chamber: every change is recorded) and §9
(curation is staged and inspectable); memory-architecture §3-5 (episodes, flux
arcs, salience, the cortex tree). Every query names one entity; the list of
scopes a reader may see is its own plus those granted to it.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any, TypeVar

import psycopg
from psycopg.rows import class_row, dict_row
from psycopg.types.json import Jsonb

from mnemo.store.inspect_views import (
    AuditEntry,
    BlockListing,
    CurationView,
    CurvePoint,
    EntityView,
    LinkView,
    MemoryListing,
    MemoryView,
    RunView,
    ScopeCounts,
    ScopeView,
)

__all__ = [
    "audit",
    "block",
    "blocks",
    "browse",
    "curation",
    "entities",
    "links_of",
    "memory",
    "night_runs",
    "record_action",
    "scope_counts",
    "set_anchored",
    "turn_curve",
    "visible_scopes",
]


T = TypeVar("T")


async def _rows(conn: psycopg.AsyncConnection, query: str, params: Mapping[str, Any], kind: type[T]) -> list[T]:
    async with conn.cursor(row_factory=class_row(kind)) as cur:
        await cur.execute(query.encode(), params)
        return list(await cur.fetchall())


async def _dict_rows(conn: psycopg.AsyncConnection, query: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
    async with conn.cursor(row_factory=dict_row) as cur:
        await cur.execute(query.encode(), params)
        return list(await cur.fetchall())


async def visible_scopes(conn: psycopg.AsyncConnection, entity_id: str) -> list[ScopeView]:
    """The reader's own scopes, then the scopes granted to it (``owner`` False)."""
    return await _rows(
        conn,
        """SELECT entity_id, namespace, true AS owner, forked_from FROM mnemo.scopes WHERE entity_id = %(e)s
           UNION ALL
           SELECT g.entity_id, g.namespace, false, NULL FROM mnemo.grants g WHERE g.grantee = %(e)s
           ORDER BY owner DESC, entity_id, namespace""",
        {"e": entity_id},
        ScopeView,
    )


async def scope_counts(conn: psycopg.AsyncConnection, entity_id: str, namespace: str) -> ScopeCounts:
    """Rows per chamber and tier of one scope."""
    rows = await _rows(
        conn,
        """SELECT
             (SELECT count(*) FROM mnemo.turns WHERE entity_id = %(e)s AND namespace = %(ns)s) AS turns,
             (SELECT count(*) FROM mnemo.block_lines WHERE entity_id = %(e)s AND namespace = %(ns)s) AS lines,
             (SELECT count(*) FROM mnemo.blocks WHERE entity_id = %(e)s AND namespace = %(ns)s) AS blocks,
             (SELECT count(*) FROM mnemo.facts WHERE entity_id = %(e)s AND namespace = %(ns)s
                AND valid_to IS NULL) AS facts,
             (SELECT count(*) FROM mnemo.triples WHERE entity_id = %(e)s AND namespace = %(ns)s) AS triples,
             (SELECT coalesce(jsonb_object_agg(status, n), '{}') FROM (SELECT status, count(*) AS n FROM mnemo.memories
                WHERE entity_id = %(e)s AND namespace = %(ns)s GROUP BY status) s) AS by_status,
             (SELECT coalesce(jsonb_object_agg(tier, n), '{}') FROM (SELECT tier, count(*) AS n FROM mnemo.memories
                WHERE entity_id = %(e)s AND namespace = %(ns)s GROUP BY tier) t) AS by_tier""",
        {"e": entity_id, "ns": namespace},
        ScopeCounts,
    )
    return rows[0]


async def night_runs(conn: psycopg.AsyncConnection, entity_id: str, namespace: str, limit: int) -> list[RunView]:
    return await _rows(
        conn,
        """SELECT id, as_of, started_at, finished_at, stages_done, report FROM mnemo.night_runs
           WHERE entity_id = %(e)s AND namespace = %(ns)s ORDER BY started_at DESC LIMIT %(n)s""",
        {"e": entity_id, "ns": namespace, "n": limit},
        RunView,
    )


async def entities(conn: psycopg.AsyncConnection, entity_id: str, namespace: str, limit: int) -> list[EntityView]:
    """The scope's ``limit`` most mentioned entities (then by name), each with its current facts and
    open relations counted."""
    return await _rows(
        conn,
        """SELECT n.name, n.mention_count, n.first_seen, n.last_seen,
                  (SELECT count(*) FROM mnemo.facts f
                    WHERE f.entity_id = n.entity_id AND f.subject_id = n.id AND f.valid_to IS NULL) AS facts,
                  (SELECT count(*) FROM mnemo.triples t
                    WHERE t.entity_id = n.entity_id AND t.subject_id = n.id AND t.valid_to IS NULL) AS relations
           FROM (SELECT entity_id, id, name, mention_count, first_seen, last_seen FROM mnemo.entities
                  WHERE entity_id = %(e)s AND namespace = %(ns)s
                  ORDER BY mention_count DESC, name LIMIT %(n)s) n
           ORDER BY n.mention_count DESC, n.name""",
        {"e": entity_id, "ns": namespace, "n": limit},
        EntityView,
    )


async def browse(
    conn: psycopg.AsyncConnection,
    entity_id: str,
    namespace: str,
    *,
    query: str | None,
    kind: str | None,
    status: str | None,
    anchored: bool | None,
    tier: str | None,
    since: datetime | None,
    until: datetime | None,
    before: tuple[datetime, uuid.UUID] | None,
    limit: int,
) -> list[MemoryListing]:
    """One page of the scope's memories, newest first, after the ``before`` key (keyset paging on
    the ``memories_scope_time`` index: page 1,000 costs what page 1 does). ``query`` is a full-text
    search (the english ``tsvector``)."""
    return await _rows(
        conn,
        """SELECT id, kind, content, status, anchored, tier, alpha, beta, access_count, created_at, process_id,
                  event_time
           FROM mnemo.memories
           WHERE entity_id = %(e)s AND namespace = %(ns)s
             AND (%(q)s::text IS NULL OR tsv @@ websearch_to_tsquery('english', %(q)s))
             AND (%(kind)s::text IS NULL OR kind = %(kind)s)
             AND (%(status)s::text IS NULL OR status = %(status)s)
             AND (%(anchored)s::boolean IS NULL OR anchored = %(anchored)s)
             AND (%(tier)s::text IS NULL OR tier = %(tier)s)
             AND (%(since)s::timestamptz IS NULL OR created_at >= %(since)s)
             AND (%(until)s::timestamptz IS NULL OR created_at < %(until)s)
             AND (%(at)s::timestamptz IS NULL OR (created_at, id) < (%(at)s, %(id)s::uuid))
           ORDER BY created_at DESC, id DESC LIMIT %(n)s""",
        {
            "e": entity_id, "ns": namespace, "q": query, "kind": kind, "status": status, "anchored": anchored,
            "tier": tier, "since": since, "until": until, "at": before[0] if before else None,
            "id": before[1] if before else None, "n": limit,
        },
        MemoryListing,
    )  # fmt: skip


async def memory(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, memory_id: uuid.UUID
) -> MemoryView | None:
    rows = await _rows(
        conn,
        """SELECT m.id, m.kind, m.content, m.compressed, m.status, m.anchored, m.tier, m.alpha, m.beta,
                  m.access_count, m.access_timestamps, m.last_accessed, m.created_at, m.event_time, m.source_tag,
                  m.source_confidence, m.provenance, m.metadata, m.process_id, b.id AS block_id
           FROM mnemo.memories m LEFT JOIN mnemo.blocks b ON b.entity_id = m.entity_id AND b.memory_id = m.id
           WHERE m.entity_id = %(e)s AND m.namespace = %(ns)s AND m.id = %(id)s""",
        {"e": entity_id, "ns": namespace, "id": memory_id},
        MemoryView,
    )
    return rows[0] if rows else None


async def links_of(conn: psycopg.AsyncConnection, entity_id: str, namespace: str, item_id: uuid.UUID) -> list[LinkView]:
    """Structural links from and to an item, and its strongest co-access links."""
    return await _rows(
        conn,
        """SELECT 'out' AS direction, link_type, target_id AS other, strength FROM mnemo.links
           WHERE entity_id = %(e)s AND namespace = %(ns)s AND source_id = %(id)s
           UNION ALL
           SELECT 'in', link_type, source_id, strength FROM mnemo.links
           WHERE entity_id = %(e)s AND namespace = %(ns)s AND target_id = %(id)s
           ORDER BY 1, 2 LIMIT 100""",
        {"e": entity_id, "ns": namespace, "id": item_id},
        LinkView,
    )


async def blocks(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, before: datetime | None, limit: int
) -> list[BlockListing]:
    return await _rows(
        conn,
        """SELECT id, kind, session_id, first_turn, last_turn, coherence_gain, salience_scores, arc_start_time,
                  migrated_at, memory_id, left(content, 200) AS preview
           FROM mnemo.blocks WHERE entity_id = %(e)s AND namespace = %(ns)s
             AND (%(before)s::timestamptz IS NULL OR arc_start_time < %(before)s)
           ORDER BY arc_start_time DESC LIMIT %(n)s""",
        {"e": entity_id, "ns": namespace, "before": before, "n": limit},
        BlockListing,
    )


async def block(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, block_id: uuid.UUID
) -> dict[str, Any] | None:
    """A block's whole row (every column of ``mnemo.blocks``), its gist and the block continuing it."""
    rows = await _dict_rows(
        conn,
        """SELECT b.*, m.compressed AS gist,
                  (SELECT c.id FROM mnemo.blocks c WHERE c.entity_id = b.entity_id AND c.continues_from = b.id
                   LIMIT 1) AS continued_in
           FROM mnemo.blocks b LEFT JOIN mnemo.memories m ON m.entity_id = b.entity_id AND m.id = b.memory_id
           WHERE b.entity_id = %(e)s AND b.namespace = %(ns)s AND b.id = %(id)s""",
        {"e": entity_id, "ns": namespace, "id": block_id},
    )
    return rows[0] if rows else None


async def turn_curve(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, block_id: uuid.UUID, turn_ids: list[uuid.UUID]
) -> list[CurvePoint]:
    """A block's turns in order with their surprisal (raw turns), or its verbatim lines when the raw
    turns left the day table (no surprisal then)."""
    return await _rows(
        conn,
        """SELECT turn_number, speaker, role, content, surprisal, flux_state, true AS raw FROM mnemo.turns
           WHERE entity_id = %(e)s AND namespace = %(ns)s AND id = ANY(%(ids)s)
           UNION ALL
           SELECT l.turn_number, l.speaker, l.role, l.content, NULL, NULL, false FROM mnemo.block_lines l
           WHERE l.entity_id = %(e)s AND l.namespace = %(ns)s AND l.block_id = %(b)s
             AND NOT EXISTS (SELECT 1 FROM mnemo.turns t WHERE t.entity_id = l.entity_id AND t.id = l.turn_id)
           ORDER BY 1""",
        {"e": entity_id, "ns": namespace, "ids": turn_ids, "b": block_id},
        CurvePoint,
    )


async def audit(
    conn: psycopg.AsyncConnection,
    entity_id: str,
    namespace: str,
    *,
    what: str,
    enforced: bool | None,
    reason: str | None,
    limit: int,
) -> list[AuditEntry]:
    """Weight changes (``what="weights"``), safety events (``"safety"``) or inspector actions
    (``"actions"``) of the scope, newest first."""
    if what == "safety":
        query = """SELECT at, memory_id AS item_id, ceiling AS reason, enforced, detail FROM traces.safety_events
                   WHERE entity_id = %(e)s AND namespace = %(ns)s AND (%(enf)s::boolean IS NULL OR enforced = %(enf)s)
                     AND (%(r)s::text IS NULL OR ceiling = %(r)s)
                   ORDER BY at DESC LIMIT %(n)s"""
    elif what == "actions":
        query = """SELECT at, item_id, action AS reason, NULL::boolean AS enforced,
                          actor || ' ' || detail::text AS detail
                   FROM traces.actions WHERE entity_id = %(e)s AND namespace = %(ns)s
                     AND (%(r)s::text IS NULL OR action = %(r)s) ORDER BY at DESC LIMIT %(n)s"""
    else:
        query = """SELECT at, memory_id AS item_id, reason, NOT blocked AS enforced,
                          operation || ' ' || round(old_alpha::numeric, 2) || '/' || round(old_beta::numeric, 2)
                          || ' -> ' || round(new_alpha::numeric, 2) || '/' || round(new_beta::numeric, 2) AS detail
                   FROM traces.weight_changes WHERE entity_id = %(e)s AND namespace = %(ns)s
                     AND (%(enf)s::boolean IS NULL OR blocked = NOT %(enf)s) AND (%(r)s::text IS NULL OR reason = %(r)s)
                   ORDER BY at DESC LIMIT %(n)s"""
    params = {"e": entity_id, "ns": namespace, "enf": enforced, "r": reason, "n": limit}
    return await _rows(conn, _AUDIT_SUBJECT.format(rows=query), params, AuditEntry)


_AUDIT_SUBJECT = """SELECT a.at, a.item_id, a.reason, a.enforced, a.detail,
                          left(coalesce(nullif(m.compressed, ''), m.content, t.content), 160) AS subject
                   FROM ({rows}) a
                   LEFT JOIN mnemo.memories m ON m.entity_id = %(e)s AND m.namespace = %(ns)s AND m.id = a.item_id
                   LEFT JOIN mnemo.turns t ON t.entity_id = %(e)s AND t.namespace = %(ns)s AND t.id = a.item_id
                   ORDER BY a.at DESC"""
"""An audit row with what its item says, a block's memory by its compressed line (issue 39 item 14:
bare ids told the reader nothing); an item forgotten since has none."""


async def curation(conn: psycopg.AsyncConnection, entity_id: str, namespace: str) -> list[CurationView]:
    """Every staged version, newest first, with its items (up to 200 each)."""
    return await _rows(
        conn,
        """SELECT v.version, v.status, v.as_of, v.counts, v.created_at, v.applied_at,
                  (SELECT coalesce(jsonb_agg(i ORDER BY i.score DESC), '[]') FROM (
                     SELECT c.memory_id, c.verdict, round(c.score::numeric, 3) AS score, c.reasons, c.from_status,
                            c.to_status, left(m.content, 120) AS content
                     FROM mnemo.curation_items c
                     LEFT JOIN mnemo.memories m ON m.entity_id = c.entity_id AND m.id = c.memory_id
                     WHERE c.entity_id = v.entity_id AND c.namespace = v.namespace AND c.version = v.version
                     ORDER BY c.score DESC LIMIT 200) i) AS items
           FROM mnemo.curation_versions v WHERE v.entity_id = %(e)s AND v.namespace = %(ns)s
           ORDER BY v.version DESC LIMIT 20""",
        {"e": entity_id, "ns": namespace},
        CurationView,
    )


async def set_anchored(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, memory_id: uuid.UUID, anchored: bool
) -> bool:
    """Set a memory's anchor flag; False when the scope holds no such memory."""
    cur = await conn.execute(
        """UPDATE mnemo.memories SET anchored = %s, updated_at = now()
           WHERE entity_id = %s AND namespace = %s AND id = %s""",
        (anchored, entity_id, namespace, memory_id),
    )
    return cur.rowcount == 1


async def record_action(
    conn: psycopg.AsyncConnection,
    entity_id: str,
    namespace: str,
    item_id: uuid.UUID | None,
    action: str,
    actor: str,
    detail: Mapping[str, Any] | None = None,
) -> None:
    """An inspector action in the audit trail (ids only: a forgotten item's text is not kept)."""
    await conn.execute(
        """INSERT INTO traces.actions (entity_id, namespace, item_id, action, actor, detail)
           VALUES (%s, %s, %s, %s, %s, %s)""",
        (entity_id, namespace, item_id, action, actor, Jsonb(dict(detail or {}))),
    )
