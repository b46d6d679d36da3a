"""The bulk write path: many turns (a conversation file), embedded first, then written in one short transaction.

Seeds: memory-architecture §1.2 and §2.2 (every exchange embedded at write time
into the day table), archive-adr §4 (attributed ingestion, atomic bulk insert:
a malformed file imports nothing), cognitive-plan §2.1 (batching).

:func:`import_turns` runs in named stages. First, outside any transaction,
every turn gets its vector: a precomputed one from the file when it carries the
active embedder's slug, else the embedder's, chunk by chunk (with
``ingest_mode = "async"`` the embed jobs are queued instead,
:mod:`mnemo.write.ingest`). Then one transaction numbers the turns (explicit
turn numbers must not clash) and writes the rows (COPY when ``bulk``), the
vectors and, last, the lexical postings. A failure anywhere leaves nothing
half-written, and the transaction only does bulk inserts (measured on 2,000
turns: 7 s, mostly HNSW inserts, where embedding inside it took 71 s). The
postings come last because they update the scope's one ``lexical_stats`` row,
which every writer to the scope locks too: a writer to another session of the
scope waits at most for the postings and the commit.
The two stages are :func:`prepare_turns` and :func:`write_turns`, for a caller
that writes turns inside a larger transaction of its own (bifocal packets,
:mod:`mnemo.write.packets`).

Concurrent writers (single turns go through here too, see
:func:`mnemo.write.remember.record_turn`): numbering takes the per-session locks
of every session the write touches (:func:`mnemo.store.turns.lock_sessions`,
ascending key order, so no deadlock), then reads each session's ``max + 1``. The
locks are held until commit, so within a session the numbers are gapless, never
collide, and follow commit order; inside one write they follow the given order,
and an import's turns of one session form one contiguous run. Writers to other
sessions never wait. Every write is embedded before its transaction opens, so
the locks are held only while the rows are written; a turn written meanwhile
into one of an import's sessions waits for that short transaction to commit (and
is numbered after it). Default timestamps are taken under the lock, so they rise
with the turn number.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import cast

import numpy as np
import psycopg

from mnemo._runtime import Runtime
from mnemo._upkeep import note_writes
from mnemo.cognition.late import TokenVectors
from mnemo.errors import InvalidContentError, MalformedImportError
from mnemo.models import ImportReport, Role, Scope, Turn, uuid7
from mnemo.store import lexicon
from mnemo.store import passages as passage_rows
from mnemo.store import token_vectors as token_rows
from mnemo.store import turns as turn_rows
from mnemo.store import vectors as vector_rows
from mnemo.write import ingest
from mnemo.write.embedding import embed_items
from mnemo.write.formats import Skipped, TurnInput, detect_format, parse_file
from mnemo.write.remember import Progress, ensure_scope

__all__ = [
    "ANALYZE_AFTER",
    "ReadyTurns",
    "import_file",
    "import_turns",
    "prepare_turns",
    "refresh_statistics",
    "write_turns",
]

ANALYZE_AFTER = 500


async def import_file(
    rt: Runtime,
    scope: Scope,
    path: Path,
    *,
    fmt: str = "auto",
    sample: str | None = None,
    progress: Progress | None = None,
    skip_invalid: bool = False,
) -> ImportReport:
    """Import a JSONL or LoCoMo conversation file.

    All or nothing by default: one bad turn (the error names its line) imports nothing. With
    ``skip_invalid`` the valid turns are imported and each one left out is reported in
    ``ImportReport.skipped`` as ``(line, reason)``.
    """
    started = time.perf_counter()
    skipped: list[Skipped] | None = [] if skip_invalid else None
    turns = parse_file(
        path,
        fmt=fmt,
        max_chars=rt.settings.max_content_chars,
        sample=sample,
        skipped=skipped,
        space=(rt.slug, rt.embeddings.dim),
        skew_hours=rt.settings.clock_skew_hours,
    )
    await import_turns(rt, scope, turns, progress=progress)
    used = detect_format(path) if fmt == "auto" else fmt
    return ImportReport(
        scope=scope,
        path=str(path),
        format=used,
        turns=len(turns),
        sessions=len({t.session_id for t in turns}),
        seconds=time.perf_counter() - started,
        skipped=tuple(skipped or ()),
    )


async def import_turns(
    rt: Runtime,
    scope: Scope,
    turns: Sequence[TurnInput],
    *,
    vectors: np.ndarray | None = None,
    token_vectors: Sequence[TokenVectors | None] | None = None,
    progress: Progress | None = None,
    bulk: bool = True,
) -> list[Turn]:
    """Write many turns in one short transaction (COPY when ``bulk``); all or nothing.

    Every vector is ready before the transaction opens (:func:`prepare_turns`); the transaction
    writes them (:func:`write_turns`).
    """
    if not turns:
        return []
    ready = await prepare_turns(rt, turns, vectors=vectors, token_vectors=token_vectors, progress=progress)
    async with rt.store.transaction() as conn:
        await ensure_scope(conn, rt, scope)
        rows = await write_turns(conn, rt, scope, ready, bulk=bulk)
    if progress is not None:
        progress(len(rows), len(rows))
    await refresh_statistics(rt, len(rows), bulk)
    return [_turn(scope, r) for r in rows]


@dataclass(frozen=True, slots=True)
class ReadyTurns:
    """Turns with everything their transaction writes computed beforehand, index by index."""

    turns: Sequence[TurnInput]
    tokens: Sequence[int]
    """Each turn's token count."""
    vectors: Sequence[np.ndarray | None]
    """Each turn's vector (None when its embedding is deferred to the worker)."""
    read: Mapping[int, TokenVectors]
    """The token embeddings of the turns that have them (late interaction)."""
    windows: Mapping[int, list[np.ndarray]]
    """The passage vectors of long turns."""
    deferred: bool


