"""Keeping an archive in shape: health, warming, re-embedding and the background queue (issue 41 item 1).

:class:`Maintenance` is ``archive.maintenance``; its static helpers (:meth:`~Maintenance.redact_url`,
:meth:`~Maintenance.release_embedded`, :meth:`~Maintenance.embedded_running`) need no open
archive: ``AsyncArchive.maintenance.redact_url(url)``.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from pathlib import Path

from mnemo._runtime import Runtime
from mnemo.admin import status_report
from mnemo.models import JobCatalogue, Scope
from mnemo.night import consolidated_reads
from mnemo.store import queue as queue_rows
from mnemo.store.pool import redact
from mnemo.store.server import embedded_running, release_embedded
from mnemo.write import ingest as ingest_path
from mnemo.write import reembed as reembed_path
from mnemo.write.remember import Progress

__all__ = ["Maintenance"]


class Maintenance:
    """Health, warming, re-embedding and deferred work of an open archive: ``archive.maintenance``."""

    JOBS: JobCatalogue = JobCatalogue(
        queues=queue_rows.QUEUES, ingest=queue_rows.INGEST, maintenance=queue_rows.MAINTENANCE,
        night=queue_rows.NIGHT, embed_turns=queue_rows.EMBED_TURNS, reembed=queue_rows.REEMBED,
        night_cycle=queue_rows.NIGHT_CYCLE, night_scope=queue_rows.NIGHT_SCOPE, retry_stalled=queue_rows.RETRY_STALLED,
    )  # fmt: skip
    """The background queues and task names (``mnemo worker``)."""

    def __init__(self, runtime: Runtime, pending_reembed: int) -> None:
        self._rt = runtime
        self.pending_reembed = pending_reembed
        """Stored items that still lack a vector of the active model (:meth:`reembed` catches them up)."""

    async def health(self) -> str | None:
        """Why this archive cannot serve an agent's memory right now, or None when it can: the
        embedder must answer a probe with a well-formed vector, and every stored item must have a
        vector from the active model (else recall silently misses items)."""
        return await status_report.health(self._rt, self.pending_reembed)

    async def warm(self, scope: Scope) -> int:
        """Build ``scope``'s read index now instead of on its first recall (a service warming up,
        a benchmark); how many items its vectors hold (0 with ``index=false``). PostgreSQL stays
        the truth: the index is caught up at every recall (DESIGN §3)."""
        rt = self._rt
        index = await rt.indexes.ensure(rt, (scope.entity_id, scope.namespace, rt.slug))
        return 0 if index is None else index.size

    async def reembed(self, *, batch_size: int = 256, progress: Progress | None = None) -> int:
        """Embed every item that lacks a vector from the active model; resumable."""
        done = await reembed_path.reembed(self._rt, batch_size=batch_size, progress=progress)
        self.pending_reembed = await reembed_path.pending(self._rt)
        return done

    async def defer_reembed(self) -> int | None:
        """Queue :meth:`reembed` for a background worker (``mnemo worker``); the job id, or None when
        a re-embed is already waiting."""
        return await reembed_path.defer(self._rt)

    async def defer_nights(self) -> int:
        """Queue the night cycle of every scope with turns or memories for a background worker,
        skipping those whose night still waits; how many were queued."""
        return await consolidated_reads.defer_nights(self._rt)

    async def night_scopes(self) -> list[Scope]:
        """Every scope with turns or memories (what the night cycle covers)."""
        return await consolidated_reads.night_scopes(self._rt)

    async def embed_turns(self, scope: Scope, turn_ids: Sequence[uuid.UUID]) -> int:
        """Embed turns stored by asynchronous ingestion that still lack a vector (the worker's
        ``embed_turns`` job); how many were embedded."""
        return await ingest_path.embed_turns(self._rt, scope, turn_ids)

    @staticmethod
    def redact_url(url: str) -> str:
        """``url`` with its password hidden, for display."""
        return redact(url)

    @staticmethod
    def release_embedded() -> None:
        """Stop owning the embedded PostgreSQL servers this process started or attached to (each
        stops when no other live process owns it); idempotent, and run at exit anyway."""
        release_embedded()

    @staticmethod
    def embedded_running(home: Path) -> bool:
        """Whether an embedded PostgreSQL still runs in ``home`` (another process may hold it)."""
        return embedded_running(home)
