"""BM25 inside PostgreSQL: exact scores on a hand-computed corpus, and the 0002 backfill."""

from __future__ import annotations

import math

import psycopg
import pytest

from mnemo import AsyncArchive, Scope
from mnemo.store import Store, lexicon
from mnemo.store.migrate import load_migrations

SCOPE = Scope("lex", "test")


def bm25_term(tf: int, df: int, n: int, dl: int, avgdl: float) -> float:
    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
    return idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * dl / avgdl))


async def test_bm25_matches_a_hand_computation(archive: AsyncArchive) -> None:
    one = await archive.record_turn(SCOPE, "s", "user", "apple apple banana")
    two = await archive.record_turn(SCOPE, "s", "user", "banana cherry")
    three = await archive.record_turn(SCOPE, "s", "user", "cherry cherry cherry date")
    async with archive._rt.store.connection() as conn:
        found = await lexicon.bm25(conn, SCOPE.entity_id, SCOPE.namespace, "apples and cherries?", 10)
        only = await lexicon.bm25(
            conn, SCOPE.entity_id, SCOPE.namespace, "apples and cherries?", 0, ids=[two.id, one.id]
        )
    scores = {item_id: score for item_id, _, score in found}
    # stemmed lexemes: appl x2 + banana (len 3); banana + cherri (len 2); cherri x3 + date (len 4); avgdl 3
    assert scores[one.id] == pytest.approx(bm25_term(2, 1, 3, 3, 3.0))
    assert scores[two.id] == pytest.approx(bm25_term(1, 2, 3, 2, 3.0))
    assert scores[three.id] == pytest.approx(bm25_term(3, 2, 3, 4, 3.0))
    assert [i for i, _, _ in found] == sorted(scores, key=lambda i: -scores[i])
    assert {i: s for i, _, s in only} == {one.id: scores[one.id], two.id: scores[two.id]}


async def test_bm25_is_scoped_and_ignores_stop_words(archive: AsyncArchive) -> None:
    await archive.record_turn(SCOPE, "s", "user", "the zebra crossing near the school")
    await archive.record_turn(Scope("other"), "s", "user", "zebra zebra zebra")
    async with archive._rt.store.connection() as conn:
        found = await lexicon.bm25(conn, SCOPE.entity_id, SCOPE.namespace, "zebra", 10)
        nothing = await lexicon.bm25(conn, SCOPE.entity_id, SCOPE.namespace, "the and of", 10)
    assert len(found) == 1 and nothing == []


async def test_migration_0002_backfills_postings(empty_database_url: str) -> None:
    first = load_migrations()[0]
    with psycopg.connect(empty_database_url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION vector")
        conn.execute(first.sql.encode())
        conn.execute(
            """CREATE TABLE mnemo.schema_migrations (version integer PRIMARY KEY, name text NOT NULL,
               checksum text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"""
        )
        conn.execute(
            "INSERT INTO mnemo.schema_migrations VALUES (%s, %s, %s)", (first.version, first.name, first.checksum)
        )
        conn.execute("INSERT INTO mnemo.scopes VALUES ('old', 'ns')")
        conn.execute("""INSERT INTO mnemo.turns (entity_id, id, namespace, session_id, turn_number, role, content)
                        VALUES ('old', gen_random_uuid(), 'ns', 's', 0, 'user', 'kayak kayak river')""")
    store = await Store.open(empty_database_url)
    async with store.connection() as conn:
        found = await lexicon.bm25(conn, "old", "ns", "kayaking", 5)
        cur = await conn.execute("SELECT docs, total_len FROM mnemo.lexical_stats WHERE entity_id = 'old'")
        stats = await cur.fetchone()
    await store.close()
    assert len(found) == 1 and found[0][2] > 0
    assert stats == (1, 3)
