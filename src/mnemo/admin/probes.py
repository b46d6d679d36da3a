"""What the benchmarks measure below the facade (``mnemo bench``; DESIGN §5: benches go through
``AsyncArchive`` only, which hands them a :class:`Probes` from :meth:`mnemo.AsyncArchive.inspect.probes`).

Reads for measuring, never for serving: a memory's provenance and size (LoCoMo's evidence
cover), what use left in a set of scopes (reinforcements, accesses), the dense index's
approximate search on its own (its recall against an exact scan), the write path's embedding on
its own (the raw rate the write path keeps), the turns each block holds (the cortex tree's
clustering against LoCoMo's evidence), and the inspector benchmark's fixture (a scope of many
memories, and the key of a page deep in it). Seed: the benchmark plans of
memory-architecture §12 and the perf harness of DESIGN §3.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from mnemo._runtime import Runtime
from mnemo.models import Scope
from mnemo.recall import capture
from mnemo.recall.capture import Capture
from mnemo.store import bench_reads as probe_rows
from mnemo.store import lexicon
from mnemo.store import links as link_rows
from mnemo.store import status as status_rows
from mnemo.store import vectors as vector_rows
from mnemo.write.embedding import embed_items

__all__ = ["Probes"]


class Probes:
    """Measuring reads on one open archive's runtime (benchmarks only)."""

    def __init__(self, rt: Runtime) -> None:
        self._rt = rt

    async def provenance(self, scope: Scope) -> dict[uuid.UUID, tuple[list[str], int]]:
        """Every live memory's provenance (turn or memory ids) and token count."""
        async with self._rt.store.connection() as conn:
            return await link_rows.memory_provenance(conn, scope.entity_id, scope.namespace)

    async def use(self, entity_id: str, namespaces: Sequence[str]) -> dict[str, int]:
        """What use has left in ``entity_id``'s ``namespaces``: reinforcements by recall, near-miss
        suppressions, accesses and the memories accessed."""
        async with self._rt.store.connection() as conn:
            return await status_rows.use_counts(conn, entity_id, namespaces)

    async def dense_search(self, scope: Scope, vectors: np.ndarray, k: int = 10) -> list[list[float]]:
        """The similarities of the dense index's approximate top ``k`` (HNSW) for each query vector."""
        rt, found = self._rt, []
        async with rt.store.connection() as conn:
            for v in vectors:
                hits = await vector_rows.search(
                    conn, rt.table, rt.embeddings.dim, scope.entity_id, scope.namespace, rt.slug, v, k
                )
                found.append([sim for _, _, sim in hits])
        return found

    async def read_index_facts(self, scope: Scope) -> dict[str, Any]:
        """``scope``'s read index, building it if need be: whether it is held (an index alone over
        ``index_mb`` is not: its scope is answered through SQL), its size in bytes (the refused one's
        too), its items, whether its dense search goes through the ANN (issue 42), and the budget."""
        rt = self._rt
        key = (scope.entity_id, scope.namespace, rt.slug)
        index = await rt.indexes.ensure(rt, key)
        budget = rt.indexes.budget(rt)
        if index is None:
            return {"held": False, "bytes": rt.indexes.refused.get(key, 0), "items": 0, "ann": False, "budget": budget}
        ann = index.vectors.ann is not None
        return {"held": True, "bytes": int(index.nbytes), "items": index.size, "ann": ann, "budget": budget}

    async def index_dense_search(self, scope: Scope, vectors: np.ndarray, k: int = 10) -> list[list[float]]:
        """The similarities of the held read index's top ``k`` (its ANN above ``exact_scan_limit``)
        for each query vector; empty lists when the scope's index is not held."""
        rt = self._rt
        index = rt.indexes.held((scope.entity_id, scope.namespace, rt.slug))
        if index is None:
            return [[] for _ in vectors]
        return [[sim for _, _, sim in index.vectors.nearest(v, k)] for v in vectors]

    @contextlib.asynccontextmanager
    async def hnsw_after_load(self, maintenance_mb: int = 1024) -> AsyncIterator[dict[str, float]]:
        """Around a bulk load: the vector table's HNSW index is dropped, and built once over the
        loaded rows on the way out (its seconds in the yielded dict, ``hnsw_build_s``)."""
        rt, timing = self._rt, dict[str, float]()
        async with rt.store.connection() as conn:
            definitions = await probe_rows.drop_hnsw(conn, rt.table)
        try:
            yield timing
        finally:
            started = time.perf_counter()
            async with rt.store.connection() as conn:
                await probe_rows.create_indexes(conn, definitions, maintenance_mb)
            timing["hnsw_build_s"] = time.perf_counter() - started

    async def read_index_bytes(self, scope: Scope) -> int:
        """The size of ``scope``'s read index, building it if need be (0 with ``index=false``)."""
        rt = self._rt
        index = await rt.indexes.ensure(rt, (scope.entity_id, scope.namespace, rt.slug))
        return 0 if index is None else int(index.nbytes)

    async def settle(self) -> None:
        """Until the background reads (the late-interaction token backfill) are done."""
        await self._rt.backfill.wait()

    async def embed(self, items: Sequence[tuple[str, str]]) -> int:
        """Embed ``(content, prefix)`` items as the write path does (vectors, token embeddings,
        passages) and write nothing: the raw rate the write path is measured against; how many."""
        await embed_items(self._rt, items)
        return len(items)

    async def block_turns(self, scope: Scope) -> dict[uuid.UUID, list[uuid.UUID]]:
        """Each of ``scope``'s blocks and the turns it holds."""
        async with self._rt.store.connection() as conn:
            return await probe_rows.block_turns(conn, scope.entity_id, scope.namespace)

    async def memory_count(self, scope: Scope) -> int:
        """The memories of ``scope``, in any status."""
        async with self._rt.store.connection() as conn:
            return await probe_rows.memory_count(conn, scope.entity_id, scope.namespace)

    async def copy_turns_as_memories(self, source: Scope, namespace: str) -> int:
        """The inspector benchmark's fixture: every turn of ``source`` becomes an episodic memory of
        ``namespace`` (same entity, text, time and vector), with its postings; how many."""
        rt, entity = self._rt, source.entity_id
        async with rt.store.transaction() as conn:
            copied = await probe_rows.copy_turns_as_memories(conn, entity, source.namespace, namespace, rt.table)
            ids = await probe_rows.memory_ids(conn, entity, namespace)
            await lexicon.add_postings(conn, entity, namespace, "memory", ids)
        async with rt.store.connection() as conn:
            await probe_rows.vacuum_memories(conn)
            await lexicon.analyze(conn)
        return copied

    def capturing(self) -> contextlib.AbstractContextManager[Capture]:
        """Collect what every recall made inside the ``with`` block saw: its head as the learned
        fusion sees it (:class:`mnemo.recall.capture.Pool`: candidates, features, sessions) and its
        question words' support (:mod:`mnemo.recall.support`)."""
        return capture.capturing()

    async def memory_at(self, scope: Scope, offset: int) -> tuple[datetime, uuid.UUID] | None:
        """The ``(created_at, id)`` of ``scope``'s memory ``offset`` rows in, newest first (the
        inspector's page key), or None when it holds fewer."""
        async with self._rt.store.connection() as conn:
            return await probe_rows.memory_at(conn, scope.entity_id, scope.namespace, offset)
