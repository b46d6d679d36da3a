"""Forgetting: remove an item, or a whole scope, from every chamber (issue 6, archive-adr §7).

Users must be able to honour deletion requests, so nothing of a forgotten item
may survive anywhere: its row, postings and lexical statistics, vectors in
every vector space, co-access links, scratch-buffer copies, and the traces that
copied its content or name it (retrievals list hit ids; weight changes, safety
events and gate decisions belong to the item). The caller runs these inside
one transaction.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import psycopg
from psycopg import sql

from mnemo.store.dynamics import lock_memories

__all__ = ["derived_items", "forget_items", "item_kinds", "purge_scope"]


async def item_kinds(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, str]:
    """Which of ``ids`` exist in the scope, as ``turn``, ``memory`` (any status) or ``line`` (a block's
    verbatim line whose raw turn retention removed)."""
    cur = await conn.execute(
        """SELECT id, 'turn' FROM mnemo.turns WHERE entity_id = %(e)s AND namespace = %(ns)s AND id = ANY(%(ids)s)
           UNION ALL
           SELECT id, 'memory' FROM mnemo.memories WHERE entity_id = %(e)s AND namespace = %(ns)s
             AND id = ANY(%(ids)s)
           UNION ALL
           SELECT DISTINCT turn_id, 'line' FROM mnemo.block_lines WHERE entity_id = %(e)s AND namespace = %(ns)s
             AND turn_id = ANY(%(ids)s)
             AND NOT EXISTS (SELECT 1 FROM mnemo.turns t WHERE t.entity_id = %(e)s AND t.id = turn_id)""",
        {"e": entity_id, "ns": namespace, "ids": list(ids)},
    )
    return {r[0]: r[1] for r in await cur.fetchall()}


async def written_by(conn: psycopg.AsyncConnection, entity_id: str, namespace: str, process: str) -> list[uuid.UUID]:
    """The scope's turns and memories that ``process`` wrote (archive-adr §4 attribution)."""
    cur = await conn.execute(
        """SELECT id FROM mnemo.turns WHERE entity_id = %(e)s AND namespace = %(ns)s AND process_id = %(p)s
           UNION ALL
           SELECT id FROM mnemo.memories WHERE entity_id = %(e)s AND namespace = %(ns)s AND process_id = %(p)s""",
        {"e": entity_id, "ns": namespace, "p": process},
    )
    return [r[0] for r in await cur.fetchall()]


async def derived_items(
    conn: psycopg.AsyncConnection, entity_id: str, namespace: str, ids: Sequence[uuid.UUID]
) -> list[uuid.UUID]:
    """``ids`` plus every memory that copies their content: the memory rows of blocks that contain
    a forgotten turn or whose memory is forgotten, and of facts stated only by forgotten turns;
    plus those blocks' lines whose raw turns are gone (their index entries)."""
    cur = await conn.execute(
        """SELECT b.memory_id FROM mnemo.blocks b
           WHERE b.entity_id = %(e)s AND b.namespace = %(ns)s AND b.memory_id IS NOT NULL
             AND (b.turn_ids && %(ids)s::uuid[] OR b.memory_id = ANY(%(ids)s) OR b.id = ANY(%(ids)s))
           UNION
           SELECT f.memory_id FROM mnemo.facts f
           WHERE f.entity_id = %(e)s AND f.namespace = %(ns)s AND f.memory_id IS NOT NULL
             AND f.provenance <@ %(ids)s::uuid[] AND f.provenance <> '{}'""",
        {"e": entity_id, "ns": namespace, "ids": list(ids)},
    )
    extra = [r[0] for r in await cur.fetchall()]
    cur = await conn.execute(
        """SELECT DISTINCT l.turn_id FROM mnemo.block_lines l JOIN mnemo.blocks b
             ON b.entity_id = l.entity_id AND b.id = l.block_id
           WHERE b.entity_id = %(e)s AND b.namespace = %(ns)s AND b.memory_id = ANY(%(ids)s)
             AND NOT EXISTS (SELECT 1 FROM mnemo.turns t WHERE t.entity_id = %(e)s AND t.id = l.turn_id)""",
        {"e": entity_id, "ns": namespace, "ids": list(dict.fromkeys([*ids, *extra]))},
    )
    lines = [r[0] for r in await cur.fetchall()]  # their postings and vectors go with their block
    return list(dict.fromkeys([*ids, *extra, *lines]))


async def _vector_tables(conn: psycopg.AsyncConnection) -> list[str]:
    cur = await conn.execute("SELECT table_name FROM vectors.spaces ORDER BY table_name")
    return [r[0] for r in await cur.fetchall()]


