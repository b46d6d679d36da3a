"""Importing bifocal packets (``import-packets``, forks, merges): all of them or none.

Seeds: memory-architecture §6 (packets carry prose, vectors, metadata and
references), archive-adr §8 ("Dimension Lock"), "Logical Domain Isolation"
(forks) and §4 (attribution: the import's process writes the rows).

Every packet was checked before this runs (:func:`mnemo.portability.packet_format.parse_packets`),
and every vector is ready before the transaction opens: a packet's own when the
active model made it, else the embedder's (or a refusal with ``strict``: no other
model's vector is ever stored in the active space). Then one transaction
creates the scope (a fork's, marked with its parent), writes the turns, the
memories as their packets describe them (status, weight, access history and
audited weight history: an archived memory stays archived), then the scope's
consolidated state the packets carry (blocks and their lines, entities, facts,
triples, the cortex tree, links, the night's bookkeeping:
:mod:`mnemo.portability.packet_copy`), and last the links between the items the
packets became (from the memories' references, when no ``link`` packets came).
The cortex rows of blocks that were in the cortex at their source are upserted
just before the commit (and removed again when it fails). A failure, or a
process killed at any point, leaves no trace of the target in PostgreSQL, and
cortex rows of a scope that does not hold their blocks are never read.

A stream with a ``night`` packet is a whole copy: its turns keep their turn
numbers (the night's progress marks count in them; a scope whose sessions
already use those numbers refuses it) and the night's marks on each turn.

Imports are idempotent by packet id (kept in each item's metadata with the
scope it came from). A live memory packet whose exact text, kind and anchoring
the scope already held as a live memory reinforces that memory instead of
adding a copy (a fork's new scope holds nothing, so a fork copies every item).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
import psycopg

from mnemo import _dynamics as dynamics
from mnemo._runtime import Runtime
from mnemo._validate import check_session
from mnemo.cognition.scoring.late import TokenVectors
from mnemo.errors import DimensionMismatchError, InvalidContentError, MalformedImportError
from mnemo.models import PacketImport, Scope, uuid7
from mnemo.portability import packet_copy
from mnemo.portability.packet_format import STATE_TYPES, MemoryMetaIn, PacketIn, decode_vector, memory_meta
from mnemo.portability.packet_state import turn_night
from mnemo.store import copy_state as state_rows
from mnemo.store import dynamics as dynamic_rows
from mnemo.store import lexicon
from mnemo.store import memories as memory_rows
from mnemo.store import packets as packet_rows
from mnemo.store import passage_vectors as passage_rows
from mnemo.store import token_vectors as token_rows
from mnemo.store import turns as turn_rows
from mnemo.store import vectors as vector_rows
from mnemo.store.pool import PROCESS
from mnemo.write import importer
from mnemo.write.embedding import embed_items
from mnemo.write.formats import TurnInput
from mnemo.write.remember import ensure_scope, memory_row

__all__ = ["import_packets"]

LIVE = ("candidate", "active")


@dataclass(frozen=True, slots=True)
class _Plan:
    """What one import writes, everything computed before its transaction opens."""

    fresh: Sequence[PacketIn]
    """The packets the scope did not hold when the import began."""
    turns: Sequence[PacketIn]
    """The turn packets in the order their turns are written."""
    ready: importer.ReadyTurns
    memories: Sequence[tuple[PacketIn, MemoryMetaIn]]
    vectors: Mapping[str, np.ndarray]
    """Each memory packet's vector of the active model (its own, or embedded here)."""
    reading: Mapping[str, tuple[TokenVectors | None, list[np.ndarray]]]
    """The token embeddings and passage vectors of the memories embedded here."""
    state: Sequence[PacketIn] = ()
    """The packets of the scope's consolidated state (blocks, lines, facts, ...)."""


