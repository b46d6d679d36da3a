"""Night stage 7: blocks migrate from the hippocampus to the cortex.

Seeds: memory-architecture §5.3 (what migrates, what compresses, what persists
at full precision), §6.4 ("prose fades while vectors persist"), §8.2 stage 7;
DESIGN §9 (the run records the cortex versions it ended at).

Crash safety across two stores: the cortex side is an idempotent upsert keyed
by block id (and turn id for lines); the hippocampus side (blocks marked, their
vectors and lines removed from PostgreSQL, the cortex versions recorded) commits
in one transaction with the stage's mark in the run. A kill between the two
leaves the blocks unmarked, so a re-run upserts the same rows again and marks
them: it converges to the state an uninterrupted run reaches. Blocks that left
the hippocampus in between (forgotten) are removed from the cortex by
:func:`reconcile`.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import psycopg

from mnemo._runtime import Runtime
from mnemo.cognition.consolidation.curation import TIERS, block_cutoff
from mnemo.cognition.scoring.bifocal import condense_prose, render_prose
from mnemo.cortex.lance_tables import Cortex, dumps
from mnemo.models import Scope
from mnemo.store import tiers
from mnemo.store import vectors as vector_rows

__all__ = ["MigrationStats", "migrate", "migration_plan", "plan_migration", "reconcile"]

BATCH = 2_000


@dataclass(slots=True)
class MigrationStats:
    """What one migrate stage moved into the cortex."""

    migrated: int = 0
    lines: int = 0
    removed: int = 0  # cortex rows of blocks no longer in the hippocampus
    versions: dict[str, int] = field(default_factory=dict)


async def migrate(
    rt: Runtime, conn: psycopg.AsyncConnection, scope: Scope, run_id: uuid.UUID, now: datetime
) -> MigrationStats:
    """Move the scope's qualifying blocks to the cortex; the caller's transaction commits the
    hippocampus side together with the stage's mark."""
    stats = MigrationStats()
    cortex = rt.cortex
    if cortex is None or not _enabled(rt):
        return stats
    stats.removed = await reconcile(rt, conn, scope)
    while True:
        blocks = await migration_plan(rt, conn, scope, now, limit=BATCH)
        moved = await _move(rt, conn, cortex, scope, blocks, now)
        stats.migrated += moved[0]
        stats.lines += moved[1]
        if len(blocks) < BATCH or moved[0] == 0:
            break
    stats.versions = await cortex.versions()
    await tiers.record_versions(conn, scope.entity_id, run_id, stats.versions)
    return stats


async def plan_migration(rt: Runtime, conn: psycopg.AsyncConnection, scope: Scope, now: datetime) -> int:
    """The hippocampus side of :func:`migrate` without the cortex side, for a dry run: the blocks it
    would move are marked as moved in the caller's transaction, which the caller rolls back, so the
    stages planned after it see what the run's would. Returns how many."""
    if not _enabled(rt):
        return 0
    ready, _ = await _movable(rt, conn, scope, await migration_plan(rt, conn, scope, now))
    await tiers.mark_migrated(conn, scope.entity_id, scope.namespace, [(b["id"], b["memory_id"]) for b in ready], now)
    return len(ready)


def _enabled(rt: Runtime) -> bool:
    return rt.cortex is not None and rt.settings.cortex


async def _movable(
    rt: Runtime, conn: psycopg.AsyncConnection, scope: Scope, blocks: Sequence[Mapping[str, Any]]
) -> tuple[list[Mapping[str, Any]], dict[uuid.UUID, np.ndarray]]:
    """Those of ``blocks`` that move (the ones with a vector of the active model; the rest wait for
    ``mnemo reembed``), and their vectors."""
    vectors = await vector_rows.vectors_of(conn, rt.table, scope.entity_id, rt.slug, [b["memory_id"] for b in blocks])
    return [b for b in blocks if b["memory_id"] in vectors], vectors


async def migration_plan(
    rt: Runtime, conn: psycopg.AsyncConnection, scope: Scope, now: datetime, limit: int = 1_000_000
) -> list[dict[str, Any]]:
    """The blocks that migrate at ``now`` (§5.3): coherence gain above the threshold, made
    ``cortex_age_days`` ago, marked ``long_term``, or past their tier's hot retention."""
    return await tiers.migration_candidates(
        conn,
        scope.entity_id,
        scope.namespace,
        gain=rt.settings.cortex_gain_threshold,
        made_before=now - timedelta(days=rt.settings.cortex_age_days),
        hot_until={tier: block_cutoff(tier, now, rt.settings.retention_policy()) for tier in TIERS},
        limit=limit,
    )


