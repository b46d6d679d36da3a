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
:mod:`mnemo.portability.packet_import`).

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

Repeats (issue 39 item 3): every turn has an identity (:mod:`mnemo.cognition.text.turn_identity`: its
idempotency key, else a hash of its session, role, time and content). Before embedding, the
turns whose identity the scope already holds are set aside (they are not embedded again);
under the sessions' locks the rest are checked again, and those that a writer committed
meanwhile are set aside too, before any number is given, so repeats leave no gap. Each
repeat comes back as the turn the scope holds, marked ``repeat``. The unique index on the
identity refuses a turn that a writer to *another* session stored meanwhile under the same
key; the write then starts again (and finds it held), so retries racing each other store a
turn once.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import cast

import numpy as np
import psycopg

from mnemo._runtime import Runtime
from mnemo._upkeep import note_writes
from mnemo.cognition.consolidation.extraction import TurnText, single_valued
from mnemo.cognition.scoring.claims import claims_of, functional_attribute
from mnemo.cognition.scoring.late import TokenVectors
from mnemo.cognition.text.turn_identity import KEY_PREFIX, turn_identities
from mnemo.errors import InvalidContentError, MalformedImportError
from mnemo.models import ImportReport, Role, Scope, Turn, uuid7
from mnemo.store import lexicon
from mnemo.store import passage_vectors as passage_rows
from mnemo.store import token_vectors as token_rows
from mnemo.store import turn_claims as claim_rows
from mnemo.store import turns as turn_rows
from mnemo.store import vectors as vector_rows
from mnemo.write import ingest
from mnemo.write.embedding import embed_items
from mnemo.write.formats import Skipped, TurnInput, detect_format, parse_file
from mnemo.write.remember import Progress, ensure_scope

__all__ = [
    "ANALYZE_AFTER",
    "ReadyTurns",
    "WrittenTurns",
    "import_file",
    "import_turns",
    "prepare_turns",
    "refresh_statistics",
    "write_turns",
]

ANALYZE_AFTER = 500
RACE_TRIES = 3  # writes started again when another writer stored some of the turns under the same key


class _Raced(InvalidContentError):
    """Another writer stored one of these turns (same identity, another session) during this write."""


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
    stored = await import_turns(rt, scope, turns, progress=progress)
    used = detect_format(path) if fmt == "auto" else fmt
    written = [t for t in stored if not t.repeat]
    return ImportReport(
        scope=scope,
        path=str(path),
        format=used,
        turns=len(written),
        sessions=len({t.session_id for t in written}),
        seconds=time.perf_counter() - started,
        skipped=tuple(skipped or ()),
        skipped_repeats=len(stored) - len(written),
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
    live: bool = False,
) -> list[Turn]:
    """Write many turns in one short transaction (COPY when ``bulk``); all or nothing.

    Returns every turn in the given order: the stored one, or for a repeat (the scope already
    held its identity) the turn it held, marked ``repeat``. ``live``: a turn without a time is
    identified by the time it is stamped with (:mod:`mnemo.cognition.text.turn_identity`). Every vector is
    ready before the transaction opens (:func:`prepare_turns`); the transaction writes them
    (:func:`write_turns`).
    """
    if not turns:
        return []
    _check_given(rt, len(turns), vectors, token_vectors)
    identities = turn_identities(turns, live=live)
    _check_keys(turns)
    for attempt in range(RACE_TRIES):
        try:
            return await _import_once(rt, scope, turns, identities, vectors, token_vectors, progress, bulk)
        except _Raced:
            if attempt == RACE_TRIES - 1:
                raise
    raise AssertionError("unreachable")


