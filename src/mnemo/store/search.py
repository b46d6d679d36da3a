"""Full-text candidates and hit hydration for the recall path.

Seed: cognitive-plan §2.5: a generated ``tsvector`` with a GIN index beside the
HNSW index. The query's lexemes are OR-ed (``plainto_tsquery`` would AND them,
which finds nothing for most natural-language questions) and ranked with
``ts_rank_cd``.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

import psycopg

from mnemo.models import Role

__all__ = [
    "ItemText",
    "MemoryHit",
    "TurnHit",
    "has_at_least",
    "hydrate_memories",
    "hydrate_turns",
    "item_texts",
    "lexical",
    "positions",
    "preference_memories",
]

_LEXICAL_TURNS = """
    SELECT id, 'turn' AS item_kind, ts_rank_cd(tsv, q.q, 1) AS rank
    FROM mnemo.turns, (SELECT replace(plainto_tsquery('english', %(text)s)::text, ' & ', ' | ')::tsquery AS q) AS q
    WHERE entity_id = %(e)s AND namespace = %(ns)s AND tsv @@ q.q"""

_LEXICAL_MEMORIES = """
    SELECT id, 'memory' AS item_kind, ts_rank_cd(tsv, q.q, 1) AS rank
    FROM mnemo.memories, (SELECT replace(plainto_tsquery('english', %(text)s)::text, ' & ', ' | ')::tsquery AS q) AS q
    WHERE entity_id = %(e)s AND namespace = %(ns)s AND status IN ('candidate', 'active') AND tsv @@ q.q"""


async def lexical(
    conn: psycopg.AsyncConnection,
    entity_id: str,
    namespace: str,
    text: str,
    limit: int,
    *,
    turns: bool = True,
    memories: bool = True,
) -> list[tuple[uuid.UUID, str, float]]:
    """Full-text matches in one scope: ``(id, item_kind, rank)``, best first."""
    parts = [p for p, on in ((_LEXICAL_TURNS, turns), (_LEXICAL_MEMORIES, memories)) if on]
    if not parts:
        return []
    stmt = " UNION ALL ".join(parts) + " ORDER BY rank DESC, id LIMIT %(n)s"
    cur = await conn.execute(stmt, {"e": entity_id, "ns": namespace, "text": text, "n": limit})
    return [(r[0], r[1], float(r[2])) for r in await cur.fetchall()]


@dataclass(frozen=True, slots=True)
class TurnHit:
    """A turn as recall shows it (:func:`hydrate_turns`)."""

    id: uuid.UUID
    content: str
    created_at: datetime
    session_id: str
    turn_number: int
    role: Role
    speaker: str | None
    token_count: int
    metadata: dict[str, Any]  # free-form JSONB


@dataclass(frozen=True, slots=True)
class MemoryHit:
    """A live memory's text and kind (:func:`hydrate_memories`)."""

    id: uuid.UUID
    content: str
    created_at: datetime
    memory_kind: str
    token_count: int
    metadata: dict[str, Any]  # free-form JSONB


async def hydrate_turns(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, TurnHit]:
    if not ids:
        return {}
    cur = await conn.execute(
        """SELECT id, content, created_at, session_id, turn_number, role, speaker, token_count, metadata
           FROM mnemo.turns WHERE entity_id = %s AND namespace = %s AND id = ANY(%s)""",
        (entity_id, namespace, list(ids)),
    )
    return {r[0]: TurnHit(*r) for r in await cur.fetchall()}


async def hydrate_memories(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, MemoryHit]:
    if not ids:
        return {}
    cur = await conn.execute(
        """SELECT id, content, created_at, kind, token_count, metadata FROM mnemo.memories
           WHERE entity_id = %s AND namespace = %s AND id = ANY(%s) AND status IN ('candidate', 'active')""",
        (entity_id, namespace, list(ids)),
    )
    return {r[0]: MemoryHit(*r) for r in await cur.fetchall()}


