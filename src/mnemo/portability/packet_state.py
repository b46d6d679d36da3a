"""A scope's consolidated state as bifocal packets: what makes a fork or an export a whole copy.

Seeds: memory-architecture §6.1-6.4 (a packet carries prose, vectors at full precision,
metadata and references), §3.4 (holographic blocks and their verbatim lines), §5.4 (the
cortex's RAPTOR tree), archive-adr §9 (facts and triples with their validity) and "Logical
Domain Isolation" (a fork starts as a copy of its parent).

Besides one packet per turn and per memory (:mod:`mnemo.portability.packet_format`), an export
carries what the scope's nights made, one packet per row, each named by its id at the source:

* ``block``: a block (prose: its content; metadata: every column, ids as packet ids; a block
  in the cortex also its cortex row's condensed prose, gist and other-model vectors);
* ``line``: one verbatim line of a block (``line:<block>:<turn>``; its vector when its raw
  turn is gone, or when its block is in the cortex);
* ``entity``, ``fact`` and ``triple``: the knowledge, closed facts and triples with their
  validity interval (``valid_from``, ``valid_to``, ``closed_by``);
* ``link``: a structural link between two exported items (``link:<source>:<target>:<type>``);
* ``node``: a node of the cortex tree (its summary's vector and its centroid);
* ``night``: the night's bookkeeping (``night:<entity>:<namespace>``): each session's progress
  marks (which turns were already cut into blocks and read for facts) and the per-scope state
  (the surprisal model's counts).

A turn packet carries the night's marks on its turn (``metadata.night``: surprisal, flux state,
user tier, arrival time). This module checks the state packets' metadata and exports them;
:mod:`mnemo.portability.packet_copy` writes them.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from mnemo._runtime import Runtime
from mnemo.errors import InvalidContentError
from mnemo.models import Scope, to_jsonable
from mnemo.store import copy_state as state_rows
from mnemo.store import packets as packet_rows

__all__ = [
    "STATE_TYPES",
    "BlockIn",
    "CortexBlockIn",
    "EntityIn",
    "FactIn",
    "LineIn",
    "LinkIn",
    "NightIn",
    "NodeIn",
    "TripleIn",
    "TurnNightIn",
    "encode_vectors",
    "state_meta",
    "state_packets",
]

STATE_TYPES = ("entity", "block", "line", "fact", "triple", "link", "node", "night")


def _utc(value: datetime) -> datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


Time = Annotated[datetime, AfterValidator(_utc)]
Ref = Annotated[str, Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9_.:@+-]+$")]
Unit = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]


class _Meta(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TurnNightIn(_Meta):
    """The night's marks on a turn (a turn packet's ``metadata.night``)."""

    surprisal: float | None = Field(default=None, allow_inf_nan=False)
    flux_state: Literal["baseline", "spike", "resolution", "stable"] | None = None
    user_tier: Literal["normal", "meso", "elder"] = "normal"
    recorded_at: Time | None = None


class CortexBlockIn(_Meta):
    """How the cortex keeps a block that moved there: condensed prose, gist, other-model vectors."""

    content: str = Field(min_length=1)
    gist: str = ""
    prose: str = "{}"
    extra_vectors: str = "{}"


class BlockIn(_Meta):
    kind: Literal["arc", "span", "compound"]
    memory: Ref | None = None
    session_id: str | None = Field(default=None, max_length=256)
    first_turn: int | None = None
    last_turn: int | None = None
    turns: list[Ref] = Field(default_factory=list, max_length=100_000)
    prose: dict[str, Any] = Field(default_factory=dict)
    flux_metrics: dict[str, Any] = Field(default_factory=dict)
    salience_scores: dict[str, Any] = Field(default_factory=dict)
    coherence_gain: float = Field(default=0.0, allow_inf_nan=False)
    ties_weight: float = Field(default=0.0, allow_inf_nan=False)
    user_tier: Literal["normal", "meso", "elder"] = "normal"
    arc_start_time: Time
    arc_end_time: Time
    session_continuity: bool = False
    parent_metablock: Ref | None = None
    continues_from: Ref | None = None
    continued_by: Ref | None = None
    derived_from: Ref | None = None
    citations: list[Ref] = Field(default_factory=list, max_length=10_000)
    run_id: uuid.UUID | None = None
    created_at: Time
    migrated_at: Time | None = None
    cortex: CortexBlockIn | None = None


class LineIn(_Meta):
    block: Ref
    turn: Ref
    kept: bool
    session_id: str = Field(min_length=1, max_length=256)
    turn_number: int = Field(ge=0)
    role: Literal["user", "assistant", "system", "tool"]
    speaker: str | None = Field(default=None, max_length=1000)
    created_at: Time
    metadata: dict[str, Any] = Field(default_factory=dict)


class EntityIn(_Meta):
    name: str = Field(min_length=1, max_length=1000)
    norm: str = Field(min_length=1, max_length=1000)
    mention_count: int = Field(default=1, ge=1)
    first_seen: Time
    last_seen: Time


class _Knowledge(_Meta):
    subject: Ref
    hash: str = Field(min_length=1, max_length=256)
    confidence: Unit
    mention_count: int = Field(default=1, ge=1)
    first_seen: Time
    last_seen: Time
    provenance: list[Ref] = Field(default_factory=list, max_length=10_000)
    valid_from: Time | None = None
    valid_to: Time | None = None


class FactIn(_Knowledge):
    attribute: str = Field(min_length=1, max_length=1000)
    value: str = Field(min_length=1, max_length=10_000)
    fact_kind: Literal["fact", "preference", "relation", "event"]
    key_hash: str = Field(min_length=1, max_length=256)
    source: Literal["tool", "user", "inferred"] = "user"
    closed_by: Ref | None = None
    memory: Ref | None = None


class TripleIn(_Knowledge):
    predicate: str = Field(min_length=1, max_length=1000)
    object: str = Field(min_length=1, max_length=10_000)
    object_entity: Ref | None = None


class LinkIn(_Meta):
    source: Ref
    target: Ref
    link_type: Literal["cites", "continues", "derived_from", "thematic", "supersedes"]
    strength: float | None = Field(default=None, allow_inf_nan=False)


class NodeIn(_Meta):
    level: int = Field(ge=1)
    parent: Ref | None = None
    members: list[Ref] = Field(default_factory=list, max_length=100_000)
    blocks: list[Ref] = Field(default_factory=list, max_length=100_000)
    member_count: int = Field(ge=0)
    created_at: Time


class SessionMarkIn(_Meta):
    session_id: str = Field(min_length=1, max_length=256)
    blocks_through: int = Field(ge=-1)
    facts_through: int = Field(ge=-1)
    open_arc: bool = False


class NightIn(_Meta):
    sessions: list[SessionMarkIn] = Field(default_factory=list, max_length=1_000_000)
    state: dict[str, Any] = Field(default_factory=dict)


_MODELS: dict[str, type[_Meta]] = {
    "block": BlockIn, "line": LineIn, "entity": EntityIn, "fact": FactIn, "triple": TripleIn, "link": LinkIn,
    "node": NodeIn, "night": NightIn,
}  # fmt: skip


def state_meta(packet_type: str, metadata: Mapping[str, Any]) -> Any:
    """The checked metadata of a state packet (:class:`InvalidContentError` naming the field)."""
    try:
        return _MODELS[packet_type].model_validate(dict(metadata))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise InvalidContentError(f"metadata.{where}: {first['msg']}") from exc


def turn_night(metadata: Mapping[str, Any]) -> TurnNightIn | None:
    """A turn packet's night marks, checked (None when it carries none)."""
    found = metadata.get("night")
    if found is None:
        return None
    try:
        return TurnNightIn.model_validate(found)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise InvalidContentError(f"metadata.night.{where}: {first['msg']}") from exc