async def forget_items(
    conn: psycopg.AsyncConnection,
    entity_id: str,
    namespace: str,
    ids: Sequence[uuid.UUID],
    *,
    copies: bool = True,
    keep_index: Sequence[uuid.UUID] = (),
) -> dict[str, int]:
    """Delete ``ids`` (turns or memories of one scope) everywhere; returns rows removed per place.

    ``copies`` also deletes the night cycle's copies of their content (blocks, facts, triples; pass
    the ids through :func:`derived_items` first so the copies' memory rows go too). Retention passes
    ``copies=False``: it removes raw turns precisely because a block now carries them, and passes
    the turns that are a block's verbatim lines as ``keep_index``: their rows go, their postings and
    vectors stay for the lines (:func:`mnemo.store.tiers.turns_to_lines`).
    """
    kept = set(keep_index)
    p = {"e": entity_id, "ns": namespace, "ids": list(ids), "index_ids": [i for i in ids if i not in kept]}
    removed: dict[str, int] = {}

    async def run(label: str, query: str | sql.Composed) -> None:
        cur = await conn.execute(query, p)
        removed[label] = removed.get(label, 0) + max(cur.rowcount, 0)

    await lock_memories(conn, entity_id, namespace, ids)  # in id order, as every writer of memories
    # Lexical statistics first, from the postings about to go.
    await run(
        "lexical_stats",
        """UPDATE mnemo.lexical_stats s SET docs = greatest(s.docs - g.docs, 0),
                  total_len = greatest(s.total_len - g.total_len, 0)
           FROM (SELECT count(DISTINCT item_id) AS docs, coalesce(sum(tf), 0) AS total_len FROM mnemo.postings
                 WHERE entity_id = %(e)s AND item_id = ANY(%(index_ids)s) AND namespace = %(ns)s) g
           WHERE s.entity_id = %(e)s AND s.namespace = %(ns)s AND g.docs > 0""",
    )
    # The rows go before their vectors: an embedding job holding a share lock on a turn makes this
    # wait, and once the row is gone no job writes a vector for it (mnemo.ingest.embed_turns).
    if copies:
        await _forget_copies(run)
        await _forget_inner_copies(run)
    await _forget_rows(conn, run)
    await _forget_traces(run)
    removed["references"] = await _forget_references(conn, p, ids)
    return removed


async def _forget_rows(
    conn: psycopg.AsyncConnection, run: Callable[[str, str | sql.Composed], Awaitable[None]]
) -> None:
    """The items' rows, then their index: postings, passages, token and item vectors, co-access."""
    await run("turns", "DELETE FROM mnemo.turns WHERE entity_id = %(e)s AND namespace = %(ns)s AND id = ANY(%(ids)s)")
    await run(
        "claims",
        "DELETE FROM mnemo.claims WHERE entity_id = %(e)s AND namespace = %(ns)s AND turn_id = ANY(%(index_ids)s)",
    )
    await run(
        "memories", "DELETE FROM mnemo.memories WHERE entity_id = %(e)s AND namespace = %(ns)s AND id = ANY(%(ids)s)"
    )
    await run("postings", "DELETE FROM mnemo.postings WHERE entity_id = %(e)s AND item_id = ANY(%(index_ids)s)")
    await run(
        "passages",
        "DELETE FROM mnemo.passages WHERE entity_id = %(e)s AND namespace = %(ns)s AND item_id = ANY(%(ids)s)",
    )
    await run(
        "token_vectors",
        "DELETE FROM mnemo.token_vectors "
        "WHERE entity_id = %(e)s AND namespace = %(ns)s AND item_id = ANY(%(index_ids)s)",
    )
    for table in await _vector_tables(conn):
        await run(
            "vectors",
            sql.SQL("DELETE FROM {} WHERE entity_id = %(e)s AND item_id = ANY(%(index_ids)s)").format(
                sql.Identifier("vectors", table)
            ),
        )
    await run(
        "co_access",
        "DELETE FROM mnemo.co_access WHERE entity_id = %(e)s AND (a = ANY(%(ids)s) OR b = ANY(%(ids)s))",
    )


async def _forget_traces(run: Callable[[str, str | sql.Composed], Awaitable[None]]) -> None:
    """The traces about the items: weight changes and safety events, gate trails that copy their
    content, and their ids in recalls' hits and outcomes' used lists."""
    await run(
        "traces",
        "DELETE FROM traces.weight_changes WHERE entity_id = %(e)s AND memory_id = ANY(%(ids)s)",
    )
    await run("traces", "DELETE FROM traces.safety_events WHERE entity_id = %(e)s AND memory_id = ANY(%(ids)s)")
    # Gate decisions about the item, and the whole trail (entry and exit) of every observation
    # that was persisted as, confirmed, or contradicted it: those carry copies of its content.
    await run(
        "traces",
        """DELETE FROM traces.gate_decisions WHERE entity_id = %(e)s AND item_id IN (
               SELECT item_id FROM traces.gate_decisions WHERE entity_id = %(e)s
               AND (memory_id = ANY(%(ids)s) OR related_id = ANY(%(ids)s) OR item_id = ANY(%(ids)s)))""",
    )
    await run(
        "traces",
        """UPDATE traces.retrievals SET hit_ids = ARRAY(SELECT h FROM unnest(hit_ids) h WHERE h <> ALL(%(ids)s)),
                                        parts = NULL  -- its per-hit components no longer line up
           WHERE entity_id = %(e)s AND hit_ids && %(ids)s::uuid[]""",
    )
    await run(
        "traces",
        """UPDATE traces.outcomes SET used = ARRAY(SELECT u FROM unnest(used) u WHERE u <> ALL(%(ids)s))
           WHERE entity_id = %(e)s AND used && %(ids)s::uuid[]""",
    )


