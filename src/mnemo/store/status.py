"""Counts per chamber and small key/value facts kept in ``mnemo.meta``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

__all__ = [
    "QUEUE_STATES",
    "chamber_counts",
    "get_meta",
    "queue_depth",
    "refresh_statistics",
    "set_meta",
    "use_counts",
]

QUEUE_STATES = ("todo", "doing", "failed")


async def chamber_counts(conn: psycopg.AsyncConnection) -> dict[str, int]:
    cur = await conn.execute(
        """SELECT (SELECT count(*) FROM mnemo.scopes), (SELECT count(*) FROM mnemo.grants),
                  (SELECT count(*) FROM mnemo.turns), (SELECT count(*) FROM mnemo.memories),
                  (SELECT count(*) FROM traces.retrievals),
                  (SELECT count(*) FROM pg_tables WHERE schemaname = 'queue'),
                  (SELECT count(*) FROM mnemo.blocks), (SELECT count(*) FROM mnemo.entities),
                  (SELECT count(*) FROM mnemo.facts WHERE valid_to IS NULL),
                  (SELECT count(*) FROM mnemo.night_runs WHERE finished_at IS NOT NULL),
                  (SELECT count(*) FROM mnemo.blocks WHERE migrated_at IS NOT NULL),
                  (SELECT coalesce(sum((r.report -> 'cluster' ->> 'nodes')::int), 0) FROM (
                      SELECT DISTINCT ON (entity_id, namespace) report FROM mnemo.night_runs
                      WHERE report ? 'cluster' ORDER BY entity_id, namespace, started_at DESC) r)"""
    )
    row = await cur.fetchone()
    assert row is not None
    names = (
        "scopes",
        "grants",
        "turns",
        "memories",
        "traces",
        "queue_tables",
        "blocks",
        "entities",
        "facts",
        "night_runs",
        "cortex_blocks",  # blocks in the long-term tier (LanceDB), as the hippocampus records them
        "tree_nodes",  # nodes of the cortex's RAPTOR trees, as each scope's last clustering left them
    )
    return dict(zip(names, (int(v) for v in row), strict=True))


async def queue_depth(conn: psycopg.AsyncConnection) -> dict[str, int]:
    """Background jobs by status: always todo, doing and failed; other states only when present."""
    cur = await conn.execute("SELECT status::text, count(*) FROM queue.procrastinate_jobs GROUP BY 1 ORDER BY 1")
    return {s: 0 for s in QUEUE_STATES} | {str(s): int(n) for s, n in await cur.fetchall()}


async def get_meta(conn: psycopg.AsyncConnection, key: str) -> Any:
    cur = await conn.execute("SELECT value FROM mnemo.meta WHERE key = %s", (key,))
    row = await cur.fetchone()
    return None if row is None else row[0]


async def set_meta(conn: psycopg.AsyncConnection, key: str, value: Any) -> None:
    await conn.execute(
        """INSERT INTO mnemo.meta (key, value) VALUES (%s, %s)
           ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = now()""",
        (key, Jsonb(value)),
    )


async def refresh_statistics(conn: psycopg.AsyncConnection, vector_table: str) -> None:
    """ANALYZE the tables that small writes fill (and VACUUM the postings for index-only scans).

    Autovacuum gets there within a minute or so; until then a freshly filled table has no
    statistics and the planner picks nested loops over whole scopes. Needs an autocommit
    connection (VACUUM cannot run in a transaction).
    """
    for table in (
        *("mnemo.memories", "mnemo.turns", "mnemo.co_access", "mnemo.blocks", "mnemo.facts", "mnemo.links"),
        *("mnemo.block_lines", "mnemo.token_vectors", "mnemo.scope_versions", "mnemo.scope_changes"),
    ):
        await conn.execute(f"ANALYZE {table}")
    await conn.execute("VACUUM (ANALYZE) mnemo.postings")
    await conn.execute(sql.SQL("ANALYZE {}").format(sql.Identifier("vectors", vector_table)))


async def use_counts(conn: psycopg.AsyncConnection, entity_id: str, namespaces: Sequence[str]) -> dict[str, int]:
    """What use has left in ``entity_id``'s ``namespaces`` (benchmarks): reinforcements by recall,
    near-miss suppressions, accesses and the memories accessed."""
    changes = await (
        await conn.execute(
            "SELECT count(*) FILTER (WHERE reason = 'recalled'), count(*) FILTER (WHERE reason = 'near miss') "
            "FROM traces.weight_changes WHERE entity_id = %s AND namespace = ANY(%s)",
            (entity_id, list(namespaces)),
        )
    ).fetchone()
    accesses = await (
        await conn.execute(
            "SELECT coalesce(sum(access_count), 0), count(*) FILTER (WHERE access_count > 0) "
            "FROM mnemo.memories WHERE entity_id = %s AND namespace = ANY(%s)",
            (entity_id, list(namespaces)),
        )
    ).fetchone()
    assert changes is not None and accesses is not None
    return {
        "weight_changes_recalled": int(changes[0]),
        "weight_changes_near_miss": int(changes[1]),
        "accesses": int(accesses[0]),
        "memories_accessed": int(accesses[1]),
    }
