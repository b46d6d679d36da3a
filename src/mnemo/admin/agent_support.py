"""What an agent keeps in its archive: held inputs, its starts and its model costs (issue 41 item 1).

:class:`Agents` is ``archive.agents``; cognitive-plan §4.8-4.9 (an agent's age), the cost log of
the traces, and the held inputs of :mod:`mnemo.agent.loop`.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from mnemo._runtime import Runtime
from mnemo.admin import agent_costs
from mnemo.inner import inner_writes
from mnemo.models import HeldInput, Scope

__all__ = ["Agents"]


class Agents:
    """An agent's held inputs, starts and model costs: ``archive.agents``."""

    def __init__(self, runtime: Runtime) -> None:
        self._rt = runtime

    async def hold_input(
        self,
        scope: Scope,
        agent: str,
        text: str,
        *,
        source: str,
        kind: str = "pending",
        urgency: float = 0.0,
        charge: float = 0.0,
        confidence: float = 1.0,
        due_at: datetime | str | None = None,
    ) -> uuid.UUID:
        """Keep an agent's pending input or scheduled task in the database (it survives a restart)."""
        return await inner_writes.add_input(
            self._rt, scope, agent, text, source=source, kind=kind, urgency=urgency, charge=charge,
            confidence=confidence, due_at=due_at,
        )  # fmt: skip

    async def held_inputs(self, scope: Scope, agent: str) -> list[HeldInput]:
        """What ``agent`` holds: pending inputs and scheduled tasks, oldest first."""
        return await inner_writes.held_inputs(self._rt, scope, agent)

    async def release_inputs(self, scope: Scope, agent: str, ids: Sequence[uuid.UUID | str]) -> int:
        """Forget held inputs the agent attended to."""
        return await inner_writes.release_inputs(self._rt, scope, agent, ids)

    async def wait_inputs(self, scope: Scope, agent: str, waiting: Sequence[tuple[uuid.UUID, float, int]]) -> None:
        """Store the decayed urgency and wait count of held inputs that lost a cycle."""
        await inner_writes.wait_inputs(self._rt, scope, agent, waiting)

    async def agent_started(self, entity_id: str, name: str) -> Mapping[str, Any]:
        """Count one start of agent ``name`` of ``entity_id``: ``first_started``, ``last_started``,
        ``starts`` (restarts + 1), kept in the database."""
        return await agent_costs.started(self._rt, entity_id, name)

    async def log_model_call(
        self,
        entity_id: str,
        agent: str,
        *,
        model: str,
        purpose: str,
        input_tokens: int,
        output_tokens: int,
        cost: float | None,
        seconds: float,
    ) -> None:
        """Record one model call in the cost log (``cost`` in USD; None when the price is unknown)."""
        await agent_costs.log_call(
            self._rt, entity_id, agent, model=model, purpose=purpose, input_tokens=input_tokens,
            output_tokens=output_tokens, cost=cost, seconds=seconds,
        )  # fmt: skip

    async def model_costs(self, entity_id: str, agent: str, since: datetime) -> Mapping[str, Any]:
        """Calls, input and output tokens, cost (USD) and unpriced calls of ``agent`` since ``since``."""
        return await agent_costs.costs(self._rt, entity_id, agent, since)