async def _import_once(
    rt: Runtime,
    scope: Scope,
    turns: Sequence[TurnInput],
    identities: Sequence[str | None],
    vectors: np.ndarray | None,
    token_vectors: Sequence[TokenVectors | None] | None,
    progress: Progress | None,
    bulk: bool,
) -> list[Turn]:
    """One try of :func:`import_turns`: repeats set aside before embedding, the rest written."""
    async with rt.store.connection() as conn:
        held = await turn_rows.held_turns(conn, scope.entity_id, scope.namespace, [i for i in identities if i])
    _check_same(turns, identities, held)
    fresh = [i for i, ident in enumerate(identities) if ident is None or ident not in held]
    found = {i: _turn(scope, held[str(ident)], repeat=True) for i, ident in enumerate(identities) if ident in held}
    if fresh:
        ready = await prepare_turns(
            rt,
            [turns[i] for i in fresh],
            vectors=None if vectors is None else vectors[fresh],
            token_vectors=None if token_vectors is None else [token_vectors[i] for i in fresh],
            progress=progress,
            identities=[identities[i] for i in fresh],
        )
        async with rt.store.transaction() as conn:
            await ensure_scope(conn, rt, scope)
            written = await write_turns(conn, rt, scope, ready, bulk=bulk)
        # committed: the token embeddings just stored, as a read would return them, go to the
        # process's cache, so the scope's first recall scans them without reading them back (issue 42)
        slug = str(rt.slug)
        rt.tokens().put({(scope.entity_id, scope.namespace, i, slug): tv for i, tv in written.tokens.items()})
        found |= {i: _turn(scope, row, repeat=r) for i, row, r in zip(fresh, written.rows, written.repeat, strict=True)}
        new = len(written.rows) - sum(written.repeat)
        await refresh_statistics(rt, new, bulk)
    if progress is not None:
        progress(len(turns), len(turns))
    return [found[i] for i in range(len(turns))]


def _check_given(
    rt: Runtime, count: int, vectors: np.ndarray | None, token_vectors: Sequence[TokenVectors | None] | None
) -> None:
    """Given vectors must be one per turn, of the active dimension; token vectors need vectors."""
    if vectors is not None and vectors.shape != (count, rt.embeddings.dim):
        raise InvalidContentError(f"expected {count} vectors of dimension {rt.embeddings.dim}")
    if token_vectors is not None and (vectors is None or len(token_vectors) != count):
        raise InvalidContentError(f"token_vectors need vectors, and one entry (or None) per turn ({count})")


def _check_keys(turns: Sequence[TurnInput]) -> None:
    """One write names each idempotency key once (two turns with one key are a client's mistake)."""
    seen: dict[str, int] = {}
    for index, turn in enumerate(turns):
        key = turn.idempotency_key
        if key is None:
            continue
        if key in seen:
            raise InvalidContentError(
                f"idempotency key {key!r} names turns {seen[key]} and {index} of one write; give each turn its own"
            )
        seen[key] = index


def _check_same(
    turns: Sequence[TurnInput], identities: Sequence[str | None], held: Mapping[str, turn_rows.TurnRow]
) -> None:
    """A key the scope already holds must name the same turn (session, role, content): a key reused
    for another turn is refused, nothing written."""
    for turn, identity in zip(turns, identities, strict=True):
        row = held.get(identity) if identity is not None and identity.startswith(KEY_PREFIX) else None
        if row is not None and (row[3], row[5], row[7]) != (turn.session_id, turn.role, turn.content):
            raise InvalidContentError(
                f"idempotency key {turn.idempotency_key!r} already names turn {row[4]} of session {row[3]!r}, "
                "which differs from this one; send a new key for a new turn (nothing was written)"
            )


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
    identities: Sequence[str | None]
    """Each turn's identity (:mod:`mnemo.cognition.text.turn_identity`); None: a live turn without a key or a
    time, identified by the time it is stamped with under the lock."""


@dataclass(frozen=True, slots=True)
class WrittenTurns:
    """What :func:`write_turns` wrote: a row per prepared turn, in their order, and whether each was
    a repeat (the row is then the turn the scope already held; nothing was written for it)."""

    rows: list[turn_rows.TurnRow]
    repeat: list[bool]
    tokens: Mapping[uuid.UUID, TokenVectors] = field(default_factory=dict)
    """The token embeddings written for the new turns, as :func:`mnemo.store.token_vectors.fetch`
    reads them."""