async def _forget_references(conn: psycopg.AsyncConnection, p: dict[str, Any], ids: Sequence[uuid.UUID]) -> int:
    """Other memories' metadata naming a forgotten one; how many were rewritten."""
    count = 0
    # Other memories may name a forgotten one in their metadata (supersedes, superseded_by, contradicts).
    for key in ("supersedes", "superseded_by", "contradicts"):
        cur = await conn.execute(
            """UPDATE mnemo.memories m
               SET metadata = jsonb_set(m.metadata, ARRAY[%(key)s], coalesce(
                   (SELECT jsonb_agg(x) FROM jsonb_array_elements(m.metadata -> %(key)s) AS x
                    WHERE (x #>> '{}') <> ALL(%(texts)s)), '[]'::jsonb))
               WHERE m.entity_id = %(e)s AND m.namespace = %(ns)s
                 AND jsonb_typeof(m.metadata -> %(key)s) = 'array' AND (m.metadata -> %(key)s) ?| %(texts)s""",
            p | {"key": key, "texts": [str(i) for i in ids]},
        )
        count += max(cur.rowcount, 0)
    return count


async def _forget_copies(run: Callable[[str, str | sql.Composed], Awaitable[None]]) -> None:
    """Night-cycle copies: blocks holding a forgotten turn (or projected into a forgotten memory),
    facts and triples stated only by forgotten turns, links and curation verdicts naming them; and
    the scope's surprisal model, whose n-gram counts learnt the forgotten turns' words (the next
    night rebuilds it from the turns that remain)."""
    await run(
        "night",
        """DELETE FROM mnemo.night_state WHERE entity_id = %(e)s AND namespace = %(ns)s AND key LIKE 'surprisal.%%'
           AND EXISTS (SELECT 1 FROM mnemo.turns WHERE entity_id = %(e)s AND id = ANY(%(ids)s)
                       AND surprisal IS NOT NULL)""",
    )
    await run(
        "blocks",
        """DELETE FROM mnemo.blocks WHERE entity_id = %(e)s AND namespace = %(ns)s
           AND (turn_ids && %(ids)s::uuid[] OR memory_id = ANY(%(ids)s) OR id = ANY(%(ids)s))""",
    )
    for table in ("facts", "triples"):
        await run(
            table,
            sql.SQL(
                """DELETE FROM {} WHERE entity_id = %(e)s AND namespace = %(ns)s
                   AND provenance <@ %(ids)s::uuid[] AND provenance <> '{{}}'"""
            ).format(sql.Identifier("mnemo", table)),
        )
        await run(
            "references",
            sql.SQL(
                """UPDATE {} SET provenance = ARRAY(SELECT p FROM unnest(provenance) p WHERE p <> ALL(%(ids)s))
                   WHERE entity_id = %(e)s AND namespace = %(ns)s AND provenance && %(ids)s::uuid[]"""
            ).format(sql.Identifier("mnemo", table)),
        )
    await run(
        "facts", "DELETE FROM mnemo.facts WHERE entity_id = %(e)s AND namespace = %(ns)s AND memory_id = ANY(%(ids)s)"
    )
    await run(
        "links",
        """DELETE FROM mnemo.links WHERE entity_id = %(e)s AND namespace = %(ns)s
           AND (source_id = ANY(%(ids)s) OR target_id = ANY(%(ids)s))""",
    )
    await run(
        "curation",
        "DELETE FROM mnemo.curation_items WHERE entity_id = %(e)s AND namespace = %(ns)s AND memory_id = ANY(%(ids)s)",
    )
    await run(  # an import's record of the state packets it wrote: a re-import brings back what is gone
        "packets",
        """DELETE FROM mnemo.packet_items p WHERE p.entity_id = %(e)s AND p.namespace = %(ns)s
           AND (p.item_id = ANY(%(ids)s)
                OR p.packet_type = 'block' AND NOT EXISTS (
                    SELECT 1 FROM mnemo.blocks b WHERE b.entity_id = %(e)s AND b.id = p.item_id)
                OR p.packet_type = 'line' AND NOT EXISTS (
                    SELECT 1 FROM mnemo.block_lines l WHERE l.entity_id = %(e)s AND l.turn_id = p.item_id)
                OR p.packet_type = 'fact' AND NOT EXISTS (
                    SELECT 1 FROM mnemo.facts f WHERE f.entity_id = %(e)s AND f.id = p.item_id)
                OR p.packet_type = 'triple' AND NOT EXISTS (
                    SELECT 1 FROM mnemo.triples t WHERE t.entity_id = %(e)s AND t.id = p.item_id))""",
    )