async def positions(
    conn: psycopg.AsyncConnection,
    entity_id: str,
    namespace: str,
    ids: Sequence[uuid.UUID],
    anchors: Sequence[uuid.UUID],
    distance: int,
    *,
    lines: bool = True,
) -> tuple[dict[uuid.UUID, tuple[str, int]], dict[str, tuple[int, int]], dict[uuid.UUID, str]]:
    """``(session_id, turn_number)`` of the utterances in ``ids`` plus every utterance within
    ``distance`` of an anchor in the same session (neighbour expansion), each of those sessions'
    first and last turn number, and each utterance's kind: a raw ``turn``, or a block's ``line``
    whose raw turn retention removed (same id, same place in its session). ``lines=False``: the
    scope has no block lines, and they are not looked for."""
    if not ids and not anchors:
        return {}, {}, {}
    params = {"e": entity_id, "ns": namespace, "ids": list(ids), "anchors": list(anchors), "d": distance}
    where: dict[uuid.UUID, tuple[str, int]] = {}
    bounds: dict[str, tuple[int, int]] = {}
    kinds: dict[uuid.UUID, str] = {}
    for kind, statement in (("line", _LINE_POSITIONS), ("turn", _TURN_POSITIONS)):  # a raw turn wins
        if kind == "line" and not lines:
            continue
        cur = await conn.execute(statement, params)
        for item, session, number, lo, hi in await cur.fetchall():
            where[item] = (session, int(number))
            kinds[item] = kind
            if lo is not None:
                old = bounds.get(session, (int(lo), int(hi)))
                bounds[session] = (min(old[0], int(lo)), max(old[1], int(hi)))
    return where, bounds, kinds


_TURN_POSITIONS = """
    WITH pos AS (
        SELECT id, session_id, turn_number FROM mnemo.turns
        WHERE entity_id = %(e)s AND namespace = %(ns)s AND id = ANY(%(ids)s)
        UNION
        SELECT n.id, n.session_id, n.turn_number
        FROM (SELECT session_id, turn_number FROM mnemo.turns
              WHERE entity_id = %(e)s AND namespace = %(ns)s AND id = ANY(%(anchors)s)
              UNION
              SELECT session_id, turn_number FROM mnemo.block_lines
              WHERE entity_id = %(e)s AND namespace = %(ns)s AND turn_id = ANY(%(anchors)s)) AS t
        JOIN mnemo.turns n
          ON n.entity_id = %(e)s AND n.namespace = %(ns)s AND n.session_id = t.session_id
         AND n.turn_number BETWEEN t.turn_number - %(d)s AND t.turn_number + %(d)s),
    bounds AS MATERIALIZED (  -- two index probes per session (not per row), not a scan of its turns
        SELECT s.session_id,
               (SELECT min(turn_number) FROM mnemo.turns
                WHERE entity_id = %(e)s AND namespace = %(ns)s AND session_id = s.session_id) AS lo,
               (SELECT max(turn_number) FROM mnemo.turns
                WHERE entity_id = %(e)s AND namespace = %(ns)s AND session_id = s.session_id) AS hi
        FROM (SELECT DISTINCT session_id FROM pos) AS s)
    SELECT pos.id, pos.session_id, pos.turn_number, bounds.lo, bounds.hi
    FROM pos JOIN bounds USING (session_id)"""

_LINE_POSITIONS = """
    WITH pos AS (
        SELECT turn_id AS id, session_id, turn_number FROM mnemo.block_lines
        WHERE entity_id = %(e)s AND namespace = %(ns)s AND turn_id = ANY(%(ids)s)
        UNION
        SELECT n.turn_id, n.session_id, n.turn_number
        FROM mnemo.block_lines t JOIN mnemo.block_lines n
          ON n.entity_id = t.entity_id AND n.namespace = t.namespace AND n.session_id = t.session_id
         AND n.turn_number BETWEEN t.turn_number - %(d)s AND t.turn_number + %(d)s
        WHERE t.entity_id = %(e)s AND t.namespace = %(ns)s AND t.turn_id = ANY(%(anchors)s)),
    bounds AS MATERIALIZED (
        SELECT s.session_id,
               (SELECT min(turn_number) FROM mnemo.block_lines
                WHERE entity_id = %(e)s AND namespace = %(ns)s AND session_id = s.session_id) AS lo,
               (SELECT max(turn_number) FROM mnemo.block_lines
                WHERE entity_id = %(e)s AND namespace = %(ns)s AND session_id = s.session_id) AS hi
        FROM (SELECT DISTINCT session_id FROM pos) AS s)
    SELECT pos.id, pos.session_id, pos.turn_number, bounds.lo, bounds.hi
    FROM pos JOIN bounds USING (session_id)
    WHERE NOT EXISTS (SELECT 1 FROM mnemo.turns r WHERE r.entity_id = %(e)s AND r.id = pos.id)"""


