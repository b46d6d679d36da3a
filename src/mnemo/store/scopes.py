"""Scopes and grants (archive-adr §7 "Sigil Scope", "Shared Scope Is Exceptional").

A read names the scope it reads and the entity that reads it. The owner reads
its own scopes; anyone else needs a grant row written by the owner. Each check
is a single-entity query on the owner's rows.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any, NamedTuple

import psycopg
from psycopg import sql

__all__ = [
    "create_grant",
    "ensure_scope",
    "entity_namespaces",
    "every_scope_summary",
    "list_grants",
    "list_scopes",
    "read_access",
    "recall_facts",
    "revoke_grant",
    "scope_summaries",
]


async def ensure_scope(conn: psycopg.AsyncConnection, entity_id: str, namespace: str) -> None:
    await conn.execute(
        "INSERT INTO mnemo.scopes (entity_id, namespace) VALUES (%s, %s) ON CONFLICT DO NOTHING",
        (entity_id, namespace),
    )


async def read_access(conn: psycopg.AsyncConnection, entity_id: str, namespace: str, reader: str) -> tuple[bool, bool]:
    """``(scope_exists, reader_may_read)`` in one round trip.

    ``scope_exists`` is only told to a reader who may read the scope (its owner, or a grantee):
    for anyone else it is False whether or not the scope exists, so no caller can turn a refused
    read into a probe for another entity's scopes.
    """
    cur = await conn.execute(
        """SELECT EXISTS (SELECT 1 FROM mnemo.scopes WHERE entity_id = %(e)s AND namespace = %(ns)s),
                  %(r)s = %(e)s OR EXISTS (SELECT 1 FROM mnemo.grants
                                           WHERE entity_id = %(e)s AND namespace = %(ns)s AND grantee = %(r)s)""",
        {"e": entity_id, "ns": namespace, "r": reader},
    )
    row = await cur.fetchone()
    assert row is not None
    allowed = bool(row[1])
    return allowed and bool(row[0]), allowed


class RecallFacts(NamedTuple):
    """What a recall needs to know of its scope before it searches, read in one round trip."""

    allowed: bool
    """Whether the reader may read the scope (its owner, or a grantee)."""
    deep: bool
    """Whether any block of the scope lives in the cortex (:func:`mnemo.store.tiers.has_cortex`)."""
    indexed: int
    """How many items the scope's lexical postings hold (``lexical_stats.docs``): a lower bound on
    its live turns and memories (an item of stop words only has no postings)."""
    known: dict[str, bool]
    """For each searchable word asked about, whether the postings hold all its lexemes
    (:func:`mnemo.store.lexicon.known_words`)."""
    passages: bool = True
    """Whether any long item of the scope has passage vectors (else their searches are skipped)."""
    lines: bool = True
    """Whether any block of the scope keeps lines (else their look-ups are skipped)."""
    version: int = 0
    """The scope's version (migrations 0018, 0023): a read index behind it catches up first."""
    epoch: uuid.UUID | None = None
    """The scope's versions row's epoch (None before its first write): new whenever the scope is
    written again after a purge, when its versions count from 1 again (migration 0023)."""
    total_len: int | None = None
    """The postings' total document length (``lexical_stats``; None without a row): BM25's average."""
    terms: tuple[str, ...] = ()
    """The query's distinct lexemes (english ``tsvector``), as the SQL scorer reads them."""
    alphas: dict[str, float] | None = None
    """The scope's self-tuned blend alphas (``mnemo.tuning``), or None: the defaults."""


_RECALL_FACTS = """
    SELECT %(r)s = %(e)s OR EXISTS (SELECT 1 FROM mnemo.grants
                                    WHERE entity_id = %(e)s AND namespace = %(ns)s AND grantee = %(r)s),
           EXISTS (SELECT 1 FROM mnemo.blocks WHERE entity_id = %(e)s AND namespace = %(ns)s
                     AND migrated_at IS NOT NULL),
           coalesce((SELECT docs FROM mnemo.lexical_stats WHERE entity_id = %(e)s AND namespace = %(ns)s), 0),
           (SELECT coalesce(jsonb_object_agg(w, k), '{}'::jsonb) FROM (
                SELECT w, bool_and(EXISTS (SELECT 1 FROM mnemo.postings p WHERE p.entity_id = %(e)s
                                           AND p.namespace = %(ns)s AND p.term = l.lexeme)) AS k
                FROM unnest(%(words)s::text[]) AS w CROSS JOIN LATERAL unnest(to_tsvector('english', w)) AS l
                GROUP BY w) AS known),
           EXISTS (SELECT 1 FROM mnemo.passages WHERE entity_id = %(e)s AND namespace = %(ns)s),
           EXISTS (SELECT 1 FROM mnemo.block_lines WHERE entity_id = %(e)s AND namespace = %(ns)s),
           coalesce((SELECT version FROM mnemo.scope_versions WHERE entity_id = %(e)s AND namespace = %(ns)s), 0),
           (SELECT total_len FROM mnemo.lexical_stats WHERE entity_id = %(e)s AND namespace = %(ns)s),
           (SELECT coalesce(array_agg(DISTINCT lexeme ORDER BY lexeme), '{}')
            FROM unnest(to_tsvector('english', %(text)s))),
           (SELECT params FROM mnemo.tuning WHERE entity_id = %(e)s AND namespace = %(ns)s AND name = 'blend'),
           (SELECT epoch FROM mnemo.scope_versions WHERE entity_id = %(e)s AND namespace = %(ns)s)"""


