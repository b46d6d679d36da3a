"""SQL for the claims turns make about slots (:mod:`mnemo.cognition.scoring.claims`; issue 40 item 2)."""

from __future__ import annotations

from collections.abc import Sequence

import psycopg

from mnemo.cognition.scoring.claims import Claim

__all__ = ["changeable", "write"]


async def write(conn: psycopg.AsyncConnection, entity_id: str, namespace: str, claims: Sequence[Claim]) -> None:
    """Store ``claims`` of the scope's new turns (inside the caller's transaction)."""
    if not claims:
        return
    async with conn.cursor() as cur:
        await cur.executemany(
            """INSERT INTO mnemo.claims (entity_id, namespace, turn_id, slot, value, negated, single, said_at)
               VALUES (%s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING""",
            [(entity_id, namespace, c.turn_id, c.slot, c.value, c.negated, c.single, c.said_at) for c in claims],
        )


async def changeable(conn: psycopg.AsyncConnection, entity_id: str, namespace: str) -> list[Claim]:
    """The scope's claims that can make a statement stale: every ending, and every claim of a slot
    that more than one turn speaks of."""
    cur = await conn.execute(
        """SELECT c.turn_id, c.slot, c.value, c.negated, c.single, c.said_at FROM mnemo.claims c
            WHERE c.entity_id = %(e)s AND c.namespace = %(ns)s
              AND (c.negated OR c.slot IN (
                    SELECT o.slot FROM mnemo.claims o WHERE o.entity_id = %(e)s AND o.namespace = %(ns)s
                     GROUP BY o.slot HAVING count(DISTINCT o.turn_id) > 1))""",
        {"e": entity_id, "ns": namespace},
    )
    return [Claim(*row) for row in await cur.fetchall()]
