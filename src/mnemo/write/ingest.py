"""Asynchronous ingestion: store a turn at once, embed it in a background worker.

Seeds: archive-adr §0 ("Asynchronous Ingestion": embedding is offloaded to
background labor so it never blocks the agent's loop), §2 (the queue chamber is
transactional with state changes), §4 (the worker generates the vectors and
writes them into the vectors chamber).

With ``Settings.ingest_mode = "async"`` (``MNEMO_INGEST_MODE=async``) the write
path stores turns, their postings and one ``embed_turns`` job per
:data:`JOB_BATCH` turns in ONE transaction (:func:`defer_embeds`): a rollback
drops turn and job together, a commit keeps both, so a crash between the write
and the embedding loses nothing; the job is still queued and a worker finishes
it after a restart. Until then the turn is found by the lexical retriever (its
postings are written with it) but has no similarity, so alone it surfaces as a
refusal candidate rather than a hit.

:func:`embed_turns` (run by the worker) is idempotent: turns that already have a
vector of the active model, or were forgotten meanwhile, are skipped.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import psycopg

from mnemo._runtime import Runtime
from mnemo._upkeep import note_writes
from mnemo.models import Scope
from mnemo.store import passage_vectors as passage_rows
from mnemo.store import queue as queue_rows
from mnemo.store import token_vectors as token_rows
from mnemo.store import vectors as vector_rows
from mnemo.write.embedding import embed_items

__all__ = ["JOB_BATCH", "defer_embeds", "embed_turns"]

JOB_BATCH = 256  # turn ids per embed job (an import of n turns queues ceil(n / JOB_BATCH) jobs)


async def defer_embeds(conn: psycopg.AsyncConnection, scope: Scope, turn_ids: Sequence[uuid.UUID]) -> list[int]:
    """Queue the embedding of ``turn_ids`` inside the caller's (write) transaction; the job ids."""
    ids = [str(i) for i in turn_ids]
    jobs = []
    for start in range(0, len(ids), JOB_BATCH):
        args = {"entity_id": scope.entity_id, "namespace": scope.namespace, "turn_ids": ids[start : start + JOB_BATCH]}
        job = await queue_rows.enqueue(conn, queue_rows.INGEST, queue_rows.EMBED_TURNS, args)
        assert job is not None  # no queueing lock: never skipped
        jobs.append(job)
    return jobs


async def embed_turns(rt: Runtime, scope: Scope, turn_ids: Sequence[uuid.UUID]) -> int:
    """Embed those of ``turn_ids`` that still exist and lack an active-model vector; how many were written."""
    e, ns = scope.entity_id, scope.namespace
    async with rt.store.connection() as conn:
        todo = await vector_rows.turns_missing(conn, rt.table, rt.slug, e, ns, turn_ids)
    if not todo:
        return 0
    items = [
        (content, rt.embeddings.turn_prefix(speaker if rt.settings.turn_context else None))
        for _, content, speaker in todo
    ]
    embedded = await embed_items(rt, items)
    read = embedded.tokens
    vectors = dict(zip([t[0] for t in todo], embedded.vectors, strict=True))
    async with rt.store.transaction() as conn:
        # Re-checked under a share lock: a turn forgotten while it was being embedded gets no vector.
        still = await vector_rows.turns_missing(conn, rt.table, rt.slug, e, ns, list(vectors), lock=True)
        await vector_rows.upsert_vectors(conn, rt.table, [(e, ns, i, "turn", rt.slug, vectors[i]) for i, _, _ in still])
        if read is not None:
            taken = {i for i, _, _ in still}
            cached = {t[0]: tv for t, tv in zip(todo, read, strict=True) if t[0] in taken}
            await token_rows.write(conn, e, ns, str(rt.slug), cached)
        windows = [
            (t[0], "turn", n, v)
            for t, vs in zip(todo, embedded.passages, strict=True)
            if t[0] in {i for i, _, _ in still}
            for n, v in enumerate(vs, start=1)
        ]
        await passage_rows.write(conn, e, ns, str(rt.slug), windows)
    await note_writes(rt, len(still))
    return len(still)
