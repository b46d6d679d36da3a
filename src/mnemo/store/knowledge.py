"""Third-normal-form knowledge: entities, attribute facts, subject-predicate-object triples.

Seeds: archive-adr §4 (extracted entities, relationships and facts, first
written as candidates with provenance and confidence), §9 (mention counts as a
curation signal). A repeat (same normalised hash) increments the mention count
and last-seen time and adds its turns to the provenance; a contradicted fact is
closed (``valid_to``, ``closed_by``), never deleted.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

import psycopg
from psycopg import sql

from mnemo.cognition.text.patterns import FactKind
from mnemo.cognition.text.phrases import fold_accents

__all__ = [
    "EntityRow",
    "FactRow",
    "TripleRow",
    "close_fact",
    "close_triples",
    "facts_of",
    "open_fact",
    "open_facts_for_key",
    "open_facts_of_subject",
    "open_triple",
    "record_fact",
    "record_triple",
    "upsert_entity",
]


async def upsert_entity(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, new_id: uuid.UUID, name: str, norm: str, at: datetime
) -> uuid.UUID:
    """The entity with normalised name ``norm`` (created, or its mention count incremented)."""
    cur = await conn.execute(
        """INSERT INTO mnemo.entities (entity_id, id, namespace, name, norm, first_seen, last_seen)
           VALUES (%s, %s, %s, %s, %s, %s, %s)
           ON CONFLICT (entity_id, namespace, norm) DO UPDATE
           SET mention_count = mnemo.entities.mention_count + 1,
               last_seen = greatest(mnemo.entities.last_seen, EXCLUDED.last_seen),
               first_seen = least(mnemo.entities.first_seen, EXCLUDED.first_seen)
           RETURNING id""",
        (entity_id, new_id, namespace, name, norm, at, at),
    )
    row = await cur.fetchone()
    assert row is not None
    return uuid.UUID(str(row[0]))


@dataclass(frozen=True, slots=True)
class FactRow:
    """An attribute fact, as every fact SELECT here reads it (:data:`_FACT_COLS`, in field order)."""

    id: uuid.UUID
    subject_id: uuid.UUID
    attribute: str
    value: str
    fact_kind: FactKind
    hash: str
    confidence: float
    mention_count: int
    first_seen: datetime
    last_seen: datetime
    provenance: list[uuid.UUID]
    source: str
    valid_from: datetime | None
    valid_to: datetime | None
    closed_by: uuid.UUID | None
    memory_id: uuid.UUID | None


@dataclass(frozen=True, slots=True)
class EntityRow:
    """An entity's record (:func:`facts_of`)."""

    id: uuid.UUID
    name: str
    mention_count: int
    first_seen: datetime
    last_seen: datetime


@dataclass(frozen=True, slots=True)
class TripleRow:
    """A subject-predicate-object triple of an entity (:func:`facts_of`)."""

    id: uuid.UUID
    predicate: str
    object: str
    confidence: float
    mention_count: int
    valid_from: datetime | None
    valid_to: datetime | None


_FACT_COLS: tuple[str, ...] = tuple(f.name for f in fields(FactRow))


def _fact_cols() -> sql.Composed:
    return sql.SQL(", ").join(sql.Identifier(c) for c in _FACT_COLS)


async def open_fact(conn: psycopg.AsyncConnection, entity_id: str, namespace: str, hash_: str) -> FactRow | None:
    cur = await conn.execute(
        sql.SQL(
            "SELECT {} FROM mnemo.facts WHERE entity_id = %s AND namespace = %s AND hash = %s AND valid_to IS NULL"
        ).format(_fact_cols()),
        (entity_id, namespace, hash_),
    )
    row = await cur.fetchone()
    return None if row is None else FactRow(*row)


async def open_facts_for_key(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, key_hash: str
) -> list[FactRow]:
    cur = await conn.execute(
        sql.SQL(
            """SELECT {} FROM mnemo.facts
               WHERE entity_id = %s AND namespace = %s AND key_hash = %s AND valid_to IS NULL ORDER BY first_seen"""
        ).format(_fact_cols()),
        (entity_id, namespace, key_hash),
    )
    return [FactRow(*r) for r in await cur.fetchall()]


