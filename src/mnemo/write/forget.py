"""Forgetting: one item, or a whole scope, from every chamber in one transaction.

Seed: archive-adr §7 ("Sigil Scope": the owner controls their memory) and
memory-architecture §9 (nothing derived from a forgotten item survives it: the
blocks, facts and traces that copied it go too), DESIGN §9 (forgetting reaches
the cortex, old LanceDB versions included).
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable

import psycopg

from mnemo._runtime import Runtime
from mnemo._validate import check_id, check_process
from mnemo.errors import UnknownItemError, UnknownScopeError
from mnemo.models import Scope
from mnemo.store import forget_rows, tiers
from mnemo.store import read_index as index_rows
from mnemo.store import scopes as scope_rows
from mnemo.store import snapshots as backup_rows

__all__ = ["forget", "forget_process", "purge", "purge_entity"]


async def forget(rt: Runtime, scope: Scope, item_id: uuid.UUID | str) -> dict[str, int]:
    """Remove one turn or memory and everything derived from it; rows removed per place."""
    item = check_id(item_id, label="item id")

    async def chosen(conn: psycopg.AsyncConnection) -> list[uuid.UUID]:
        if not await forget_rows.item_kinds(conn, scope.entity_id, scope.namespace, [item]):
            raise UnknownItemError(f"no turn or memory {item} in scope {scope}")
        return [item]

    return await _forget(rt, scope, chosen)


async def forget_process(rt: Runtime, scope: Scope, process: str) -> dict[str, int]:
    """Remove every turn and memory that ``process`` wrote in ``scope``, and what was derived from
    them ("purge what the simulation wrote"); rows removed per place (none: nothing was written)."""
    name = check_process(process)

    async def chosen(conn: psycopg.AsyncConnection) -> list[uuid.UUID]:
        return await forget_rows.written_by(conn, scope.entity_id, scope.namespace, name)

    return await _forget(rt, scope, chosen)


async def _forget(
    rt: Runtime, scope: Scope, choose: Callable[[psycopg.AsyncConnection], Awaitable[list[uuid.UUID]]]
) -> dict[str, int]:
    # The cortex lock (shared) spans both stores: a backup never sees one side done without the other.
    async with rt.store.connection() as conn, backup_rows.cortex_writes(conn):
        async with conn.transaction():
            chosen = await choose(conn)
            if not chosen:
                return {}
            items = await forget_rows.derived_items(conn, scope.entity_id, scope.namespace, chosen)
            migrated = await tiers.migrated_blocks_of(conn, scope.entity_id, scope.namespace, items)
            removed = await forget_rows.forget_items(conn, scope.entity_id, scope.namespace, items)
            await index_rows.forget_changes(conn, scope.entity_id, scope.namespace, items)
        rt.tokens().drop(scope.entity_id, items)
        rt.indexes.drop(scope.entity_id, scope.namespace)
        if migrated and rt.cortex is not None:
            # After the commit: a crash here leaves cortex rows no hippocampus row names, which no
            # recall can hydrate and the next night's migrate stage removes (cortex.migrate.reconcile).
            await rt.cortex.delete_ids(scope, [str(b) for b in migrated])
            removed["cortex_blocks"] = len(migrated)
    return removed


async def purge(rt: Runtime, scope: Scope) -> dict[str, int]:
    """Remove a whole scope; rows removed per place."""
    async with rt.store.connection() as conn, backup_rows.cortex_writes(conn):
        async with conn.transaction():
            exists, _ = await scope_rows.read_access(conn, scope.entity_id, scope.namespace, scope.entity_id)
            if not exists:
                raise UnknownScopeError(f"scope {scope} does not exist")
            removed = await forget_rows.purge_scope(conn, scope.entity_id, scope.namespace)
        rt.tokens().drop_scope(scope.entity_id, scope.namespace)
        rt.indexes.drop(scope.entity_id, scope.namespace)
        await _purge_cortex(rt, [scope])
    return removed


async def _purge_cortex(rt: Runtime, scopes: list[Scope]) -> None:
    """The scopes' rows leave the cortex and its old versions (no deleted text stays on disk)."""
    if rt.cortex is None:
        return
    for scope in scopes:
        await rt.cortex.delete(scope)


async def purge_entity(rt: Runtime, entity_id: str) -> dict[str, int]:
    """Remove every scope of ``entity_id`` (all its namespaces) in one transaction; rows removed
    per place, summed over the scopes (``scopes`` counts the namespaces purged)."""
    entity = Scope(entity_id).entity_id  # validated as a scope validates it
    removed: dict[str, int] = {}
    async with rt.store.connection() as conn, backup_rows.cortex_writes(conn):
        async with conn.transaction():
            namespaces = await scope_rows.entity_namespaces(conn, entity)
            if not namespaces:
                raise UnknownScopeError(f"entity {entity!r} has no scope")
            for namespace in namespaces:
                for place, n in (await forget_rows.purge_scope(conn, entity, namespace)).items():
                    removed[place] = removed.get(place, 0) + n
        rt.tokens().drop_scope(entity)
        rt.indexes.drop(entity)
        await _purge_cortex(rt, [Scope(entity, ns) for ns in namespaces])
    return removed