async def _forget_inner_copies(run: Callable[[str, str], Awaitable[None]]) -> None:
    """The inner life's copies of a forgotten item's text (issue 31): a gut delta's context or action
    that quotes it is blanked (the delta stays for the axes), an agent's held input that is it goes."""
    quoting = """SELECT content FROM mnemo.turns WHERE entity_id = %(e)s AND namespace = %(ns)s AND id = ANY(%(ids)s)
                 UNION ALL
                 SELECT content FROM mnemo.memories WHERE entity_id = %(e)s AND namespace = %(ns)s
                   AND id = ANY(%(ids)s)"""
    await run(
        "inner",
        f"""UPDATE mnemo.gut_deltas g SET context = '', action = ''
            WHERE g.entity_id = %(e)s AND g.namespace = %(ns)s AND EXISTS (
              SELECT 1 FROM ({quoting}) c
              WHERE position(c.content IN g.context) > 0 OR position(c.content IN g.action) > 0)""",  # noqa: S608
    )
    await run(
        "inner",
        f"""DELETE FROM mnemo.agent_inputs a WHERE a.entity_id = %(e)s AND a.namespace = %(ns)s
              AND a.text IN ({quoting})""",  # noqa: S608
    )


async def purge_scope(conn: psycopg.AsyncConnection, entity_id: str, namespace: str) -> dict[str, int]:
    """Delete a whole scope from every chamber; returns rows removed per place."""
    p = {"e": entity_id, "ns": namespace}
    removed: dict[str, int] = {}

    async def run(label: str, query: str | sql.Composed) -> None:
        cur = await conn.execute(query, p)
        removed[label] = removed.get(label, 0) + max(cur.rowcount, 0)

    for table in await _vector_tables(conn):
        await run(
            "vectors",
            sql.SQL("DELETE FROM {} WHERE entity_id = %(e)s AND namespace = %(ns)s").format(
                sql.Identifier("vectors", table)
            ),
        )
    # Co-access links go before the memories they reference; grants go with the scope (CASCADE).
    for label, schema, table in (
        ("postings", "mnemo", "postings"),
        ("token_vectors", "mnemo", "token_vectors"),
        ("passages", "mnemo", "passages"),
        ("lexical_stats", "mnemo", "lexical_stats"),
        ("co_access", "mnemo", "co_access"),
        ("traces", "traces", "retrievals"),
        ("traces", "traces", "weight_changes"),
        ("traces", "traces", "safety_events"),
        ("traces", "traces", "gate_decisions"),
        ("traces", "traces", "outcomes"),
        ("traces", "traces", "tuning_history"),
        ("inner", "mnemo", "gut_deltas"),
        ("inner", "mnemo", "gut_axes"),
        ("inner", "mnemo", "milestones"),
        ("inner", "mnemo", "tuning"),
        ("inner", "mnemo", "agent_inputs"),
        ("inner", "mnemo", "task_attempts"),
        ("claims", "mnemo", "claims"),
        ("turns", "mnemo", "turns"),
        ("memories", "mnemo", "memories"),
        ("scratch", "mnemo", "scratch"),
        ("blocks", "mnemo", "blocks"),
        ("links", "mnemo", "links"),
        ("facts", "mnemo", "facts"),
        ("triples", "mnemo", "triples"),
        ("entities", "mnemo", "entities"),
        ("curation", "mnemo", "curation_versions"),
        ("night", "mnemo", "night_sessions"),
        ("night", "mnemo", "night_runs"),
        ("night", "mnemo", "night_state"),
        ("packets", "mnemo", "packet_items"),
        ("reflexes", "mnemo", "causal_edges"),
        ("reflexes", "mnemo", "reflexes"),
        ("traces", "traces", "actions"),
        ("versions", "mnemo", "scope_changes"),  # last: the deletes above log changes
        ("versions", "mnemo", "scope_versions"),
    ):
        await run(
            label,
            sql.SQL("DELETE FROM {} WHERE entity_id = %(e)s AND namespace = %(ns)s").format(
                sql.Identifier(schema, table)
            ),
        )
    await run("scopes", "DELETE FROM mnemo.scopes WHERE entity_id = %(e)s AND namespace = %(ns)s")
    return removed
