"""A memory's weight history from the audit log (``mnemo why``).

Seed: cognitive-plan §3.9 (every weight change is audited with its reason) and §4.4
(safety ceilings, enforced or in shadow mode).
"""

from __future__ import annotations

import uuid

from mnemo._runtime import Runtime
from mnemo._validate import check_id
from mnemo.errors import UnknownItemError
from mnemo.models import MemoryHistory, Scope, WeightChange
from mnemo.store import dynamics as dynamic_rows

__all__ = ["why"]


async def why(rt: Runtime, scope: Scope, memory_id: uuid.UUID | str) -> MemoryHistory:
    """Every weight change of one memory of ``scope``, with its reason and the ceilings it met."""
    item = check_id(memory_id, label="memory id")
    async with rt.store.connection() as conn:
        states = await dynamic_rows.memory_states(conn, scope.entity_id, scope.namespace, [item], live_only=False)
        if item not in states:
            raise UnknownItemError(f"no memory {item} in scope {scope}")
        changes, events = await dynamic_rows.weight_history(conn, scope.entity_id, scope.namespace, item)
    row = states[item]
    fired: dict[uuid.UUID, list[str]] = {}
    for e in events:
        fired.setdefault(e.change_id, []).append(f"{e.ceiling} ({'enforced' if e.enforced else 'shadow'})")
    return MemoryHistory(
        id=item,
        scope=scope,
        content=row.content,
        kind=row.kind,
        status=row.status,
        anchored=row.anchored,
        alpha=row.alpha,
        beta=row.beta,
        access_count=row.access_count,
        last_accessed=row.last_accessed,
        created_at=row.created_at,
        changes=tuple(
            WeightChange(
                at=c.at,
                operation=c.operation,
                gain=c.gain,
                old=None if c.old_alpha is None or c.old_beta is None else (c.old_alpha, c.old_beta),
                new=(c.new_alpha, c.new_beta),
                reason=c.reason,
                evidence=c.evidence or {},
                blocked=c.blocked,
                ceilings=tuple(fired.get(c.id, ())),
            )
            for c in changes
        ),
    )
