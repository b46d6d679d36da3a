"""The rows of a scope's consolidated state as packets carry them: blocks and their lines,
entities, facts, triples, links and the night's bookkeeping (read for an export, written by an import).

Seeds: memory-architecture §6 (bifocal packets carry a scope's memory whole), §3.4 (blocks),
archive-adr §9 (facts and triples with their validity) and "Logical Domain Isolation" (a fork
starts as a copy of its parent). Every statement names one entity and one namespace.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

__all__ = [
    "BLOCK_COLUMNS",
    "FACT_COLUMNS",
    "TRIPLE_COLUMNS",
    "blocks",
    "entities",
    "facts",
    "insert_blocks",
    "insert_entity",
    "insert_fact",
    "insert_triple",
    "line_postings",
    "lines",
    "links",
    "night",
    "record_items",
    "restore_night",
    "restore_turns",
    "state_items",
    "triples",
]

BLOCK_COLUMNS = (
    "kind", "session_id", "first_turn", "last_turn", "turn_ids", "prose", "content", "flux_metrics",
    "salience_scores", "coherence_gain", "ties_weight", "user_tier", "arc_start_time", "arc_end_time",
    "session_continuity", "parent_metablock_id", "continues_from", "continued_by", "derived_from", "citations",
    "memory_id", "run_id", "created_at", "migrated_at",
)  # fmt: skip
FACT_COLUMNS = (
    "subject_id", "attribute", "value", "fact_kind", "key_hash", "hash", "confidence", "mention_count",
    "first_seen", "last_seen", "provenance", "source", "valid_from", "valid_to", "closed_by", "memory_id",
)  # fmt: skip
TRIPLE_COLUMNS = (
    "subject_id", "predicate", "object", "object_id", "hash", "confidence", "mention_count", "first_seen",
    "last_seen", "provenance", "valid_from", "valid_to",
)  # fmt: skip
_JSON = ("prose", "flux_metrics", "salience_scores", "citations")


async def _dicts(conn: psycopg.AsyncConnection, query: sql.Composed | str, params: Any) -> list[dict[str, Any]]:
    async with conn.cursor(row_factory=dict_row) as cur:
        await cur.execute(query, params)
        return list(await cur.fetchall())


def _select(table: str, columns: Sequence[str], where: str = "") -> sql.Composed:
    cols = sql.SQL(", ").join(sql.Identifier(c) for c in ("id", *columns))
    return sql.SQL("SELECT {} FROM {} WHERE entity_id = %(e)s AND namespace = %(ns)s {} ORDER BY id").format(
        cols, sql.Identifier("mnemo", table), sql.SQL(where)
    )


async def blocks(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, memory_ids: Sequence[uuid.UUID] | None = None
) -> list[dict[str, Any]]:
    """The scope's blocks (only those of ``memory_ids`` when given), every column, in id order."""
    where = "AND (%(m)s::uuid[] IS NULL OR memory_id = ANY(%(m)s))"
    ids = list(memory_ids) if memory_ids is not None else None
    return await _dicts(conn, _select("blocks", BLOCK_COLUMNS, where), {"e": entity_id, "ns": namespace, "m": ids})


async def lines(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, block_ids: Sequence[uuid.UUID]
) -> list[dict[str, Any]]:
    """The lines of ``block_ids`` in block and turn order, each with ``kept``: whether its raw
    turn is still in the day table (then the line shares the turn's id and index entries)."""
    if not block_ids:
        return []
    return await _dicts(
        conn,
        """SELECT l.block_id, l.turn_id, l.session_id, l.turn_number, l.role, l.speaker, l.content, l.created_at,
                  l.metadata, EXISTS (SELECT 1 FROM mnemo.turns t WHERE t.entity_id = l.entity_id
                                      AND t.id = l.turn_id) AS kept
           FROM mnemo.block_lines l
           WHERE l.entity_id = %s AND l.namespace = %s AND l.block_id = ANY(%s)
           ORDER BY l.block_id, l.turn_number, l.turn_id""",
        (entity_id, namespace, list(block_ids)),
    )


async def entities(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, ids: Sequence[uuid.UUID] | None = None
) -> list[dict[str, Any]]:
    """The scope's knowledge entities (only ``ids`` when given)."""
    where = "AND (%(i)s::uuid[] IS NULL OR id = ANY(%(i)s))"
    columns = ("name", "norm", "mention_count", "first_seen", "last_seen")
    params = {"e": entity_id, "ns": namespace, "i": list(ids) if ids is not None else None}
    return await _dicts(conn, _select("entities", columns, where), params)


