"""Bifocal packets: a scope's memory as JSON lines that carry prose and vectors together.

Seeds: memory-architecture §6.1-6.3 (the packet: prose, vectors as base64
float32 with their dimensions, metadata, references) and §6.4 ("prose fades
while vectors persist"); archive-adr §8 ("Dimension Lock": a vector is only
compared with vectors of its own model) and "Consent-Governed Sharing".

One packet per turn (``packet_type`` ``turn``) and per memory (``memory``;
a block's memory also carries its block's live zones, salience, coherence
gain and references). ``packet_id`` is the item's id where it was exported.
An import is idempotent by packet id (the id is kept in the item's metadata,
with the scope it came from), re-embeds a packet whose vectors were made by
another model than the active one (or refuses it with ``strict``), and
remaps references to the items the packets became. Every packet is checked
before anything is written.
"""

from __future__ import annotations

import base64
import binascii
import json
import uuid
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mnemo._runtime import Runtime
from mnemo._validate import check_content, check_kind, check_metadata, check_role, check_session
from mnemo.errors import (
    AccessDeniedError,
    DimensionMismatchError,
    InvalidContentError,
    InvalidInputError,
    MalformedImportError,
)
from mnemo.models import PacketImport, Scope, to_jsonable
from mnemo.store import packets as packet_rows
from mnemo.store.pool import PROCESS
from mnemo.write import importer
from mnemo.write import remember as write_path
from mnemo.write.formats import TurnInput

__all__ = ["PacketIn", "dumps", "export_packets", "import_packets", "parse_packets"]

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
    packet_type: Literal["turn", "memory"]
    timestamp: datetime
    source_scope: str | None = Field(default=None, max_length=300)
    prose: ProseIn
    vectors: dict[str, VectorIn] = Field(default_factory=dict, max_length=16)
    metadata: dict[str, Any] = Field(default_factory=dict)
    references: ReferencesIn = Field(default_factory=ReferencesIn)


# --- export ---------------------------------------------------------------------------------------


async def export_packets(
    rt: Runtime, scope: Scope, reader: str, *, ids: Sequence[uuid.UUID] | None = None, turns: bool = True
) -> AsyncIterator[dict[str, Any]]:
    """Every turn and memory of ``scope`` as packets (only memories ``ids`` when given). Needs the
    owner or an export grant; refused the same way whether or not the scope exists."""
    async with rt.store.connection() as conn:
        exists, allowed = await packet_rows.export_access(conn, scope.entity_id, scope.namespace, reader)
        tables = await packet_rows.spaces(conn)
    if not allowed:
        raise AccessDeniedError(
            f"{reader!r} may not export scope {scope}; its owner can allow it with "
            f"grant(Scope({scope.entity_id!r}, {scope.namespace!r}), {reader!r}, export=True)"
        )
    if not exists:
        return
    if turns and ids is None:
        async for packet in _turn_packets(rt, scope, tables):
            yield packet
    async for packet in _memory_packets(rt, scope, tables, ids):
        yield packet


async def _turn_packets(rt: Runtime, scope: Scope, tables: Sequence[str]) -> AsyncIterator[dict[str, Any]]:
    after = None
    while True:
        async with rt.store.connection() as conn:
            rows = await packet_rows.turn_page(conn, scope.entity_id, scope.namespace, after, PAGE)
            vectors = await packet_rows.vectors_of(conn, scope.entity_id, tables, [r["id"] for r in rows])
        for row in rows:
            yield _turn_packet(scope, row, vectors.get(row["id"], {}))
        if len(rows) < PAGE:
            return
        after = rows[-1]["id"]


async def _memory_packets(
    rt: Runtime, scope: Scope, tables: Sequence[str], ids: Sequence[uuid.UUID] | None
) -> AsyncIterator[dict[str, Any]]:
    after = None
    while True:
        async with rt.store.connection() as conn:
            rows = await packet_rows.memory_page(conn, scope.entity_id, scope.namespace, after, PAGE, ids)
            vectors = await packet_rows.vectors_of(conn, scope.entity_id, tables, [r["id"] for r in rows])
        deep = await _cortex_vectors(rt, scope, [r["id"] for r in rows if r["tier"] == "cortex"])
        for row in rows:
            yield _memory_packet(scope, row, vectors.get(row["id"], {}) | deep.get(row["id"], {}))
        if len(rows) < PAGE:
            return
        after = rows[-1]["id"]


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
    return {
        space: {
            "model": slug,
            "dimensions": int(vec.shape[0]),
            "encoding": "base64",
            "data": base64.b64encode(vec.astype(np.float32).tobytes()).decode(),
        }
        for space, (slug, vec) in sorted(found.items())
    }