async def prepare_turns(
    rt: Runtime,
    turns: Sequence[TurnInput],
    *,
    vectors: np.ndarray | None = None,
    token_vectors: Sequence[TokenVectors | None] | None = None,
    progress: Progress | None = None,
    identities: Sequence[str | None] | None = None,
) -> ReadyTurns:
    """Every turn's vector, outside any transaction: ``vectors`` when given, else a turn's precomputed
    ``embedding``, else the embedder's (a ``progress`` tick per embedded chunk). ``token_vectors``
    (with ``vectors``, one per turn or None) are the turns' token embeddings by the active model, stored
    for late interaction as if the write path had read them. With ``ingest_mode = "async"`` and no
    ``vectors`` given, turns without a precomputed vector get none: their embed jobs are queued with
    the rows (:mod:`mnemo.write.ingest`). ``identities``: the turns' identities (default: those of
    an import, :func:`mnemo.cognition.text.turn_identity.turn_identities`)."""
    _check_given(rt, len(turns), vectors, token_vectors)
    if identities is None:
        identities = turn_identities(turns, live=False)
    deferred = rt.settings.ingest_mode == "async" and vectors is None
    # Counted before any embedding starts: the tokenizer object is shared with the model and is
    # not safe to use from two threads at once.
    tokens = rt.embeddings.count_tokens([t.content for t in turns]) if turns else []
    # the embedded turns' token embeddings (late interaction)
    given = token_vectors if token_vectors is not None and rt.reads_tokens else ()
    read: dict[int, TokenVectors] = {i: tv for i, tv in enumerate(given) if tv is not None}
    windows: dict[int, list[np.ndarray]] = {}  # long turns' passage vectors
    ready = list(vectors) if vectors is not None else await _embed(rt, turns, deferred, progress, read, windows)
    return ReadyTurns(turns, tokens, ready, read, windows, deferred, identities)


async def write_turns(
    conn: psycopg.AsyncConnection, rt: Runtime, scope: Scope, ready: ReadyTurns, *, bulk: bool = True
) -> WrittenTurns:
    """Number and write prepared turns inside the caller's transaction (the scope must exist): the
    rows (COPY when ``bulk``), the vectors, token embeddings and passages, queued embed jobs and,
    last, the lexical postings. Repeats (identities the scope holds) are not written. Raises
    :class:`InvalidContentError` when another writer stored one of the turns meanwhile."""
    if not ready.turns:
        return WrittenTurns([], [])
    rows, repeat = await _number(conn, scope, ready)
    new = [i for i, r in enumerate(repeat) if not r]
    await _write_rows(conn, [rows[i] for i in new], bulk)
    await _write_claims(rt, conn, scope, [rows[i] for i in new])
    await _write_vectors(rt, conn, scope, [rows[i] for i in new], [ready.vectors[i] for i in new], bulk)
    slug = str(rt.slug)
    tokens = await token_rows.write(
        conn, scope.entity_id, scope.namespace, slug, {rows[i][0]: tv for i, tv in ready.read.items() if not repeat[i]}
    )
    passages = [
        (rows[i][0], "turn", n, v)
        for i, vs in ready.windows.items()
        if not repeat[i]
        for n, v in enumerate(vs, start=1)
    ]
    await passage_rows.write(conn, scope.entity_id, scope.namespace, slug, passages)
    if ready.deferred:
        await ingest.defer_embeds(conn, scope, [rows[i][0] for i in new if ready.vectors[i] is None])
    # Last: the postings update the scope's lexical_stats row, which every writer to the scope
    # locks too; written here, it stays locked only until the commit right after.
    await lexicon.add_postings(conn, scope.entity_id, scope.namespace, "turn", [rows[i][0] for i in new])
    return WrittenTurns(rows, repeat, tokens)


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
    conn: psycopg.AsyncConnection, scope: Scope, ready: ReadyTurns
) -> tuple[list[turn_rows.TurnRow], list[bool]]:
    """The turns' rows, and which are repeats (their row is the one the scope holds): new turns
    append to their session; explicit turn numbers must be free.

    Takes the sessions' numbering locks first (held until the transaction ends), so the
    numbers read here stay free until this transaction commits (see the module docstring).
    """
    turns = ready.turns
    sessions = sorted({t.session_id for t in turns})
    await turn_rows.lock_sessions(conn, scope.entity_id, scope.namespace, sessions)
    now = datetime.now(UTC)
    identities = _stamped(turns, ready.identities, now)
    held = await turn_rows.held_turns(conn, scope.entity_id, scope.namespace, identities)
    _check_same(turns, identities, held)
    repeat = [i in held for i in identities]
    next_numbers = await turn_rows.next_turn_numbers(conn, scope.entity_id, scope.namespace, sessions)
    await _check_numbers(conn, scope, [t for t, r in zip(turns, repeat, strict=True) if not r])
    rows: list[turn_rows.TurnRow] = []
    for turn, count, identity in zip(turns, ready.tokens, identities, strict=True):
        if identity in held:
            rows.append(held[identity])
            continue
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
                identity,
            )
        )
    return rows, repeat