async def import_packets(
    rt: Runtime,
    scope: Scope,
    packets: Sequence[PacketIn],
    *,
    strict: bool = False,
    process: str = "import",
    fork_of: Scope | None = None,
) -> PacketImport:
    """Write ``packets`` into ``scope`` in one transaction (see the module docstring). With
    ``fork_of``, ``scope`` is a new fork of that scope, created here: it must not exist."""
    own = _active_vectors(rt, packets, strict)
    done: dict[str, uuid.UUID] = {}
    if fork_of is None:
        async with rt.store.connection() as conn:
            done = await packet_rows.imported(conn, scope.entity_id, scope.namespace, [p.packet_id for p in packets])
    plan = await _plan(rt, [p for p in packets if p.packet_id not in done], own)
    made, links, state = dict(done), 0, dict[str, int]()
    if plan.fresh or fork_of is not None:  # nothing new: nothing written, not even the scope
        made, links, state = await _commit(rt, scope, plan, packets, done, fork_of, process)
    await importer.refresh_statistics(rt, len(plan.fresh), True)
    await _read_tokens(
        rt, scope, [made[p.packet_id] for p in plan.fresh if p.packet_type in _READ and p.packet_id in made]
    )
    return PacketImport(
        scope=scope,
        turns=len(plan.turns),
        memories=len(plan.memories),
        already_there=len(packets) - len(plan.fresh),
        reembedded=sum(1 for p in plan.fresh if p.packet_type in ("turn", "memory") and p.packet_id not in own),
        links=links,
        items={p.packet_id: made[p.packet_id] for p in packets if p.packet_id in made},
        state=state,
    )


_READ = ("turn", "memory", "line")


async def _read_tokens(rt: Runtime, scope: Scope, items: Sequence[uuid.UUID]) -> None:
    """The token embeddings of the items written here that have none (their packets carry vectors,
    not tokens), read before the import returns so that the copy's first recall scores as its
    source's does (:mod:`mnemo.write.backfill`)."""
    if items and rt.reads_tokens:
        rt.backfill.request(rt, (scope.entity_id, scope.namespace, str(rt.slug)), items)
        await rt.backfill.wait()


def _active_vectors(rt: Runtime, packets: Sequence[PacketIn], strict: bool) -> dict[str, np.ndarray]:
    """Each packet's vector of the active model, when it has one (the Dimension Lock: no other
    model's vector is ever stored in the active space). ``strict`` refuses turn and memory packets
    without one."""
    slug, dim = str(rt.slug), rt.embeddings.dim
    found: dict[str, np.ndarray] = {}
    for packet in packets:
        for space, vector in packet.vectors.items():
            if vector.model == slug and vector.dimensions == dim:
                array = decode_vector(space, vector)
                found[packet.packet_id] = array / max(float(np.linalg.norm(array)), 1e-12)
                break
        else:
            if strict and packet.packet_type in ("turn", "memory"):  # a line or node without one is quoted
                models = sorted({v.model for v in packet.vectors.values()}) or ["none"]
                raise DimensionMismatchError(
                    f"packet {packet.packet_id} carries vectors of {', '.join(models)}, not of the active model "
                    f"{slug}; import without --strict to embed its prose again"
                )
    return found


async def _plan(rt: Runtime, fresh: Sequence[PacketIn], own: Mapping[str, np.ndarray]) -> _Plan:
    """Everything the transaction writes, embedded first (packets without the active model's vector)."""
    turns = sorted((p for p in fresh if p.packet_type == "turn"), key=_turn_order)
    numbered = any(p.packet_type == "night" for p in fresh)  # a whole copy: its turns keep their numbers
    ready = await importer.prepare_turns(rt, [_turn_input(p, own.get(p.packet_id), numbered) for p in turns])
    memories = [(p, memory_meta(p)) for p in fresh if p.packet_type == "memory"]
    vectors = {p.packet_id: own[p.packet_id] for p, _ in memories if p.packet_id in own}
    todo = [(p, m) for p, m in memories if p.packet_id not in own]
    reading: dict[str, tuple[TokenVectors | None, list[np.ndarray]]] = {}
    step = rt.embeddings.chunk_size
    for start in range(0, len(todo), step):
        chunk = todo[start : start + step]
        embedded = await embed_items(rt, [(p.prose.content, rt.embeddings.document_prefix(m.kind)) for p, m in chunk])
        for i, (p, _) in enumerate(chunk):
            vectors[p.packet_id] = embedded.vectors[i]
            reading[p.packet_id] = (embedded.tokens[i] if embedded.tokens else None, embedded.passages[i])
    state = [p for p in fresh if p.packet_type in STATE_TYPES]
    return _Plan(fresh, turns, ready, memories, vectors, reading, state)


