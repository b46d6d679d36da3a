"""Night stage 9: retention by user tier.

Seeds: memory-architecture §2.3 (normal / meso / elder: one cycle of raw turns
for every tier; holographic blocks kept 0, 2 or 6 further cycles) and §8.3
(day-table cleanup: raw turns are removed only once a block covers them).

Raw turns that a block covers are forgotten everywhere (row, postings, vectors,
trace references: :func:`mnemo.store.forget_rows.forget_items`; a turn the block quotes
verbatim lives on as the block's line, keeping its index entries) once they have been
in mnemo for their tier's raw cycles, counted from when they ARRIVED
(``turns.recorded_at``), not from their event time (``created_at``, years ago
for imported history), and never by the night that first cuts them into a
block: the user gets at least one night's report that says what the next one
will remove. The block keeps their live zones verbatim and their dead zones
summarised. Blocks past their hot retention have their memory row archived
(cold: kept, not recalled by default) until the long-term tier takes them. A
block's hot age counts from when the night cycle made it, so importing old
history does not archive its blocks the moment they are made.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

import psycopg

from mnemo.cognition.consolidation.curation import TIERS, block_cutoff, raw_keep
from mnemo.config import Settings
from mnemo.models import NightReport, Scope
from mnemo.store import blocks as block_rows
from mnemo.store import forget_rows, tiers

__all__ = ["RetentionStats", "describe", "retain"]


@dataclass(slots=True)
class RetentionStats:
    """What retention removed (or, in a dry run, would remove) and what it keeps for a later night."""

    turns_removed: int = 0
    blocks_archived: int = 0
    turns_kept: int = 0  # covered by a block, not expired yet: a later night removes them
    next_due: str | None = None  # ISO time from which a later night removes some of them


def describe(report: NightReport, settings: Settings) -> None:
    """Copy the retention settings a report's reader needs to know into ``report``."""
    report.retention_enabled = settings.retention
    report.raw_cycles = settings.retention_raw_cycles
    report.cycle_hours = settings.retention_cycle_hours


async def retain(
    conn: psycopg.AsyncConnection,
    settings: Settings,
    scope: Scope,
    now: datetime,
    run_id: uuid.UUID | None,
    *,
    dry_run: bool = False,
) -> RetentionStats:
    """Apply retention at ``now`` inside the caller's transaction, as night run ``run_id``: a
    night neither removes the turns that only its own blocks cover nor archives the blocks it
    made. ``dry_run`` counts and writes nothing."""
    stats = RetentionStats()
    if not settings.retention:
        return stats
    policy = settings.retention_policy()
    keep: dict[str, timedelta] = {tier: raw_keep(tier, policy) for tier in TIERS}
    expired, stats.turns_kept, due = await block_rows.retention_turns(
        conn, scope.entity_id, scope.namespace, now, keep, run_id
    )
    stats.next_due = due.isoformat() if due is not None else None
    if expired and dry_run:
        stats.turns_removed = len(expired)
    elif expired:
        lines = list(await tiers.line_turns(conn, scope.entity_id, expired))
        removed = await forget_rows.forget_items(
            conn, scope.entity_id, scope.namespace, expired, copies=False, keep_index=lines
        )
        await tiers.turns_to_lines(conn, scope.entity_id, lines)
        stats.turns_removed = removed.get("turns", 0)
    blocks: dict[str, datetime | None] = {tier: block_cutoff(tier, now, policy) for tier in TIERS}
    stats.blocks_archived = await block_rows.archive_expired_blocks(
        conn, scope.entity_id, scope.namespace, blocks, run_id, dry_run=dry_run
    )
    return stats
