"""The day table (memory-architecture §2.2): raw exchanges.

Turn numbers are gapless per session and follow commit order. Whoever appends to a
session first takes that session's numbering lock (:func:`lock_sessions`: a
transaction-scoped advisory lock, released at commit or rollback), then reads
``max + 1`` (:func:`next_turn_numbers`) and writes. Under READ COMMITTED (the
pool's isolation) the read after the lock sees every earlier holder's committed
turns, so two writers never pick the same number and a number is never committed
before a smaller one. Only writers to the same session wait for each other.

Each turn's ``identity`` (:mod:`mnemo.cognition.text.turn_identity`) is unique in its scope: a writer
first reads which of its identities the scope holds (:func:`held_turns`, under the lock, so
repeats take no number), and the unique index refuses a turn that a writer to another
session stored meanwhile under the same key (:func:`insert_turn` skips it; COPY raises).
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

__all__ = [
    "IDENTITY_INDEX",
    "TurnRow",
    "copy_turns",
    "held_turns",
    "insert_turn",
    "lock_sessions",
    "next_turn_numbers",
    "session_lock_key",
]

# (id, entity_id, namespace, session_id, turn_number, role, speaker, content, created_at, token_count, metadata,
#  identity)
TurnRow = tuple[uuid.UUID, str, str, str, int, str, str | None, str, datetime, int, dict[str, Any], str]

IDENTITY_INDEX = "turns_identity"
"""The unique index of (entity_id, namespace, identity): a violation names it."""

_COLUMNS = (
    "id, entity_id, namespace, session_id, turn_number, role, speaker, content, created_at, token_count, metadata, "
    "identity"
)


def session_lock_key(entity_id: str, namespace: str, session_id: str) -> int:
    """The advisory-lock key (a signed 64-bit int) of one session's turn numbering."""
    name = "\x00".join(("mnemo.turns", entity_id, namespace, session_id)).encode()
    return int.from_bytes(hashlib.blake2b(name, digest_size=8).digest(), "big", signed=True)


async def lock_sessions(conn: psycopg.AsyncConnection, entity_id: str, namespace: str, sessions: Iterable[str]) -> None:
    """Wait for, and hold until the transaction ends, the numbering lock of each of ``sessions``.

    Taken in ascending key order, so writers naming the same sessions in any order cannot
    deadlock (two sessions sharing a key merely share a lock). Call inside a transaction.
    """
    keys = sorted({session_lock_key(entity_id, namespace, s) for s in sessions})
    if keys:
        await conn.execute(
            """SELECT pg_advisory_xact_lock(k) FROM unnest(%s::bigint[]) WITH ORDINALITY AS u(k, i) ORDER BY i""",
            (keys,),
        )


async def next_turn_numbers(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, sessions: Sequence[str]
) -> dict[str, int]:
    """The next free turn number of each session (0 for a new session); under :func:`lock_sessions`."""
    if not sessions:
        return {}
    cur = await conn.execute(
        """SELECT session_id, max(turn_number) + 1 FROM mnemo.turns
           WHERE entity_id = %s AND namespace = %s AND session_id = ANY(%s) GROUP BY session_id""",
        (entity_id, namespace, list(sessions)),
    )
    found = {r[0]: int(r[1]) for r in await cur.fetchall()}
    return {s: found.get(s, 0) for s in sessions}


async def insert_turn(conn: psycopg.AsyncConnection, row: TurnRow) -> bool:
    """Write one turn; False (nothing written) when the scope already holds its identity (a writer
    that committed it meanwhile: this one waited for that commit, the unique index's way)."""
    cur = await conn.execute(
        f"""INSERT INTO mnemo.turns ({_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
            ON CONFLICT (entity_id, namespace, identity) DO NOTHING RETURNING id""",  # noqa: S608 (constant columns)
        (*row[:10], Jsonb(row[10]), row[11]),
    )
    return await cur.fetchone() is not None


async def held_turns(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, identities: Sequence[str]
) -> dict[str, TurnRow]:
    """The scope's turns that have one of ``identities``, by identity."""
    if not identities:
        return {}
    cur = await conn.execute(
        f"""SELECT {_COLUMNS} FROM mnemo.turns
            WHERE entity_id = %s AND namespace = %s AND identity = ANY(%s)""",  # noqa: S608 (constant columns)
        (entity_id, namespace, list(identities)),
    )
    return {r[11]: (*r[:4], int(r[4]), *r[5:9], int(r[9]), r[10], r[11]) for r in await cur.fetchall()}


async def copy_turns(conn: psycopg.AsyncConnection, rows: Iterable[TurnRow]) -> int:
    """Bulk-write turns with COPY; the caller owns the transaction."""
    count = 0
    async with conn.cursor().copy(f"COPY mnemo.turns ({_COLUMNS}) FROM STDIN") as copy:
        for row in rows:
            await copy.write_row((*row[:10], Jsonb(row[10]), row[11]))
            count += 1
    return count


async def existing_turn_numbers(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, keys: Sequence[tuple[str, int]]
) -> list[tuple[str, int]]:
    """Which ``(session_id, turn_number)`` pairs already exist in the scope."""
    if not keys:
        return []
    cur = await conn.execute(
        """SELECT t.session_id, t.turn_number FROM mnemo.turns t
           JOIN unnest(%s::text[], %s::int[]) AS k(session_id, turn_number)
             ON t.session_id = k.session_id AND t.turn_number = k.turn_number
           WHERE t.entity_id = %s AND t.namespace = %s
           ORDER BY 1, 2 LIMIT 5""",
        ([k[0] for k in keys], [k[1] for k in keys], entity_id, namespace),
    )
    return [(r[0], int(r[1])) for r in await cur.fetchall()]


async def analyze(conn: psycopg.AsyncConnection) -> None:
    await conn.execute("ANALYZE mnemo.turns")