def _turn_order(packet: PacketIn) -> tuple[str, int, datetime]:
    meta = packet.metadata
    return str(meta.get("session_id", "default")), int(meta.get("turn_number") or 0), _utc(packet.timestamp)


def _utc(value: datetime) -> datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def _origin(packet: PacketIn) -> dict[str, Any]:
    return {"packet_id": packet.packet_id, "packet_source": packet.source_scope}


def _turn_input(packet: PacketIn, vector: np.ndarray | None, numbered: bool) -> TurnInput:
    meta = packet.metadata
    number = meta.get("turn_number") if numbered else None
    return TurnInput(
        turn_number=int(number) if number is not None else None,
        session_id=check_session(meta.get("session_id", "default")),
        role=str(meta.get("role")),
        content=packet.prose.content,
        speaker=meta.get("speaker"),
        created_at=_utc(packet.timestamp),
        metadata=dict(meta.get("metadata") or {}) | _origin(packet),
        embedding=vector,
    )


async def _commit(
    rt: Runtime,
    scope: Scope,
    plan: _Plan,
    packets: Sequence[PacketIn],
    done: Mapping[str, uuid.UUID],
    fork_of: Scope | None,
    process: str,
) -> tuple[dict[str, uuid.UUID], int, dict[str, int]]:
    """The one transaction of an import, its rows attributed to ``process``: the items made, the
    links, and the state rows written by type. Its cortex rows are written last, just before the
    commit, and removed again when the transaction does not commit."""
    token = PROCESS.set(process)
    cortex = packet_copy.CortexRows()
    try:
        async with rt.store.transaction() as conn:
            await _open(conn, rt, scope, fork_of, packets, done)
            made, links, state = await _write(conn, rt, scope, plan, done, dedupe=fork_of is None)
            if fork_of is not None:  # a fork's items read as their sources did from the first recall
                copies = {uuid.UUID(source): item for source, item in made.items() if _is_id(source)}
                await token_rows.copy(conn, scope.entity_id, fork_of.namespace, scope.namespace, copies)
            cortex = state.cortex
            await packet_copy.write_cortex(rt, conn, scope, cortex)
        return made, links, dict(state.counts)
    except BaseException:
        await packet_copy.undo_cortex(rt, scope, cortex)
        raise
    finally:
        PROCESS.reset(token)


def _is_id(text: str) -> bool:
    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return True


async def _open(
    conn: psycopg.AsyncConnection,
    rt: Runtime,
    scope: Scope,
    fork_of: Scope | None,
    packets: Sequence[PacketIn],
    done: Mapping[str, uuid.UUID],
) -> None:
    """Create the scope (a fork's must be new) and check that no other import wrote any of these
    packets since this one looked."""
    if fork_of is not None:
        if not await packet_rows.mark_fork(conn, scope.entity_id, scope.namespace, str(fork_of), datetime.now(UTC)):
            raise InvalidContentError(f"namespace {scope.namespace!r} already exists; fork into a new one")
        return
    await ensure_scope(conn, rt, scope)
    now = await packet_rows.imported(conn, scope.entity_id, scope.namespace, [p.packet_id for p in packets])
    if now.keys() != done.keys():
        raise InvalidContentError(
            f"another import into {scope} wrote some of these packets meanwhile; nothing was written, "
            "run this import again (it skips what is there)"
        )