async def open_facts_of_subject(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, subject_id: uuid.UUID
) -> list[FactRow]:
    """Every open fact about one entity, oldest first (a state change finds its slot among them)."""
    cur = await conn.execute(
        sql.SQL(
            """SELECT {} FROM mnemo.facts
               WHERE entity_id = %s AND namespace = %s AND subject_id = %s AND valid_to IS NULL ORDER BY first_seen"""
        ).format(_fact_cols()),
        (entity_id, namespace, subject_id),
    )
    return [FactRow(*r) for r in await cur.fetchall()]


async def record_fact(conn: psycopg.AsyncConnection, row: dict[str, Any]) -> tuple[uuid.UUID, bool]:
    """Insert an open fact, or count a repeat of the open fact with the same hash:
    ``(fact_id, created)``."""
    existing = await open_fact(conn, row["entity_id"], row["namespace"], row["hash"])
    if existing is not None:
        await conn.execute(
            """UPDATE mnemo.facts SET mention_count = mention_count + 1,
                      last_seen = greatest(last_seen, %(at)s),
                      confidence = greatest(confidence, %(confidence)s),
                      provenance = ARRAY(SELECT DISTINCT unnest(provenance || %(provenance)s::uuid[]))
               WHERE entity_id = %(entity_id)s AND id = %(id)s""",
            {
                "at": row["last_seen"],
                "confidence": row["confidence"],
                "provenance": list(row["provenance"]),
                "entity_id": row["entity_id"],
                "id": existing.id,
            },
        )
        return uuid.UUID(str(existing.id)), False
    await conn.execute(
        """INSERT INTO mnemo.facts (entity_id, id, namespace, subject_id, attribute, value, fact_kind, key_hash, hash,
                                    confidence, first_seen, last_seen, provenance, source, valid_from, memory_id)
           VALUES (%(entity_id)s, %(id)s, %(namespace)s, %(subject_id)s, %(attribute)s, %(value)s, %(fact_kind)s,
                   %(key_hash)s, %(hash)s, %(confidence)s, %(first_seen)s, %(last_seen)s, %(provenance)s,
                   %(source)s, %(valid_from)s, %(memory_id)s)""",
        {**row, "provenance": list(row["provenance"])},
    )
    return row["id"], True


async def close_fact(
    conn: psycopg.AsyncConnection, entity_id: str, fact_id: uuid.UUID, at: datetime, by: uuid.UUID | None
) -> None:
    """End a fact's validity interval (it stays, as a past value): at ``at``, but never before the
    fact was last stated (it was still true then)."""
    await conn.execute(
        """UPDATE mnemo.facts SET valid_to = greatest(%s, coalesce(valid_from, first_seen), last_seen), closed_by = %s
           WHERE entity_id = %s AND id = %s AND valid_to IS NULL""",
        (at, by, entity_id, fact_id),
    )


async def open_triple(conn: psycopg.AsyncConnection, entity_id: str, namespace: str, hash_: str) -> uuid.UUID | None:
    cur = await conn.execute(
        "SELECT id FROM mnemo.triples WHERE entity_id = %s AND namespace = %s AND hash = %s AND valid_to IS NULL",
        (entity_id, namespace, hash_),
    )
    row = await cur.fetchone()
    return None if row is None else uuid.UUID(str(row[0]))


