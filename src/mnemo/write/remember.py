"""The write path: memories and turns, embedded immediately.

Seeds: memory-architecture §1.2 and §2.2 (every exchange embedded at write time
into the day table), archive-adr §4 (attributed ingestion, atomic bulk insert),
cognitive-plan §2.1 (kind prefixes, batching), §2.3 (Beta(1, 4) default weight,
anchored memories at Beta(50, 1)).

Every write validates all input first, embeds, and then writes rows and vectors
in one transaction, so a failure leaves nothing half-written.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

from mnemo import _dynamics as dynamics
from mnemo._runtime import Runtime
from mnemo._upkeep import note_writes
from mnemo._validate import check_content, check_id, check_kind, check_role, check_session, check_vector, to_utc
from mnemo.errors import InvalidContentError, MalformedImportError, UnknownScopeError
from mnemo.models import ImportReport, Memory, Scope, Turn, uuid7
from mnemo.store import dynamics as dynamic_rows
from mnemo.store import lexicon
from mnemo.store import memories as memory_rows
from mnemo.store import scopes as scope_rows
from mnemo.store import turns as turn_rows
from mnemo.store import vectors as vector_rows
from mnemo.write import ingest
from mnemo.write.formats import TurnInput, detect_format, parse_file

__all__ = ["ensure_scope", "import_file", "import_turns", "record_turn", "remember", "store_memory"]

Progress = Callable[[int, int], None]

ANCHORED_WEIGHT = (50.0, 1.0)
DEFAULT_WEIGHT = (1.0, 4.0)
ANALYZE_AFTER = 500


async def ensure_scope(conn: psycopg.AsyncConnection, rt: Runtime, scope: Scope) -> None:
    if rt.settings.auto_create_scopes:
        await scope_rows.ensure_scope(conn, scope.entity_id, scope.namespace)
        return
    exists, _ = await scope_rows.read_access(conn, scope.entity_id, scope.namespace, scope.entity_id)
    if not exists:
        raise UnknownScopeError(f"scope {scope} does not exist; create it first (auto_create_scopes is off)")


async def remember(
    rt: Runtime,
    scope: Scope,
    content: object,
    *,
    kind: str = "semantic",
    anchored: bool = False,
    compressed: str | None = None,
    source_tag: str | None = None,
    source_confidence: float = 1.0,
    provenance: Sequence[str] = (),
    event_time: datetime | str | None = None,
    metadata: Mapping[str, Any] | None = None,
    embedding: Sequence[float] | np.ndarray | None = None,
    status: str = "active",
    supersedes: Sequence[uuid.UUID | str] = (),
) -> Memory:
    """Store one curated memory and its vector; returns the stored record.

    ``supersedes`` names memories this one updates: each is contradicted (its weight
    lowers, audited with the reason ``superseded``), never deleted.
    """
    text = check_content(content, max_chars=rt.settings.max_content_chars)
    check_kind(kind)
    if compressed is not None:
        compressed = check_content(compressed, max_chars=rt.settings.max_content_chars, label="compressed")
    if not 0.0 <= float(source_confidence) <= 1.0:
        raise InvalidContentError("source_confidence must be between 0 and 1")
    if status not in ("candidate", "active"):
        raise InvalidContentError("new memories start as 'candidate' or 'active'")
    when = None if event_time is None else to_utc(event_time, label="event_time")
    if embedding is not None:
        vector = check_vector(embedding, rt.embeddings.dim)
    else:
        vector = (await rt.embeddings.embed_documents([rt.embeddings.document_text(text, kind)]))[0]
    item_id = uuid7()
    old_ids = [check_id(i) for i in supersedes]
    meta = dict(metadata or {})
    if old_ids:
        meta["supersedes"] = [str(i) for i in old_ids]
    row = memory_row(
        rt,
        scope,
        item_id,
        text,
        kind,
        compressed=compressed,
        anchored=anchored,
        status=status,
        source_tag=source_tag,
        source_confidence=float(source_confidence),
        provenance=[str(p) for p in provenance],
        event_time=when,
        metadata=meta,
    )
    async with rt.store.transaction() as conn:
        await ensure_scope(conn, rt, scope)
        created = await store_memory(conn, rt, scope, row, vector)
        await supersede(conn, rt, scope, old_ids, item_id, reason="superseded")
    await note_writes(rt, 1 + len(old_ids))
    return Memory(
        id=item_id,
        scope=scope,
        kind=kind,
        content=text,
        created_at=created,
        alpha=row["alpha"],
        beta=row["beta"],
        status=status,
        anchored=anchored,
        compressed=compressed,
        source_tag=source_tag,
        source_confidence=row["source_confidence"],
        provenance=tuple(row["provenance"]),
        event_time=when,
        token_count=row["token_count"],
        metadata=row["metadata"],
    )


def memory_row(
    rt: Runtime,
    scope: Scope,
    item_id: uuid.UUID,
    text: str,
    kind: str,
    *,
    compressed: str | None = None,
    anchored: bool = False,
    status: str = "active",
    source_tag: str | None = None,
    source_confidence: float = 1.0,
    provenance: Sequence[str] = (),
    event_time: datetime | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A validated memory's row: Beta(1, 4), or Beta(50, 1) when anchored (cognitive-plan §2.3)."""
    alpha, beta = ANCHORED_WEIGHT if anchored else DEFAULT_WEIGHT
    return {
        "id": item_id,
        "entity_id": scope.entity_id,
        "namespace": scope.namespace,
        "kind": kind,
        "content": text,
        "compressed": compressed,
        "alpha": alpha,
        "beta": beta,
        "status": status,
        "anchored": anchored,
        "source_tag": source_tag,
        "source_confidence": source_confidence,
        "provenance": list(provenance),
        "event_time": event_time,
        "token_count": rt.embeddings.count_tokens([text])[0],
        "metadata": dict(metadata or {}),
    }


