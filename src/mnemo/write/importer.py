"""The bulk write path: many turns (a conversation file) in one transaction, embedded as they are written.

Seeds: memory-architecture §1.2 and §2.2 (every exchange embedded at write time
into the day table), archive-adr §4 (attributed ingestion, atomic bulk insert:
a malformed file imports nothing), cognitive-plan §2.1 (batching).

:func:`import_turns` runs in named stages: validate and number the turns
(explicit turn numbers must not clash), write the rows (COPY when ``bulk``) and
their lexical postings, then the vectors, chunk by chunk, while the next chunk
is embedded in a worker thread; with ``ingest_mode = "async"`` the embed jobs
are queued instead (:mod:`mnemo.write.ingest`). Everything happens inside one
transaction, so a failure leaves nothing half-written.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import cast

import numpy as np
import psycopg

from mnemo._runtime import Runtime
from mnemo._upkeep import note_writes
from mnemo.errors import InvalidContentError, MalformedImportError
from mnemo.models import ImportReport, Role, Scope, Turn, uuid7
from mnemo.store import lexicon
from mnemo.store import turns as turn_rows
from mnemo.store import vectors as vector_rows
from mnemo.write import ingest
from mnemo.write.formats import TurnInput, detect_format, parse_file
from mnemo.write.remember import Progress, ensure_scope

__all__ = ["ANALYZE_AFTER", "import_file", "import_turns"]

ANALYZE_AFTER = 500


async def import_file(
    rt: Runtime,
    scope: Scope,
    path: Path,
    *,
    fmt: str = "auto",
    sample: str | None = None,
    progress: Progress | None = None,
) -> ImportReport:
    """Import a JSONL or LoCoMo conversation file; a malformed file imports nothing."""
    started = time.perf_counter()
    turns = parse_file(path, fmt=fmt, max_chars=rt.settings.max_content_chars, sample=sample)
    await import_turns(rt, scope, turns, progress=progress)
    used = detect_format(path) if fmt == "auto" else fmt
    return ImportReport(
        scope=scope,
        path=str(path),
        format=used,
        turns=len(turns),
        sessions=len({t.session_id for t in turns}),
        seconds=time.perf_counter() - started,
    )


async def import_turns(
    rt: Runtime,
    scope: Scope,
    turns: Sequence[TurnInput],
    *,
    vectors: np.ndarray | None = None,
    progress: Progress | None = None,
    bulk: bool = True,
) -> list[Turn]:
    """Write many turns in one transaction (COPY when ``bulk``); all or nothing.

    With ``ingest_mode = "async"`` and no ``vectors`` given, the turns are stored without vectors
    and their embed jobs are queued in the same transaction (:mod:`mnemo.write.ingest`).
    """
    if not turns:
        return []
    deferred = rt.settings.ingest_mode == "async" and vectors is None
    if vectors is not None and vectors.shape != (len(turns), rt.embeddings.dim):
        raise InvalidContentError(f"expected {len(turns)} vectors of dimension {rt.embeddings.dim}")
    pipeline = _Pipeline(rt, turns, vectors, deferred)
    # Counted before any embedding starts: the tokenizer object is shared with the model and is
    # not safe to use from two threads at once.
    tokens = rt.embeddings.count_tokens([t.content for t in turns])
    pipeline.start()
    now = datetime.now(UTC)
    try:
        async with rt.store.transaction() as conn:
            await ensure_scope(conn, rt, scope)
            rows = await _number(conn, scope, turns, tokens, now)
            await _write_rows(conn, scope, rows, bulk)
            if deferred:
                await ingest.defer_embeds(conn, scope, [r[0] for r in rows])
                if progress is not None:
                    progress(len(rows), len(rows))
            else:
                await _write_vectors(rt, conn, scope, rows, pipeline, bulk, progress)
    except BaseException:
        await pipeline.cancel()
        raise
    await _refresh_statistics(rt, len(rows), bulk)
    return [_turn(scope, r) for r in rows]


class _Pipeline:
    """Embeds the turns chunk by chunk: pipelined, still all or nothing. Inside the import's
    transaction, chunk k's vectors are written (HNSW inserts) while chunk k+1 is embedded in a
    worker thread. Given ``vectors`` (or deferred embedding), each chunk is ready at once."""

    def __init__(self, rt: Runtime, turns: Sequence[TurnInput], vectors: np.ndarray | None, deferred: bool) -> None:
        self._rt = rt
        self._vectors = vectors
        self._deferred = deferred
        self._documents = [
            rt.embeddings.turn_text(t.content, t.speaker if rt.settings.turn_context else None) for t in turns
        ]
        step = rt.embeddings.chunk_size
        self.chunks = [(start, min(start + step, len(turns))) for start in range(0, len(turns), step)]
        self._pending: asyncio.Future[np.ndarray] | None = None

    def _embed(self, index: int) -> asyncio.Future[np.ndarray]:
        lo, hi = self.chunks[index]
        if self._vectors is not None or self._deferred:
            done: asyncio.Future[np.ndarray] = asyncio.get_running_loop().create_future()
            done.set_result(np.empty((0, 0)) if self._vectors is None else self._vectors[lo:hi])
            return done
        return asyncio.ensure_future(self._rt.embeddings.embed_documents(self._documents[lo:hi]))

    def start(self) -> None:
        """Start embedding the first chunk."""
        self._pending = self._embed(0)

    async def take(self, index: int) -> np.ndarray:
        """Chunk ``index``'s vectors, once ready; the next chunk starts embedding meanwhile."""
        assert self._pending is not None, "start() first"
        chunk_vectors = await self._pending
        if index + 1 < len(self.chunks):
            self._pending = self._embed(index + 1)
        return chunk_vectors

    async def cancel(self) -> None:
        if self._pending is not None:
            await _cancel(self._pending)


