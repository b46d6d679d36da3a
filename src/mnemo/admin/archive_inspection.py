"""Reading an archive item by item: pages of memories, one item, a weight history, the cortex's
tree, the inspector and the benchmarks' probes (issue 41 item 1).

:class:`Inspect` is ``archive.inspect``; these reads have no side effects.
"""

from __future__ import annotations

import uuid

from mnemo._runtime import Runtime
from mnemo.access import control
from mnemo.admin.inspector import Inspector
from mnemo.admin.probes import Probes
from mnemo.cortex import tree as cortex_tree
from mnemo.models import Database, Item, Maturity, MemoryHistory, MemoryPage, Scope, TreeNode
from mnemo.night import consolidated_reads
from mnemo.recall import history, listing
from mnemo.store.pool import redact

__all__ = ["Inspect"]


class Inspect:
    """Side-effect-free reads of an open archive: ``archive.inspect``."""

    MAX_PAGE: int = listing.MAX_PAGE
    """The longest page :meth:`memories` returns."""

    def __init__(self, runtime: Runtime) -> None:
        self._rt = runtime

    async def memories(self, scope: Scope, *, limit: int = 50, cursor: uuid.UUID | None = None) -> MemoryPage:
        """Up to ``limit`` (at most :attr:`MAX_PAGE`) of ``scope``'s memories, any status, newest
        first, after ``cursor`` (the previous page's ``next_cursor``); reads only. A scope that
        holds nothing yet is an empty page."""
        await self._rt.uses.settled(scope)  # what its recalls used is written (issue 42)
        return await listing.memories(self._rt, scope, limit=limit, cursor=cursor)

    async def item(self, scope: Scope, item_id: uuid.UUID | str) -> Item:
        """One turn or memory of ``scope``; :class:`~mnemo.errors.UnknownItemError` when the scope
        holds no such item (the same answer whether the id exists elsewhere or not)."""
        await self._rt.uses.settled(scope)  # what its recalls used is written (issue 42)
        return await listing.item(self._rt, scope, item_id)

    async def why(self, scope: Scope, memory_id: uuid.UUID | str) -> MemoryHistory:
        """A memory's weight history from the audit log (``mnemo why``)."""
        await self._rt.uses.settled(scope)  # what its recalls used is written (issue 42)
        return await history.why(self._rt, scope, memory_id)

    async def cortex_tree(self, scope: Scope) -> list[TreeNode]:
        """``scope``'s RAPTOR tree in the cortex (``mnemo cortex tree``), top levels first; empty
        until a night has migrated blocks and clustered them."""
        await consolidated_reads.owned(self._rt, scope)
        return await cortex_tree.read_tree(self._rt, scope)

    async def maturity(self, scope: Scope) -> Maturity:
        """``scope``'s live memories and identity density: what an agent's escalation threshold
        follows (cognitive-plan §3.5)."""
        return await control.maturity(self._rt, scope)

    def inspector(self, entity_id: str, namespace: str | None = None) -> Inspector:
        """The inspector's reads (``/ui``) for ``entity_id``: its own scopes (only ``namespace``
        when given) and those it was granted."""
        return Inspector(self._rt, entity_id, namespace)

    def probes(self) -> Probes:
        """Measuring reads for the benchmarks (``mnemo bench``), never for serving."""
        return Probes(self._rt)

    @property
    def database(self) -> Database:
        """The database this archive uses (embedded, or ``MNEMO_DATABASE_URL``)."""
        return Database(self._rt.store.url, redact(self._rt.store.url), self._rt.store.embedded)
