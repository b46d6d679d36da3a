"""Reads that benchmarks measure with (:mod:`mnemo.admin.probes`), never used to serve a user.

Every statement binds one entity (DESIGN §7), except the whole-table
``VACUUM (ANALYZE)`` after the inspector benchmark's bulk fixture, and the perf benchmark's drop
and rebuild of a vector table's HNSW index around its bulk load (issue 42).
"""

from __future__ import annotations

import uuid
from datetime import datetime

import psycopg
from psycopg import sql

__all__ = [
    "block_turns",
    "copy_turns_as_memories",
    "create_indexes",
    "drop_hnsw",
    "memory_at",
    "memory_count",
    "memory_ids",
    "vacuum_memories",
]


async def block_turns(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str
) -> dict[uuid.UUID, list[uuid.UUID]]:
    """Each block of the scope and the turns it holds."""
    cur = await conn.execute(
        "SELECT id, turn_ids FROM mnemo.blocks WHERE entity_id = %s AND namespace = %s", (entity_id, namespace)
    )
    return {block: list(turn_ids) for block, turn_ids in await cur.fetchall()}


async def memory_count(conn: psycopg.AsyncConnection, entity_id: str, namespace: str) -> int:
    """The memories of the scope, in any status."""
    cur = await conn.execute(
        "SELECT count(*) FROM mnemo.memories WHERE entity_id = %s AND namespace = %s", (entity_id, namespace)
    )
    row = await cur.fetchone()
    return int(row[0]) if row else 0


async def memory_ids(conn: psycopg.AsyncConnection, entity_id: str, namespace: str) -> list[uuid.UUID]:
    """Every memory id of the scope."""
    cur = await conn.execute(
        "SELECT id FROM mnemo.memories WHERE entity_id = %s AND namespace = %s", (entity_id, namespace)
    )
    return [row[0] for row in await cur.fetchall()]


async def vacuum_memories(conn: psycopg.AsyncConnection) -> None:
    """``VACUUM (ANALYZE)`` the memories after a bulk fixture (outside a transaction)."""
    await conn.execute("VACUUM (ANALYZE) mnemo.memories")


async def memory_at(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, offset: int
) -> tuple[datetime, uuid.UUID] | None:
    """The ``(created_at, id)`` of the scope's memory ``offset`` rows in, newest first."""
    cur = await conn.execute(
        """SELECT created_at, id FROM mnemo.memories WHERE entity_id = %s AND namespace = %s
           ORDER BY created_at DESC, id DESC OFFSET %s LIMIT 1""",
        (entity_id, namespace, offset),
    )
    row = await cur.fetchone()
    return None if row is None else (row[0], row[1])


async def copy_turns_as_memories(
    conn: psycopg.AsyncConnection, entity_id: str, source: str, target: str, vector_table: str
) -> int:
    """Benchmark fixture (``benchmarks/inspector_pages.py``): every turn of scope ``source`` becomes
    an episodic memory of scope ``target`` (same text, time and vector; ids are new), in one
    statement per table. Postings are the caller's (``lexicon.add_postings``)."""
    await conn.execute(
        "INSERT INTO mnemo.scopes (entity_id, namespace) VALUES (%s, %s) ON CONFLICT DO NOTHING", (entity_id, target)
    )
    await conn.execute(
        """CREATE TEMP TABLE copied ON COMMIT DROP AS
           SELECT id AS turn_id, uuidv7() AS id, content, created_at FROM mnemo.turns
           WHERE entity_id = %s AND namespace = %s""",
        (entity_id, source),
    )
    cur = await conn.execute(
        """INSERT INTO mnemo.memories (entity_id, id, namespace, kind, content, created_at, alpha, beta, status)
           SELECT %s, id, %s, 'episodic', content, created_at, 1 + (abs(hashtext(content)) %% 7), 4,
                  (ARRAY['active', 'active', 'active', 'candidate', 'archived'])[1 + abs(hashtext(id::text)) %% 5]
           FROM copied""",
        (entity_id, target),
    )
    query = sql.SQL(
        """INSERT INTO vectors.{} (entity_id, item_id, namespace, item_kind, slug, embedding)
           SELECT v.entity_id, c.id, %s, 'memory', v.slug, v.embedding FROM copied c
           JOIN vectors.{} v ON v.entity_id = %s AND v.item_id = c.turn_id"""
    ).format(sql.Identifier(vector_table), sql.Identifier(vector_table))
    await conn.execute(query, (target, entity_id))
    return cur.rowcount


async def drop_hnsw(conn: psycopg.AsyncConnection, table: str) -> list[str]:
    """Drop the vector table's HNSW indexes before a benchmark's bulk load; their definitions, for
    :func:`create_indexes` after it (a graph built once over the loaded rows instead of grown row
    by row: minutes, not hours, at a million rows on two cores)."""
    cur = await conn.execute(
        "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'vectors' AND tablename = %s"
        " AND indexdef ILIKE '%%USING hnsw%%'",
        (table,),
    )
    found = await cur.fetchall()
    for name, _ in found:
        await conn.execute(sql.SQL("DROP INDEX vectors.{}").format(sql.Identifier(name)))
    return [definition for _, definition in found]


async def create_indexes(conn: psycopg.AsyncConnection, definitions: list[str], maintenance_mb: int) -> None:
    """Build the indexes :func:`drop_hnsw` dropped, with ``maintenance_mb`` MiB of build memory (the
    graph stays in memory while it is built when it fits)."""
    async with conn.transaction():
        await conn.execute(
            sql.SQL("SET LOCAL maintenance_work_mem = {}").format(sql.Literal(f"{int(maintenance_mb)}MB"))
        )
        for definition in definitions:
            await conn.execute(sql.SQL(definition))  # pg_get_indexdef's own text