async def recall_facts(
    conn: psycopg.AsyncConnection,
    entity_id: str,
    namespace: str,
    reader: str,
    words: Sequence[str] = (),
    text: str = "",
) -> RecallFacts:
    """Read access, the cortex, the postings' size and the known ``words`` of a scope, its version
    and the lexemes of the query ``text``, in one statement instead of six (the facts other than
    ``allowed`` are only for a reader who may read)."""
    cur = await conn.execute(
        _RECALL_FACTS, {"e": entity_id, "ns": namespace, "r": reader, "words": list(words), "text": text}
    )
    row = await cur.fetchone()
    assert row is not None
    if not row[0]:
        return RecallFacts(False, False, 0, {})
    known = {str(w): bool(k) for w, k in row[3].items()}
    return RecallFacts(
        True, bool(row[1]), int(row[2]), {w: known[w] for w in words if w in known}, row[4], row[5],
        version=int(row[6]), total_len=None if row[7] is None else int(row[7]), terms=tuple(row[8]),
        alphas=None if row[9] is None else {str(c): float(a) for c, a in row[9].get("alphas", {}).items()},
        epoch=row[10],
    )  # fmt: skip


async def create_grant(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, grantee: str, *, export: bool = False
) -> bool:
    """Let ``grantee`` read ``(entity_id, namespace)`` (and export it, with ``export``); False if it
    already could (a read grant gains the export right when asked; it is never taken away here)."""
    cur = await conn.execute(
        """INSERT INTO mnemo.grants AS g (entity_id, namespace, grantee, export) VALUES (%s, %s, %s, %s)
           ON CONFLICT (entity_id, namespace, grantee) DO UPDATE SET export = true
           WHERE EXCLUDED.export AND NOT g.export""",
        (entity_id, namespace, grantee, export),
    )
    return cur.rowcount == 1


async def revoke_grant(conn: psycopg.AsyncConnection, entity_id: str, namespace: str, grantee: str) -> bool:
    cur = await conn.execute(
        "DELETE FROM mnemo.grants WHERE entity_id = %s AND namespace = %s AND grantee = %s",
        (entity_id, namespace, grantee),
    )
    return cur.rowcount == 1


async def list_scopes(conn: psycopg.AsyncConnection) -> list[tuple[str, str]]:
    """Every scope (administration: status, re-embedding)."""
    cur = await conn.execute("SELECT entity_id, namespace FROM mnemo.scopes ORDER BY entity_id, namespace")
    return [(r[0], r[1]) for r in await cur.fetchall()]


async def entity_namespaces(conn: psycopg.AsyncConnection, entity_id: str) -> list[str]:
    """The namespaces of ``entity_id``'s scopes, sorted, their rows locked (inside a transaction)."""
    cur = await conn.execute(
        "SELECT namespace FROM mnemo.scopes WHERE entity_id = %s ORDER BY namespace FOR UPDATE", (entity_id,)
    )
    return [r[0] for r in await cur.fetchall()]


async def list_grants(conn: psycopg.AsyncConnection, entity_id: str, namespace: str) -> list[str]:
    """The entities granted read access to ``(entity_id, namespace)``, sorted."""
    cur = await conn.execute(
        "SELECT grantee FROM mnemo.grants WHERE entity_id = %s AND namespace = %s ORDER BY grantee",
        (entity_id, namespace),
    )
    return [r[0] for r in await cur.fetchall()]


# Per scope: (entity_id, namespace, turns, memories, blocks, current facts, last write).
_SUMMARIES = sql.SQL(
    """SELECT s.entity_id, s.namespace,
                  (SELECT count(*) FROM mnemo.turns t WHERE t.entity_id = s.entity_id AND t.namespace = s.namespace),
                  (SELECT count(*) FROM mnemo.memories m
                   WHERE m.entity_id = s.entity_id AND m.namespace = s.namespace),
                  (SELECT count(*) FROM mnemo.blocks b WHERE b.entity_id = s.entity_id AND b.namespace = s.namespace),
                  (SELECT count(*) FROM mnemo.facts f
                   WHERE f.entity_id = s.entity_id AND f.namespace = s.namespace AND f.valid_to IS NULL),
                  GREATEST(s.created_at,
                           (SELECT max(t.recorded_at) FROM mnemo.turns t
                            WHERE t.entity_id = s.entity_id AND t.namespace = s.namespace),
                           (SELECT max(m.created_at) FROM mnemo.memories m
                            WHERE m.entity_id = s.entity_id AND m.namespace = s.namespace),
                           (SELECT max(b.created_at) FROM mnemo.blocks b
                            WHERE b.entity_id = s.entity_id AND b.namespace = s.namespace))
           FROM mnemo.scopes s
           {where}
           ORDER BY s.entity_id, s.namespace"""
)


async def scope_summaries(conn: psycopg.AsyncConnection, entity_id: str | None = None) -> list[tuple[Any, ...]]:
    """Per scope (of ``entity_id``, or every scope): ``(entity_id, namespace, turns, memories, blocks,
    current facts, last write)``. The last write is the latest of the scope's creation, a turn's
    arrival, a memory's or a block's creation. Administration (``mnemo scopes``)."""
    if entity_id is None:
        return await every_scope_summary(conn)
    cur = await conn.execute(_SUMMARIES.format(where=sql.SQL("WHERE s.entity_id = %(e)s")), {"e": entity_id})
    return [tuple(r) for r in await cur.fetchall()]


async def every_scope_summary(conn: psycopg.AsyncConnection) -> list[tuple[Any, ...]]:
    """:func:`scope_summaries` of every scope of every entity: the one many-entity statement of the
    listing, kept apart so that the single-entity check (DESIGN §7) can allow it by name."""
    cur = await conn.execute(_SUMMARIES.format(where=sql.SQL("")))
    return [tuple(r) for r in await cur.fetchall()]
