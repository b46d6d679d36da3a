"""Staged curation versions (archive-adr §9 "Staged Memory Promotion").

A curation version is a numbered, inspectable list of verdicts on a scope's
memories; applying it changes the memories' lifecycle status. Both happen in
the caller's transaction.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from mnemo.cognition.consolidation.curation import Provenance
from mnemo.models import MemoryKind, MemoryStatus

__all__ = [
    "CandidateRow",
    "VersionItem",
    "apply_version",
    "candidates",
    "latest_version",
    "stage_version",
    "version_items",
    "version_state",
]


@dataclass(frozen=True, slots=True)
class CandidateRow:
    """A memory the curator judges, with its fact's signals when it is a fact (:func:`candidates`)."""

    id: uuid.UUID
    kind: MemoryKind
    content: str
    status: MemoryStatus
    anchored: bool
    alpha: float
    beta: float
    access_count: int
    older_access_count: int
    last_accessed: datetime | None
    created_at: datetime
    source_tag: str | None
    source_confidence: float
    metadata: dict[str, Any]  # free-form JSONB
    mention_count: int | None  # the fact's, None when the memory is no fact
    fact_source: Provenance | None
    fact_closed: bool | None
    first_seen: datetime | None
    last_seen: datetime | None


@dataclass(frozen=True, slots=True)
class VersionItem:
    """One verdict of a staged curation version, with its memory's content and kind (:func:`version_items`)."""

    memory_id: uuid.UUID
    verdict: str
    score: float
    reasons: list[str]
    from_status: str
    to_status: str
    content: str | None  # None: the memory is gone
    kind: str | None


async def candidates(conn: psycopg.AsyncConnection, entity_id: str, namespace: str) -> list[CandidateRow]:
    """Every memory the curator judges (candidate or active), with its fact signals when it is a fact."""
    cur = await conn.execute(
        """SELECT m.id, m.kind, m.content, m.status, m.anchored, m.alpha, m.beta, m.access_count,
                  m.older_access_count, m.last_accessed, m.created_at, m.source_tag, m.source_confidence,
                  m.metadata, f.mention_count, f.source, f.valid_to IS NOT NULL,
                  f.first_seen, f.last_seen
           FROM mnemo.memories m
           LEFT JOIN mnemo.facts f ON f.entity_id = m.entity_id AND f.memory_id = m.id
           WHERE m.entity_id = %s AND m.namespace = %s AND m.status IN ('candidate', 'active')
           ORDER BY m.id""",
        (entity_id, namespace),
    )
    return [CandidateRow(*r) for r in await cur.fetchall()]


async def latest_version(conn: psycopg.AsyncConnection, entity_id: str, namespace: str) -> int:
    cur = await conn.execute(
        "SELECT coalesce(max(version), 0) FROM mnemo.curation_versions WHERE entity_id = %s AND namespace = %s",
        (entity_id, namespace),
    )
    row = await cur.fetchone()
    return int(row[0]) if row else 0


async def stage_version(
    conn: psycopg.AsyncConnection,
    entity_id: str,
    namespace: str,
    *,
    run_id: uuid.UUID | None,
    as_of: datetime,
    items: Sequence[Mapping[str, Any]],
    counts: Mapping[str, int],
) -> int:
    """Write a new staged version (number = latest + 1) with its items; returns the number."""
    await conn.execute(
        "SELECT pg_advisory_xact_lock(hashtext('mnemo.curation.' || %s || '/' || %s))", (entity_id, namespace)
    )
    version = await latest_version(conn, entity_id, namespace) + 1
    await conn.execute(
        """INSERT INTO mnemo.curation_versions (entity_id, namespace, version, run_id, as_of, counts)
           VALUES (%s, %s, %s, %s, %s, %s)""",
        (entity_id, namespace, version, run_id, as_of, Jsonb(dict(counts))),
    )
    async with conn.cursor() as cur:
        await cur.executemany(
            """INSERT INTO mnemo.curation_items (entity_id, namespace, version, memory_id, verdict, score, reasons,
                                                 from_status, to_status)
               VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)""",
            [
                (
                    entity_id,
                    namespace,
                    version,
                    i["memory_id"],
                    i["verdict"],
                    i["score"],
                    list(i["reasons"]),
                    i["from_status"],
                    i["to_status"],
                )
                for i in items
            ],
        )
    return version


async def version_items(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, version: int
) -> list[VersionItem]:
    cur = await conn.execute(
        """SELECT i.memory_id, i.verdict, i.score, i.reasons, i.from_status, i.to_status, m.content, m.kind
           FROM mnemo.curation_items i
           LEFT JOIN mnemo.memories m ON m.entity_id = i.entity_id AND m.id = i.memory_id
           WHERE i.entity_id = %s AND i.namespace = %s AND i.version = %s ORDER BY i.verdict, i.memory_id""",
        (entity_id, namespace, version),
    )
    return [VersionItem(*r) for r in await cur.fetchall()]


async def apply_version(conn: psycopg.AsyncConnection, entity_id: str, namespace: str, version: int) -> int | None:
    """Apply a staged version: each memory still in its recorded ``from_status`` moves to its
    ``to_status``. Returns how many memories changed; None when the version is not staged
    (applying twice changes nothing)."""
    cur = await conn.execute(
        """SELECT status FROM mnemo.curation_versions WHERE entity_id = %s AND namespace = %s AND version = %s
           FOR UPDATE""",
        (entity_id, namespace, version),
    )
    row = await cur.fetchone()
    if row is None or row[0] != "staged":
        return None
    await conn.execute(  # in id order, as every writer of several memories locks them
        """SELECT 1 FROM mnemo.memories m
           JOIN mnemo.curation_items i ON m.entity_id = i.entity_id AND m.id = i.memory_id
           WHERE i.entity_id = %s AND i.namespace = %s AND i.version = %s ORDER BY m.id FOR UPDATE OF m""",
        (entity_id, namespace, version),
    )
    cur = await conn.execute(
        """UPDATE mnemo.memories m SET status = i.to_status, updated_at = now()
           FROM mnemo.curation_items i
           WHERE i.entity_id = %s AND i.namespace = %s AND i.version = %s
             AND m.entity_id = i.entity_id AND m.id = i.memory_id AND m.status = i.from_status
             AND i.to_status <> i.from_status""",
        (entity_id, namespace, version),
    )
    changed = max(cur.rowcount, 0)
    await conn.execute(
        """UPDATE mnemo.curation_versions SET status = 'applied', applied_at = now()
           WHERE entity_id = %s AND namespace = %s AND version = %s""",
        (entity_id, namespace, version),
    )
    return changed


async def version_state(conn: psycopg.AsyncConnection, entity_id: str, namespace: str, version: int) -> str | None:
    cur = await conn.execute(
        "SELECT status FROM mnemo.curation_versions WHERE entity_id = %s AND namespace = %s AND version = %s",
        (entity_id, namespace, version),
    )
    row = await cur.fetchone()
    return None if row is None else str(row[0])
