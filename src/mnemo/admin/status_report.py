"""What ``mnemo status`` shows, and whether the archive can serve an agent right now.

Seed: archive-adr §8 ("Dimension Lock": every vector sealed with its model's slug;
items without a vector from the active model are invisible to recall until re-embedded).
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

import numpy as np

from mnemo._runtime import Runtime
from mnemo.models import Status
from mnemo.portability import _staging
from mnemo.store import status as status_rows
from mnemo.store import vectors as vector_rows
from mnemo.store.pool import redact

__all__ = ["health", "status"]


async def status(rt: Runtime) -> Status:
    """Counts per chamber, vectors per model, pending re-embeds and the queue; staging a killed
    backup or restore left in the home is removed on the way (:func:`._staging.sweep`)."""
    swept = await asyncio.to_thread(_sweep, rt)
    async with rt.store.connection() as conn:
        counts = await status_rows.chamber_counts(conn)
        slugs = await vector_rows.slug_counts(conn)
        missing = await vector_rows.count_missing(conn, rt.table, rt.slug)
        queue = await status_rows.queue_depth(conn)
    return Status(
        database="embedded " + str(rt.settings.pgdata) if rt.store.embedded else redact(rt.store.url),
        embedded=rt.store.embedded,
        pgvector=rt.store.pgvector_version,
        embedder=rt.slug,
        vector_table=f"vectors.{rt.table}",
        counts=counts,
        vectors=slugs,
        pending_reembed=missing,
        queue=queue,
        swept=tuple(swept),
        uses={
            "queued": rt.uses.queued,
            "written": rt.uses.written,
            "failed": rt.uses.failed,
            "pending": rt.uses.pending,
        },
    )


def _sweep(rt: Runtime) -> list[str]:
    parents = [rt.settings.home] + ([Path(tempfile.gettempdir())] if rt.settings.database_url else [])
    return [removed for parent in parents for removed in _staging.sweep(parent, (_staging.BACKUP, _staging.RESTORE))]


async def health(rt: Runtime, pending_reembed: int) -> str | None:
    """Why the archive cannot serve an agent's memory right now, or None when it can."""
    try:
        vector = np.asarray(await rt.embeddings.embed_query("health probe"), dtype=float)
    except Exception as exc:
        return f"the embedder {rt.slug} failed a probe: {exc}"
    if vector.shape != (rt.embeddings.dim,) or not np.all(np.isfinite(vector)):
        return f"the embedder {rt.slug} returned a malformed vector"
    if pending_reembed:
        return (
            f"{pending_reembed} stored items were embedded with another model than {rt.slug}; "
            "recall would miss them: run `mnemo reembed` first"
        )
    return None
