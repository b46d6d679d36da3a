"""First-stage retrieval of one scope: one interface, answered by SQL or by the warm read index.

DESIGN §3 ("PostgreSQL is the truth; a read index is a cache"). Seeds: cognitive-plan §2.2, §2.5
(hybrid candidates), archive-adr §3.1 (pre-filter to the scope, then score a subset).

:class:`FirstStage` is what the recall stages ask (lexical and dense candidates, scores of given
items, the late-interaction scan's items and token index, the utterances' places).
:class:`SqlStage` answers through PostgreSQL alone (the cold path, and the only one with
``index=false``); :class:`IndexedStage` answers from a warm :class:`~mnemo.recall.scope_index.ScopeIndex`
and hands what the index does not hold to the SQL path, so every score is the one SQL would give.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np
import psycopg

from mnemo.cognition.scoring.late import QUANT, TokenIndex, TokenVectors, index_tokens
from mnemo.store import lexicon
from mnemo.store import search as search_rows
from mnemo.store import token_vectors as token_rows
from mnemo.store import vectors as vector_rows

if TYPE_CHECKING:
    from mnemo._runtime import Runtime
    from mnemo.recall.scope_index import ScopeIndex

__all__ = ["NO_TOKENS", "FirstStage", "Hit", "IndexedStage", "Item", "Place", "Positions", "Said", "SqlStage"]

Hit = tuple[uuid.UUID, str, float]
Item = tuple[uuid.UUID, str, int | None]
Place = tuple[str, int]  # session, turn number
Positions = tuple[dict[uuid.UUID, Place], dict[str, tuple[int, int]], dict[uuid.UUID, str]]
Said = tuple[str, str | None]  # an item's text and who said it (None for a memory)


class FirstStage(Protocol):
    """First-stage retrieval of one scope, answered from PostgreSQL or from a warm read index."""

    async def lexical(self, text: str, depth: int, kinds: Sequence[str]) -> list[Hit]: ...
    async def dense(self, vector: np.ndarray, depth: int) -> list[Hit]: ...
    async def similarities(self, vector: np.ndarray, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, float]: ...
    async def lexical_scores(self, text: str, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, float]: ...
    async def scope_items(self, kinds: Sequence[str], limit: int) -> list[Item]: ...
    async def token_index(self, kinds: Sequence[str], items: Sequence[Item]) -> TokenIndex: ...
    async def positions(
        self, ids: Sequence[uuid.UUID], anchors: Sequence[uuid.UUID], distance: int, *, lines: bool
    ) -> Positions: ...
    async def said(self, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, Said]: ...
    def held_tokens(self, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, TokenVectors]: ...


@dataclass(slots=True)
class SqlStage:
    """First-stage retrieval through SQL: the cold path, and the only one with ``index=false``.
    Below ``exact_scan_limit`` items the dense search is exact (as the index's), above it HNSW."""

    rt: Runtime
    conn: psycopg.AsyncConnection
    entity_id: str
    namespace: str
    exact: bool

    async def lexical(self, text: str, depth: int, kinds: Sequence[str]) -> list[Hit]:
        return await lexicon.bm25(self.conn, self.entity_id, self.namespace, text, depth, kinds=kinds)

    async def dense(self, vector: np.ndarray, depth: int) -> list[Hit]:
        rt = self.rt
        return await vector_rows.search(
            self.conn, rt.table, rt.embeddings.dim, self.entity_id, self.namespace, rt.slug, vector, depth,
            exact=self.exact,
        )  # fmt: skip

    async def similarities(self, vector: np.ndarray, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, float]:
        return await vector_rows.similarities(self.conn, self.rt.table, self.entity_id, self.rt.slug, vector, ids)

    async def lexical_scores(self, text: str, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, float]:
        found = await lexicon.bm25(self.conn, self.entity_id, self.namespace, text, 0, ids=ids)
        return {i: s for i, _, s in found}

    async def scope_items(self, kinds: Sequence[str], limit: int) -> list[Item]:
        rt = self.rt
        return await vector_rows.scope_items(self.conn, rt.table, self.entity_id, self.namespace, rt.slug, kinds, limit)

    async def token_index(self, kinds: Sequence[str], items: Sequence[Item]) -> TokenIndex:
        """The scanned items' token index, from the process's token cache or PostgreSQL (the items'
        token embeddings too: those an import of this process just wrote are in its cache; those it
        reads are kept there and offered to the scope's pending index build)."""
        e, ns, slug = self.entity_id, self.namespace, str(self.rt.slug)
        key = (e, ns, self.rt.slug)
        ids = tuple(i for i, _, _ in items)
        cache = self.rt.tokens()
        index = cache.index(key, ids)
        if index is None:
            tokens = {k[2]: tv for k, tv in cache.get([(e, ns, i, slug) for i in ids]).items()}
            read = await token_rows.fetch(self.conn, e, ns, slug, [i for i in ids if i not in tokens])
            cache.put({(e, ns, i, slug): tv for i, tv in read.items()})  # the head's re-rank reads them next
            tokens |= read
            self.rt.indexes.offer_tokens(key, tokens)  # the scope's build does not read them again
            index = index_tokens([tokens.get(i, NO_TOKENS) for i in ids])
            cache.keep_index(key, ids, index)
        return index

    async def positions(
        self, ids: Sequence[uuid.UUID], anchors: Sequence[uuid.UUID], distance: int, *, lines: bool
    ) -> Positions:
        return await search_rows.positions(
            self.conn, self.entity_id, self.namespace, ids, anchors, distance, lines=lines
        )

    async def said(self, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, Said]:
        """Each of ``ids``' text and speaker, as :func:`mnemo.store.search.item_texts` reads them."""
        texts = await search_rows.item_texts(self.conn, self.entity_id, self.namespace, ids)
        return {i: (t.content, t.speaker) for i, t in texts.items()}

    def held_tokens(self, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, TokenVectors]:
        """Nothing is held in memory on this path (the token cache is asked next)."""
        return {}


NO_TOKENS = TokenVectors(np.zeros(0, np.int32), np.zeros((0, 1), np.int8), 1.0 / QUANT)
"""An item whose token rows went away between listing and reading them: it scores 0."""


@dataclass(slots=True)
class IndexedStage:
    """First-stage retrieval from a warm :class:`ScopeIndex`; what it cannot answer alone (an item
    the index does not hold) goes to the SQL path, so every answer is SQL's."""

    index: ScopeIndex
    sql: SqlStage
    terms: Sequence[str]
    docs: int
    avgdl: float

    async def lexical(self, text: str, depth: int, kinds: Sequence[str]) -> list[Hit]:
        return self.index.lexicon.top(self.terms, self.docs, self.avgdl, depth, kinds)

    async def dense(self, vector: np.ndarray, depth: int) -> list[Hit]:
        return self.index.vectors.nearest(vector, depth)

    async def similarities(self, vector: np.ndarray, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, float]:
        held = self.index.vectors.items.slot
        have = [i for i in ids if i in held]
        found: dict[uuid.UUID, float] = {}
        if have:
            sims = self.index.vectors.similarities(vector, [held[i] for i in have])
            found = dict(zip(have, sims, strict=True))
        rest = [i for i in ids if i not in held]
        return found | (await self.sql.similarities(vector, rest) if rest else {})

    async def lexical_scores(self, text: str, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, float]:
        lex = self.index.lexicon
        slot = lex.items.slot
        have = [i for i in ids if i in slot]
        if not have:
            return {}
        scores = lex.scores(self.terms, self.docs, self.avgdl, [slot[i] for i in have])
        return {i: score for i, score in zip(have, scores, strict=True) if score is not None}

    async def scope_items(self, kinds: Sequence[str], limit: int) -> list[Item]:
        late = self.index.late
        if not late.complete:
            return await self.sql.scope_items(kinds, limit)
        return [item for item in late.items if item[1] in kinds][:limit]

    async def token_index(self, kinds: Sequence[str], items: Sequence[Item]) -> TokenIndex:
        late = self.index.late
        if not late.complete:
            return await self.sql.token_index(kinds, items)
        return late.index(tuple(kinds), items)

    async def positions(
        self, ids: Sequence[uuid.UUID], anchors: Sequence[uuid.UUID], distance: int, *, lines: bool
    ) -> Positions:
        return self.index.utterances.positions(ids, anchors, distance, lines=lines)

    async def said(self, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, Said]:
        """From the index's copy (a text and its speaker are caught up as every other part); an
        item it does not hold is read through SQL."""
        held = self.index.said
        rest = [i for i in ids if i not in held]
        return {i: held[i] for i in ids if i in held} | (await self.sql.said(rest) if rest else {})

    def held_tokens(self, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, TokenVectors]:
        held = self.index.late.token_ids
        return {i: held[i] for i in ids if i in held}