async def prepare_turns(
    rt: Runtime,
    turns: Sequence[TurnInput],
    *,
    vectors: np.ndarray | None = None,
    token_vectors: Sequence[TokenVectors | None] | None = None,
    progress: Progress | None = None,
) -> ReadyTurns:
    """Every turn's vector, outside any transaction: ``vectors`` when given, else a turn's precomputed
    ``embedding``, else the embedder's (a ``progress`` tick per embedded chunk). ``token_vectors``
    (with ``vectors``, one per turn or None) are the turns' token embeddings by the active model, stored
    for late interaction as if the write path had read them. With ``ingest_mode = "async"`` and no
    ``vectors`` given, turns without a precomputed vector get none: their embed jobs are queued with
    the rows (:mod:`mnemo.write.ingest`)."""
    if vectors is not None and vectors.shape != (len(turns), rt.embeddings.dim):
        raise InvalidContentError(f"expected {len(turns)} vectors of dimension {rt.embeddings.dim}")
    if token_vectors is not None and (vectors is None or len(token_vectors) != len(turns)):
        raise InvalidContentError(f"token_vectors need vectors, and one entry (or None) per turn ({len(turns)})")
    deferred = rt.settings.ingest_mode == "async" and vectors is None
    # Counted before any embedding starts: the tokenizer object is shared with the model and is
    # not safe to use from two threads at once.
    tokens = rt.embeddings.count_tokens([t.content for t in turns]) if turns else []
    # the embedded turns' token embeddings (late interaction)
    given = token_vectors if token_vectors is not None and rt.reads_tokens else ()
    read: dict[int, TokenVectors] = {i: tv for i, tv in enumerate(given) if tv is not None}
    windows: dict[int, list[np.ndarray]] = {}  # long turns' passage vectors
    ready = list(vectors) if vectors is not None else await _embed(rt, turns, deferred, progress, read, windows)
    return ReadyTurns(turns, tokens, ready, read, windows, deferred)


