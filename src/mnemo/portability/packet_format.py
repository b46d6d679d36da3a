"""Bifocal packets: a scope's memory as JSON lines that carry prose and vectors together.

Seeds: memory-architecture §6.1-6.3 (the packet: prose, vectors as base64
float32 with their dimensions, metadata, references) and §6.4 ("prose fades
while vectors persist"); archive-adr §8 ("Dimension Lock": a vector is only
compared with vectors of its own model) and "Consent-Governed Sharing".

One packet per turn (``packet_type`` ``turn``) and per memory (``memory``;
a block's memory also carries its block's live zones, salience, coherence
gain and references). ``packet_id`` is the item's id where it was exported.
A memory's packet carries its lifecycle status (an archived memory stays
archived), its weight, its access history and its audited weight history.
A turn's packet carries its turn number and the night's marks on it.

After them come the packets of the scope's consolidated state, so that an
export is a whole copy (:mod:`mnemo.portability.packet_state`): ``entity``,
``block``, ``line``, ``fact``, ``triple``, ``node`` (the cortex tree),
``link`` and, last, ``night`` (what the nights already cut and extracted).
An export of chosen memories (a merge) carries their blocks, lines, facts,
entities and the links among them, and no ``night`` packet.

This module is the format: export (:func:`export_packets`) and the checks
every packet passes before anything is written (:func:`parse_packets`);
:mod:`mnemo.portability.packet_import` imports them, all or nothing.
"""

from __future__ import annotations

import base64
import binascii
import json
import uuid
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from mnemo._runtime import Runtime
from mnemo._validate import (
    check_content,
    check_event_time,
    check_kind,
    check_metadata,
    check_role,
    check_session,
    check_text,
)
from mnemo.errors import (
    AccessDeniedError,
    DimensionMismatchError,
    InvalidContentError,
    InvalidInputError,
    MalformedImportError,
    Remedy,
    UnknownScopeError,
)
from mnemo.models import Scope, to_jsonable
from mnemo.portability import packet_state
from mnemo.portability.packet_state import STATE_TYPES, encode_vectors
from mnemo.store import packets as packet_rows

__all__ = [
    "STATE_TYPES",
    "MemoryMetaIn",
    "PacketIn",
    "decode_vector",
    "dumps",
    "export_packets",
    "memory_meta",
    "parse_packets",
]

PAGE = 500
MAX_DIM = 16_000


# --- the packet as it arrives --------------------------------------------------------------------


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")


class VectorIn(_In):
    model: str = Field(min_length=1, max_length=256, description="The slug of the model that made it.")
    dimensions: int = Field(ge=1, le=MAX_DIM)
    encoding: Literal["base64"] = "base64"
    data: str


class ProseIn(_In):
    content: str
    content_type: Literal["full", "summary", "excerpt"] = "full"
    compressed: str | None = None
    live_zones: list[Any] = Field(default_factory=list)
    dead_zone_summaries: list[Any] = Field(default_factory=list)


class ReferencesIn(_In):
    citations: list[str] = Field(default_factory=list, max_length=1000)
    derived_from: list[str] = Field(default_factory=list, max_length=1000)
    continues_from: str | None = None


class PacketIn(_In):
    packet_id: str = Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9_.:@+-]+$")
    packet_type: Literal["turn", "memory", "entity", "block", "line", "fact", "triple", "link", "node", "night"]
    timestamp: datetime
    source_scope: str | None = Field(default=None, max_length=300)
    prose: ProseIn
    vectors: dict[str, VectorIn] = Field(default_factory=dict, max_length=16)
    metadata: dict[str, Any] = Field(default_factory=dict)
    references: ReferencesIn = Field(default_factory=ReferencesIn)


def _utc(value: datetime) -> datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


Time = Annotated[datetime, AfterValidator(_utc)]  # a time without an offset is taken as UTC
Weight = Annotated[float, Field(gt=0, allow_inf_nan=False)]


class WeightChangeIn(_In):
    """One audited change of a memory's weight, as ``traces.weight_changes`` holds it."""

    at: Time
    operation: Literal["reinforce", "contradict", "create"]
    gain: float = Field(allow_inf_nan=False)
    old_alpha: Weight | None = None
    old_beta: Weight | None = None
    new_alpha: Weight
    new_beta: Weight
    reason: str = Field(min_length=1, max_length=1000)
    evidence: dict[str, Any] = Field(default_factory=dict)
    blocked: bool = False


