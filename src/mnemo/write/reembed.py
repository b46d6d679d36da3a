"""Re-embedding after an embedder change (archive-adr §8 "Dimension Lock").

Search only ever compares vectors sealed with the active slug, so after a model
swap old vectors are simply invisible to the dense retriever. ``reembed`` finds
items without an active-slug vector scope by scope, in batches, each batch in
its own transaction: it can be stopped at any point and re-run, and it is safe
alongside live writes (which already write active-slug vectors). Lines whose
raw turns are gone are items too; a scope's long-term tier follows its
hippocampus (:mod:`mnemo.cortex.cortex_reembed`).
"""

from __future__ import annotations

from collections.abc import Callable

from mnemo._runtime import Runtime
from mnemo.cortex.cortex_reembed import reembed_scope
from mnemo.models import Scope
from mnemo.store import passage_vectors as passage_rows
from mnemo.store import queue as queue_rows
from mnemo.store import scopes as scope_rows
from mnemo.store import snapshots as backup_rows
from mnemo.store import status as meta_rows
from mnemo.store import tiers
from mnemo.store import token_vectors as token_rows
from mnemo.store import vectors as vector_rows
from mnemo.write.embedding import embed_items

__all__ = ["defer", "note_active_slug", "pending", "reembed"]

_SLUGS_KEY = "vector_slugs"


async def note_active_slug(rt: Runtime) -> int:
    """Record the active slug; return how many items need re-embedding (0 when none can)."""
    async with rt.store.connection() as conn:
        seen: dict[str, list[str]] = await meta_rows.get_meta(conn, _SLUGS_KEY) or {}
        others = [s for table, slugs in seen.items() for s in slugs if (table, s) != (rt.table, rt.slug)]
        count = await vector_rows.count_missing(conn, rt.table, rt.slug) if others else 0
        if rt.slug not in seen.get(rt.table, []):
            seen.setdefault(rt.table, []).append(rt.slug)
            await meta_rows.set_meta(conn, _SLUGS_KEY, seen)
    return count


async def pending(rt: Runtime) -> int:
    async with rt.store.connection() as conn:
        return await vector_rows.count_missing(conn, rt.table, rt.slug)


async def defer(rt: Runtime) -> int | None:
    """Queue a re-embed for ``mnemo worker``: the job id, or None when one is already waiting.
    Re-embed jobs never run two at a time (one lock)."""
    async with rt.store.connection() as conn:
        return await queue_rows.enqueue(
            conn,
            queue_rows.MAINTENANCE,
            queue_rows.REEMBED,
            {},
            lock=queue_rows.REEMBED,
            queueing_lock=queue_rows.REEMBED,
        )


async def _reembed_cortex(rt: Runtime, scope: Scope) -> int:
    """The scope's long-term tier (its rows counted in the total returned, not in ``pending``)."""
    if rt.cortex is None or not rt.settings.cortex:
        return 0
    async with rt.store.connection() as conn:
        if not await tiers.has_cortex(conn, scope.entity_id, scope.namespace):
            return 0
        async with backup_rows.cortex_writes(conn):  # a backup copies the cortex between writes
            return await reembed_scope(rt, scope)


async def reembed(rt: Runtime, *, batch_size: int = 256, progress: Callable[[int, int], None] | None = None) -> int:
    """Embed every item lacking an active-slug vector; returns how many were embedded."""
    total = await pending(rt)
    done = 0
    if progress is not None:
        progress(0, total)
    async with rt.store.connection() as conn:
        scopes = await scope_rows.list_scopes(conn)
    for entity_id, namespace in scopes:
        while True:
            async with rt.store.connection() as conn:
                batch = await vector_rows.missing_batch(conn, rt.table, rt.slug, entity_id, namespace, batch_size)
            if not batch:
                break
            items = [
                (content, rt.embeddings.turn_prefix(speaker if rt.settings.turn_context else None))
                if item_kind in ("turn", "line")
                else (content, rt.embeddings.document_prefix(memory_kind))
                for _, item_kind, content, memory_kind, speaker in batch
            ]
            embedded = await embed_items(rt, items)
            rows = [
                (entity_id, namespace, item_id, item_kind, rt.slug, vector)
                for (item_id, item_kind, _, _, _), vector in zip(batch, embedded.vectors, strict=True)
            ]
            # a long item's passages in the new model's space too (a line's turn is gone: no passages)
            windows = [
                (item_id, item_kind, n, v)
                for (item_id, item_kind, _, _, _), vs in zip(batch, embedded.passages, strict=True)
                if item_kind in ("turn", "memory")
                for n, v in enumerate(vs, start=1)
            ]
            async with rt.store.transaction() as conn:
                await vector_rows.upsert_vectors(conn, rt.table, rows)
                await passage_rows.write(conn, entity_id, namespace, rt.slug, windows)
                if embedded.tokens is not None:
                    read = {b[0]: tv for b, tv in zip(batch, embedded.tokens, strict=True)}
                    await token_rows.write(conn, entity_id, namespace, rt.slug, read)
            done += len(batch)
            if progress is not None:
                progress(done, max(total, done))
        done += await _reembed_cortex(rt, Scope(entity_id, namespace))
    if done or total == 0:
        async with rt.store.connection() as conn:
            if await vector_rows.count_missing(conn, rt.table, rt.slug) == 0:
                # Everything is sealed with the active slug: stop checking for stale vectors at start-up.
                await meta_rows.set_meta(conn, _SLUGS_KEY, {rt.table: [rt.slug]})
    return done
