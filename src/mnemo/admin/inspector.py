"""What the inspector reads and the actions it takes, for one reader at a time (issue 17).

Seeds: archive-adr §2 (traces) and §7 ("Sigil Scope": a reader sees its own
scopes and those granted to it; a scope it may not read looks exactly like one
that does not exist), §9 (staged curation, applied by a deliberate act).
Reads have no side effects; every action is written to ``traces.actions``. The store's typed
rows become plain mappings here, for the inspector's pages (:func:`dataclasses.asdict`).
"""

from __future__ import annotations

import uuid
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any, ClassVar

from mnemo._runtime import Runtime
from mnemo._validate import check_id
from mnemo.errors import AccessDeniedError, UnknownItemError, UnknownScopeError
from mnemo.models import Scope
from mnemo.store import inspection as inspect_rows
from mnemo.store import scopes as scope_rows
from mnemo.store import status as status_rows

__all__ = ["ENTITIES", "PAGE", "Inspector"]

PAGE = 50
ENTITIES = 100  # the facts page lists this many of a scope's entities, most mentioned first


@dataclass(frozen=True, slots=True)
class Inspector:
    """The inspector's view of the archive for ``reader`` (an entity; ``namespace`` when its token
    is limited to one)."""

    _rt: Runtime
    reader: str
    namespace: str | None = None
    ENTITIES: ClassVar[int] = ENTITIES

    async def scopes(self) -> list[dict[str, Any]]:
        async with self._rt.store.connection() as conn:
            found = await inspect_rows.visible_scopes(conn, self.reader)
        return [asdict(s) for s in found if self.namespace is None or not s.owner or s.namespace == self.namespace]

    async def readable(self, scope: Scope) -> bool:
        """Whether ``reader`` may read ``scope``; :class:`UnknownScopeError` when not, the same
        whether it exists or not."""
        if self.namespace is not None and scope.entity_id == self.reader and scope.namespace != self.namespace:
            raise UnknownScopeError(f"no scope {scope} here")
        async with self._rt.store.connection() as conn:
            exists, allowed = await scope_rows.read_access(conn, scope.entity_id, scope.namespace, self.reader)
        if not (exists and allowed):
            raise UnknownScopeError(f"no scope {scope} here")
        return scope.entity_id == self.reader

    async def owned(self, scope: Scope) -> None:
        """Actions are the owner's alone (a grant lets read, never change)."""
        if not await self.readable(scope):
            raise AccessDeniedError(f"only {scope.entity_id!r} may change scope {scope}; a grant lets you read it")

    async def queue(self) -> dict[str, int]:
        """Background jobs by status (the whole archive's: workers serve every scope)."""
        async with self._rt.store.connection() as conn:
            return dict(await status_rows.queue_depth(conn))

    async def overview(self, scope: Scope) -> dict[str, Any]:
        await self.readable(scope)
        async with self._rt.store.connection() as conn:
            counts = await inspect_rows.scope_counts(conn, scope.entity_id, scope.namespace)
            runs = await inspect_rows.night_runs(conn, scope.entity_id, scope.namespace, 5)
        return {"counts": asdict(counts), "runs": [asdict(r) for r in runs]}

    async def memories(
        self, scope: Scope, *, before: tuple[datetime, uuid.UUID] | None = None, **filters: Any
    ) -> tuple[list[dict[str, Any]], tuple[datetime, uuid.UUID] | None]:
        """One page of memories and the key of the next page (None: the last one)."""
        await self.readable(scope)
        async with self._rt.store.connection() as conn:
            rows = await inspect_rows.browse(
                conn, scope.entity_id, scope.namespace, before=before, limit=PAGE + 1, **filters
            )
        page = rows[:PAGE]
        return [asdict(r) for r in page], ((page[-1].created_at, page[-1].id) if len(rows) > PAGE else None)

    async def memory(self, scope: Scope, memory_id: uuid.UUID | str) -> dict[str, Any]:
        await self.readable(scope)
        wanted = check_id(memory_id, label="memory id")
        async with self._rt.store.connection() as conn:
            row = await inspect_rows.memory(conn, scope.entity_id, scope.namespace, wanted)
            if row is None:
                raise UnknownItemError(f"no memory {wanted} in scope {scope}")
            links = await inspect_rows.links_of(conn, scope.entity_id, scope.namespace, wanted)
        return asdict(row) | {"links": [asdict(link) for link in links]}

    async def episodes(self, scope: Scope, before: datetime | None = None) -> list[dict[str, Any]]:
        await self.readable(scope)
        async with self._rt.store.connection() as conn:
            return [asdict(b) for b in await inspect_rows.blocks(conn, scope.entity_id, scope.namespace, before, PAGE)]

    async def episode(self, scope: Scope, block_id: uuid.UUID | str) -> dict[str, Any]:
        await self.readable(scope)
        wanted = check_id(block_id, label="episode id")
        async with self._rt.store.connection() as conn:
            row = await inspect_rows.block(conn, scope.entity_id, scope.namespace, wanted)
            if row is None:
                raise UnknownItemError(f"no episode {wanted} in scope {scope}")
            curve = await inspect_rows.turn_curve(conn, scope.entity_id, scope.namespace, wanted, list(row["turn_ids"]))
            row["turns"] = [asdict(p) for p in curve]
        return row

    async def entities(self, scope: Scope) -> list[dict[str, Any]]:
        """The scope's :data:`ENTITIES` most mentioned entities, for the facts page to start from."""
        await self.readable(scope)
        async with self._rt.store.connection() as conn:
            return [asdict(e) for e in await inspect_rows.entities(conn, scope.entity_id, scope.namespace, ENTITIES)]

    async def audit(
        self, scope: Scope, *, what: str, enforced: bool | None, reason: str | None
    ) -> list[dict[str, Any]]:
        await self.readable(scope)
        async with self._rt.store.connection() as conn:
            rows = await inspect_rows.audit(
                conn, scope.entity_id, scope.namespace, what=what, enforced=enforced, reason=reason, limit=200
            )
        return [asdict(r) for r in rows]

    async def curation(self, scope: Scope) -> list[dict[str, Any]]:
        await self.readable(scope)
        async with self._rt.store.connection() as conn:
            return [asdict(v) for v in await inspect_rows.curation(conn, scope.entity_id, scope.namespace)]

    # --- actions (the owner's; each one audited) ---------------------------------------------

    async def anchor(self, scope: Scope, memory_id: uuid.UUID | str, anchored: bool) -> None:
        await self.owned(scope)
        wanted = check_id(memory_id, label="memory id")
        async with self._rt.store.transaction() as conn:
            if not await inspect_rows.set_anchored(conn, scope.entity_id, scope.namespace, wanted, anchored):
                raise UnknownItemError(f"no memory {wanted} in scope {scope}")
            action = "anchor" if anchored else "unanchor"
            await inspect_rows.record_action(conn, scope.entity_id, scope.namespace, wanted, action, self.reader)

    async def audited(self, scope: Scope, item_id: uuid.UUID | None, action: str, detail: dict[str, Any]) -> None:
        """Record an action done through the archive's own API (forget, supersede, apply)."""
        async with self._rt.store.transaction() as conn:
            await inspect_rows.record_action(
                conn, scope.entity_id, scope.namespace, item_id, action, self.reader, detail
            )