def _stamped(turns: Sequence[TurnInput], identities: Sequence[str | None], now: datetime) -> list[str]:
    """Every turn's identity, a live turn without a key or a time identified by ``now`` (its time)."""
    if all(i is not None for i in identities):
        return [str(i) for i in identities]
    live = turn_identities(turns, live=True, now=now)
    return [str(i if i is not None else live[n]) for n, i in enumerate(identities)]


async def _check_numbers(conn: psycopg.AsyncConnection, scope: Scope, turns: Sequence[TurnInput]) -> None:
    """Explicit turn numbers must be free in the scope and distinct in the write."""
    explicit = [(t.session_id, t.turn_number) for t in turns if t.turn_number is not None]
    clashes = await turn_rows.existing_turn_numbers(conn, scope.entity_id, scope.namespace, explicit)
    if clashes or len(set(explicit)) != len(explicit):
        shown = clashes or _duplicates(explicit)
        raise MalformedImportError(
            f"turn numbers already used in scope {scope}: {shown}; import into another scope or "
            "drop the explicit turn numbers to append"
        )


def _duplicates(keys: Sequence[tuple[str, int | None]]) -> list[tuple[str, int | None]]:
    seen: set[tuple[str, int | None]] = set()
    dupes = []
    for key in keys:
        if key in seen:
            dupes.append(key)
        seen.add(key)
    return dupes[:5]


async def _write_rows(conn: psycopg.AsyncConnection, rows: Sequence[turn_rows.TurnRow], bulk: bool) -> None:
    """The turn rows: COPY when ``bulk``, else one INSERT each. A turn that another writer stored
    meanwhile (the unique identity index) raises :class:`_Raced`: this write must start again."""
    if not bulk:
        for row in rows:
            if not await turn_rows.insert_turn(conn, row):
                raise _Raced(_RACED)
        return
    try:
        await turn_rows.copy_turns(conn, rows)
    except psycopg.errors.UniqueViolation as exc:
        if exc.diag.constraint_name != turn_rows.IDENTITY_INDEX:
            raise
        raise _Raced(_RACED) from exc


_RACED = (
    "another write stored some of these turns meanwhile; nothing was written, send them again (repeats are skipped)"
)


async def _write_claims(
    rt: Runtime, conn: psycopg.AsyncConnection, scope: Scope, rows: Sequence[turn_rows.TurnRow]
) -> None:
    """What the new turns claim about slots (:mod:`mnemo.cognition.scoring.claims`), read before any night."""
    if not rt.settings.current_first:
        return
    functional = rt.settings.night_functional_attributes
    turns = [(r[0], TurnText(speaker=r[6], role=r[5], text=r[7], at=r[8])) for r in rows]
    claims = claims_of(turns, lambda a: single_valued(a) or functional_attribute(functional, a))
    await claim_rows.write(conn, scope.entity_id, scope.namespace, claims)


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


def _turn(scope: Scope, row: turn_rows.TurnRow, *, repeat: bool = False) -> Turn:
    """The stored turn, as returned to the caller (``repeat``: the write stored nothing for it)."""
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
        repeat=repeat,
    )
