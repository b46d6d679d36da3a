"""Passage vectors of long items (``mnemo.passages``): written with the item, searched exactly.

Seed: cognitive-plan §2.5; :mod:`mnemo.cognition.text.passages` says which windows. An item's
similarity to a query is the best of its own vector's and its passages'.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import numpy as np
import psycopg
from pgvector import HalfVector

__all__ = ["PassageRow", "search", "similarities", "write"]

PassageRow = tuple[uuid.UUID, str, int, np.ndarray]
"""``(item_id, item_kind, passage number from 1, vector)``."""


async def write(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, slug: str, rows: Sequence[PassageRow]
) -> None:
    """Store passages (the caller's transaction); an item's existing passages of ``slug`` are replaced."""
    if not rows:
        return
    await conn.execute(
        "DELETE FROM mnemo.passages WHERE entity_id = %s AND slug = %s AND item_id = ANY(%s)",
        (entity_id, slug, list({r[0] for r in rows})),
    )
    async with conn.cursor() as cur:
        await cur.executemany(
            """INSERT INTO mnemo.passages (entity_id, namespace, item_id, item_kind, slug, passage, embedding)
               VALUES (%s, %s, %s, %s, %s, %s, %s)""",
            [(entity_id, namespace, i, kind, slug, n, HalfVector(v)) for i, kind, n, v in rows],
        )


async def search(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, slug: str, query: np.ndarray, limit: int
) -> list[tuple[uuid.UUID, str, float]]:
    """The items whose best passage is nearest the query: ``(item_id, item_kind, cosine)``, best first."""
    cur = await conn.execute(
        """SELECT item_id, item_kind, max(1 - (embedding <=> %(q)s)) AS sim FROM mnemo.passages
           WHERE entity_id = %(e)s AND namespace = %(ns)s AND slug = %(slug)s
           GROUP BY item_id, item_kind ORDER BY sim DESC, item_id LIMIT %(n)s""",
        {"q": HalfVector(query), "e": entity_id, "ns": namespace, "slug": slug, "n": limit},
    )
    return [(r[0], r[1], float(r[2])) for r in await cur.fetchall()]


async def similarities(
    conn: psycopg.AsyncConnection,
    entity_id: str,
    namespace: str,
    slug: str,
    query: np.ndarray,
    item_ids: Sequence[uuid.UUID],
) -> dict[uuid.UUID, float]:
    """The best passage similarity of each of ``item_ids`` that has passages."""
    if not item_ids:
        return {}
    cur = await conn.execute(
        """SELECT item_id, max(1 - (embedding <=> %(q)s)) FROM mnemo.passages
           WHERE entity_id = %(e)s AND namespace = %(ns)s AND slug = %(slug)s AND item_id = ANY(%(ids)s)
           GROUP BY item_id""",
        {"q": HalfVector(query), "e": entity_id, "ns": namespace, "slug": slug, "ids": list(item_ids)},
    )
    return {r[0]: float(r[1]) for r in await cur.fetchall()}
