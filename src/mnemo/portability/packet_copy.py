"""Writing a scope's consolidated state from packets: the part of an import that makes a copy whole.

Seeds: memory-architecture §6 (bifocal packets), §3.4 (blocks and their lines), §5 (the cortex
and its tree), archive-adr §9 (facts and triples with their validity) and "Logical Domain
Isolation" (a fork starts as a copy of its parent).

Runs inside the import's transaction (:mod:`mnemo.portability.packet_import`), after its turns and
memories: every id a state packet names (a block, a turn, a memory, an entity, a fact) becomes
the id of what that packet made here, and what the packets do not carry is dropped (a link to
an item left out, a block's reference to a block not exported). Entities are matched by their
normalised name, and an open fact or triple the scope already holds open is that one; the
night's bookkeeping fills only what the scope does not have of its own. A block in the cortex
at its source is in the cortex here: its memory's and lines' vectors leave PostgreSQL as the
migrate stage's do, and the cortex rows (block, lines, tree nodes) are returned for the caller
to write just before its commit (:func:`write_cortex`), the way the migrate stage orders its
two stores. Each state packet written is recorded in ``mnemo.packet_items``, so a re-import
skips it.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np
import psycopg

from mnemo._runtime import Runtime
from mnemo.models import Scope, uuid7
from mnemo.portability.packet_format import PacketIn, decode_vector
from mnemo.portability.packet_state import (
    BlockIn,
    CortexBlockIn,
    EntityIn,
    FactIn,
    LineIn,
    LinkIn,
    NightIn,
    NodeIn,
    TripleIn,
    state_meta,
)
from mnemo.store import copy_state as state_rows
from mnemo.store import links as link_rows
from mnemo.store import snapshots as backup_rows
from mnemo.store import tiers
from mnemo.store import vectors as vector_rows

__all__ = ["CortexRows", "StateWritten", "undo_cortex", "write_cortex", "write_state"]


@dataclass(slots=True)
class CortexRows:
    """The cortex rows an import writes just before its commit, by ``(family, dim)``."""

    rows: dict[tuple[str, int], list[dict[str, Any]]] = field(default_factory=dict)
    blocks: list[str] = field(default_factory=list)

    def add(self, family: str, dim: int, row: dict[str, Any]) -> None:
        self.rows.setdefault((family, dim), []).append(row)


@dataclass(slots=True)
class StateWritten:
    """What :func:`write_state` wrote: the items the packets became, counts by type, cortex rows."""

    made: dict[str, uuid.UUID] = field(default_factory=dict)
    counts: Counter[str] = field(default_factory=Counter)
    cortex: CortexRows = field(default_factory=CortexRows)


@dataclass(slots=True)
class _Ctx:
    rt: Runtime
    scope: Scope
    conn: psycopg.AsyncConnection
    made: dict[str, uuid.UUID]
    """Source id -> id here, for every packet written so far (and each line's turn)."""
    vectors: Mapping[str, np.ndarray]
    """Each memory packet's vector of the active model."""
    out: StateWritten
    now: datetime
    lines: frozenset[str]
    """The source ids of the lines whose raw turns did not come along (items of their own here)."""
    in_cortex: dict[uuid.UUID, uuid.UUID] = field(default_factory=dict)
    """Blocks (ids here) in the cortex, with their memories."""

    def get(self, ref: str | None) -> uuid.UUID | None:
        return None if ref is None else self.made.get(ref)


def line_ids(packets: Sequence[PacketIn], made: Mapping[str, uuid.UUID]) -> dict[str, uuid.UUID]:
    """New ids for the lines whose raw turns did not come along (source turn id -> id here), made
    before the memories are written so that their provenance names the lines."""
    ids: dict[str, uuid.UUID] = {}
    for p in packets:
        if p.packet_type == "line":
            turn = str(p.metadata.get("turn", ""))
            if turn and turn not in made and turn not in ids:
                ids[turn] = uuid7()
    return ids


async def write_state(
    conn: psycopg.AsyncConnection,
    rt: Runtime,
    scope: Scope,
    packets: Sequence[PacketIn],
    made: Mapping[str, uuid.UUID],
    vectors: Mapping[str, np.ndarray],
    held: Sequence[str] = (),
    lines: Mapping[str, uuid.UUID] | None = None,
) -> StateWritten:
    """Write the state packets into ``scope`` in the caller's transaction (module docstring).
    ``made``: what the import's turns and memories became; ``held``: memory packets the scope
    already held (their blocks are not copied again); ``lines``: :func:`line_ids`, when the caller
    made them before writing its memories."""
    lines = line_ids(packets, made) if lines is None else lines
    ctx = _Ctx(rt, scope, conn, dict(made) | dict(lines), vectors, StateWritten(), datetime.now(UTC), frozenset(lines))
    by_type: dict[str, list[PacketIn]] = {}
    for p in packets:
        by_type.setdefault(p.packet_type, []).append(p)
    skip = set(held)
    for p in by_type.get("entity", []):
        await _entity(ctx, p, state_meta("entity", p.metadata))
    await _blocks(ctx, [(p, state_meta("block", p.metadata)) for p in by_type.get("block", [])], skip)
    await _lines(ctx, [(p, state_meta("line", p.metadata)) for p in by_type.get("line", [])])
    await _knowledge(ctx, by_type.get("fact", []), by_type.get("triple", []))
    for p in by_type.get("node", []):
        _node(ctx, p, state_meta("node", p.metadata))
    _remap_nodes(ctx)
    await _links(ctx, [(p, state_meta("link", p.metadata)) for p in by_type.get("link", [])])
    for p in by_type.get("night", []):
        await _night(ctx, p, state_meta("night", p.metadata))
    written = [(p.packet_id, p.packet_type, ctx.made[p.packet_id]) for p in packets if p.packet_id in ctx.made]
    await state_rows.record_items(conn, scope.entity_id, scope.namespace, written)
    ctx.out.made = {k: v for k, v in ctx.made.items() if k not in made}  # and each line's source turn id
    return ctx.out


async def _entity(ctx: _Ctx, p: PacketIn, meta: EntityIn) -> None:
    row = meta.model_dump() | {"id": uuid7()}
    ctx.made[p.packet_id] = await state_rows.insert_entity(ctx.conn, ctx.scope.entity_id, ctx.scope.namespace, row)
    ctx.out.counts["entity"] += 1


async def _blocks(ctx: _Ctx, blocks: Sequence[tuple[PacketIn, BlockIn]], held: set[str]) -> None:
    """The blocks (their ids first, so their references to each other resolve), then the cortex
    marks of those that were in the cortex at their source. Without a cortex here (or without
    the block's vector of the active model) such a block stays in the hippocampus."""
    blocks = [(p, m) for p, m in blocks if m.memory is None or (m.memory in ctx.made and m.memory not in held)]
    for p, _ in blocks:
        ctx.made[p.packet_id] = uuid7()
    rows = [_block_row(ctx, p, m) for p, m in blocks]
    await state_rows.insert_blocks(ctx.conn, ctx.scope.entity_id, ctx.scope.namespace, rows)
    for (p, meta), row in zip(blocks, rows, strict=True):
        ctx.out.counts["block"] += 1
        if row["migrated_at"] is None:
            continue
        pair = (row["id"], row["memory_id"])
        await tiers.mark_migrated(ctx.conn, ctx.scope.entity_id, ctx.scope.namespace, [pair], row["migrated_at"])
        ctx.in_cortex[row["id"]] = row["memory_id"]
        vector = ctx.vectors[meta.memory or ""]
        ctx.out.cortex.add("blocks", int(vector.shape[0]), _cortex_block(ctx, row, meta, vector, p.prose.content))
        ctx.out.cortex.blocks.append(str(row["id"]))


def _deep(ctx: _Ctx, m: BlockIn) -> bool:
    """Whether a block that was in the cortex at its source goes to the cortex here."""
    cortex = ctx.rt.cortex is not None and ctx.rt.settings.cortex
    return cortex and m.migrated_at is not None and m.memory is not None and m.memory in ctx.vectors


def _block_row(ctx: _Ctx, p: PacketIn, m: BlockIn) -> dict[str, Any]:
    turns = [ctx.made.setdefault(t, uuid7()) for t in m.turns]  # a turn gone at the source lives on as a line
    return {
        "id": ctx.made[p.packet_id], "kind": m.kind, "session_id": m.session_id, "first_turn": m.first_turn,
        "last_turn": m.last_turn, "turn_ids": turns, "prose": m.prose, "content": p.prose.content,
        "flux_metrics": m.flux_metrics, "salience_scores": m.salience_scores, "coherence_gain": m.coherence_gain,
        "ties_weight": m.ties_weight, "user_tier": m.user_tier, "arc_start_time": m.arc_start_time,
        "arc_end_time": m.arc_end_time, "session_continuity": m.session_continuity,
        "parent_metablock_id": ctx.get(m.parent_metablock), "continues_from": ctx.get(m.continues_from),
        "continued_by": ctx.get(m.continued_by), "derived_from": ctx.get(m.derived_from),
        "citations": [str(ctx.made[c]) for c in m.citations if c in ctx.made], "memory_id": ctx.get(m.memory),
        "run_id": m.run_id, "created_at": m.created_at, "migrated_at": m.migrated_at if _deep(ctx, m) else None,
    }  # fmt: skip


def _cortex_block(ctx: _Ctx, row: Mapping[str, Any], m: BlockIn, vector: np.ndarray, content: str) -> dict[str, Any]:
    """The block as the cortex keeps it (:func:`mnemo.cortex.block_migration._block_row`), ids of this scope."""
    deep = m.cortex or CortexBlockIn(content=content, prose=json.dumps(m.prose, default=str))
    references = {
        "citations": row["citations"],
        "derived_from": _text(row["derived_from"]),
        "continues_from": _text(row["continues_from"]),
        "continued_by": _text(row["continued_by"]),
        "parent_metablock_id": _text(row["parent_metablock_id"]),
    }
    return {
        "entity_id": ctx.scope.entity_id, "namespace": ctx.scope.namespace, "id": str(row["id"]),
        "memory_id": str(row["memory_id"]), "slug": ctx.rt.slug, "vector": vector.astype(np.float32).tolist(),
        "session_id": m.session_id, "kind": m.kind, "first_turn": m.first_turn, "last_turn": m.last_turn,
        "turn_ids": [str(t) for t in row["turn_ids"]], "content": deep.content, "gist": deep.gist,
        "prose": deep.prose, "flux_metrics": json.dumps(m.flux_metrics, default=str),
        "salience_scores": json.dumps(m.salience_scores, default=str), "coherence_gain": m.coherence_gain,
        "ties_weight": m.ties_weight, "references": json.dumps(references, default=str),
        "arc_start_time": m.arc_start_time.astimezone(UTC), "arc_end_time": m.arc_end_time.astimezone(UTC),
        "migrated_at": (m.migrated_at or ctx.now).astimezone(UTC), "extra_vectors": deep.extra_vectors,
    }  # fmt: skip


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def _active(ctx: _Ctx, p: PacketIn) -> np.ndarray | None:
    """The packet's vector of the active model, if it carries one (Dimension Lock)."""
    for space, vector in p.vectors.items():
        if vector.model == str(ctx.rt.slug) and vector.dimensions == ctx.rt.embeddings.dim:
            return decode_vector(space, vector)
    return None


async def _lines(ctx: _Ctx, lines: Sequence[tuple[PacketIn, LineIn]]) -> None:
    """A block's lines: a line whose raw turn came along shares its id; one whose turn did not gets
    its own postings and vector (in the cortex when its block is there, else in PostgreSQL)."""
    e, ns = ctx.scope.entity_id, ctx.scope.namespace
    rows, orphans, hot = [], [], []
    for p, m in lines:
        block = ctx.made.get(m.block)
        if block is None:
            continue
        turn = ctx.made.setdefault(m.turn, uuid7())
        ctx.made[p.packet_id] = turn
        rows.append({
            "entity_id": e, "namespace": ns, "block_id": block, "turn_id": turn, "session_id": m.session_id,
            "turn_number": m.turn_number, "role": m.role, "speaker": m.speaker, "content": p.prose.content,
            "created_at": m.created_at, "metadata": m.metadata,
        })  # fmt: skip
        ctx.out.counts["line"] += 1
        own = m.turn in ctx.lines  # its raw turn is not in this scope: the line is an item of its own
        if own and turn not in orphans:
            orphans.append(turn)
        vector = _active(ctx, p)
        if vector is None:
            continue  # quoted, not searched (as a turn not embedded yet)
        if block in ctx.in_cortex:
            ctx.out.cortex.add("lines", int(vector.shape[0]), _cortex_line(ctx, block, rows[-1], vector))
        elif own:
            hot.append((e, ns, turn, "line", ctx.rt.slug, vector))
    await tiers.insert_lines(ctx.conn, rows)
    await state_rows.line_postings(ctx.conn, e, ns, orphans)
    await vector_rows.upsert_vectors(ctx.conn, ctx.rt.table, list({r[2]: r for r in hot}.values()))


def _cortex_line(ctx: _Ctx, block: uuid.UUID, row: Mapping[str, Any], vector: np.ndarray) -> dict[str, Any]:
    return {
        "entity_id": ctx.scope.entity_id, "namespace": ctx.scope.namespace, "id": str(row["turn_id"]),
        "block_id": str(block), "memory_id": str(ctx.in_cortex[block]), "slug": ctx.rt.slug,
        "vector": vector.astype(np.float32).tolist(), "turn_number": row["turn_number"], "role": row["role"],
        "speaker": row["speaker"], "content": row["content"], "created_at": row["created_at"].astimezone(UTC),
    }  # fmt: skip


async def _knowledge(ctx: _Ctx, facts: Sequence[PacketIn], triples: Sequence[PacketIn]) -> None:
    """Facts (ids first, so ``closed_by`` resolves) and triples, with their validity; one whose
    subject entity did not come along is dropped."""
    checked = [(p, state_meta("fact", p.metadata)) for p in facts]
    ids = {p.packet_id: uuid7() for p, m in checked if m.subject in ctx.made}
    scope = {"entity_id": ctx.scope.entity_id, "namespace": ctx.scope.namespace}
    for p, m in checked:
        if p.packet_id not in ids:
            continue
        row = scope | _common(ctx, m) | {
            "id": ids[p.packet_id], "attribute": m.attribute, "value": m.value, "fact_kind": m.fact_kind,
            "key_hash": m.key_hash, "source": m.source, "closed_by": ids.get(m.closed_by or ""),
            "memory_id": ctx.get(m.memory),
        }  # fmt: skip
        ctx.made[p.packet_id] = await state_rows.insert_fact(ctx.conn, row)
        ctx.out.counts["fact"] += 1
    for p in triples:
        t: TripleIn = state_meta("triple", p.metadata)
        if t.subject not in ctx.made:
            continue
        row = scope | _common(ctx, t) | {
            "id": uuid7(), "predicate": t.predicate, "object": t.object, "object_id": ctx.get(t.object_entity),
        }  # fmt: skip
        ctx.made[p.packet_id] = await state_rows.insert_triple(ctx.conn, row)
        ctx.out.counts["triple"] += 1


def _common(ctx: _Ctx, m: FactIn | TripleIn) -> dict[str, Any]:
    return {
        "subject_id": ctx.made[m.subject], "hash": m.hash, "confidence": m.confidence,
        "mention_count": m.mention_count, "first_seen": m.first_seen, "last_seen": m.last_seen,
        "provenance": [ctx.made[x] for x in m.provenance if x in ctx.made], "valid_from": m.valid_from,
        "valid_to": m.valid_to,
    }  # fmt: skip


def _node(ctx: _Ctx, p: PacketIn, m: NodeIn) -> None:
    """A node of the cortex tree (ids first: its parent and members may come later)."""
    vector = _active(ctx, p)
    if vector is None or ctx.rt.cortex is None or not ctx.rt.settings.cortex:
        return  # another model's tree, or no cortex here: the next night's cluster stage builds one
    ctx.made[p.packet_id] = node = ctx.made.get(p.packet_id) or uuid7()
    centroid = next(
        (decode_vector(s, v) for s, v in p.vectors.items() if s.startswith("centroid_") and v.model == ctx.rt.slug),
        vector,
    )
    ctx.out.cortex.add("nodes", int(vector.shape[0]), {
        "entity_id": ctx.scope.entity_id, "namespace": ctx.scope.namespace, "id": str(node), "level": m.level,
        "parent_id": m.parent, "slug": ctx.rt.slug, "vector": vector.astype(np.float32).tolist(),
        "centroid": centroid.astype(np.float32).tolist(), "summary": p.prose.content, "member_ids": list(m.members),
        "block_ids": list(m.blocks), "member_count": m.member_count, "created_at": m.created_at.astimezone(UTC),
    })  # fmt: skip
    ctx.out.counts["node"] += 1


def _remap_nodes(ctx: _Ctx) -> None:
    """The tree nodes' parents and members, as ids of this scope (once every node has its id)."""
    for (family, _), rows in ctx.out.cortex.rows.items():
        if family != "nodes":
            continue
        for row in rows:
            parent = ctx.get(row["parent_id"])
            row["parent_id"] = str(parent) if parent is not None else ""
            row["member_ids"] = [str(ctx.made[m]) for m in row["member_ids"] if m in ctx.made]
            row["block_ids"] = [str(ctx.made[b]) for b in row["block_ids"] if b in ctx.made]


async def _links(ctx: _Ctx, links: Sequence[tuple[PacketIn, LinkIn]]) -> None:
    """Links between items that came along (the others are dropped)."""
    rows: list[tuple[uuid.UUID, uuid.UUID, str, float | None]] = []
    for p, m in links:
        source, target = ctx.get(m.source), ctx.get(m.target)
        if source is None or target is None:
            continue
        rows.append((source, target, m.link_type, m.strength))
        ctx.made[p.packet_id] = source
    await link_rows.insert_links(ctx.conn, ctx.scope.entity_id, ctx.scope.namespace, rows)
    ctx.out.counts["link"] += len(rows)


async def _night(ctx: _Ctx, p: PacketIn, m: NightIn) -> None:
    sessions = [s.model_dump() for s in m.sessions]
    await state_rows.restore_night(ctx.conn, ctx.scope.entity_id, ctx.scope.namespace, sessions, m.state)
    ctx.made[p.packet_id] = uuid7()
    ctx.out.counts["night"] += 1


async def write_cortex(rt: Runtime, conn: psycopg.AsyncConnection, scope: Scope, rows: CortexRows) -> None:
    """Upsert the import's cortex rows (idempotent, keyed by id), inside the import's transaction and
    just before it commits; a backup copies the cortex only between such transactions."""
    if not rows.rows or rt.cortex is None:
        return
    await backup_rows.share_cortex(conn)
    for (family, dim), found in sorted(rows.rows.items()):
        await rt.cortex.upsert(family, dim, found)


async def undo_cortex(rt: Runtime, scope: Scope, rows: CortexRows) -> None:
    """Remove what :func:`write_cortex` wrote when the import's transaction did not commit."""
    if not rows.rows or rt.cortex is None:
        return
    for (family, dim), found in rows.rows.items():
        await rt.cortex.delete_rows(family, dim, scope, [str(r["id"]) for r in found])