def encode_vectors(found: Mapping[str, tuple[str, np.ndarray]]) -> dict[str, Any]:
    """Vectors as a packet carries them (§6.3): base64 float32 with their model and dimensions."""
    return {
        space: {
            "model": slug,
            "dimensions": int(vec.shape[0]),
            "encoding": "base64",
            "data": base64.b64encode(np.asarray(vec, dtype=np.float32).tobytes()).decode(),
        }
        for space, (slug, vec) in sorted(found.items())
    }


# --- export ---------------------------------------------------------------------------------------


def _packet(
    scope: Scope,
    packet_type: str,
    packet_id: str,
    at: datetime,
    content: str,
    metadata: Mapping[str, Any],
    vectors: Mapping[str, tuple[str, np.ndarray]] | None = None,
) -> dict[str, Any]:
    return {
        "packet_id": packet_id,
        "packet_type": packet_type,
        "timestamp": at.isoformat(),
        "source_scope": str(scope),
        "prose": {"content": content, "content_type": "full"},
        "vectors": encode_vectors(vectors or {}),
        "metadata": to_jsonable(dict(metadata)),
        "references": {},
    }


def _ref(value: object) -> str | None:
    return None if value is None else str(value)


async def state_packets(
    rt: Runtime, scope: Scope, tables: Sequence[str], memory_ids: Sequence[uuid.UUID] | None, exported: set[str]
) -> AsyncIterator[dict[str, Any]]:
    """The scope's consolidated state as packets (module docstring); with ``memory_ids`` only the
    blocks and facts of those memories, their lines, entities and the links among them (a merge).
    ``exported``: the ids of the turns and memories already exported (links keep to them)."""
    whole = memory_ids is None
    e, ns = scope.entity_id, scope.namespace
    async with rt.store.connection() as conn:
        blocks = await state_rows.blocks(conn, e, ns, memory_ids)
        lines = await state_rows.lines(conn, e, ns, [b["id"] for b in blocks])
        facts = await state_rows.facts(conn, e, ns, memory_ids)
        triples = await state_rows.triples(conn, e, ns) if whole else []
        wanted = {f["subject_id"] for f in facts} | {t["subject_id"] for t in triples}
        wanted |= {t["object_id"] for t in triples if t["object_id"] is not None}
        entities = await state_rows.entities(conn, e, ns, None if whole else list(wanted))
        links = await state_rows.links(conn, e, ns)
        sessions, night = await state_rows.night(conn, e, ns) if whole else ([], {})
        gone = [r["turn_id"] for r in lines if not (r["kept"] and whole)]  # a merge carries no turns
        line_vectors = await packet_rows.vectors_of(conn, e, tables, gone)
    cortex = await _cortex(rt, scope, "blocks", "lines", *(("nodes",) if whole else ()))
    for row in entities:
        yield _entity_packet(scope, row)
    for row in blocks:
        yield _block_packet(scope, row, cortex.get(("blocks", str(row["id"]))))
    for row in lines:
        deep = cortex.get(("lines", str(row["turn_id"])))
        yield _line_packet(scope, row, line_vectors.get(row["turn_id"], {}), deep)  # a kept turn's: a merge's
    for row in facts:
        yield _fact_packet(scope, row)
    for row in triples:
        yield _triple_packet(scope, row)
    if whole:
        for key, node in cortex.items():
            if key[0] == "nodes":
                yield _node_packet(scope, node)
    known = exported | {str(b["id"]) for b in blocks} | {str(r["turn_id"]) for r in lines}
    for row in links:
        if str(row["source_id"]) in known and str(row["target_id"]) in known:
            yield _link_packet(scope, row)
    if whole and (sessions or night):  # a scope no night has read has no bookkeeping to carry
        yield _night_packet(scope, sessions, night)