def _turn_packet(scope: Scope, row: Mapping[str, Any], vectors: Mapping[str, tuple[str, np.ndarray]]) -> dict[str, Any]:
    return {
        "packet_id": str(row["id"]),
        "packet_type": "turn",
        "timestamp": row["created_at"].isoformat(),
        "source_scope": str(scope),
        "prose": {"content": row["content"], "content_type": "full"},
        "vectors": _vectors(vectors),
        "metadata": to_jsonable({
            "session_id": row["session_id"],
            "turn_number": row["turn_number"],
            "role": row["role"],
            "speaker": row["speaker"],
            "process_id": row["process_id"],
            "metadata": row["metadata"],
        }),
        "references": {},
    }  # fmt: skip


def _memory_packet(
    scope: Scope, row: Mapping[str, Any], vectors: Mapping[str, tuple[str, np.ndarray]]
) -> dict[str, Any]:
    block = row["block_id"] is not None
    prose: dict[str, Any] = {
        "content": row["content"],
        "content_type": "excerpt" if block else "full",
        "compressed": row["compressed"],
    }
    references: dict[str, Any] = {}
    metadata: dict[str, Any] = {
        key: row[key]
        for key in ("kind", "status", "anchored", "alpha", "beta", "access_count", "last_accessed", "source_tag",
                    "source_confidence", "provenance", "event_time", "process_id", "metadata")
    }  # fmt: skip
    if block:
        prose["live_zones"] = row["prose"].get("live_zones", [])
        prose["dead_zone_summaries"] = row["prose"].get("dead_zone_summaries", [])
        metadata["block"] = {
            key: row[key]
            for key in ("block_id", "flux_metrics", "salience_scores", "coherence_gain", "arc_start_time",
                        "arc_end_time")
        }  # fmt: skip
        references = {
            "citations": [str(c) for c in row["citations"] or []],
            "derived_from": [str(row["derived_from"])] if row["derived_from"] else [],
            "continues_from": str(row["continues_from"]) if row["continues_from"] else None,
        }
    return {
        "packet_id": str(row["id"]),
        "packet_type": "memory",
        "timestamp": row["created_at"].isoformat(),
        "source_scope": str(scope),
        "prose": prose,
        "vectors": _vectors(vectors),
        "metadata": to_jsonable(metadata),
        "references": references,
    }


# --- import ---------------------------------------------------------------------------------------


def parse_packets(lines: Iterable[str], *, source: str = "packets", max_chars: int = 100_000) -> list[PacketIn]:
    """Parse and check JSON lines (blank lines skipped); every problem is reported with its line
    number before anything is written."""
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
            raise MalformedImportError(f"{source} line {number}: {where}: {first['msg']}") from exc
        if packet.packet_id in seen:
            raise MalformedImportError(f"{source} line {number}: packet {packet.packet_id} appears twice")
        seen.add(packet.packet_id)
        try:
            _check_packet(packet, max_chars)
        except InvalidInputError as exc:
            raise MalformedImportError(f"{source} line {number}: {exc}") from exc
        packets.append(packet)
    return packets


def _check_packet(packet: PacketIn, max_chars: int) -> None:
    check_content(packet.prose.content, max_chars=max_chars)
    meta = packet.metadata
    if packet.packet_type == "turn":
        check_role(str(meta.get("role", "")))
        check_session(meta.get("session_id", "default"))
    else:
        check_kind(str(meta.get("kind", "semantic")))
    check_metadata(meta.get("metadata") or {})
    for space, vector in packet.vectors.items():
        decode_vector(space, vector)


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


async def import_packets(
    rt: Runtime, scope: Scope, packets: Sequence[PacketIn], *, strict: bool = False, process: str = "import"
) -> PacketImport:
    """Write ``packets`` into ``scope`` (see the module docstring); idempotent by packet id."""
    vectors = _active_vectors(rt, packets, strict)
    token = PROCESS.set(process)
    try:
        async with rt.store.connection() as conn:
            done = await packet_rows.imported(conn, scope.entity_id, scope.namespace, [p.packet_id for p in packets])
        fresh = [p for p in packets if p.packet_id not in done]
        made = dict(done)
        made |= await _import_turns(rt, scope, [p for p in fresh if p.packet_type == "turn"], vectors)
        made |= await _import_memories(rt, scope, [p for p in fresh if p.packet_type == "memory"], vectors, made)
        links = await _link(rt, scope, fresh, made)
    finally:
        PROCESS.reset(token)
    return PacketImport(
        scope=scope,
        turns=sum(1 for p in fresh if p.packet_type == "turn"),
        memories=sum(1 for p in fresh if p.packet_type == "memory"),
        already_there=len(packets) - len(fresh),
        reembedded=sum(1 for p in fresh if p.packet_id not in vectors),
        links=links,
        items={p.packet_id: made[p.packet_id] for p in packets if p.packet_id in made},
    )