async def has_at_least(conn: psycopg.AsyncConnection, entity_id: str, namespace: str, n: int) -> bool:
    """Whether the scope holds at least ``n`` live memories (counts no further than ``n``)."""
    if n <= 0:
        return True
    cur = await conn.execute(
        """SELECT count(*) FROM (SELECT 1 FROM mnemo.memories WHERE entity_id = %s AND namespace = %s
                                 AND status IN ('candidate', 'active') LIMIT %s) AS s""",
        (entity_id, namespace, n),
    )
    row = await cur.fetchone()
    return row is not None and int(row[0]) >= n


class ItemText(NamedTuple):
    """What recall's later stages read of a candidate: its text, who said it, its memory kind, its time."""

    content: str
    speaker: str | None
    kind: str | None  # a memory's kind; None for a turn or line
    at: datetime  # a turn's (a line's turn's) time; a memory's event time, else when it was written


_ITEM_TEXTS = """SELECT id, content, speaker, NULL::text, created_at FROM mnemo.turns
     WHERE entity_id = %(e)s AND namespace = %(ns)s {turns}
   UNION ALL
   SELECT DISTINCT ON (turn_id) turn_id, content, speaker, NULL::text, created_at FROM mnemo.block_lines
     WHERE entity_id = %(e)s AND namespace = %(ns)s {lines}
       AND NOT EXISTS (SELECT 1 FROM mnemo.turns t
                       WHERE t.entity_id = %(e)s AND t.namespace = %(ns)s AND t.id = turn_id)
   UNION ALL
   SELECT id, content, NULL, kind, coalesce(event_time, created_at) FROM mnemo.memories
     WHERE entity_id = %(e)s AND namespace = %(ns)s {memories}"""


async def item_texts(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, item_ids: Sequence[uuid.UUID] | None
) -> dict[uuid.UUID, ItemText]:
    """The :class:`ItemText` of each of ``item_ids`` that is a turn, a line or a memory: what the
    re-rankers read and what a time-aware query checks. ``None``: every item of the scope (the read
    index's copy, :mod:`mnemo.recall.scope_index`)."""
    if item_ids is not None and not item_ids:
        return {}
    ids = "" if item_ids is None else "AND id = ANY(%(ids)s)"
    stmt = _ITEM_TEXTS.format(turns=ids, lines="" if item_ids is None else "AND turn_id = ANY(%(ids)s)", memories=ids)
    cur = await conn.execute(stmt, {"e": entity_id, "ns": namespace, "ids": list(item_ids or [])})
    return {r[0]: ItemText(r[1], r[2], r[3], r[4]) for r in await cur.fetchall()}


async def item_processes(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, str]:
    """Which process wrote each of ``ids``: a turn's or memory's own ``process_id``; a block line's is
    its block memory's."""
    if not ids:
        return {}
    cur = await conn.execute(
        """SELECT id, process_id FROM mnemo.turns WHERE entity_id = %(e)s AND namespace = %(ns)s AND id = ANY(%(ids)s)
           UNION ALL
           SELECT id, process_id FROM mnemo.memories
           WHERE entity_id = %(e)s AND namespace = %(ns)s AND id = ANY(%(ids)s)
           UNION ALL
           SELECT DISTINCT l.turn_id, m.process_id FROM mnemo.block_lines l
           JOIN mnemo.blocks b ON b.entity_id = l.entity_id AND b.id = l.block_id
           JOIN mnemo.memories m ON m.entity_id = b.entity_id AND m.id = b.memory_id
           WHERE l.entity_id = %(e)s AND l.namespace = %(ns)s AND l.turn_id = ANY(%(ids)s)""",
        {"e": entity_id, "ns": namespace, "ids": list(ids)},
    )
    return {r[0]: str(r[1]) for r in await cur.fetchall()}


async def preference_memories(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, limit: int
) -> dict[uuid.UUID, str]:
    """The scope's active preference memories, newest first (at most ``limit``), with their text:
    what a request for advice about someone depends on (issue 43, item 4)."""
    cur = await conn.execute(
        """SELECT id, content FROM mnemo.memories
           WHERE entity_id = %(e)s AND namespace = %(ns)s AND kind = 'preference' AND status = 'active'
           ORDER BY created_at DESC, id LIMIT %(limit)s""",
        {"e": entity_id, "ns": namespace, "limit": limit},
    )
    return {r[0]: r[1] for r in await cur.fetchall()}
