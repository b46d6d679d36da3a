"""What a scope's in-memory read index is built and caught up from: versions, change logs, postings
and vectors.

DESIGN §3 ("PostgreSQL is the truth; a read index is a cache"); seeds: memory-architecture §2.1
(memory beside the model, no round trip per item), cognitive-plan §2.2, §2.5. Migration 0023's
row triggers give a scope the next version of its own counter once per writing transaction and log
the ids of the items it touched (issue 42, decision 5); a read index that is behind re-reads those
items here (:mod:`mnemo.recall.scope_index`). The versions row's ``epoch`` is new whenever the row
is created (a scope written again after a purge counts from 1 again): an index of another epoch is
rebuilt.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import psycopg
from psycopg import sql

from mnemo.store.vectors import LIVE

__all__ = [
    "Changes",
    "Postings",
    "ScopeVersion",
    "changes_since",
    "dense_count",
    "dense_rows",
    "forget_changes",
    "postings",
    "prune_changes",
    "scope_version",
    "utterances",
]


class Changes(NamedTuple):
    """The items a scope's writes touched after some version, and the version they bring it to."""

    version: int
    items: list[uuid.UUID]


class ScopeVersion(NamedTuple):
    """Where a scope's versions stand (all zero and None before its first write)."""

    version: int
    since: int
    """The oldest version its change log still reaches back to."""
    epoch: uuid.UUID | None
    """New whenever the versions row is created (migration 0023)."""


async def scope_version(conn: psycopg.AsyncConnection, entity_id: str, namespace: str) -> ScopeVersion:
    """The scope's version, the oldest its change log reaches back to, and its epoch."""
    cur = await conn.execute(
        "SELECT version, since, epoch FROM mnemo.scope_versions WHERE entity_id = %s AND namespace = %s",
        (entity_id, namespace),
    )
    row = await cur.fetchone()
    return ScopeVersion(0, 0, None) if row is None else ScopeVersion(int(row[0]), int(row[1]), row[2])


async def changes_since(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, version: int, epoch: uuid.UUID | None
) -> Changes | None:
    """Every item the scope's writes after ``version`` of ``epoch`` touched; None when the log was
    pruned past it or the scope's versions are of another epoch (purged, or first written, since):
    the index must be rebuilt."""
    cur = await conn.execute(
        """SELECT v.version, v.since, v.epoch, coalesce(array_agg(DISTINCT c.item_id)
                                                 FILTER (WHERE c.item_id IS NOT NULL), '{}')
           FROM mnemo.scope_versions v
           LEFT JOIN mnemo.scope_changes c
             ON c.entity_id = v.entity_id AND c.namespace = v.namespace AND c.version > %(v)s
            AND c.version <= v.version
           WHERE v.entity_id = %(e)s AND v.namespace = %(ns)s
           GROUP BY v.version, v.since, v.epoch""",
        {"e": entity_id, "ns": namespace, "v": version},
    )
    row = await cur.fetchone()
    if row is None:
        return None if epoch is not None else Changes(0, [])
    if row[2] != epoch or int(row[1]) > version:
        return None
    return Changes(int(row[0]), list(row[3]))


async def prune_changes(conn: psycopg.AsyncConnection, keep: int) -> int:
    """Keep each scope's newest ``keep`` versions of its change log (an index further behind is
    rebuilt); how many entries went."""
    cur = await conn.execute(
        """WITH ranked AS (
               SELECT entity_id, namespace, version,
                      row_number() OVER (PARTITION BY entity_id, namespace ORDER BY version DESC) AS r
               FROM (SELECT DISTINCT entity_id, namespace, version FROM mnemo.scope_changes) AS d),
           cut AS (
               UPDATE mnemo.scope_versions s SET since = ranked.version FROM ranked
               WHERE ranked.r = %(keep)s + 1 AND s.entity_id = ranked.entity_id
                 AND s.namespace = ranked.namespace AND s.since < ranked.version
               RETURNING s.entity_id, s.namespace, s.since)
           DELETE FROM mnemo.scope_changes c USING cut
           WHERE c.entity_id = cut.entity_id AND c.namespace = cut.namespace AND c.version <= cut.since""",
        {"keep": keep},
    )
    return cur.rowcount


async def forget_changes(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, items: Sequence[uuid.UUID]
) -> None:
    """Inside a ``forget``'s transaction: no log entry names a forgotten item, and every read index
    of the scope from before it is rebuilt (it cannot learn from the log which items went)."""
    await conn.execute(
        """WITH gone AS (DELETE FROM mnemo.scope_changes
                         WHERE entity_id = %(e)s AND namespace = %(ns)s AND item_id = ANY(%(ids)s))
           UPDATE mnemo.scope_versions SET since = version WHERE entity_id = %(e)s AND namespace = %(ns)s""",
        {"e": entity_id, "ns": namespace, "ids": list(items)},
    )