async def _move(
    rt: Runtime,
    conn: psycopg.AsyncConnection,
    cortex: Cortex,
    scope: Scope,
    blocks: Sequence[Mapping[str, Any]],
    now: datetime,
) -> tuple[int, int]:
    """Upsert ``blocks`` (those with a vector of the active model) and their lines, then mark them."""
    ready, vectors = await _movable(rt, conn, scope, blocks)
    if not ready:
        return 0, 0
    extra = await _extra_vectors(rt, conn, scope, [b["memory_id"] for b in ready])
    lines = await tiers.block_lines(conn, scope.entity_id, scope.namespace, [b["id"] for b in ready])
    dim = rt.embeddings.dim
    words = rt.settings.night_compressed_tokens
    block_rows = [_block_row(rt, b, vectors[b["memory_id"]], extra.get(b["memory_id"], {}), now, words) for b in ready]
    line_vectors = await vector_rows.vectors_of(
        conn, rt.table, scope.entity_id, rt.slug, [line.turn_id for ls in lines.values() for line in ls]
    )
    line_rows = [
        _line_row(rt, scope, b, line, line_vectors[line.turn_id])
        for b in ready
        for line in lines.get(b["id"], ())
        if line.turn_id in line_vectors  # a turn not embedded yet is quoted, not searched
    ]
    await cortex.upsert("blocks", dim, block_rows)
    await cortex.upsert("lines", dim, line_rows)
    await tiers.mark_migrated(conn, scope.entity_id, scope.namespace, [(b["id"], b["memory_id"]) for b in ready], now)
    return len(ready), len(line_rows)


async def _extra_vectors(
    rt: Runtime, conn: psycopg.AsyncConnection, scope: Scope, memory_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, dict[str, dict[str, Any]]]:
    """The blocks' vectors in the other spaces (dual embedding, §9), base64 float32 with their slugs (§6.3)."""
    out: dict[uuid.UUID, dict[str, dict[str, Any]]] = {}
    for table, slug in await vector_rows.other_spaces(conn, scope.entity_id, rt.table, memory_ids):
        found = await vector_rows.vectors_of(conn, table, scope.entity_id, slug, memory_ids)
        for memory_id, vector in found.items():
            data = base64.b64encode(vector.astype(np.float32).tobytes()).decode()
            out.setdefault(memory_id, {})[table] = {"slug": slug, "dim": int(vector.shape[0]), "data": data}
    return out


def _block_row(
    rt: Runtime,
    block: Mapping[str, Any],
    vector: np.ndarray,
    extra: Mapping[str, Any],
    now: datetime,
    words: int,
) -> dict[str, Any]:
    """A block as the cortex keeps it: condensed prose, full-precision vectors, every reference."""
    prose = condense_prose(block["prose"], words)
    when = block["arc_start_time"]
    return {
        "entity_id": block["entity_id"],
        "namespace": block["namespace"],
        "id": str(block["id"]),
        "memory_id": str(block["memory_id"]),
        "slug": rt.slug,
        "vector": np.asarray(vector, dtype=np.float32).tolist(),
        "session_id": block["session_id"],
        "kind": block["kind"],
        "first_turn": block["first_turn"],
        "last_turn": block["last_turn"],
        "turn_ids": [str(t) for t in block["turn_ids"]],
        "content": render_prose(prose, header=f"[{when:%Y-%m-%d %H:%M}] "),
        "gist": block.get("gist") or "",
        "prose": dumps(prose),
        "flux_metrics": dumps(block["flux_metrics"]),
        "salience_scores": dumps(block["salience_scores"]),
        "coherence_gain": float(block["coherence_gain"]),
        "ties_weight": float(block["ties_weight"]),
        "references": dumps(
            {
                "citations": block["citations"],
                "derived_from": block["derived_from"],
                "continues_from": block["continues_from"],
                "continued_by": block["continued_by"],
                "parent_metablock_id": block["parent_metablock_id"],
            }
        ),
        "arc_start_time": block["arc_start_time"].astimezone(UTC),
        "arc_end_time": block["arc_end_time"].astimezone(UTC),
        "migrated_at": now.astimezone(UTC),
        "extra_vectors": dumps(extra),
    }


def _line_row(
    rt: Runtime, scope: Scope, block: Mapping[str, Any], line: tiers.BlockLine, vector: np.ndarray
) -> dict[str, Any]:
    return {
        "entity_id": scope.entity_id,
        "namespace": scope.namespace,
        "id": str(line.turn_id),
        "block_id": str(block["id"]),
        "memory_id": str(block["memory_id"]),
        "slug": rt.slug,
        "vector": np.asarray(vector, dtype=np.float32).tolist(),
        "turn_number": line.turn_number,
        "role": line.role,
        "speaker": line.speaker,
        "content": line.content,
        "created_at": line.created_at.astimezone(UTC),
    }


async def reconcile(rt: Runtime, conn: psycopg.AsyncConnection, scope: Scope) -> int:
    """Remove from the cortex the blocks of ``scope`` the hippocampus no longer has (a forget that
    stopped between the two stores); returns how many."""
    cortex = rt.cortex
    if cortex is None:
        return 0
    stored = await cortex.rows("blocks", rt.embeddings.dim, scope, columns=["id"])
    if not stored:
        return 0
    known = await tiers.migrated_blocks(conn, scope.entity_id, scope.namespace)
    stale = [r["id"] for r in stored if r["id"] not in known]
    if stale:
        await cortex.delete_ids(scope, stale)
    return len(stale)