async def _number(
    conn: psycopg.AsyncConnection,
    scope: Scope,
    turns: Sequence[TurnInput],
    tokens: Sequence[int],
    now: datetime,
) -> list[turn_rows.TurnRow]:
    """The turns' rows: new turns append to their session; explicit turn numbers must be free."""
    sessions = sorted({t.session_id for t in turns})
    next_numbers = await turn_rows.next_turn_numbers(conn, scope.entity_id, scope.namespace, sessions)
    explicit = [(t.session_id, t.turn_number) for t in turns if t.turn_number is not None]
    clashes = await turn_rows.existing_turn_numbers(conn, scope.entity_id, scope.namespace, explicit)
    if clashes or len(set(explicit)) != len(explicit):
        shown = clashes or _duplicates(explicit)
        raise MalformedImportError(
            f"turn numbers already used in scope {scope}: {shown}; import into another scope or "
            "drop the explicit turn numbers to append"
        )
    rows: list[turn_rows.TurnRow] = []
    for turn, count in zip(turns, tokens, strict=True):
        number = turn.turn_number
        if number is None:
            number = next_numbers[turn.session_id]
        next_numbers[turn.session_id] = max(next_numbers[turn.session_id], number + 1)
        rows.append(
            (
                uuid7(),
                scope.entity_id,
                scope.namespace,
                turn.session_id,
                number,
                turn.role,
                turn.speaker,
                turn.content,
                turn.created_at or now,
                count,
                dict(turn.metadata),
            )
        )
    return rows


def _duplicates(keys: Sequence[tuple[str, int | None]]) -> list[tuple[str, int | None]]:
    seen: set[tuple[str, int | None]] = set()
    dupes = []
    for key in keys:
        if key in seen:
            dupes.append(key)
        seen.add(key)
    return dupes[:5]


async def _write_rows(
    conn: psycopg.AsyncConnection, scope: Scope, rows: Sequence[turn_rows.TurnRow], bulk: bool
) -> None:
    """The turn rows (COPY when ``bulk``, else one INSERT each) and their lexical postings."""
    if bulk:
        await turn_rows.copy_turns(conn, rows)
    else:
        for row in rows:
            await turn_rows.insert_turn(conn, row)
    await lexicon.add_postings(conn, scope.entity_id, scope.namespace, "turn", [r[0] for r in rows])


async def _write_vectors(
    rt: Runtime,
    conn: psycopg.AsyncConnection,
    scope: Scope,
    rows: Sequence[turn_rows.TurnRow],
    pipeline: _Pipeline,
    bulk: bool,
    progress: Progress | None,
) -> None:
    """Each chunk's vectors as it comes out of the pipeline, with a progress tick per chunk."""
    for index, (lo, hi) in enumerate(pipeline.chunks):
        chunk_vectors = await pipeline.take(index)
        items = [
            (scope.entity_id, scope.namespace, r[0], "turn", rt.slug, v)
            for r, v in zip(rows[lo:hi], chunk_vectors, strict=True)
        ]
        if bulk:
            await vector_rows.insert_vectors(conn, rt.table, items)
        else:
            await vector_rows.upsert_vectors(conn, rt.table, items)
        if progress is not None:
            progress(hi, len(rows))


async def _cancel(task: asyncio.Future[np.ndarray]) -> None:
    """Stop (or drain) an embedding still in flight when the import fails."""
    if not task.done():
        task.cancel()
    with contextlib.suppress(BaseException):
        await task


async def _refresh_statistics(rt: Runtime, count: int, bulk: bool) -> None:
    """After a large COPY, fresh statistics, so the planner uses the HNSW and GIN indexes right away
    instead of waiting for autovacuum; after a small write, the usual write count."""
    if bulk and count >= ANALYZE_AFTER:
        async with rt.store.connection() as conn:
            await turn_rows.analyze(conn)
            await lexicon.analyze(conn)
            await vector_rows.analyze(conn, rt.table)
    else:
        await note_writes(rt, count)


def _turn(scope: Scope, row: turn_rows.TurnRow) -> Turn:
    """The stored turn, as returned to the caller."""
    return Turn(
        id=row[0],
        scope=scope,
        session_id=row[3],
        turn_number=row[4],
        role=cast(Role, row[5]),  # checked when the input was parsed
        content=row[7],
        created_at=row[8],
        token_count=row[9],
        speaker=row[6],
        metadata=row[10],
    )
