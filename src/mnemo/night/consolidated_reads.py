"""What the archive facade offers around the night cycle: curation, facts, belief chains.

Seeds: archive-adr §9 (staged, inspectable curation versions), the Memori-style
3NF knowledge of archive-adr §4 (``mnemo facts ENTITY`` shows current and past
values), cognitive-plan §4.2 (``why_do_i_believe`` traces an insight to its
sources).
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime

import psycopg

from mnemo._runtime import Runtime
from mnemo._validate import check_content, check_id
from mnemo.cognition.consolidation.extraction import normalise
from mnemo.errors import InvalidContentError, Remedy, UnknownItemError, UnknownScopeError
from mnemo.models import Belief, Curation, EntityFacts, Fact, Scope
from mnemo.night import curator
from mnemo.store import curation_versions as curation_rows
from mnemo.store import knowledge as knowledge_rows
from mnemo.store import links as link_rows
from mnemo.store import night_runs as run_rows
from mnemo.store import queue as queue_rows
from mnemo.store import scopes as scope_rows

__all__ = [
    "Belief",
    "Curation",
    "EntityFacts",
    "Fact",
    "apply_curation",
    "curate",
    "defer_nights",
    "facts",
    "night_scopes",
    "owned",
    "why_do_i_believe",
]


async def owned(rt: Runtime, scope: Scope) -> None:
    async with rt.store.connection() as conn:
        exists, _ = await scope_rows.read_access(conn, scope.entity_id, scope.namespace, scope.entity_id)
    if not exists:
        raise UnknownScopeError(f"scope {scope} does not exist (nothing was ever stored there)")


async def night_scopes(rt: Runtime) -> list[Scope]:
    """Every scope with turns or memories (what ``mnemo night --all`` and the scheduled night cover)."""
    async with rt.store.connection() as conn:
        return [Scope(e, n) for e, n in await queue_rows.night_scopes(conn)]


async def curate(rt: Runtime, scope: Scope, *, dry_run: bool = False, apply: bool = True) -> Curation:
    """Classify every candidate and active memory of ``scope``. ``dry_run`` writes nothing and
    shows what would change; otherwise a new numbered version is staged and, with ``apply``,
    applied in the same transaction."""
    await owned(rt, scope)
    now = datetime.now(UTC)
    async with rt.store.transaction() as conn:
        verdicts = await curator.plan(rt, conn, scope, now)
        changes = tuple(v for v in verdicts if v.changes)
        counts = curator.counts(verdicts)
        if dry_run:
            return Curation(scope, None, False, counts, changes)
        version = await curator.stage(conn, scope, verdicts, as_of=now)
        applied = apply and version is not None and await curator.apply(rt, conn, scope, version) is not None
    return Curation(scope, version, applied, counts, changes)


async def apply_curation(rt: Runtime, scope: Scope, version: int) -> int:
    """Apply a staged version; returns how many memories changed status."""
    await owned(rt, scope)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise InvalidContentError(f"a curation version is a positive integer, not {version!r}")
    async with rt.store.transaction() as conn:
        changed = await curator.apply(rt, conn, scope, version)
        if changed is None:
            state = await curation_rows.version_state(conn, scope.entity_id, scope.namespace, version)
            if state is None:
                raise UnknownItemError(f"no curation version {version} in scope {scope}")
            raise InvalidContentError(f"curation version {version} of scope {scope} is already {state}")
    return changed


async def facts(rt: Runtime, scope: Scope, entity: object) -> EntityFacts:
    """Everything known about ``entity``: current and past facts (with validity intervals) and triples.
    The name is matched with case and accents folded ("jose" finds "José"); an event is dated, not current."""
    name = check_content(entity, max_chars=512, label="entity")
    await owned(rt, scope)
    async with rt.store.connection() as conn:
        found, rows, triples = await knowledge_rows.facts_of(
            conn, scope.entity_id, scope.namespace, normalise(name) or name.casefold()
        )
    if found is None:
        raise await _no_entity(rt, scope, name)
    return EntityFacts(
        name=found.name,
        mention_count=found.mention_count,
        facts=tuple(
            Fact(
                attribute=r.attribute,
                value=r.value,
                kind=r.fact_kind,
                confidence=r.confidence,
                mention_count=r.mention_count,
                valid_from=r.valid_from,
                valid_to=_ended_at(r),
                source=r.source,
                provenance=tuple(r.provenance),
            )
            for r in rows
        ),
        triples=tuple((t.predicate, t.object, t.mention_count) for t in triples if t.valid_to is None),
    )


def _ended_at(row: knowledge_rows.FactRow) -> datetime | None:
    """When a fact stopped holding: a one-off event (a dinner out, a trip) is over when it happened, never
    a state that holds "→ now" (issue 40 item 3); a state, when it was closed."""
    if row.fact_kind == "event" and row.valid_to is None:
        return row.valid_from or row.first_seen
    return row.valid_to


async def _no_entity(rt: Runtime, scope: Scope, name: str) -> UnknownItemError:
    """The error for an entity the scope has no facts about. The night is the remedy only when
    it has turns left to read for facts: a copy made before this change, or a scope whose raw
    turns retention removed, gains nothing from one."""
    async with rt.store.connection() as conn:
        _, pending = await run_rows.pending_work(
            conn, scope.entity_id, scope.namespace, datetime.now(UTC), "facts_through", scored_only=False
        )
    said = f"no entity {name!r} in scope {scope}"
    if pending:
        return UnknownItemError(
            f"{said}: the night cycle finds entities and facts in the turns, and {pending} turns wait for it",
            remedy=Remedy("run it with", "night_cycle", (scope,)),
        )
    return UnknownItemError(
        f"{said}: the night cycle has read every turn here and found no entity of that name; a copy "
        "made by an older mnemo lacks its source's facts: fork or export the source again"
    )


async def why_do_i_believe(rt: Runtime, scope: Scope, item_id: uuid.UUID | str) -> tuple[Belief, ...]:
    """The chain an insight, narrative or fact was derived from, down to the turns."""
    item = check_id(item_id, label="memory id")
    await owned(rt, scope)
    async with rt.store.connection() as conn:
        if await link_rows.memory_kind(conn, scope.entity_id, scope.namespace, item) is None:
            raise UnknownItemError(f"no memory {item} in scope {scope}")
        rows = await link_rows.derivation(conn, scope.entity_id, scope.namespace, item)
    return tuple(
        Belief(depth=r.depth, parent=r.parent, id=r.id, kind=r.kind, content=r.content, status=r.status) for r in rows
    )


async def defer_nights(rt: Runtime) -> int:
    """Queue the night cycle of every scope with turns or memories (skipping those whose job still
    waits), for ``mnemo worker``; how many were queued."""
    queued = 0
    async with rt.store.transaction() as conn:
        for entity_id, namespace in await queue_rows.night_scopes(conn):
            if await _defer_night(conn, Scope(entity_id, namespace)) is not None:
                queued += 1
    return queued


async def _defer_night(conn: psycopg.AsyncConnection, scope: Scope) -> int | None:
    """Queue the night cycle of one scope; None when one is already waiting for it."""
    lock = "night " + json.dumps([scope.entity_id, scope.namespace])
    args = {"entity_id": scope.entity_id, "namespace": scope.namespace}
    return await queue_rows.enqueue(conn, queue_rows.NIGHT, queue_rows.NIGHT_SCOPE, args, lock=lock, queueing_lock=lock)