async def supersede(
    conn: psycopg.AsyncConnection,
    rt: Runtime,
    scope: Scope,
    old_ids: Sequence[uuid.UUID],
    new_id: uuid.UUID,
    *,
    reason: str,
    evidence: Mapping[str, Any] | None = None,
) -> None:
    """``new_id`` supersedes ``old_ids``: mark them and lower their weight (audited), never delete."""
    if not old_ids:
        return
    await dynamic_rows.mark_superseded(conn, scope.entity_id, old_ids, new_id)
    await dynamics.change_weights(
        conn,
        rt.settings,
        scope,
        [
            dynamics.WeightRequest(
                o, "contradict", rt.settings.gate_contradict_gain, reason, {"by": str(new_id), **(evidence or {})}
            )
            for o in old_ids
        ],
    )


async def store_memory(
    conn: psycopg.AsyncConnection, rt: Runtime, scope: Scope, row: Mapping[str, Any], vector: np.ndarray
) -> datetime:
    """Write a validated memory row, its postings and its vector (inside the caller's transaction)."""
    created = await memory_rows.insert_memory(conn, dict(row))
    await lexicon.add_postings(conn, scope.entity_id, scope.namespace, "memory", [row["id"]])
    await vector_rows.upsert_vectors(
        conn, rt.table, [(scope.entity_id, scope.namespace, row["id"], "memory", rt.slug, vector)]
    )
    return created