async def _cortex(rt: Runtime, scope: Scope, *families: str) -> dict[tuple[str, str], dict[str, Any]]:
    """The scope's cortex rows of ``families`` by ``(family, id)`` (lines by their turn's id)."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    if rt.cortex is None:
        return found
    for family in families:
        for name, _ in await rt.cortex.tables(family):
            dim = int(name.rpartition("_")[2])
            for row in await rt.cortex.rows(family, dim, scope):
                found[(family, str(row["id"]))] = row | {"_dim": dim}
    return found


def _entity_packet(scope: Scope, row: Mapping[str, Any]) -> dict[str, Any]:
    meta = {k: row[k] for k in ("name", "norm", "mention_count", "first_seen", "last_seen")}
    return _packet(scope, "entity", str(row["id"]), row["first_seen"], row["name"], meta)


def _block_packet(scope: Scope, row: Mapping[str, Any], deep: Mapping[str, Any] | None) -> dict[str, Any]:
    meta: dict[str, Any] = {
        k: row[k]
        for k in (
            "kind", "session_id", "first_turn", "last_turn", "prose", "flux_metrics", "salience_scores",
            "coherence_gain", "ties_weight", "user_tier", "arc_start_time", "arc_end_time", "session_continuity",
            "continues_from", "continued_by", "derived_from", "run_id", "created_at", "migrated_at",
        )
    }  # fmt: skip
    meta |= {
        "memory": _ref(row["memory_id"]),
        "turns": [str(t) for t in row["turn_ids"]],
        "parent_metablock": _ref(row["parent_metablock_id"]),
        "citations": [str(c) for c in row["citations"] or []],
    }
    if deep is not None and row["migrated_at"] is not None:
        meta["cortex"] = {k: deep[k] or "" for k in ("content", "gist", "prose", "extra_vectors")}
    return _packet(scope, "block", str(row["id"]), row["created_at"], row["content"], meta)


def _line_packet(
    scope: Scope,
    row: Mapping[str, Any],
    vectors: Mapping[str, tuple[str, np.ndarray]],
    deep: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """A line: its vector from the cortex when its block is there, else its own while its turn is
    gone (or its turn's, for a merge, which carries no turns)."""
    meta = {k: row[k] for k in ("session_id", "turn_number", "role", "speaker", "created_at", "metadata", "kept")}
    meta |= {"block": str(row["block_id"]), "turn": str(row["turn_id"])}
    found = dict(vectors)
    if deep is not None:
        found = {f"cortex_{deep['_dim']}": (str(deep["slug"]), np.asarray(deep["vector"], dtype=np.float32))}
    packet_id = f"line:{row['block_id']}:{row['turn_id']}"
    return _packet(scope, "line", packet_id, row["created_at"], row["content"], meta, found)


def _knowledge(row: Mapping[str, Any]) -> dict[str, Any]:
    meta = {
        k: row[k] for k in ("hash", "confidence", "mention_count", "first_seen", "last_seen", "valid_from", "valid_to")
    }
    return meta | {"subject": str(row["subject_id"]), "provenance": [str(p) for p in row["provenance"]]}


def _fact_packet(scope: Scope, row: Mapping[str, Any]) -> dict[str, Any]:
    meta = _knowledge(row) | {k: row[k] for k in ("attribute", "value", "fact_kind", "key_hash", "source")}
    meta |= {"closed_by": _ref(row["closed_by"]), "memory": _ref(row["memory_id"])}
    text = f"{row['attribute']}: {row['value']}"
    return _packet(scope, "fact", str(row["id"]), row["first_seen"], text, meta)


def _triple_packet(scope: Scope, row: Mapping[str, Any]) -> dict[str, Any]:
    meta = _knowledge(row) | {"predicate": row["predicate"], "object": row["object"]}
    meta["object_entity"] = _ref(row["object_id"])
    text = f"{row['predicate']} {row['object']}"
    return _packet(scope, "triple", str(row["id"]), row["first_seen"], text, meta)


def _link_packet(scope: Scope, row: Mapping[str, Any]) -> dict[str, Any]:
    source, target, kind = str(row["source_id"]), str(row["target_id"]), str(row["link_type"])
    meta = {"source": source, "target": target, "link_type": kind, "strength": row["strength"]}
    return _packet(scope, "link", f"link:{source}:{target}:{kind}", datetime.now(UTC), f"{kind}", meta)


def _node_packet(scope: Scope, row: Mapping[str, Any]) -> dict[str, Any]:
    dim, slug = row["_dim"], str(row["slug"])
    meta = {
        "level": row["level"],
        "parent": row["parent_id"] or None,
        "members": list(row["member_ids"] or []),
        "blocks": list(row["block_ids"] or []),
        "member_count": row["member_count"],
        "created_at": row["created_at"],
    }
    vectors = {
        f"cortex_{dim}": (slug, np.asarray(row["vector"], dtype=np.float32)),
        f"centroid_{dim}": (slug, np.asarray(row["centroid"], dtype=np.float32)),
    }
    return _packet(scope, "node", str(row["id"]), row["created_at"], row["summary"] or "(node)", meta, vectors)


def _night_packet(scope: Scope, sessions: Iterable[Mapping[str, Any]], state: Mapping[str, Any]) -> dict[str, Any]:
    meta = {"sessions": [dict(s) for s in sessions], "state": dict(state)}
    packet_id = f"night:{scope.entity_id}:{scope.namespace}"
    return _packet(scope, "night", packet_id, datetime.now(UTC), f"the night's bookkeeping of {scope}", meta)
