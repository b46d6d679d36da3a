"""The night's inner-life stage on demand, and the operator's approval of a waiting promotion.

Seeds: cognitive-plan §4.3 (operator approval past a 0.85 centre at low trust), §4.2-4.5 and §5.1-5.3
(the deep consolidation of the inner life, which :func:`reflect` runs alone, now).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from mnemo._runtime import Runtime
from mnemo._validate import check_id, time_or_now
from mnemo.errors import UnknownItemError
from mnemo.models import Scope
from mnemo.night import promote as promotion
from mnemo.night.consolidated_reads import owned
from mnemo.night.guard import Guard
from mnemo.night.inner_consolidation import inner_stage
from mnemo.store import dynamics as dynamic_rows
from mnemo.store import night_runs as run_rows

__all__ = ["approve", "reflect"]


async def approve(rt: Runtime, scope: Scope, memory_id: object, *, at: object = None) -> bool:
    """Apply a promotion that waits for the operator's approval, dated ``at`` (default now); False
    when none waits."""
    target = check_id(memory_id, label="memory_id")
    when = time_or_now(at, skew_hours=rt.settings.clock_skew_hours, label="at")
    async with rt.store.transaction() as conn:
        states = await dynamic_rows.memory_states(conn, scope.entity_id, scope.namespace, [target], lock=True)
        if target not in states:
            raise UnknownItemError(f"no memory {target} in scope {scope}")
        return await promotion.approve(Guard(conn, rt.settings, scope, when), states[target])


async def reflect(rt: Runtime, scope: Scope, *, as_of: object = None) -> dict[str, Any]:
    """The night's inner stage alone, now (or ``as_of``): promotion, tensions, tuning, gut axes, the
    frustration ledger, the safety monitors and the milestones; one transaction, under the scope's
    night lock."""
    when = time_or_now(as_of, skew_hours=rt.settings.clock_skew_hours)
    await owned(rt, scope)  # a misspelt scope is refused, never created (as the night refuses it)
    async with (
        rt.store.connection() as lock,
        run_rows.held_scope(lock, scope.entity_id, scope.namespace),
        rt.store.transaction() as conn,
    ):
        return asdict(await inner_stage(rt, conn, scope, when))