async def record_triple(conn: psycopg.AsyncConnection, row: dict[str, Any]) -> tuple[uuid.UUID, bool]:
    existing = await open_triple(conn, row["entity_id"], row["namespace"], row["hash"])
    if existing is not None:
        await conn.execute(
            """UPDATE mnemo.triples SET mention_count = mention_count + 1, last_seen = greatest(last_seen, %s),
                      confidence = greatest(confidence, %s),
                      provenance = ARRAY(SELECT DISTINCT unnest(provenance || %s::uuid[]))
               WHERE entity_id = %s AND id = %s""",
            (row["last_seen"], row["confidence"], list(row["provenance"]), row["entity_id"], existing),
        )
        return existing, False
    await conn.execute(
        """INSERT INTO mnemo.triples (entity_id, id, namespace, subject_id, predicate, object, object_id, hash,
                                      confidence, first_seen, last_seen, provenance, valid_from)
           VALUES (%(entity_id)s, %(id)s, %(namespace)s, %(subject_id)s, %(predicate)s, %(object)s, %(object_id)s,
                   %(hash)s, %(confidence)s, %(first_seen)s, %(last_seen)s, %(provenance)s, %(valid_from)s)""",
        {**row, "provenance": list(row["provenance"])},
    )
    return row["id"], True


async def facts_of(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, norm: str
) -> tuple[EntityRow | None, list[FactRow], list[TripleRow]]:
    """An entity's record, all its facts (current and past) and its triples."""
    cur = await conn.execute(
        """SELECT id, name, mention_count, first_seen, last_seen FROM mnemo.entities
           WHERE entity_id = %s AND namespace = %s AND norm = %s""",
        (entity_id, namespace, norm),
    )
    ent = await cur.fetchone()
    if ent is None:
        ent = await _folded_entity(conn, entity_id, namespace, norm)
    if ent is None:
        return None, [], []
    entity = EntityRow(*ent)
    cur = await conn.execute(
        sql.SQL(
            """SELECT {} FROM mnemo.facts WHERE entity_id = %s AND subject_id = %s
               ORDER BY attribute, valid_to IS NOT NULL, coalesce(valid_from, first_seen) DESC"""
        ).format(_fact_cols()),
        (entity_id, entity.id),
    )
    facts = [FactRow(*r) for r in await cur.fetchall()]
    cur = await conn.execute(
        """SELECT id, predicate, object, confidence, mention_count, valid_from, valid_to FROM mnemo.triples
           WHERE entity_id = %s AND subject_id = %s ORDER BY predicate, object""",
        (entity_id, entity.id),
    )
    triples = [TripleRow(*r) for r in await cur.fetchall()]
    return entity, facts, triples


async def _folded_entity(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, norm: str
) -> tuple[Any, ...] | None:
    """The entity whose name folds (case and accents) as ``norm`` does: "jose" finds "José"; the most
    mentioned when several fold alike."""
    want = fold_accents(norm)
    cur = await conn.execute(
        """SELECT id, name, mention_count, first_seen, last_seen, norm FROM mnemo.entities
           WHERE entity_id = %s AND namespace = %s ORDER BY mention_count DESC, first_seen""",
        (entity_id, namespace),
    )
    for row in await cur.fetchall():
        if fold_accents(row[5]) == want:
            return tuple(row[:5])
    return None


async def close_triples(
    conn: psycopg.AsyncConnection,
    entity_id: str,
    namespace: str,
    subject_id: uuid.UUID,
    predicate: str,
    at: datetime,
    *,
    keep_hash: str | None = None,
    only_hash: str | None = None,
    not_from: uuid.UUID | None = None,
) -> int:
    """Close the subject's open triples with ``predicate`` (all but ``keep_hash``, or only ``only_hash``;
    never those the turn ``not_from`` stated)."""
    cur = await conn.execute(
        """UPDATE mnemo.triples SET valid_to = greatest(%s, coalesce(valid_from, first_seen))
           WHERE entity_id = %s AND namespace = %s AND subject_id = %s AND predicate = %s AND valid_to IS NULL
             AND (%s::text IS NULL OR hash <> %s) AND (%s::text IS NULL OR hash = %s)
             AND (%s::uuid IS NULL OR NOT %s::uuid = ANY(provenance))""",
        (at, entity_id, namespace, subject_id, predicate, keep_hash, keep_hash, only_hash, only_hash, not_from,
         not_from),
    )  # fmt: skip
    return max(cur.rowcount, 0)