async def record_turn(
    rt: Runtime,
    scope: Scope,
    session: str,
    role: str,
    content: object,
    *,
    speaker: str | None = None,
    created_at: datetime | str | None = None,
    metadata: Mapping[str, Any] | None = None,
    embedding: Sequence[float] | np.ndarray | None = None,
) -> Turn:
    """Append one raw exchange to the day table, embedded immediately."""
    turn = TurnInput(
        session_id=check_session(session),
        role=check_role(role),
        content=check_content(content, max_chars=rt.settings.max_content_chars),
        speaker=speaker,
        created_at=None if created_at is None else to_utc(created_at, label="created_at"),
        metadata=dict(metadata or {}),
    )
    vectors = None if embedding is None else np.stack([check_vector(embedding, rt.embeddings.dim)])
    stored = await import_turns(rt, scope, [turn], vectors=vectors, bulk=False)
    return stored[0]


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
    texts = [t.content for t in turns]
    if vectors is not None and vectors.shape != (len(turns), rt.embeddings.dim):
        raise InvalidContentError(f"expected {len(turns)} vectors of dimension {rt.embeddings.dim}")
    documents = [rt.embeddings.turn_text(t.content, t.speaker if rt.settings.turn_context else None) for t in turns]
    # Pipelined, still all or nothing: inside one transaction, chunk k's vectors are written (HNSW
    # inserts) while chunk k+1 is embedded in a worker thread.
    step = rt.embeddings.chunk_size
    chunks = [(start, min(start + step, len(turns))) for start in range(0, len(turns), step)]

    def embed(index: int) -> asyncio.Future[np.ndarray]:
        lo, hi = chunks[index]
        if vectors is not None or deferred:
            done: asyncio.Future[np.ndarray] = asyncio.get_running_loop().create_future()
            done.set_result(np.empty((0, 0)) if vectors is None else vectors[lo:hi])
            return done
        return asyncio.ensure_future(rt.embeddings.embed_documents(documents[lo:hi]))

    # Counted before any embedding starts: the tokenizer object is shared with the model and is
    # not safe to use from two threads at once.
    tokens = rt.embeddings.count_tokens(texts)
    pending = embed(0)
    now = datetime.now(UTC)
    try:
        async with rt.store.transaction() as conn:
            await ensure_scope(conn, rt, scope)
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
            if bulk:
                await turn_rows.copy_turns(conn, rows)
            else:
                for row in rows:
                    await turn_rows.insert_turn(conn, row)
            await lexicon.add_postings(conn, scope.entity_id, scope.namespace, "turn", [r[0] for r in rows])
            if deferred:
                await ingest.defer_embeds(conn, scope, [r[0] for r in rows])
                chunks = []
                if progress is not None:
                    progress(len(rows), len(rows))
            for index, (lo, hi) in enumerate(chunks):
                chunk_vectors = await pending
                if index + 1 < len(chunks):
                    pending = embed(index + 1)
                items = [
                    (scope.entity_id, scope.namespace, r[0], "turn", rt.slug, v)
                    for r, v in zip(rows[lo:hi], chunk_vectors, strict=True)
                ]
                if bulk:
                    await vector_rows.insert_vectors(conn, rt.table, items)
                else:
                    await vector_rows.upsert_vectors(conn, rt.table, items)
                if progress is not None:
                    progress(hi, len(turns))
    except BaseException:
        await _cancel(pending)
        raise
    if bulk and len(rows) >= ANALYZE_AFTER:
        # Fresh statistics, so the planner uses the HNSW and GIN indexes right away instead of
        # waiting for autovacuum after a large COPY.
        async with rt.store.connection() as conn:
            await turn_rows.analyze(conn)
            await lexicon.analyze(conn)
            await vector_rows.analyze(conn, rt.table)
    else:
        await note_writes(rt, len(rows))
    return [
        Turn(
            id=r[0],
            scope=scope,
            session_id=r[3],
            turn_number=r[4],
            role=r[5],
            content=r[7],
            created_at=r[8],
            token_count=r[9],
            speaker=r[6],
            metadata=r[10],
        )
        for r in rows
    ]


def _duplicates(keys: Sequence[tuple[str, int | None]]) -> list[tuple[str, int | None]]:
    seen: set[tuple[str, int | None]] = set()
    dupes = []
    for key in keys:
        if key in seen:
            dupes.append(key)
        seen.add(key)
    return dupes[:5]


async def _cancel(task: asyncio.Future[np.ndarray]) -> None:
    """Stop (or drain) an embedding still in flight when the import fails."""
    if not task.done():
        task.cancel()
    with contextlib.suppress(BaseException):
        await task


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