def _active_vectors(rt: Runtime, packets: Sequence[PacketIn], strict: bool) -> dict[str, np.ndarray]:
    """Each packet's vector of the active model, when it has one (the Dimension Lock: no other
    model's vector is ever stored in the active space). ``strict`` refuses packets without one."""
    slug, dim = str(rt.slug), rt.embeddings.dim
    found: dict[str, np.ndarray] = {}
    for packet in packets:
        for space, vector in packet.vectors.items():
            if vector.model == slug and vector.dimensions == dim:
                array = decode_vector(space, vector)
                found[packet.packet_id] = array / max(float(np.linalg.norm(array)), 1e-12)
                break
        else:
            if strict:
                models = sorted({v.model for v in packet.vectors.values()}) or ["none"]
                raise DimensionMismatchError(
                    f"packet {packet.packet_id} carries vectors of {', '.join(models)}, not of the active model "
                    f"{slug}; import without --strict to embed its prose again"
                )
    return found


def _origin(packet: PacketIn) -> dict[str, Any]:
    return {"packet_id": packet.packet_id, "packet_source": packet.source_scope}


async def _import_turns(
    rt: Runtime, scope: Scope, packets: Sequence[PacketIn], vectors: Mapping[str, np.ndarray]
) -> dict[str, uuid.UUID]:
    ordered = sorted(packets, key=lambda p: (str(p.metadata.get("session_id", "default")),
                                             int(p.metadata.get("turn_number") or 0), p.timestamp))  # fmt: skip
    inputs = [
        TurnInput(
            session_id=check_session(p.metadata.get("session_id", "default")),
            role=str(p.metadata.get("role")),
            content=p.prose.content,
            speaker=p.metadata.get("speaker"),
            created_at=p.timestamp,
            metadata=dict(p.metadata.get("metadata") or {}) | _origin(p),
            embedding=vectors.get(p.packet_id),
        )
        for p in ordered
    ]
    if not inputs:
        return {}
    written = await importer.import_turns(rt, scope, inputs)
    return {p.packet_id: t.id for p, t in zip(ordered, written, strict=True)}


async def _import_memories(
    rt: Runtime,
    scope: Scope,
    packets: Sequence[PacketIn],
    vectors: Mapping[str, np.ndarray],
    made: Mapping[str, uuid.UUID],
) -> dict[str, uuid.UUID]:
    out: dict[str, uuid.UUID] = {}
    for p in packets:
        meta = p.metadata
        extra = dict(meta.get("metadata") or {}) | _origin(p)
        if "block" in meta:
            extra["block"] = meta["block"] | {"live_zones": p.prose.live_zones}
        provenance = [str(made.get(str(x), f"packet:{x}")) for x in meta.get("provenance") or []]
        memory = await write_path.remember(
            rt,
            scope,
            p.prose.content,
            kind=str(meta.get("kind", "semantic")),
            anchored=bool(meta.get("anchored", False)),
            compressed=p.prose.compressed,
            source_tag=meta.get("source_tag"),
            source_confidence=float(meta.get("source_confidence", 1.0)),
            provenance=provenance,
            event_time=meta.get("event_time"),
            metadata=extra,
            embedding=vectors.get(p.packet_id),
            status=str(meta.get("status", "active")),
        )
        out[p.packet_id] = memory.id
        state = {
            "alpha": float(meta.get("alpha", memory.alpha)),
            "beta": float(meta.get("beta", memory.beta)),
            "access_count": int(meta.get("access_count", 0)),
            "last_accessed": meta.get("last_accessed"),
            "created_at": p.timestamp,
        }
        async with rt.store.transaction() as conn:
            await packet_rows.restore_state(conn, scope.entity_id, scope.namespace, memory.id, state)
    return out


async def _link(rt: Runtime, scope: Scope, packets: Sequence[PacketIn], made: Mapping[str, uuid.UUID]) -> int:
    if not packets:
        return 0
    """The packets' references as links between the items they became (unknown targets dropped)."""
    links: list[tuple[uuid.UUID, uuid.UUID, str]] = []
    for p in packets:
        source = made.get(p.packet_id)
        refs = p.references
        targets = [(c, "cites") for c in refs.citations] + [(d, "derived_from") for d in refs.derived_from]
        if refs.continues_from:
            targets.append((refs.continues_from, "continues"))
        links += [(source, made[t], kind) for t, kind in targets if source is not None and t in made]
    async with rt.store.transaction() as conn:
        await packet_rows.add_links(conn, scope.entity_id, scope.namespace, links)
    return len(links)


def dumps(packet: Mapping[str, Any]) -> str:
    """One packet as one JSON line."""
    return json.dumps(packet, ensure_ascii=False, separators=(",", ":"))
