"""The vectors chamber: one table per (vector space, dimension).

Seeds: archive-adr §8 "Dimension Lock" (every vector sealed with the model
slug; search compares only the active slug), cognitive-plan §2.2 (halfvec),
DESIGN §8 (HNSW indexes halfvec up to 4,000 dimensions; wider spaces use a
binary-quantised expression index re-ranked by exact cosine).

Rows carry ``entity_id`` and ``namespace`` so the scope filter is applied
inside the HNSW scan (``hnsw.iterative_scan = relaxed_order``).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence

import numpy as np
import psycopg
from pgvector import HalfVector
from psycopg import sql

__all__ = [
    "HNSW_MAX_DIM",
    "count_missing",
    "ensure_space",
    "insert_vectors",
    "other_spaces",
    "scope_items",
    "search",
    "table_name",
    "vectors_of",
]

HNSW_MAX_DIM = 4000
VectorRow = tuple[str, str, uuid.UUID, str, str, np.ndarray]


def table_name(space: str, dim: int) -> str:
    """``universal`` + 384 -> ``universal_384`` (space names are validated by Settings)."""
    return f"{space}_{int(dim)}"


def _ident(table: str) -> sql.Composed:
    return sql.SQL("vectors.{}").format(sql.Identifier(table))


async def ensure_space(conn: psycopg.AsyncConnection, space: str, dim: int) -> str:
    """Create the table and indexes for ``space`` at ``dim`` if missing; return its name."""
    table = table_name(space, dim)
    ident = _ident(table)
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(hashtext('mnemo.vectors.' || %s))", (table,))
        cur = await conn.execute("SELECT 1 FROM vectors.spaces WHERE table_name = %s", (table,))
        if await cur.fetchone() is not None:
            return table
        await conn.execute(
            sql.SQL(
                """CREATE TABLE {t} (
                       entity_id  text        NOT NULL,
                       item_id    uuid        NOT NULL,
                       namespace  text        NOT NULL,
                       item_kind  text        NOT NULL CHECK (item_kind IN ('turn', 'memory', 'line')),
                       slug       text        NOT NULL,
                       embedding  halfvec({dim}) NOT NULL,
                       created_at timestamptz NOT NULL DEFAULT now(),
                       PRIMARY KEY (entity_id, item_id))"""
            ).format(t=ident, dim=sql.Literal(int(dim)))
        )
        if dim <= HNSW_MAX_DIM:
            index = sql.SQL("CREATE INDEX {name} ON {t} USING hnsw (embedding halfvec_cosine_ops)")
        else:
            index = sql.SQL(
                "CREATE INDEX {name} ON {t} USING hnsw ((binary_quantize(embedding)::bit({dim})) bit_hamming_ops)"
            )
        await conn.execute(index.format(name=sql.Identifier(f"{table}_hnsw"), t=ident, dim=sql.Literal(int(dim))))
        await conn.execute(
            sql.SQL("CREATE INDEX {name} ON {t} (entity_id, namespace, slug)").format(
                name=sql.Identifier(f"{table}_scope"), t=ident
            )
        )
        await conn.execute(
            "INSERT INTO vectors.spaces (table_name, space, dim) VALUES (%s, %s, %s)", (table, space, dim)
        )
        # its writes bump the scopes' versions, as the other item tables' do (migration 0023)
        await conn.execute(
            "SELECT mnemo.watch_scope_changes(%s::regclass, 'item_id', %s)", (f"vectors.{table}", _VECTOR_UPDATE)
        )
    return table


# compared as text: a WHEN clause is dumped as written, and IS DISTINCT FROM on halfvec names
# pgvector's operator unqualified, which a restore (empty search_path) cannot find (migration 0023)
_VECTOR_UPDATE = (
    "(OLD.slug, OLD.item_kind, OLD.embedding::text) IS DISTINCT FROM (NEW.slug, NEW.item_kind, NEW.embedding::text)"
)
"""When an updated vector row changes what a read index holds (the same condition as migration 0023's)."""


async def insert_vectors(conn: psycopg.AsyncConnection, table: str, rows: Iterable[VectorRow]) -> int:
    """Bulk-write vectors with binary COPY; the caller owns the transaction."""
    count = 0
    query = sql.SQL(
        "COPY {t} (entity_id, namespace, item_id, item_kind, slug, embedding) FROM STDIN WITH (FORMAT BINARY)"
    ).format(t=_ident(table))
    async with conn.cursor().copy(query) as copy:
        copy.set_types(["text", "text", "uuid", "text", "text", "halfvec"])
        for entity_id, namespace, item_id, item_kind, slug, vector in rows:
            await copy.write_row((entity_id, namespace, item_id, item_kind, slug, HalfVector(vector)))
            count += 1
    return count


async def upsert_vectors(conn: psycopg.AsyncConnection, table: str, rows: Sequence[VectorRow]) -> None:
    """Write or replace vectors (re-embedding replaces the old slug's row)."""
    if not rows:
        return
    query = sql.SQL(
        """INSERT INTO {t} (entity_id, namespace, item_id, item_kind, slug, embedding)
           VALUES (%s, %s, %s, %s, %s, %s)
           ON CONFLICT (entity_id, item_id) DO UPDATE
           SET slug = EXCLUDED.slug, embedding = EXCLUDED.embedding, created_at = now()"""
    ).format(t=_ident(table))
    async with conn.cursor() as cur:
        await cur.executemany(query, [(e, n, i, k, s, HalfVector(v)) for e, n, i, k, s, v in rows])


async def search(
    conn: psycopg.AsyncConnection,
    table: str,
    dim: int,
    entity_id: str,
    namespace: str,
    slug: str,
    query: np.ndarray,
    limit: int,
    *,
    item_kind: str | None = None,
    exact: bool = False,
) -> list[tuple[uuid.UUID, str, float]]:
    """Nearest vectors of one scope and slug (of one ``item_kind`` if given):
    ``(item_id, item_kind, cosine_similarity)``, best first. ``exact`` scans the scope's rows (its
    btree index, then every cosine) instead of walking the HNSW graph: the same ranking as the read
    index's, ties in id order."""
    q = HalfVector(query)
    if exact:
        stmt = sql.SQL(
            """SELECT item_id, item_kind, 1 - (embedding <=> %(q)s) AS sim
               FROM {t} v
               WHERE entity_id = %(e)s AND namespace = %(ns)s AND slug = %(slug)s
                 AND (%(kind)s::text IS NULL OR item_kind = %(kind)s) {live}
               ORDER BY sim DESC, item_id
               LIMIT %(n)s"""
        ).format(t=_ident(table), live=sql.SQL(LIVE))
    elif dim <= HNSW_MAX_DIM:
        stmt = sql.SQL(
            """SELECT item_id, item_kind, 1 - (embedding <=> %(q)s) AS sim
               FROM {t} v
               WHERE entity_id = %(e)s AND namespace = %(ns)s AND slug = %(slug)s
                 AND (%(kind)s::text IS NULL OR item_kind = %(kind)s) {live}
               ORDER BY embedding <=> %(q)s
               LIMIT %(n)s"""
        ).format(t=_ident(table), live=sql.SQL(LIVE))
    else:
        stmt = sql.SQL(
            """SELECT item_id, item_kind, 1 - (embedding <=> %(q)s) AS sim FROM (
                   SELECT item_id, item_kind, embedding FROM {t} v
                   WHERE entity_id = %(e)s AND namespace = %(ns)s AND slug = %(slug)s
                     AND (%(kind)s::text IS NULL OR item_kind = %(kind)s) {live}
                   ORDER BY binary_quantize(embedding)::bit({dim}) <~> binary_quantize(%(q)s)
                   LIMIT %(n)s * 4) AS shortlist
               ORDER BY embedding <=> %(q)s
               LIMIT %(n)s"""
        ).format(t=_ident(table), dim=sql.Literal(int(dim)), live=sql.SQL(LIVE))
    cur = await conn.execute(
        stmt, {"q": q, "e": entity_id, "ns": namespace, "slug": slug, "n": limit, "kind": item_kind}
    )
    return [(row[0], row[1], float(row[2])) for row in await cur.fetchall()]


async def similarities(
    conn: psycopg.AsyncConnection,
    table: str,
    entity_id: str,
    slug: str,
    query: np.ndarray,
    item_ids: Sequence[uuid.UUID],
) -> dict[uuid.UUID, float]:
    """Exact cosine similarity of the query to specific items (for lexical-only candidates)."""
    if not item_ids:
        return {}
    stmt = sql.SQL(
        """SELECT item_id, 1 - (embedding <=> %s) FROM {t}
           WHERE entity_id = %s AND slug = %s AND item_id = ANY(%s)"""
    ).format(t=_ident(table))
    cur = await conn.execute(stmt, (HalfVector(query), entity_id, slug, list(item_ids)))
    return {row[0]: float(row[1]) for row in await cur.fetchall()}


async def vectors_of(
    conn: psycopg.AsyncConnection, table: str, entity_id: str, slug: str, ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, np.ndarray]:
    """The stored vectors of ``ids`` (active slug only), as float32 arrays."""
    if not ids:
        return {}
    cur = await conn.execute(
        sql.SQL("SELECT item_id, embedding FROM {t} WHERE entity_id = %s AND slug = %s AND item_id = ANY(%s)").format(
            t=_ident(table)
        ),
        (entity_id, slug, list(ids)),
    )
    return {r[0]: np.asarray(r[1].to_numpy(), dtype=np.float32) for r in await cur.fetchall()}


# Lines whose raw turn is gone and whose block is still in the hippocampus: their vectors live
# here (item kind 'line'); a migrated block's lines are re-embedded in the cortex instead.
_HOT_LINES = """JOIN mnemo.blocks b ON b.entity_id = l.entity_id AND b.id = l.block_id
    WHERE b.migrated_at IS NULL
      AND NOT EXISTS (SELECT 1 FROM mnemo.turns t WHERE t.entity_id = l.entity_id AND t.id = l.turn_id)
      AND NOT EXISTS (SELECT 1 FROM {v} v WHERE v.entity_id = l.entity_id AND v.item_id = l.turn_id
                        AND v.slug = %(s)s)"""


async def count_missing(conn: psycopg.AsyncConnection, table: str, slug: str) -> int:
    """Items (turns, memories, hot lines; all scopes) with no vector of ``slug`` in ``table``."""
    stmt = sql.SQL(
        """SELECT
             (SELECT count(*) FROM mnemo.turns t WHERE NOT EXISTS (
                 SELECT 1 FROM {v} v WHERE v.entity_id = t.entity_id AND v.item_id = t.id AND v.slug = %(s)s))
           + (SELECT count(*) FROM mnemo.memories m WHERE m.status <> 'pruned' AND m.tier = 'hippocampus'
               AND NOT EXISTS (
                 SELECT 1 FROM {v} v WHERE v.entity_id = m.entity_id AND v.item_id = m.id AND v.slug = %(s)s))
           + (SELECT count(DISTINCT (l.entity_id, l.turn_id)) FROM mnemo.block_lines l {hot_lines})"""
    ).format(v=_ident(table), hot_lines=sql.SQL(_HOT_LINES).format(v=_ident(table)))
    cur = await conn.execute(stmt, {"s": slug})
    row = await cur.fetchone()
    return int(row[0]) if row else 0


async def missing_batch(
    conn: psycopg.AsyncConnection, table: str, slug: str, entity_id: str, namespace: str, limit: int
) -> list[tuple[uuid.UUID, str, str, str | None, str | None]]:
    """Up to ``limit`` items of one scope lacking a ``slug`` vector.

    Rows are ``(id, item_kind, content, memory_kind, speaker)``.
    """
    stmt = sql.SQL(
        """(SELECT t.id, 'turn', t.content, NULL::text, t.speaker FROM mnemo.turns t
            WHERE t.entity_id = %(e)s AND t.namespace = %(ns)s AND NOT EXISTS (
              SELECT 1 FROM {v} v WHERE v.entity_id = t.entity_id AND v.item_id = t.id AND v.slug = %(s)s)
            ORDER BY t.id LIMIT %(n)s)
           UNION ALL
           (SELECT m.id, 'memory', m.content, m.kind, NULL::text FROM mnemo.memories m
            WHERE m.entity_id = %(e)s AND m.namespace = %(ns)s AND m.status <> 'pruned' AND m.tier = 'hippocampus'
               AND NOT EXISTS (
              SELECT 1 FROM {v} v WHERE v.entity_id = m.entity_id AND v.item_id = m.id AND v.slug = %(s)s)
            ORDER BY m.id LIMIT %(n)s)
           UNION ALL
           (SELECT DISTINCT ON (l.turn_id) l.turn_id, 'line', l.content, NULL::text, l.speaker
            FROM mnemo.block_lines l {hot_lines} AND l.entity_id = %(e)s AND l.namespace = %(ns)s
            ORDER BY l.turn_id LIMIT %(n)s)
           LIMIT %(n)s"""
    ).format(v=_ident(table), hot_lines=sql.SQL(_HOT_LINES).format(v=_ident(table)))
    cur = await conn.execute(stmt, {"e": entity_id, "ns": namespace, "s": slug, "n": limit})
    return [(r[0], r[1], r[2], r[3], r[4]) for r in await cur.fetchall()]


async def slug_counts(conn: psycopg.AsyncConnection) -> list[tuple[str, str, int]]:
    """``(table, slug, rows)`` for every vector space table."""
    cur = await conn.execute("SELECT table_name FROM vectors.spaces ORDER BY table_name")
    tables = [r[0] for r in await cur.fetchall()]
    out: list[tuple[str, str, int]] = []
    for table in tables:
        c = await conn.execute(
            sql.SQL("SELECT slug, count(*) FROM {t} GROUP BY slug ORDER BY slug").format(t=_ident(table))
        )
        out.extend((table, str(slug), int(n)) for slug, n in await c.fetchall())
    return out


async def analyze(conn: psycopg.AsyncConnection, table: str) -> None:
    await conn.execute(sql.SQL("ANALYZE {t}").format(t=_ident(table)))


async def turns_missing(
    conn: psycopg.AsyncConnection,
    table: str,
    slug: str,
    entity_id: str,
    namespace: str,
    ids: Sequence[uuid.UUID],
    *,
    lock: bool = False,
) -> list[tuple[uuid.UUID, str, str | None]]:
    """Which of the turns ``ids`` of one scope still exist and lack a ``slug`` vector:
    ``(id, content, speaker)``. ``lock`` holds them (FOR SHARE) until the transaction ends."""
    stmt = sql.SQL(
        """SELECT t.id, t.content, t.speaker FROM mnemo.turns t
           WHERE t.entity_id = %(e)s AND t.namespace = %(ns)s AND t.id = ANY(%(ids)s) AND NOT EXISTS (
             SELECT 1 FROM {v} v WHERE v.entity_id = t.entity_id AND v.item_id = t.id AND v.slug = %(s)s)
           ORDER BY t.id {lock}"""
    ).format(v=_ident(table), lock=sql.SQL("FOR SHARE OF t" if lock else ""))
    cur = await conn.execute(stmt, {"e": entity_id, "ns": namespace, "ids": list(ids), "s": slug})
    return [(r[0], r[1], r[2]) for r in await cur.fetchall()]


async def other_spaces(
    conn: psycopg.AsyncConnection, entity_id: str, exclude: str, ids: Sequence[uuid.UUID]
) -> list[tuple[str, str]]:
    """``(table, slug)`` of every vector space but ``exclude`` holding a vector of one of ``ids``."""
    if not ids:
        return []
    cur = await conn.execute("SELECT table_name FROM vectors.spaces WHERE table_name <> %s ORDER BY 1", (exclude,))
    found: list[tuple[str, str]] = []
    for (table,) in await cur.fetchall():
        rows = await conn.execute(
            sql.SQL("SELECT DISTINCT slug FROM {t} WHERE entity_id = %s AND item_id = ANY(%s)").format(t=_ident(table)),
            (entity_id, list(ids)),
        )
        found.extend((table, str(r[0])) for r in await rows.fetchall())
    return found


LIVE = """
      AND (v.item_kind IN ('turn', 'line') OR EXISTS (
          SELECT 1 FROM mnemo.memories m
          WHERE m.entity_id = v.entity_id AND m.id = v.item_id AND m.status IN ('candidate', 'active')))"""
"""A row of the vector table ``v`` whose item is live: a turn, a block's line whose raw turn retention
removed, or a candidate or active memory."""

_TOKEN_BYTES = """(SELECT octet_length(tv.vectors) FROM mnemo.token_vectors tv
      WHERE tv.entity_id = %(e)s AND tv.item_id = {item} AND tv.slug = %(slug)s)"""
# (a correlated primary-key lookup per item: fresh tables' missing statistics cannot turn it into a
# nested loop over every pair of rows)

_SCOPE_ITEMS = (
    "SELECT v.item_id, v.item_kind, "  # noqa: S608 (composed from module constants; values are parameters)
    + _TOKEN_BYTES.replace("{item}", "v.item_id")
    + """ FROM {vectors} v
    WHERE v.entity_id = %(e)s AND v.namespace = %(ns)s AND v.slug = %(slug)s AND v.item_kind = ANY(%(kinds)s)"""
    + LIVE
    + """
    UNION ALL
    SELECT c.turn_id, 'line', c.size FROM (
      SELECT l.turn_id, """
    + _TOKEN_BYTES.replace("{item}", "l.turn_id")
    + """ AS size
      FROM (SELECT DISTINCT l.turn_id FROM mnemo.block_lines l
            WHERE l.entity_id = %(e)s AND l.namespace = %(ns)s AND 'line' = ANY(%(kinds)s)
              AND EXISTS (SELECT 1 FROM mnemo.blocks b
                          WHERE b.entity_id = l.entity_id AND b.id = l.block_id AND b.migrated_at IS NOT NULL)) l
      WHERE NOT EXISTS (SELECT 1 FROM mnemo.turns t WHERE t.entity_id = %(e)s AND t.id = l.turn_id)
        AND NOT EXISTS (SELECT 1 FROM {vectors} w
                        WHERE w.entity_id = %(e)s AND w.item_id = l.turn_id AND w.slug = %(slug)s)
    ) c WHERE c.size IS NOT NULL
    ORDER BY 1
    LIMIT %(n)s"""
)
"""What late retrieval scans: the live items of the vector table, and the lines of blocks the cortex
holds (their vectors live there; their token embeddings stay here)."""


_WITHOUT_TOKENS = (
    "SELECT"  # noqa: S608 (composed from module constants; values are parameters)
    + """ v.item_id FROM {vectors} v
    WHERE v.entity_id = %(e)s AND v.namespace = %(ns)s AND v.slug = %(slug)s AND v.item_kind = ANY(%(kinds)s)
      AND NOT EXISTS (SELECT 1 FROM mnemo.token_vectors tv
                      WHERE tv.entity_id = v.entity_id AND tv.item_id = v.item_id AND tv.slug = %(slug)s)"""
    + LIVE
    + """
    LIMIT %(n)s"""
)


async def without_tokens(
    conn: psycopg.AsyncConnection,
    table: str,
    entity_id: str,
    namespace: str,
    slug: str,
    kinds: Sequence[str],
    limit: int,
) -> list[uuid.UUID]:
    """Up to ``limit`` live turns and memories (of ``kinds``) of the scope with a vector in ``slug``'s
    space and no token embeddings in it yet."""
    stmt = sql.SQL(_WITHOUT_TOKENS).format(vectors=_ident(table))
    cur = await conn.execute(stmt, {"e": entity_id, "ns": namespace, "slug": slug, "kinds": list(kinds), "n": limit})
    return [r[0] for r in await cur.fetchall()]


async def scope_items(
    conn: psycopg.AsyncConnection,
    table: str,
    entity_id: str,
    namespace: str,
    slug: str,
    kinds: Sequence[str],
    limit: int,
) -> list[tuple[uuid.UUID, str, int | None]]:
    """Up to ``limit`` of the scope's live turns, lines and memories (of ``kinds``) that have a vector in
    ``slug``'s space (what the dense retriever sees, so nothing another model embedded is mixed in; a
    line of a block the cortex holds, whose vector lives there: its token embeddings), in id order,
    as ``(item_id, item_kind, bytes)``: how many bytes their token embeddings
    (``mnemo.token_vectors``) take, None for an item that has none yet. What late retrieval
    scans."""
    stmt = sql.SQL(_SCOPE_ITEMS).format(vectors=_ident(table))
    cur = await conn.execute(stmt, {"e": entity_id, "ns": namespace, "slug": slug, "kinds": list(kinds), "n": limit})
    return [(r[0], r[1], r[2]) for r in await cur.fetchall()]
