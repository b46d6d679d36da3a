"""The write path: memories and single turns, embedded immediately (bulk imports: :mod:`mnemo.write.importer`).

Seeds: memory-architecture §1.2 and §2.2 (every exchange embedded at write time
into the day table), archive-adr §4 (attributed ingestion), cognitive-plan
§2.1 (kind prefixes), §2.3 (Beta(1, 4) default weight, anchored memories at
Beta(50, 1)).

Every write validates all input first, embeds, and then writes rows and vectors
in one transaction, so a failure leaves nothing half-written.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, cast

import numpy as np
import psycopg

from mnemo import _dynamics as dynamics
from mnemo._runtime import Runtime
from mnemo._upkeep import note_writes
from mnemo._validate import (
    check_content,
    check_event_time,
    check_id,
    check_idempotency_key,
    check_kind,
    check_metadata,
    check_role,
    check_session,
    check_text,
    check_vector,
)
from mnemo.cognition.scoring.late import TokenVectors
from mnemo.errors import InvalidContentError, UnknownScopeError
from mnemo.models import Memory, MemoryKind, MemoryStatus, Scope, Turn, uuid7
from mnemo.store import dynamics as dynamic_rows
from mnemo.store import lexicon
from mnemo.store import memories as memory_rows
from mnemo.store import passage_vectors as passage_rows
from mnemo.store import scopes as scope_rows
from mnemo.store import token_vectors as token_rows
from mnemo.store import vectors as vector_rows
from mnemo.write.embedding import embed_items
from mnemo.write.formats import TurnInput

__all__ = ["ensure_scope", "memory_row", "record_turn", "remember", "store_memory", "supersede"]

Progress = Callable[[int, int], None]

ANCHORED_WEIGHT = (50.0, 1.0)
DEFAULT_WEIGHT = (1.0, 4.0)


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

    De-duplication: when the scope already holds a candidate or active memory, not itself
    superseded, with exactly this (validated, not stripped) content, kind and ``anchored`` flag,
    and this call supersedes nothing, no copy
    is stored: that memory is reinforced through the audited weight function (reason
    ``remembered again``) and returned as it now stands. A differing ``anchored`` flag
    makes a new memory; the other fields (metadata, provenance, status, ...) of the new
    call are not merged into the existing one.
    """
    text = check_content(content, max_chars=rt.settings.max_content_chars)
    check_kind(kind)
    if compressed is not None:
        compressed = check_content(compressed, max_chars=rt.settings.max_content_chars, label="compressed")
    if source_tag is not None:
        source_tag = check_text(source_tag, label="source_tag")
    provenance = [check_text(p, label="provenance entry", max_chars=1000) for p in provenance]
    meta = check_metadata(metadata)
    if not 0.0 <= float(source_confidence) <= 1.0:
        raise InvalidContentError("source_confidence must be between 0 and 1")
    if status not in ("candidate", "active"):
        raise InvalidContentError("new memories start as 'candidate' or 'active'")
    skew = rt.settings.clock_skew_hours
    when = None if event_time is None else check_event_time(event_time, label="event_time", skew_hours=skew)
    vector, read, windows = await _embedded(rt, text, kind, embedding)
    item_id = uuid7()
    old_ids = [check_id(i) for i in supersedes]
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
        provenance=list(provenance),
        event_time=when,
        metadata=meta,
    )
    async with rt.store.transaction() as conn:
        await ensure_scope(conn, rt, scope)
        if not old_ids:
            same = await dynamic_rows.duplicate_memory(
                conn, scope.entity_id, scope.namespace, kind, text, anchored=anchored
            )
            if same is not None:
                return await _remembered_again(conn, rt, scope, same, source_tag)
        created = await store_memory(conn, rt, scope, row, vector)
        await _store_reading(conn, rt, scope, item_id, read, windows)
        await supersede(conn, rt, scope, old_ids, item_id, reason="superseded")
    await note_writes(rt, 1 + len(old_ids))
    return _stored(scope, row, created)


async def _embedded(
    rt: Runtime, text: str, kind: str, embedding: Sequence[float] | np.ndarray | None
) -> tuple[np.ndarray, TokenVectors | None, list[np.ndarray]]:
    """The memory's vector (the caller's, checked, or embedded), with its token embeddings and
    passage vectors when it was embedded here."""
    if embedding is not None:
        return check_vector(embedding, rt.embeddings.dim), None, []
    embedded = await embed_items(rt, [(text, rt.embeddings.document_prefix(kind))])
    return embedded.vectors[0], embedded.tokens[0] if embedded.tokens else None, embedded.passages[0]