async def facts(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, memory_ids: Sequence[uuid.UUID] | None = None
) -> list[dict[str, Any]]:
    """The scope's facts, open and closed (only those of ``memory_ids`` when given)."""
    where = "AND (%(m)s::uuid[] IS NULL OR memory_id = ANY(%(m)s))"
    ids = list(memory_ids) if memory_ids is not None else None
    return await _dicts(conn, _select("facts", FACT_COLUMNS, where), {"e": entity_id, "ns": namespace, "m": ids})


async def triples(conn: psycopg.AsyncConnection, entity_id: str, namespace: str) -> list[dict[str, Any]]:
    """The scope's triples, open and closed."""
    return await _dicts(conn, _select("triples", TRIPLE_COLUMNS), {"e": entity_id, "ns": namespace})


async def links(conn: psycopg.AsyncConnection, entity_id: str, namespace: str) -> list[dict[str, Any]]:
    """The scope's structural links."""
    return await _dicts(
        conn,
        """SELECT source_id, target_id, link_type, strength FROM mnemo.links
           WHERE entity_id = %s AND namespace = %s ORDER BY source_id, target_id, link_type""",
        (entity_id, namespace),
    )


async def night(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The night's bookkeeping: each session's progress marks, and the per-scope state by key."""
    sessions = await _dicts(
        conn,
        """SELECT session_id, blocks_through, facts_through, open_arc FROM mnemo.night_sessions
           WHERE entity_id = %s AND namespace = %s ORDER BY session_id""",
        (entity_id, namespace),
    )
    cur = await conn.execute(
        "SELECT key, value FROM mnemo.night_state WHERE entity_id = %s AND namespace = %s ORDER BY key",
        (entity_id, namespace),
    )
    return sessions, {str(k): v for k, v in await cur.fetchall()}


# --- import ---------------------------------------------------------------------------------------


async def state_items(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, packet_ids: Sequence[str]
) -> dict[str, uuid.UUID]:
    """Which state packets of ``packet_ids`` an import already wrote into the scope: packet id -> row id."""
    if not packet_ids:
        return {}
    cur = await conn.execute(
        """SELECT packet_id, item_id FROM mnemo.packet_items
           WHERE entity_id = %s AND namespace = %s AND packet_id = ANY(%s)""",
        (entity_id, namespace, list(packet_ids)),
    )
    return {str(p): i for p, i in await cur.fetchall()}


async def record_items(
    conn: psycopg.AsyncConnection,
    entity_id: str,
    namespace: str,
    items: Sequence[tuple[str, str, uuid.UUID]],
) -> None:
    """Remember which row each state packet ``(packet_id, packet_type, row id)`` became."""
    if not items:
        return
    async with conn.cursor() as cur:
        await cur.executemany(
            """INSERT INTO mnemo.packet_items (entity_id, namespace, packet_id, packet_type, item_id)
               VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING""",
            [(entity_id, namespace, p, t, i) for p, t, i in items],
        )


async def insert_blocks(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, rows: Sequence[Mapping[str, Any]]
) -> None:
    """Blocks as a packet describes them (ids already those of the target scope)."""
    if not rows:
        return
    columns = ("entity_id", "namespace", "id", *BLOCK_COLUMNS)
    query = sql.SQL("INSERT INTO mnemo.blocks ({}) VALUES ({})").format(
        sql.SQL(", ").join(sql.Identifier(c) for c in columns), sql.SQL(", ").join(sql.Placeholder(c) for c in columns)
    )
    values = [
        dict(r) | {"entity_id": entity_id, "namespace": namespace} | {k: Jsonb(r[k]) for k in _JSON} for r in rows
    ]
    async with conn.cursor() as cur:
        await cur.executemany(query, values)


async def line_postings(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, turn_ids: Sequence[uuid.UUID]
) -> None:
    """Index lines whose raw turn is gone (item kind ``line``), as their turn's text was indexed
    (speaker and content), and count them in the scope's lexical statistics."""
    if not turn_ids:
        return
    await conn.execute(
        """WITH l AS (
               SELECT DISTINCT ON (turn_id) entity_id, namespace, turn_id,
                      to_tsvector('english', coalesce(speaker, '') || ' ' || content) AS tsv
               FROM mnemo.block_lines WHERE entity_id = %(e)s AND namespace = %(ns)s AND turn_id = ANY(%(ids)s)
               ORDER BY turn_id, block_id),
           new AS (
               INSERT INTO mnemo.postings (entity_id, namespace, term, item_id, item_kind, tf, doc_len)
               SELECT l.entity_id, l.namespace, u.lexeme, l.turn_id, 'line', coalesce(array_length(u.positions, 1), 1),
                      sum(coalesce(array_length(u.positions, 1), 1)) OVER (PARTITION BY l.turn_id)
               FROM l CROSS JOIN LATERAL unnest(l.tsv) u
               RETURNING item_id, tf)
           INSERT INTO mnemo.lexical_stats AS s (entity_id, namespace, docs, total_len)
           SELECT %(e)s, %(ns)s, count(DISTINCT item_id), coalesce(sum(tf), 0) FROM new
           ON CONFLICT (entity_id, namespace) DO UPDATE
           SET docs = s.docs + EXCLUDED.docs, total_len = s.total_len + EXCLUDED.total_len""",
        {"e": entity_id, "ns": namespace, "ids": list(turn_ids)},
    )


async def insert_entity(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, row: Mapping[str, Any]
) -> uuid.UUID:
    """A knowledge entity; one the scope already knows by its normalised name is that one."""
    cur = await conn.execute(
        """INSERT INTO mnemo.entities (entity_id, id, namespace, name, norm, mention_count, first_seen, last_seen)
           VALUES (%(e)s, %(id)s, %(ns)s, %(name)s, %(norm)s, %(mention_count)s, %(first_seen)s, %(last_seen)s)
           ON CONFLICT (entity_id, namespace, norm) DO UPDATE SET norm = EXCLUDED.norm
           RETURNING id""",
        dict(row) | {"e": entity_id, "ns": namespace},
    )
    found = await cur.fetchone()
    assert found is not None
    return uuid.UUID(str(found[0]))


async def _insert_knowledge(
    conn: psycopg.AsyncConnection, table: str, columns: Sequence[str], row: Mapping[str, Any]
) -> uuid.UUID:
    """A fact or triple; an open one whose hash the scope already holds open is that one."""
    cols = ("entity_id", "namespace", "id", *columns)
    query = sql.SQL(
        """INSERT INTO {t} ({c}) VALUES ({v}) ON CONFLICT (entity_id, namespace, hash) WHERE valid_to IS NULL
           DO NOTHING RETURNING id"""
    ).format(
        t=sql.Identifier("mnemo", table),
        c=sql.SQL(", ").join(sql.Identifier(c) for c in cols),
        v=sql.SQL(", ").join(sql.Placeholder(c) for c in cols),
    )
    cur = await conn.execute(query, row)
    found = await cur.fetchone()
    if found is not None:
        return uuid.UUID(str(found[0]))
    cur = await conn.execute(
        sql.SQL("SELECT id FROM {} WHERE entity_id = %s AND namespace = %s AND hash = %s AND valid_to IS NULL").format(
            sql.Identifier("mnemo", table)
        ),
        (row["entity_id"], row["namespace"], row["hash"]),
    )
    same = await cur.fetchone()
    assert same is not None
    return uuid.UUID(str(same[0]))


async def insert_fact(conn: psycopg.AsyncConnection, row: Mapping[str, Any]) -> uuid.UUID:
    """A fact with its validity (``row`` names the scope); returns its id in the scope."""
    return await _insert_knowledge(conn, "facts", FACT_COLUMNS, row)


async def insert_triple(conn: psycopg.AsyncConnection, row: Mapping[str, Any]) -> uuid.UUID:
    """A triple with its validity (``row`` names the scope); returns its id in the scope."""
    return await _insert_knowledge(conn, "triples", TRIPLE_COLUMNS, row)


async def restore_night(
    conn: psycopg.AsyncConnection,
    entity_id: str,
    namespace: str,
    sessions: Sequence[Mapping[str, Any]],
    state: Mapping[str, Any],
) -> None:
    """The night's bookkeeping a copy carries; what the scope already has of its own is kept."""
    async with conn.cursor() as cur:
        if sessions:
            await cur.executemany(
                """INSERT INTO mnemo.night_sessions (entity_id, namespace, session_id, blocks_through, facts_through,
                                                     open_arc)
                   VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING""",
                [
                    (entity_id, namespace, s["session_id"], s["blocks_through"], s["facts_through"], s["open_arc"])
                    for s in sessions
                ],
            )
        if state:
            await cur.executemany(
                """INSERT INTO mnemo.night_state (entity_id, namespace, key, value) VALUES (%s, %s, %s, %s)
                   ON CONFLICT DO NOTHING""",
                [(entity_id, namespace, k, Jsonb(v)) for k, v in state.items()],
            )


async def restore_turns(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, rows: Sequence[Mapping[str, Any]]
) -> None:
    """Give imported turns (``rows[i]["id"]``) the night's marks their packets carried: surprisal,
    flux state, user tier and arrival time."""
    if not rows:
        return
    async with conn.cursor() as cur:
        await cur.executemany(
            """UPDATE mnemo.turns SET surprisal = %(surprisal)s, flux_state = %(flux_state)s,
                      user_tier = coalesce(%(user_tier)s, user_tier),
                      recorded_at = coalesce(%(recorded_at)s, recorded_at)
               WHERE entity_id = %(e)s AND namespace = %(ns)s AND id = %(id)s""",
            [dict(r) | {"e": entity_id, "ns": namespace} for r in rows],
        )
