"""The reference agent's start-ups and model calls (cognitive-plan §4.8-4.9)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import psycopg
from psycopg.rows import class_row

__all__ = ["AgentStart", "CallTotals", "log_call", "started", "totals"]


@dataclass(frozen=True, slots=True)
class AgentStart:
    """An agent's starts (:func:`started`)."""

    first_started: datetime
    last_started: datetime
    starts: int


@dataclass(frozen=True, slots=True)
class CallTotals:
    """An agent's model calls since a time (:func:`totals`); ``cost`` in USD, of the priced calls."""

    calls: int
    input_tokens: int
    output_tokens: int
    cost: float
    unpriced: int


async def started(conn: psycopg.AsyncConnection, entity_id: str, name: str) -> AgentStart:
    """Count one start of agent ``name``; its first start, this start and the number of starts."""
    async with conn.cursor(row_factory=class_row(AgentStart)) as cur:
        await cur.execute(
            """INSERT INTO mnemo.agents AS a (entity_id, name) VALUES (%s, %s)
               ON CONFLICT (entity_id, name) DO UPDATE SET starts = a.starts + 1, last_started = now()
               RETURNING first_started, last_started, starts""",
            (entity_id, name),
        )
        row = await cur.fetchone()
    assert row is not None
    return row


async def log_call(
    conn: psycopg.AsyncConnection,
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
    await conn.execute(
        """INSERT INTO traces.model_calls (entity_id, agent, model, purpose, input_tokens, output_tokens, cost_usd,
                                           seconds) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)""",
        (entity_id, agent, model, purpose, input_tokens, output_tokens, cost, seconds),
    )


async def totals(conn: psycopg.AsyncConnection, entity_id: str, agent: str, since: datetime) -> CallTotals:
    """Calls, tokens and cost of agent ``agent`` since ``since``."""
    async with conn.cursor(row_factory=class_row(CallTotals)) as cur:
        await cur.execute(
            """SELECT count(*) AS calls, coalesce(sum(input_tokens), 0) AS input_tokens,
                      coalesce(sum(output_tokens), 0) AS output_tokens, coalesce(sum(cost_usd), 0) AS cost,
                      count(*) FILTER (WHERE cost_usd IS NULL) AS unpriced
               FROM traces.model_calls WHERE entity_id = %s AND agent = %s AND at >= %s""",
            (entity_id, agent, since),
        )
        row = await cur.fetchone()
    assert row is not None
    return row
