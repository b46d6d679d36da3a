"""Token embeddings of stored items (``mnemo.token_vectors``), for late-interaction re-ranking.

Seed: cognitive-plan §2.6. A cache keyed by ``(entity, item, model slug)``: written with an item's
vector on import, else the first time a recall re-ranks it; :mod:`mnemo.store.forget_rows` deletes an
item's rows with the item and a scope's with the scope.
"""

from __future__ import annotations

import uuid
from collections import OrderedDict
from collections.abc import Mapping, Sequence

import numpy as np
import psycopg

from mnemo.cognition.scoring.late import QUANT, TokenIndex, TokenVectors, quantize

__all__ = ["Cache", "fetch", "write"]

Key = tuple[str, str, uuid.UUID, str]
"""``(entity_id, namespace, item_id, slug)``."""
ScopeKey = tuple[str, str, str]
"""``(entity_id, namespace, slug)``."""


class Cache:
    """The token embeddings recalls read most recently, in this process, bounded in bytes.

    An item's token embeddings never change under one slug, so a cached entry is never stale;
    it is only ever used for an item of the scope being searched. :meth:`drop` and
    :meth:`drop_scope` evict what ``forget`` and ``purge`` remove, so no forgotten text stays
    readable in memory (token ids decode to the text).

    Beside items, it keeps the :class:`~mnemo.cognition.scoring.late.TokenIndex` of a few whole scopes
    (late interaction as a retriever), each for the exact set of items it was built from, within
    a second budget of the same size.
    """

    def __init__(self, max_bytes: int = 64 << 20) -> None:
        self.max_bytes = max_bytes
        self._rows: OrderedDict[Key, TokenVectors] = OrderedDict()
        self._bytes = 0
        self._indexes: OrderedDict[ScopeKey, tuple[tuple[uuid.UUID, ...], TokenIndex]] = OrderedDict()

    def index(self, key: ScopeKey, items: tuple[uuid.UUID, ...]) -> TokenIndex | None:
        """The scope's index if it was built from exactly ``items`` (in that order)."""
        kept = self._indexes.get(key)
        if kept is None or kept[0] != items:
            return None
        self._indexes.move_to_end(key)
        return kept[1]

    def keep_index(self, key: ScopeKey, items: tuple[uuid.UUID, ...], index: TokenIndex) -> None:
        self._indexes.pop(key, None)
        if index.nbytes > self.max_bytes:
            return
        self._indexes[key] = (items, index)
        while sum(i.nbytes for _, i in self._indexes.values()) > self.max_bytes:
            self._indexes.popitem(last=False)

    def get(self, keys: Sequence[Key]) -> dict[Key, TokenVectors]:
        found = {}
        for key in keys:
            tv = self._rows.get(key)
            if tv is not None:
                self._rows.move_to_end(key)
                found[key] = tv
        return found

    def put(self, found: Mapping[Key, TokenVectors]) -> None:
        for key, tv in found.items():
            if key in self._rows or self.max_bytes <= 0:
                continue
            self._rows[key] = tv
            self._bytes += _size(tv)
        while self._bytes > self.max_bytes and self._rows:
            _, old = self._rows.popitem(last=False)
            self._bytes -= _size(old)

    def drop(self, entity_id: str, item_ids: Sequence[uuid.UUID]) -> None:
        gone = set(item_ids)
        self._evict([k for k in self._rows if k[0] == entity_id and k[2] in gone])
        for key in [k for k, (items, _) in self._indexes.items() if k[0] == entity_id and gone.intersection(items)]:
            del self._indexes[key]

    def drop_scope(self, entity_id: str, namespace: str | None = None) -> None:
        self._evict([k for k in self._rows if k[0] == entity_id and namespace in (None, k[1])])
        for key in [k for k in self._indexes if k[0] == entity_id and namespace in (None, k[1])]:
            del self._indexes[key]

    def _evict(self, keys: Sequence[Key]) -> None:
        for key in keys:
            self._bytes -= _size(self._rows.pop(key))

    def __len__(self) -> int:
        return len(self._rows)


def _size(tv: TokenVectors) -> int:
    return int(tv.ids.nbytes + tv.vectors.nbytes) + 64