class MemoryMetaIn(BaseModel):
    """A memory packet's metadata, checked (keys it does not know are left alone)."""

    kind: str = "semantic"
    status: Literal["candidate", "active", "archived", "pruned", "quarantined"] = "active"
    anchored: bool = False
    alpha: Weight | None = None
    beta: Weight | None = None
    access_count: int = Field(default=0, ge=0)
    access_timestamps: list[Time] = Field(default_factory=list, max_length=100_000)
    older_access_count: int = Field(default=0, ge=0)
    oldest_access: Time | None = None
    last_accessed: Time | None = None
    source_tag: str | None = None
    source_confidence: float = Field(default=1.0, ge=0, le=1)
    provenance: list[str] = Field(default_factory=list, max_length=10_000)
    event_time: Time | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    block: dict[str, Any] | None = None
    weight_history: list[WeightChangeIn] = Field(default_factory=list, max_length=100_000)


def memory_meta(packet: PacketIn) -> MemoryMetaIn:
    """The checked metadata of a memory packet (:class:`InvalidContentError` naming the field)."""
    try:
        return MemoryMetaIn.model_validate(packet.metadata)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise InvalidContentError(f"metadata.{where}: {first['msg']}") from exc


# --- export ---------------------------------------------------------------------------------------


async def export_packets(
    rt: Runtime, scope: Scope, reader: str, *, ids: Sequence[uuid.UUID] | None = None, turns: bool = True
) -> AsyncIterator[dict[str, Any]]:
    """Every turn and memory of ``scope`` as packets, then its consolidated state (only memories
    ``ids`` and their state when given; no state with ``turns=False``). Needs the owner or an export
    grant: anyone else is refused the same way whether or not the scope exists; the owner of a scope
    that does not exist gets :class:`UnknownScopeError`, as the night does."""
    async with rt.store.connection() as conn:
        exists, allowed = await packet_rows.export_access(conn, scope.entity_id, scope.namespace, reader)
        tables = await packet_rows.spaces(conn)
    if not allowed:
        raise AccessDeniedError(
            f"{reader!r} may not export scope {scope}",
            remedy=Remedy("its owner can allow it with", "access.grant", (scope, reader), {"export": True}),
        )
    if not exists:
        raise UnknownScopeError(f"scope {scope} does not exist (nothing was ever stored there)")
    exported: set[str] = set()
    if turns and ids is None:
        async for packet in _turn_packets(rt, scope, tables):
            exported.add(packet["packet_id"])
            yield packet
    async for packet in _memory_packets(rt, scope, tables, ids):
        exported.add(packet["packet_id"])
        yield packet
    if turns or ids is not None:
        async for packet in packet_state.state_packets(rt, scope, tables, ids, exported):
            yield packet


async def _turn_packets(rt: Runtime, scope: Scope, tables: Sequence[str]) -> AsyncIterator[dict[str, Any]]:
    after = None
    while True:
        async with rt.store.connection() as conn:
            rows = await packet_rows.turn_page(conn, scope.entity_id, scope.namespace, after, PAGE)
            vectors = await packet_rows.vectors_of(conn, scope.entity_id, tables, [r.id for r in rows])
        for row in rows:
            yield _turn_packet(scope, row, vectors.get(row.id, {}))
        if len(rows) < PAGE:
            return
        after = rows[-1].id


async def _memory_packets(
    rt: Runtime, scope: Scope, tables: Sequence[str], ids: Sequence[uuid.UUID] | None
) -> AsyncIterator[dict[str, Any]]:
    after = None
    while True:
        async with rt.store.connection() as conn:
            rows = await packet_rows.memory_page(conn, scope.entity_id, scope.namespace, after, PAGE, ids)
            found = [r.id for r in rows]
            vectors = await packet_rows.vectors_of(conn, scope.entity_id, tables, found)
            history = await packet_rows.weight_histories(conn, scope.entity_id, scope.namespace, found)
        deep = await _cortex_vectors(rt, scope, [r.id for r in rows if r.tier == "cortex"])
        for row in rows:
            changes = [asdict(c) for c in history.get(row.id, [])]
            yield _memory_packet(scope, row, vectors.get(row.id, {}) | deep.get(row.id, {}), changes)
        if len(rows) < PAGE:
            return
        after = rows[-1].id


