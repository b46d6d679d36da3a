"""An agent's age and its model costs, kept in the database for any agent runtime.

Seed: cognitive-plan §4.8 (every model call logged with its tokens, cost and time; session, 24-hour
and lifetime totals) and §4.9 (restarts, uptime and age survive a restart). ``mnemo.agent`` uses
them; so may any other runtime. Inputs are checked here; the SQL is in :mod:`mnemo.store.agents`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict
from datetime import datetime
from typing import Any

from mnemo._runtime import Runtime
from mnemo._validate import check_process, check_text, to_utc
from mnemo.errors import InvalidContentError
from mnemo.models import Scope
from mnemo.store import agents as agent_rows

__all__ = ["costs", "log_call", "started"]


def _agent(entity_id: str, name: object) -> str:
    Scope(entity_id)  # the entity is validated as in any scope
    return check_process(name)  # an agent's name follows the process-id rules


def _count(value: object, label: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidContentError(f"{label} must be an integer >= 0, not {value!r}")
    return value


def _amount(value: object, label: str, *, optional: bool = False) -> float | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise InvalidContentError(f"{label} must be a finite number >= 0, not {value!r}")
    return float(value)


async def started(rt: Runtime, entity_id: str, name: object) -> Mapping[str, Any]:
    """Count one start of agent ``name``: ``first_started``, ``last_started``, ``starts``."""
    agent = _agent(entity_id, name)
    async with rt.store.transaction() as conn:
        return asdict(await agent_rows.started(conn, entity_id, agent))  # a public mapping


async def log_call(
    rt: Runtime, entity_id: str, agent: object, *, model: object, purpose: object, input_tokens: object,
    output_tokens: object, cost: object, seconds: object,
) -> None:  # fmt: skip
    """One model call into the cost log (``cost`` in USD, None when the price is unknown)."""
    name = _agent(entity_id, agent)
    what, why = check_text(model, label="model", max_chars=200), check_text(purpose, label="purpose", max_chars=200)
    tokens_in, tokens_out = _count(input_tokens, "input_tokens"), _count(output_tokens, "output_tokens")
    price, took = _amount(cost, "cost", optional=True), _amount(seconds, "seconds") or 0.0
    async with rt.store.transaction() as conn:
        await agent_rows.log_call(
            conn, entity_id, name, model=what, purpose=why, input_tokens=tokens_in, output_tokens=tokens_out,
            cost=price, seconds=took,
        )  # fmt: skip


async def costs(rt: Runtime, entity_id: str, agent: object, since: object) -> Mapping[str, Any]:
    """Calls, input and output tokens, cost and unpriced calls of ``agent`` since ``since``."""
    name = _agent(entity_id, agent)
    after: datetime = to_utc(since, label="since")
    async with rt.store.connection() as conn:
        return asdict(await agent_rows.totals(conn, entity_id, name, after))  # a public mapping