def _pack(tv: TokenVectors) -> tuple[bytes, bytes]:
    """Token ids as little-endian int32, embeddings as int8 codes (:func:`~mnemo.cognition.scoring.late.quantize`)."""
    return (
        np.ascontiguousarray(tv.ids, dtype="<i4").tobytes(),
        np.ascontiguousarray(quantize(tv).vectors, dtype=np.int8).tobytes(),
    )


def _unpack(ids: bytes, vectors: bytes) -> TokenVectors:
    token_ids = np.frombuffer(ids, dtype="<i4")
    rows = np.frombuffer(vectors, dtype=np.int8)
    width = len(rows) // len(token_ids) if len(token_ids) else 0
    codes = rows.reshape(len(token_ids), width) if width else np.zeros((0, 1), np.int8)
    return TokenVectors(token_ids, codes, 1.0 / QUANT)


async def fetch(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, slug: str, item_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, TokenVectors]:
    """The cached token vectors of those of ``item_ids`` that have them (in ``slug``'s space)."""
    if not item_ids:
        return {}
    cur = await conn.execute(
        """SELECT item_id, token_ids, vectors FROM mnemo.token_vectors
           WHERE entity_id = %s AND namespace = %s AND slug = %s AND item_id = ANY(%s)""",
        (entity_id, namespace, slug, list(item_ids)),
        binary=True,  # bytea as bytes on the wire, not hex text to parse
    )
    return {r[0]: _unpack(r[1], r[2]) for r in await cur.fetchall()}


async def write(
    conn: psycopg.AsyncConnection,
    entity_id: str,
    namespace: str,
    slug: str,
    found: Mapping[uuid.UUID, TokenVectors],
) -> dict[uuid.UUID, TokenVectors]:
    """Cache ``found``, only for items that still exist in the scope (one a concurrent ``forget``
    removed gets no row); an item that has its rows already keeps them. Returns what was sent, as
    :func:`fetch` reads it back (the import hands it to the process's cache, issue 42)."""
    if not found:
        return {}
    ids = list(found)
    packed = [_pack(found[i]) for i in ids]
    await conn.execute(
        """INSERT INTO mnemo.token_vectors (entity_id, namespace, item_id, slug, token_ids, vectors)
           SELECT %(e)s, %(ns)s, u.id, %(slug)s, u.t, u.v
           FROM unnest(%(ids)s::uuid[], %(t)b::bytea[], %(v)b::bytea[]) AS u(id, t, v)
           WHERE EXISTS (SELECT 1 FROM mnemo.turns WHERE entity_id = %(e)s AND namespace = %(ns)s AND id = u.id)
              OR EXISTS (SELECT 1 FROM mnemo.memories WHERE entity_id = %(e)s AND namespace = %(ns)s AND id = u.id)
              OR EXISTS (SELECT 1 FROM mnemo.block_lines
                         WHERE entity_id = %(e)s AND namespace = %(ns)s AND turn_id = u.id)
           ON CONFLICT DO NOTHING""",
        {
            "e": entity_id,
            "ns": namespace,
            "slug": slug,
            "ids": ids,
            "t": [p[0] for p in packed],
            "v": [p[1] for p in packed],
        },
    )
    return {i: _unpack(*p) for i, p in zip(ids, packed, strict=True)}


async def copy(
    conn: psycopg.AsyncConnection, entity_id: str, source: str, target: str, copies: Mapping[uuid.UUID, uuid.UUID]
) -> int:
    """Give each copied item (``copies``: the source item -> its copy in namespace ``target`` of the
    same entity) the token embeddings its source has in ``source``, every space; how many rows."""
    if not copies:
        return 0
    cur = await conn.execute(
        """INSERT INTO mnemo.token_vectors (entity_id, namespace, item_id, slug, token_ids, vectors)
           SELECT t.entity_id, %(target)s, m.copy, t.slug, t.token_ids, t.vectors
             FROM unnest(%(sources)s::uuid[], %(copies)s::uuid[]) AS m(source, copy)
             JOIN mnemo.token_vectors t
               ON t.entity_id = %(e)s AND t.item_id = m.source AND t.namespace = %(source)s
           ON CONFLICT DO NOTHING""",
        {"e": entity_id, "source": source, "target": target, "sources": list(copies), "copies": list(copies.values())},
    )
    return cur.rowcount