async def _write(
    conn: psycopg.AsyncConnection,
    rt: Runtime,
    scope: Scope,
    plan: _Plan,
    done: Mapping[str, uuid.UUID],
    *,
    dedupe: bool,
) -> tuple[dict[str, uuid.UUID], int, packet_copy.StateWritten]:
    """Turns, memories, the consolidated state, then links, inside the caller's transaction: the
    items made, the links, and what the state packets wrote."""
    made = dict(done)
    await _numbers_free(conn, scope, plan)
    rows = (await importer.write_turns(conn, rt, scope, plan.ready)).rows  # a repeat: the turn the scope held
    made |= {p.packet_id: row[0] for p, row in zip(plan.turns, rows, strict=True)}
    await _restore_turns(conn, scope, plan.turns, made)
    lines = packet_copy.line_ids(plan.state, made)  # turns gone at the source: memories name their lines
    same = await _already_held(conn, scope, plan.memories) if dedupe else {}
    made |= await _write_memories(conn, rt, scope, plan, made | lines, same)
    await _reinforce(conn, rt, scope, same)
    state = await packet_copy.write_state(conn, rt, scope, plan.state, made, plan.vectors, held=list(same), lines=lines)
    made |= state.made
    if any(p.packet_type == "link" for p in plan.state):  # the links came as they were: no others
        return made, state.counts["link"], state
    return made, await _link(conn, scope, plan.fresh, made), state


async def _numbers_free(conn: psycopg.AsyncConnection, scope: Scope, plan: _Plan) -> None:
    """A whole copy's turns keep their numbers (the night's marks count in them): refused, before
    anything is written, where the scope's sessions already use them."""
    keys = [(t.session_id, t.turn_number) for t in plan.ready.turns if t.turn_number is not None]
    clashes = await turn_rows.existing_turn_numbers(conn, scope.entity_id, scope.namespace, keys)
    if clashes:
        raise MalformedImportError(
            f"scope {scope} already holds turns of these sessions {clashes}: a whole copy (packets with the "
            "night's bookkeeping) keeps its turn numbers; import it into a new scope"
        )


async def _restore_turns(
    conn: psycopg.AsyncConnection, scope: Scope, turns: Sequence[PacketIn], made: Mapping[str, uuid.UUID]
) -> None:
    """The night's marks the turn packets carry (surprisal, flux state, tier, arrival), on their turns;
    an arrival is never later than now."""
    now = datetime.now(UTC)
    rows = []
    for p in turns:
        night = turn_night(p.metadata)
        if night is not None:
            arrived = min(night.recorded_at, now) if night.recorded_at is not None else None
            rows.append(night.model_dump() | {"recorded_at": arrived, "id": made[p.packet_id]})
    await state_rows.restore_turns(conn, scope.entity_id, scope.namespace, rows)


async def _already_held(
    conn: psycopg.AsyncConnection, scope: Scope, memories: Sequence[tuple[PacketIn, MemoryMetaIn]]
) -> dict[str, uuid.UUID]:
    """Live memory packets whose text, kind and anchoring the scope already holds as a live memory,
    found before this import writes any (so two equal packets are two memories, as at their source)."""
    found: dict[str, uuid.UUID] = {}
    for p, meta in memories:
        if meta.status in LIVE:
            same = await dynamic_rows.duplicate_memory(
                conn, scope.entity_id, scope.namespace, meta.kind, p.prose.content, anchored=meta.anchored
            )
            if same is not None:
                found[p.packet_id] = same
    return found


async def _write_memories(
    conn: psycopg.AsyncConnection,
    rt: Runtime,
    scope: Scope,
    plan: _Plan,
    made: Mapping[str, uuid.UUID],
    same: Mapping[str, uuid.UUID],
) -> dict[str, uuid.UUID]:
    """The memories with their vectors, postings, state and weight history, as their packets say."""
    out: dict[str, uuid.UUID] = dict(same)
    new = [(p, meta) for p, meta in plan.memories if p.packet_id not in same]
    states: list[dict[str, Any]] = []
    history: list[dict[str, Any]] = []
    for p, meta in new:
        row = _memory_row(rt, scope, p, meta, made)
        await memory_rows.insert_memory(conn, row)
        out[p.packet_id] = row["id"]
        states.append(_state(row["id"], p, meta))
        history += [_change(scope, row["id"], change.model_dump()) for change in meta.weight_history]
    ids = [out[p.packet_id] for p, _ in new]
    vectors = [(scope.entity_id, scope.namespace, out[p.packet_id], "memory", rt.slug, plan.vectors[p.packet_id])
               for p, _ in new]  # fmt: skip
    await vector_rows.upsert_vectors(conn, rt.table, vectors)
    await _store_reading(conn, rt, scope, {out[k]: r for k, r in plan.reading.items() if k not in same})
    await packet_rows.restore_states(conn, scope.entity_id, scope.namespace, states)
    await dynamic_rows.insert_weight_changes(conn, history)
    await lexicon.add_postings(conn, scope.entity_id, scope.namespace, "memory", ids)
    return out