class Postings(NamedTuple):
    """A scope's postings (or some items'), one row per (term, item), as parallel arrays."""

    terms: list[str]
    items: list[uuid.UUID]
    kinds: list[str]
    tf: np.ndarray
    doc_len: np.ndarray


async def postings(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, ids: Sequence[uuid.UUID] | None = None
) -> Postings:
    """The scope's whole postings, or those of ``ids``, in (term, item) order."""
    where = "" if ids is None else " AND item_id = ANY(%(ids)s)"
    cur = await conn.execute(
        "SELECT term, item_id, item_kind, tf, doc_len FROM mnemo.postings"  # noqa: S608 (a constant)
        " WHERE entity_id = %(e)s AND namespace = %(ns)s" + where + " ORDER BY term, item_id",
        {"e": entity_id, "ns": namespace, "ids": list(ids or [])},
        binary=True,
    )
    rows = await cur.fetchall()
    return Postings(
        [r[0] for r in rows],
        [r[1] for r in rows],
        [r[2] for r in rows],
        np.fromiter((r[3] for r in rows), dtype=np.float64, count=len(rows)),
        np.fromiter((r[4] for r in rows), dtype=np.float64, count=len(rows)),
    )


_DENSE = (
    "SELECT"
    + """ v.item_id, v.item_kind, v.embedding FROM {t} v
    WHERE v.entity_id = %(e)s AND v.namespace = %(ns)s AND v.slug = %(slug)s {ids}"""
    + LIVE
    + """
    ORDER BY v.item_id"""
)
"""The live rows of a scope's vector table (what the dense retriever searches): turns, hot lines,
candidate and active memories."""


async def dense_rows(
    conn: psycopg.AsyncConnection,
    table: str,
    entity_id: str,
    namespace: str,
    slug: str,
    ids: Sequence[uuid.UUID] | None = None,
) -> tuple[list[uuid.UUID], list[str], np.ndarray]:
    """``(ids, kinds, vectors)`` of the scope's live vectors in ``slug``'s space (or of ``ids``),
    as the halfvec values they are, in float32, in id order."""
    stmt = sql.SQL(_DENSE).format(
        t=sql.SQL("vectors.{}").format(sql.Identifier(table)),
        ids=sql.SQL("" if ids is None else "AND v.item_id = ANY(%(ids)s)"),
    )
    cur = await conn.execute(stmt, {"e": entity_id, "ns": namespace, "slug": slug, "ids": list(ids or [])}, binary=True)
    rows = await cur.fetchall()
    if not rows:
        return [], [], np.zeros((0, 0), dtype=np.float32)
    vectors = np.stack([np.asarray(r[2].to_numpy(), dtype=np.float32) for r in rows])
    return [r[0] for r in rows], [r[1] for r in rows], vectors


_DENSE_COUNT = (
    "SELECT count(*) FROM {t} v"  # noqa: S608 (a constant; the table is an sql.Identifier)
    + """ WHERE v.entity_id = %(e)s AND v.namespace = %(ns)s AND v.slug = %(slug)s"""
    + LIVE
)


async def dense_count(conn: psycopg.AsyncConnection, table: str, entity_id: str, namespace: str, slug: str) -> int:
    """How many live vectors the scope has in ``slug``'s space: what its read index would hold (the
    index's size is bounded below by it before anything is read)."""
    stmt = sql.SQL(_DENSE_COUNT).format(t=sql.SQL("vectors.{}").format(sql.Identifier(table)))
    cur = await conn.execute(stmt, {"e": entity_id, "ns": namespace, "slug": slug})
    row = await cur.fetchone()
    return int(row[0]) if row else 0


_UTTERANCES = """SELECT 'turn', id, session_id, turn_number FROM mnemo.turns
    WHERE entity_id = %(e)s AND namespace = %(ns)s {turns}
    UNION ALL
    SELECT DISTINCT 'line', turn_id, session_id, turn_number FROM mnemo.block_lines
    WHERE entity_id = %(e)s AND namespace = %(ns)s {lines}"""


async def utterances(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, ids: Sequence[uuid.UUID] | None = None
) -> list[tuple[str, uuid.UUID, str, int]]:
    """``(kind, id, session, turn number)`` of the scope's raw turns and block lines (or of ``ids``):
    where neighbour smoothing finds an utterance's session neighbours
    (:func:`mnemo.store.search.positions`)."""
    stmt = _UTTERANCES.format(
        turns="" if ids is None else "AND id = ANY(%(ids)s)",
        lines="" if ids is None else "AND turn_id = ANY(%(ids)s)",
    )
    cur = await conn.execute(stmt, {"e": entity_id, "ns": namespace, "ids": list(ids or [])}, binary=True)
    return [(r[0], r[1], r[2], int(r[3])) for r in await cur.fetchall()]