async def _cortex_vectors(
    rt: Runtime, scope: Scope, memory_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, dict[str, tuple[str, np.ndarray]]]:
    """The vectors of memories whose block moved to the cortex (full precision there, §6.4)."""
    if not memory_ids or rt.cortex is None:
        return {}
    found: dict[uuid.UUID, dict[str, tuple[str, np.ndarray]]] = {}
    wanted = {str(m) for m in memory_ids}
    for name, _ in await rt.cortex.tables("blocks"):
        dim = int(name.rpartition("_")[2])
        for row in await rt.cortex.rows("blocks", dim, scope, columns=["memory_id", "slug", "vector"]):
            if row["memory_id"] in wanted:
                vector = np.asarray(row["vector"], dtype=np.float32)
                found.setdefault(uuid.UUID(row["memory_id"]), {})[f"cortex_{dim}"] = (row["slug"], vector)
    return found


def _vectors(found: Mapping[str, tuple[str, np.ndarray]]) -> dict[str, Any]:
    return encode_vectors(found)


def _turn_packet(
    scope: Scope, row: packet_rows.TurnPageRow, vectors: Mapping[str, tuple[str, np.ndarray]]
) -> dict[str, Any]:
    return {
        "packet_id": str(row.id),
        "packet_type": "turn",
        "timestamp": row.created_at.isoformat(),
        "source_scope": str(scope),
        "prose": {"content": row.content, "content_type": "full"},
        "vectors": _vectors(vectors),
        "metadata": to_jsonable({
            "session_id": row.session_id,
            "turn_number": row.turn_number,
            "role": row.role,
            "speaker": row.speaker,
            "process_id": row.process_id,
            "metadata": row.metadata,
            "night": {"surprisal": row.surprisal, "flux_state": row.flux_state, "user_tier": row.user_tier,
                      "recorded_at": row.recorded_at},
        }),
        "references": {},
    }  # fmt: skip


def _memory_packet(
    scope: Scope,
    row: packet_rows.MemoryPageRow,
    vectors: Mapping[str, tuple[str, np.ndarray]],
    weight_history: list[dict[str, Any]],
) -> dict[str, Any]:
    prose: dict[str, Any] = {
        "content": row.content,
        "content_type": "excerpt" if row.block_id is not None else "full",
        "compressed": row.compressed,
    }
    references: dict[str, Any] = {}
    metadata: dict[str, Any] = {
        "kind": row.kind, "status": row.status, "anchored": row.anchored, "alpha": row.alpha, "beta": row.beta,
        "access_count": row.access_count, "access_timestamps": row.access_timestamps,
        "older_access_count": row.older_access_count, "oldest_access": row.oldest_access,
        "last_accessed": row.last_accessed, "source_tag": row.source_tag, "source_confidence": row.source_confidence,
        "provenance": row.provenance, "event_time": row.event_time, "process_id": row.process_id,
        "metadata": row.metadata, "weight_history": weight_history,
    }  # fmt: skip
    if row.block_id is not None:
        block_prose = row.prose or {}
        prose["live_zones"] = block_prose.get("live_zones", [])
        prose["dead_zone_summaries"] = block_prose.get("dead_zone_summaries", [])
        metadata["block"] = {
            "block_id": row.block_id, "flux_metrics": row.flux_metrics, "salience_scores": row.salience_scores,
            "coherence_gain": row.coherence_gain, "arc_start_time": row.arc_start_time,
            "arc_end_time": row.arc_end_time,
        }  # fmt: skip
        references = {
            "citations": [str(c) for c in row.citations or []],
            "derived_from": [str(row.derived_from)] if row.derived_from else [],
            "continues_from": str(row.continues_from) if row.continues_from else None,
        }
    return {
        "packet_id": str(row.id),
        "packet_type": "memory",
        "timestamp": row.created_at.isoformat(),
        "source_scope": str(scope),
        "prose": prose,
        "vectors": _vectors(vectors),
        "metadata": to_jsonable(metadata),
        "references": references,
    }


# --- import ---------------------------------------------------------------------------------------


