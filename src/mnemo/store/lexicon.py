"""BM25 inside PostgreSQL: postings written with each item, scored in SQL.

Seed: cognitive-plan §2.5 (hybrid search: lexical beside dense). The lexical
retriever is Okapi BM25 (k1 = 1.2, b = 0.75) over PostgreSQL's english
``tsvector`` (stemmed, stop words removed): document frequencies come from the
scope's own postings, so rare words weigh more than names that appear in every
turn. Everything stays in the one database, transactional with the write.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import psycopg

from mnemo.cognition.scoring.bm25 import K1, B

__all__ = ["add_postings", "bm25", "known_words"]

_TABLES = {"turn": "mnemo.turns", "memory": "mnemo.memories"}

_ADD = {
    kind: f"""
    WITH new AS (
        INSERT INTO mnemo.postings (entity_id, namespace, term, item_id, item_kind, tf, doc_len)
        SELECT d.entity_id, d.namespace, u.lexeme, d.id, '{kind}', coalesce(array_length(u.positions, 1), 1),
               sum(coalesce(array_length(u.positions, 1), 1)) OVER (PARTITION BY d.id)
        FROM {table} d CROSS JOIN LATERAL unnest(d.tsv) u
        WHERE d.entity_id = %(e)s AND d.namespace = %(ns)s AND d.id = ANY(%(ids)s)
        RETURNING item_id, tf)
    INSERT INTO mnemo.lexical_stats AS s (entity_id, namespace, docs, total_len)
    SELECT %(e)s, %(ns)s, count(DISTINCT item_id), coalesce(sum(tf), 0) FROM new
    ON CONFLICT (entity_id, namespace) DO UPDATE
    SET docs = s.docs + EXCLUDED.docs, total_len = s.total_len + EXCLUDED.total_len"""  # noqa: S608
    for kind, table in _TABLES.items()
}

# Shared pieces of the two BM25 statements (module constants only; user text is a parameter).
# Arithmetic is float8 throughout (numeric literals would make it several times slower).
_QUERY_AND_STATS = """
    q AS MATERIALIZED (SELECT DISTINCT lexeme AS term FROM unnest(to_tsvector('english', %(text)s))),
    st AS MATERIALIZED (
        SELECT docs, greatest(total_len, 1)::float8 / greatest(docs, 1) AS avgdl
        FROM mnemo.lexical_stats WHERE entity_id = %(e)s AND namespace = %(ns)s)"""
_DOC_FREQ = """(SELECT count(*) FROM mnemo.postings c
                 WHERE c.entity_id = %(e)s AND c.namespace = %(ns)s AND c.term = {term}) AS df"""
_SCORE = """
    SELECT p.item_id, p.item_kind,
           sum(ln(1.0::float8 + (st.docs - df.df + 0.5::float8) / (df.df + 0.5::float8))
               * p.tf * (%(k1)s::float8 + 1.0::float8)
               / (p.tf + %(k1)s::float8 * (1.0::float8 - %(b)s::float8 + %(b)s::float8 * p.doc_len / st.avgdl))
           ) AS score"""

# Top matches: every postings access is a lookup on the primary key prefix (entity_id, namespace,
# term), written as a correlated/LATERAL subquery so the plan cannot degrade into a join of two
# whole postings scans when statistics are missing (right after a bulk import).
_BM25 = (
    "WITH"  # noqa: S608 (composed from module constants)
    + _QUERY_AND_STATS
    + ",\n    df AS MATERIALIZED (SELECT q.term, "
    + _DOC_FREQ.format(term="q.term")
    + " FROM q)"
    + _SCORE
    + """
    FROM df CROSS JOIN st CROSS JOIN LATERAL (
        SELECT item_id, item_kind, tf, doc_len FROM mnemo.postings p
        WHERE p.entity_id = %(e)s AND p.namespace = %(ns)s AND p.term = df.term
          AND p.item_kind = ANY(%(kinds)s)) AS p
    WHERE df.df > 0
    GROUP BY p.item_id, p.item_kind
    ORDER BY score DESC, p.item_id
    LIMIT %(n)s"""
)

# Scores of given items: their postings come from the (entity_id, item_id) covering index; only
# the matched terms' document frequencies touch the per-term index.
_BM25_ITEMS = (
    "WITH"  # noqa: S608 (composed from module constants)
    + _QUERY_AND_STATS
    + """,
    p AS MATERIALIZED (
        SELECT item_id, item_kind, term, tf, doc_len FROM mnemo.postings
        WHERE entity_id = %(e)s AND item_id = ANY(%(ids)s) AND namespace = %(ns)s
          AND term IN (SELECT term FROM q)),
    df AS MATERIALIZED (SELECT t.term, """
    + _DOC_FREQ.format(term="t.term")
    + """
                        FROM (SELECT DISTINCT term FROM p) AS t)"""
    + _SCORE
    + """
    FROM p JOIN df USING (term) CROSS JOIN st
    GROUP BY p.item_id, p.item_kind"""
)


async def add_postings(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, item_kind: str, ids: Sequence[uuid.UUID]
) -> None:
    """Index freshly written items (call inside the writing transaction)."""
    if ids:
        await conn.execute(_ADD[item_kind], {"e": entity_id, "ns": namespace, "ids": list(ids)})


async def bm25(
    conn: psycopg.AsyncConnection,
    entity_id: str,
    namespace: str,
    text: str,
    limit: int,
    *,
    kinds: Sequence[str] = ("turn", "memory"),
    ids: Sequence[uuid.UUID] | None = None,
) -> list[tuple[uuid.UUID, str, float]]:
    """Top BM25 matches in one scope (or the scores of ``ids``): ``(id, item_kind, score)``, best first."""
    if ids is not None and not ids:
        return []
    stmt = _BM25_ITEMS if ids is not None else _BM25
    cur = await conn.execute(
        stmt,
        {
            "text": text,
            "e": entity_id,
            "ns": namespace,
            "k1": K1,
            "b": B,
            "n": limit,
            "kinds": list(kinds),
            "ids": list(ids or []),
        },
    )
    return [(r[0], r[1], float(r[2])) for r in await cur.fetchall()]


async def analyze(conn: psycopg.AsyncConnection) -> None:
    """Fresh statistics and visibility map after a bulk write (index-only scans need the latter).

    VACUUM cannot run in a transaction: call this on an autocommit connection.
    """
    await conn.execute("VACUUM (ANALYZE) mnemo.postings")


async def known_words(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, words: Sequence[str]
) -> dict[str, bool]:
    """For each of ``words`` that is searchable (it has a stemmed english lexeme: stop words have
    none), whether the scope's postings hold all its lexemes. Lookups on the primary key prefix."""
    if not words:
        return {}
    cur = await conn.execute(
        """SELECT w, bool_and(EXISTS (SELECT 1 FROM mnemo.postings p
                                      WHERE p.entity_id = %(e)s AND p.namespace = %(ns)s AND p.term = l.lexeme))
           FROM unnest(%(words)s::text[]) AS w CROSS JOIN LATERAL unnest(to_tsvector('english', w)) AS l
           GROUP BY w""",
        {"e": entity_id, "ns": namespace, "words": list(words)},
    )
    found = {r[0]: bool(r[1]) for r in await cur.fetchall()}
    return {w: found[w] for w in words if w in found}


async def word_frequencies(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, words: Sequence[str], cap: int = 1000
) -> dict[str, int]:
    """For each of ``words`` that is searchable, how many items of the scope hold it: the smallest
    count among its lexemes, counted up to ``cap`` (a common word need not be counted to its end)."""
    if not words:
        return {}
    cur = await conn.execute(
        """SELECT w, min((SELECT count(*) FROM (SELECT 1 FROM mnemo.postings p
                                              WHERE p.entity_id = %(e)s AND p.namespace = %(ns)s
                                                AND p.term = l.lexeme LIMIT %(cap)s) AS held))
           FROM unnest(%(words)s::text[]) AS w CROSS JOIN LATERAL unnest(to_tsvector('english', w)) AS l
           GROUP BY w""",
        {"e": entity_id, "ns": namespace, "words": list(words), "cap": cap},
    )
    found = {r[0]: int(r[1]) for r in await cur.fetchall()}
    return {w: found[w] for w in words if w in found}
