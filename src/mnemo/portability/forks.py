"""Forks: speculative timelines that branch off a scope and never write back on their own.

Seeds: archive-adr "Logical Domain Isolation" (a simulation works in its own
domain; what it produces reaches the main one only by a deliberate act) and
§4 (attribution: what the fork wrote is marked with its process). A fork is a
namespace of the same entity that starts as a copy of its parent, made of the
parent's bifocal packets (:mod:`mnemo.portability.packet_format`: same vectors, provenance kept
in each item's metadata), its consolidated state included (:mod:`mnemo.portability.packet_state`:
blocks and their lines in the same tier, facts and triples, the cortex tree, links, the
night's bookkeeping), so it recalls as its parent does and its first night makes nothing
the parent's nights made; everything done in it stays in it. ``discard`` drops
it; ``merge`` brings chosen memories back to the parent as packets, each
recording the fork item it came from, with each memory's block (and lines) and fact (and
entity) and the links among them. A fork and a merge are each written in
one transaction (:mod:`mnemo.portability.packet_import`): whole, or not at all.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from mnemo._runtime import Runtime
from mnemo._validate import check_id
from mnemo.errors import InvalidContentError, UnknownScopeError
from mnemo.models import PacketImport, Scope
from mnemo.portability import packet_format as _packets
from mnemo.portability import packet_import
from mnemo.store import packets as packet_rows
from mnemo.store import scopes as scope_rows
from mnemo.write import forget as forget_path

__all__ = ["discard", "fork", "merge"]


async def fork(rt: Runtime, scope: Scope, into: str) -> tuple[Scope, PacketImport]:
    """Copy ``scope`` into the new namespace ``into`` of the same entity (which must not exist): the
    namespace and everything in it are written in one transaction, so a fork is whole or absent."""
    branch = Scope(scope.entity_id, into)
    if branch == scope:
        raise InvalidContentError(f"a fork needs a namespace of its own, not {scope.namespace!r}")
    async with rt.store.connection() as conn:
        taken, _ = await scope_rows.read_access(conn, branch.entity_id, branch.namespace, branch.entity_id)
    if taken:
        raise InvalidContentError(f"namespace {into!r} already exists; fork into a new one")
    packets = [p async for p in _packets.export_packets(rt, scope, scope.entity_id)]  # UnknownScopeError first
    parsed = _packets.parse_packets((_packets.dumps(p) for p in packets), max_chars=rt.settings.max_content_chars)
    report = await packet_import.import_packets(rt, branch, parsed, process=f"fork:{into}", fork_of=scope)
    return branch, report


async def discard(rt: Runtime, branch: Scope) -> dict[str, int]:
    """Drop a fork and everything in it (:class:`UnknownScopeError` when ``branch`` is no fork)."""
    await _parent(rt, branch)
    return await forget_path.purge(rt, branch)


async def merge(rt: Runtime, branch: Scope, memory_ids: Sequence[uuid.UUID | str]) -> PacketImport:
    """Bring the fork's memories ``memory_ids`` back into its parent, with their provenance (the
    fork item each came from and that item's own origin, in the memory's metadata), each with its
    block and the block's lines, its fact and the fact's entity, and the links among them: all of
    them, in one transaction, or none. A memory whose text the parent holds as a live memory
    reinforces it instead, and its block or fact is not copied again."""
    if not memory_ids:
        raise InvalidContentError("name the fork's memories to merge")
    ids = [check_id(i, label="memory id") for i in memory_ids]
    parent = await _parent(rt, branch)
    packets = [p async for p in _packets.export_packets(rt, branch, branch.entity_id, ids=ids)]
    missing = set(map(str, ids)) - {p["packet_id"] for p in packets}
    if missing:
        raise InvalidContentError(f"no memory {sorted(missing)[0]} in fork {branch}")
    for packet in (p for p in packets if p["packet_type"] == "memory"):  # each memory names the fork it left
        packet["metadata"]["metadata"] = dict(packet["metadata"].get("metadata") or {}) | {
            "merged_from": str(branch),
        }
    parsed = _packets.parse_packets((_packets.dumps(p) for p in packets), max_chars=rt.settings.max_content_chars)
    return await packet_import.import_packets(rt, parent, parsed, process=f"merge:{branch.namespace}")


async def _parent(rt: Runtime, branch: Scope) -> Scope:
    async with rt.store.connection() as conn:
        parent = await packet_rows.fork_of(conn, branch.entity_id, branch.namespace)
    if parent is None:
        raise UnknownScopeError(f"{branch} is not a fork")
    entity, _, namespace = parent.partition("/")
    return Scope(entity, namespace)
