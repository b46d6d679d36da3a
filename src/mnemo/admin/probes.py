"""What the benchmarks measure below the facade (``mnemo bench``; DESIGN §5: benches go through
``AsyncArchive`` only, which hands them a :class:`Probes` from :meth:`mnemo.AsyncArchive.probes`).

Reads for measuring, never for serving: a memory's provenance and size (LoCoMo's evidence
cover), what use left in a set of scopes (reinforcements, accesses), the dense index's
approximate search on its own (its recall against an exact scan), the write path's embedding on
its own (the raw rate the write path keeps), the turns each block holds (the cortex tree's
clustering against LoCoMo's evidence), and the inspector benchmark's fixture (a scope of many
memories, and the key of a page deep in it). Seed: the benchmark plans of
memory-architecture §12 and the perf harness of DESIGN §3.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime

import numpy as np

from mnemo._runtime import Runtime
from mnemo.models import Scope
from mnemo.store import inspect as inspect_rows
from mnemo.store import lexicon
from mnemo.store import night as night_rows
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
            return await night_rows.memory_provenance(conn, scope.entity_id, scope.namespace)

    async def use(self, entity_id: str, namespaces: Sequence[str]) -> dict[str, int]:
        """What use has left in ``entity_id``'s ``namespaces``: reinforcements by recall, near-miss
        suppressions, accesses and the memories accessed."""
        async with self._rt.store.connection() as conn:
            changes = await (
                await conn.execute(
                    "SELECT count(*) FILTER (WHERE reason = 'recalled'), count(*) FILTER (WHERE reason = 'near miss') "
                    "FROM traces.weight_changes WHERE entity_id = %s AND namespace = ANY(%s)",
                    (entity_id, list(namespaces)),
                )
            ).fetchone()
            accesses = await (
                await conn.execute(
                    "SELECT coalesce(sum(access_count), 0), count(*) FILTER (WHERE access_count > 0) "
                    "FROM mnemo.memories WHERE entity_id = %s AND namespace = ANY(%s)",
                    (entity_id, list(namespaces)),
                )
            ).fetchone()
        assert changes is not None and accesses is not None
        return {
            "weight_changes_recalled": int(changes[0]),
            "weight_changes_near_miss": int(changes[1]),
            "accesses": int(accesses[0]),
            "memories_accessed": int(accesses[1]),
        }

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
            cur = await conn.execute(
                "SELECT id, turn_ids FROM mnemo.blocks WHERE entity_id = %s AND namespace = %s",
                (scope.entity_id, scope.namespace),
            )
            return {block: list(turn_ids) for block, turn_ids in await cur.fetchall()}

    async def memory_count(self, scope: Scope) -> int:
        """The memories of ``scope``, in any status."""
        async with self._rt.store.connection() as conn:
            cur = await conn.execute(
                "SELECT count(*) FROM mnemo.memories WHERE entity_id = %s AND namespace = %s",
                (scope.entity_id, scope.namespace),
            )
            row = await cur.fetchone()
        return int(row[0]) if row else 0

    async def copy_turns_as_memories(self, source: Scope, namespace: str) -> int:
        """The inspector benchmark's fixture: every turn of ``source`` becomes an episodic memory of
        ``namespace`` (same entity, text, time and vector), with its postings; how many."""
        rt, entity = self._rt, source.entity_id
        async with rt.store.transaction() as conn:
            copied = await inspect_rows.copy_turns_as_memories(conn, entity, source.namespace, namespace, rt.table)
            cur = await conn.execute(
                "SELECT id FROM mnemo.memories WHERE entity_id = %s AND namespace = %s", (entity, namespace)
            )
            await lexicon.add_postings(conn, entity, namespace, "memory", [r[0] for r in await cur.fetchall()])
        async with rt.store.connection() as conn:
            await conn.execute("VACUUM (ANALYZE) mnemo.memories")
            await lexicon.analyze(conn)
        return copied

    async def memory_at(self, scope: Scope, offset: int) -> tuple[datetime, uuid.UUID] | None:
        """The ``(created_at, id)`` of ``scope``'s memory ``offset`` rows in, newest first (the
        inspector's page key), or None when it holds fewer."""
        async with self._rt.store.connection() as conn:
            cur = await conn.execute(
                """SELECT created_at, id FROM mnemo.memories WHERE entity_id = %s AND namespace = %s
                   ORDER BY created_at DESC, id DESC OFFSET %s LIMIT 1""",
                (scope.entity_id, scope.namespace, offset),
            )
            row = await cur.fetchone()
        return None if row is None else (row[0], row[1])