async def _store_reading(
    conn: psycopg.AsyncConnection,
    rt: Runtime,
    scope: Scope,
    item_id: uuid.UUID,
    read: TokenVectors | None,
    windows: Sequence[np.ndarray],
) -> None:
    """The new memory's token embeddings (late interaction) and passages (long items)."""
    slug = str(rt.slug)
    if read is not None:
        await token_rows.write(conn, scope.entity_id, scope.namespace, slug, {item_id: read})
    rows = [(item_id, "memory", n, v) for n, v in enumerate(windows, start=1)]
    await passage_rows.write(conn, scope.entity_id, scope.namespace, slug, rows)


def _stored(scope: Scope, row: Mapping[str, Any], created: datetime) -> Memory:
    """The record of a memory just stored, from its row."""
    return Memory(
        id=row["id"],
        scope=scope,
        kind=cast(MemoryKind, row["kind"]),  # checked by remember
        content=row["content"],
        created_at=created,
        alpha=row["alpha"],
        beta=row["beta"],
        status=cast(MemoryStatus, row["status"]),  # checked by remember
        anchored=row["anchored"],
        compressed=row["compressed"],
        source_tag=row["source_tag"],
        source_confidence=row["source_confidence"],
        provenance=tuple(row["provenance"]),
        event_time=row["event_time"],
        token_count=row["token_count"],
        metadata=row["metadata"],
    )


async def _remembered_again(
    conn: psycopg.AsyncConnection, rt: Runtime, scope: Scope, memory_id: uuid.UUID, source_tag: str | None
) -> Memory:
    """Reinforce an existing identical memory instead of storing a copy; returns it as it now stands."""
    evidence = {"source_tag": source_tag} if source_tag else {}
    await dynamics.change_weights(
        conn,
        rt.settings,
        scope,
        [dynamics.WeightRequest(memory_id, "reinforce", rt.settings.gate_reinforce_gain, "remembered again", evidence)],
    )
    found = await dynamic_rows.memory_record(conn, scope.entity_id, scope.namespace, memory_id)
    assert found is not None  # locked by duplicate_memory in this transaction
    return Memory(
        scope=scope,
        id=found.id,
        kind=found.kind,
        content=found.content,
        created_at=found.created_at,
        alpha=found.alpha,
        beta=found.beta,
        status=found.status,
        anchored=found.anchored,
        compressed=found.compressed,
        source_tag=found.source_tag,
        source_confidence=found.source_confidence,
        provenance=tuple(found.provenance or ()),
        event_time=found.event_time,
        access_count=found.access_count,
        last_accessed=found.last_accessed,
        token_count=found.token_count,
        metadata=dict(found.metadata or {}),
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
    idempotency_key: str | None = None,
) -> Turn:
    """Append one raw exchange to the day table, embedded immediately.

    Safe under concurrency: it goes through the importer's numbering, which holds the
    session's lock from ``max + 1`` to commit, so concurrent turns into one session get
    gapless numbers in commit order and none fails for it (:mod:`mnemo.write.importer`).

    A repeat stores nothing and returns the turn the scope holds, marked ``repeat``: a turn
    whose ``idempotency_key`` the scope holds (the same key for different content is an
    error), or, without a key, one with the same session, role, content and explicit
    ``created_at``. Without either, the turn is stamped now and identified by that time, so
    the same words said twice are two turns (:mod:`mnemo.cognition.text.turn_identity`).
    """
    from mnemo.write.importer import import_turns  # imported here: the importer builds on this module

    skew = rt.settings.clock_skew_hours
    turn = TurnInput(
        session_id=check_session(session),
        role=check_role(role),
        content=check_content(content, max_chars=rt.settings.max_content_chars),
        speaker=None if speaker is None else check_text(speaker, label="speaker"),
        created_at=None if created_at is None else check_event_time(created_at, label="created_at", skew_hours=skew),
        metadata=check_metadata(metadata),
        idempotency_key=None if idempotency_key is None else check_idempotency_key(idempotency_key),
    )
    vectors = None if embedding is None else np.stack([check_vector(embedding, rt.embeddings.dim)])
    stored = await import_turns(rt, scope, [turn], vectors=vectors, bulk=False, live=True)
    return stored[0]