async def write_turns(
    conn: psycopg.AsyncConnection, rt: Runtime, scope: Scope, ready: ReadyTurns, *, bulk: bool = True
) -> list[turn_rows.TurnRow]:
    """Number and write prepared turns inside the caller's transaction (the scope must exist): the
    rows (COPY when ``bulk``), the vectors, token embeddings and passages, queued embed jobs and,
    last, the lexical postings. Returns the rows in the turns' order."""
    if not ready.turns:
        return []
    rows = await _number(conn, scope, ready.turns, ready.tokens)
    await _write_rows(conn, rows, bulk)
    await _write_vectors(rt, conn, scope, rows, ready.vectors, bulk)
    slug = str(rt.slug)
    await token_rows.write(
        conn, scope.entity_id, scope.namespace, slug, {rows[i][0]: tv for i, tv in ready.read.items()}
    )
    passages = [(rows[i][0], "turn", n, v) for i, vs in ready.windows.items() for n, v in enumerate(vs, start=1)]
    await passage_rows.write(conn, scope.entity_id, scope.namespace, slug, passages)
    if ready.deferred:
        await ingest.defer_embeds(conn, scope, [r[0] for r, v in zip(rows, ready.vectors, strict=True) if v is None])
    # Last: the postings update the scope's lexical_stats row, which every writer to the scope
    # locks too; written here, it stays locked only until the commit right after.
    await lexicon.add_postings(conn, scope.entity_id, scope.namespace, "turn", [r[0] for r in rows])
    return rows


async def _embed(
    rt: Runtime,
    turns: Sequence[TurnInput],
    deferred: bool,
    progress: Progress | None,
    read: dict[int, TokenVectors],
    windows: dict[int, list[np.ndarray]],
) -> list[np.ndarray | None]:
    """Every turn's vector, computed before any transaction: a precomputed one as given, the others
    embedded chunk by chunk (``None`` for them when embedding is deferred to the worker). With late
    interaction on, the same forward pass gives the embedded turns' token embeddings (into ``read``);
    a long turn's later passages go into ``windows``."""
    ready: list[np.ndarray | None] = [t.embedding for t in turns]
    todo = [i for i, v in enumerate(ready) if v is None]
    if deferred or not todo:
        return ready
    done = len(turns) - len(todo)
    step = rt.embeddings.chunk_size
    for start in range(0, len(todo), step):
        chunk = todo[start : start + step]
        items = [
            (turns[i].content, rt.embeddings.turn_prefix(turns[i].speaker if rt.settings.turn_context else None))
            for i in chunk
        ]
        embedded = await embed_items(rt, items)
        if embedded.tokens is not None:
            read.update(zip(chunk, embedded.tokens, strict=True))
        windows.update((i, vs) for i, vs in zip(chunk, embedded.passages, strict=True) if vs)
        for i, vector in zip(chunk, embedded.vectors, strict=True):
            ready[i] = vector
        done += len(chunk)
        if progress is not None:
            progress(done, len(turns))
    return ready


async def _number(
    conn: psycopg.AsyncConnection,
    scope: Scope,
    turns: Sequence[TurnInput],
    tokens: Sequence[int],
) -> list[turn_rows.TurnRow]:
    """The turns' rows: new turns append to their session; explicit turn numbers must be free.

    Takes the sessions' numbering locks first (held until the transaction ends), so the
    numbers read here stay free until this transaction commits (see the module docstring).
    """
    sessions = sorted({t.session_id for t in turns})
    await turn_rows.lock_sessions(conn, scope.entity_id, scope.namespace, sessions)
    now = datetime.now(UTC)
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


async def _write_rows(conn: psycopg.AsyncConnection, rows: Sequence[turn_rows.TurnRow], bulk: bool) -> None:
    """The turn rows: COPY when ``bulk``, else one INSERT each."""
    if bulk:
        await turn_rows.copy_turns(conn, rows)
    else:
        for row in rows:
            await turn_rows.insert_turn(conn, row)


async def _write_vectors(
    rt: Runtime,
    conn: psycopg.AsyncConnection,
    scope: Scope,
    rows: Sequence[turn_rows.TurnRow],
    ready: Sequence[np.ndarray | None],
    bulk: bool,
) -> None:
    """The rows' vectors (binary COPY when ``bulk``); a row whose embedding is deferred has none yet."""
    items = [
        (scope.entity_id, scope.namespace, r[0], "turn", rt.slug, v)
        for r, v in zip(rows, ready, strict=True)
        if v is not None
    ]
    if bulk:
        await vector_rows.insert_vectors(conn, rt.table, items)
    else:
        await vector_rows.upsert_vectors(conn, rt.table, items)


async def refresh_statistics(rt: Runtime, count: int, bulk: bool) -> None:
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
