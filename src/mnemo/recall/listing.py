"""Browsing a scope (``GET /v1/memories``, ``GET /v1/items/{id}``): its memories page by page, and
one turn or memory by id. Reads only: no access traces, no weight changes."""

from __future__ import annotations

import uuid

from mnemo._runtime import Runtime
from mnemo._validate import check_id
from mnemo.errors import InvalidInputError, UnknownItemError
from mnemo.models import Item, MemoryPage, Scope
from mnemo.store import memories as memory_rows

__all__ = ["MAX_PAGE", "item", "memories"]

MAX_PAGE = 200


async def memories(rt: Runtime, scope: Scope, *, limit: int = 50, cursor: uuid.UUID | None = None) -> MemoryPage:
    """Up to ``limit`` memories of ``scope`` (any status), newest first, after ``cursor`` (the
    previous page's next cursor), with the next cursor (None: this was the last page).
    A scope that holds nothing yet is an empty page, not an error."""
    if not 1 <= limit <= MAX_PAGE:
        raise InvalidInputError(f"limit must be 1-{MAX_PAGE}, got {limit}")
    async with rt.store.connection() as conn:
        rows = await memory_rows.list_memories(conn, scope.entity_id, scope.namespace, limit=limit + 1, before=cursor)
    page = rows[:limit]
    following = page[-1].id if len(rows) > limit else None
    return MemoryPage(tuple(page), following)


async def item(rt: Runtime, scope: Scope, item_id: uuid.UUID | str) -> Item:
    """One turn or memory of ``scope`` (``type``: ``turn`` or ``memory``); :class:`UnknownItemError`
    when the scope holds no such item (the same answer whether the id exists elsewhere or not)."""
    wanted = check_id(item_id, label="item id")
    async with rt.store.connection() as conn:
        row = await memory_rows.find_item(conn, scope.entity_id, scope.namespace, wanted)
    if row is None:
        raise UnknownItemError(f"no item {wanted} in scope {scope}")
    return row