def parse_packets(
    lines: Iterable[str], *, source: str = "packets", max_chars: int = 100_000, skew_hours: float | None = None
) -> list[PacketIn]:
    """Parse and check JSON lines (blank lines skipped); every problem is reported with its line
    number before anything is written. ``skew_hours``: refuse turn and memory times further ahead
    of the clock (``Settings.clock_skew_hours``, as every write does; a fork copies what its scope
    holds, unchecked; the state packets' times are the nights', as their scope holds them)."""
    packets: list[PacketIn] = []
    seen: set[str] = set()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            packet = PacketIn.model_validate_json(line)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "packet"
            raise MalformedImportError(f"{source} line {number}: {where}: {first['msg']}{_not_packets(line)}") from exc
        if packet.packet_id in seen:
            raise MalformedImportError(f"{source} line {number}: packet {packet.packet_id} appears twice")
        seen.add(packet.packet_id)
        try:
            _check_packet(packet, max_chars)
            if skew_hours is not None and packet.packet_type not in STATE_TYPES:
                _check_times(packet, skew_hours)  # what the nights made is dated by them (``as_of``)
        except InvalidInputError as exc:
            raise MalformedImportError(f"{source} line {number}: {exc}") from exc
        packets.append(packet)
    return packets


_TURN_FIELDS = frozenset({"content", "text", "role", "session", "session_id", "speaker", "created_at"})


def _not_packets(line: str) -> str:
    """A hint when the line is a conversation turn (``mnemo import``'s format), not a packet."""
    try:
        data = json.loads(line)
    except ValueError:
        return ""
    if isinstance(data, dict) and "packet_type" not in data and _TURN_FIELDS & set(data):
        return "; this looks like a conversation file (JSONL turns): import it with `mnemo import FILE`"
    return ""


def _check_packet(packet: PacketIn, max_chars: int) -> None:
    check_content(packet.prose.content, max_chars=max_chars)
    meta = packet.metadata
    if packet.packet_type == "turn":
        check_role(str(meta.get("role", "")))
        check_session(meta.get("session_id", "default"))
        if meta.get("speaker") is not None:
            check_text(meta["speaker"], label="speaker")
        check_metadata(meta.get("metadata") or {})
        packet_state.turn_night(meta)
    elif packet.packet_type == "memory":
        _check_memory(packet, max_chars)
    else:
        packet_state.state_meta(packet.packet_type, meta)
    for space, vector in packet.vectors.items():
        decode_vector(space, vector)


def _check_times(packet: PacketIn, skew_hours: float) -> None:
    """A packet's time and a memory's event time, no further ahead of the clock than any write's."""
    check_event_time(packet.timestamp, label="timestamp", skew_hours=skew_hours)
    if packet.packet_type == "memory" and (event := memory_meta(packet).event_time) is not None:
        check_event_time(event, label="event_time", skew_hours=skew_hours)


def _check_memory(packet: PacketIn, max_chars: int) -> None:
    """What writing a memory packet needs, checked before anything is written."""
    meta = memory_meta(packet)
    check_kind(meta.kind)
    if packet.prose.compressed is not None:
        check_content(packet.prose.compressed, max_chars=max_chars, label="compressed")
    if meta.source_tag is not None:
        check_text(meta.source_tag, label="source_tag")
    for entry in meta.provenance:
        check_text(entry, label="provenance entry", max_chars=1000)
    check_metadata(meta.metadata)
    for change in meta.weight_history:
        check_metadata(change.evidence, label="weight_history evidence")


def decode_vector(space: str, vector: VectorIn) -> np.ndarray:
    """The float32 array of a packet vector (§6.3), checked against its stated dimensions."""
    try:
        raw = base64.b64decode(vector.data, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise InvalidContentError(f"vector {space!r} is not valid base64") from exc
    if len(raw) != vector.dimensions * 4:
        raise DimensionMismatchError(
            f"vector {space!r} holds {len(raw) // 4} float32 values, its packet says {vector.dimensions}"
        )
    array = np.frombuffer(raw, dtype=np.float32)
    if not np.isfinite(array).all():
        raise InvalidContentError(f"vector {space!r} holds a NaN or an infinity")
    return array


def dumps(packet: Mapping[str, Any]) -> str:
    """One packet as one JSON line."""
    return json.dumps(packet, ensure_ascii=False, separators=(",", ":"))