def _memory_row(
    rt: Runtime, scope: Scope, p: PacketIn, meta: MemoryMetaIn, made: Mapping[str, uuid.UUID]
) -> dict[str, Any]:
    extra = dict(meta.metadata) | _origin(p)
    if meta.block is not None:
        extra["block"] = meta.block | {"live_zones": p.prose.live_zones}
    row = memory_row(
        rt,
        scope,
        uuid7(),
        p.prose.content,
        meta.kind,
        compressed=p.prose.compressed,
        anchored=meta.anchored,
        status=meta.status,
        source_tag=meta.source_tag,
        source_confidence=meta.source_confidence,
        provenance=[str(made.get(x, f"packet:{x}")) for x in meta.provenance],
        event_time=meta.event_time,
        metadata=extra,
    )
    weight = {"alpha": meta.alpha, "beta": meta.beta}  # the packet's, else a new memory's
    return row | {k: v for k, v in weight.items() if v is not None}


def _state(memory_id: uuid.UUID, p: PacketIn, meta: MemoryMetaIn) -> dict[str, Any]:
    """The access history and record time a memory had where it was exported."""
    return {
        "id": memory_id,
        "access_count": meta.access_count,
        "access_timestamps": meta.access_timestamps,
        "older_access_count": meta.older_access_count,
        "oldest_access": meta.oldest_access,
        "last_accessed": meta.last_accessed,
        "created_at": _utc(p.timestamp),
    }


def _change(scope: Scope, memory_id: uuid.UUID, change: Mapping[str, Any]) -> dict[str, Any]:
    """One audited weight change of the packet's memory, now of the memory it became."""
    return dict(change) | {
        "id": uuid7(),
        "entity_id": scope.entity_id,
        "namespace": scope.namespace,
        "memory_id": memory_id,
    }


async def _store_reading(
    conn: psycopg.AsyncConnection,
    rt: Runtime,
    scope: Scope,
    reading: Mapping[uuid.UUID, tuple[TokenVectors | None, list[np.ndarray]]],
) -> None:
    """The token embeddings and passages of the memories embedded here (as the write path keeps them)."""
    slug = str(rt.slug)
    tokens = {i: read for i, (read, _) in reading.items() if read is not None}
    await token_rows.write(conn, scope.entity_id, scope.namespace, slug, tokens)
    rows = [(i, "memory", n, v) for i, (_, vs) in reading.items() for n, v in enumerate(vs, start=1)]
    await passage_rows.write(conn, scope.entity_id, scope.namespace, slug, rows)


async def _reinforce(conn: psycopg.AsyncConnection, rt: Runtime, scope: Scope, same: Mapping[str, uuid.UUID]) -> None:
    """A packet of a memory the scope already held reinforces it (audited), as remembering it again does."""
    gain = rt.settings.gate_reinforce_gain
    requests = [
        dynamics.WeightRequest(m, "reinforce", gain, "remembered again", {"packet_id": k}) for k, m in same.items()
    ]
    if requests:
        await dynamics.change_weights(conn, rt.settings, scope, requests)


async def _link(
    conn: psycopg.AsyncConnection, scope: Scope, packets: Sequence[PacketIn], made: Mapping[str, uuid.UUID]
) -> int:
    """The packets' references as links between the items they became (unknown targets dropped).
    Written last: they need every item's new id."""
    links: list[tuple[uuid.UUID, uuid.UUID, str]] = []
    for p in packets:
        source = made.get(p.packet_id)
        refs = p.references
        targets = [(c, "cites") for c in refs.citations] + [(d, "derived_from") for d in refs.derived_from]
        if refs.continues_from:
            targets.append((refs.continues_from, "continues"))
        links += [(source, made[t], kind) for t, kind in targets if source is not None and t in made]
    await packet_rows.add_links(conn, scope.entity_id, scope.namespace, links)
    return len(links)
