"""The reference agent's start-ups and model calls (cognitive-plan §4.8-4.9)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import psycopg
from psycopg.rows import dict_row

__all__ = ["log_call", "started", "totals"]


async def started(conn: psycopg.AsyncConnection, entity_id: str, name: str) -> dict[str, Any]:
    """Count one start of agent ``name``; its first start, this start and the number of starts."""
    async with conn.cursor(row_factory=dict_row) as cur:
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


async def totals(conn: psycopg.AsyncConnection, entity_id: str, agent: str, since: datetime) -> dict[str, Any]:
    """Calls, tokens and cost of agent ``agent`` since ``since``."""
    async with conn.cursor(row_factory=dict_row) as cur:
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
