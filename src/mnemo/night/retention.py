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
from mnemo.night.stage_protocol import NightPlan, NightRun, count_of
from mnemo.store import blocks as block_rows
from mnemo.store import forget_rows, tiers

__all__ = ["STAGE", "RetentionStage", "RetentionStats", "describe", "retain"]


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


class RetentionStage:
    """Night stage ``retention`` (scope-wide, stage 9): covered raw turns removed, cold blocks
    archived; the report also says what a later night removes and under which rule."""

    name = "retention"
    report_fields = (
        "turns_removed", "blocks_archived", "turns_kept", "retention_next", "retention_enabled", "raw_cycles",
        "cycle_hours",
    )  # fmt: skip

    async def run(self, night: NightRun) -> None:
        rt, scope, as_of = night.rt, night.scope, night.as_of
        r = await night.scope_wide(
            self.name, RetentionStats, lambda conn: retain(conn, rt.settings, scope, as_of, night.run_id)
        )
        _fill(night.report, r)

    async def plan(self, night: NightPlan) -> None:
        kept = await retain(night.conn, night.rt.settings, night.scope, night.report.as_of, night.run_id, dry_run=True)
        _fill(night.report, kept)

    def row(self, report: NightReport) -> str:
        """What was (or would be) removed now, and what a later night will remove."""
        if not report.retention_enabled:
            return "off (MNEMO_RETENTION=false): raw turns and blocks are kept"
        removed, archived = ("would be removed", "would be archived") if report.dry_run else ("removed", "archived")
        text = (
            f"{report.turns_removed} raw turns {removed} ({_rule(report)}), "
            f"{report.blocks_archived} blocks {archived} (cold: not recalled)"
        )
        if report.turns_kept:
            when = f"{report.retention_next:%Y-%m-%d %H:%M} UTC" if report.retention_next else "the next night"
            text += (
                f"; {report.turns_kept} covered raw turns kept: a night from {when} on removes them "
                "(MNEMO_RETENTION=false keeps them)"
            )
        return text


def _fill(report: NightReport, stats: RetentionStats) -> None:
    report.turns_removed, report.blocks_archived = stats.turns_removed, stats.blocks_archived
    report.turns_kept = stats.turns_kept
    report.retention_next = datetime.fromisoformat(stats.next_due) if stats.next_due else None


def _rule(report: NightReport) -> str:
    """When a covered raw turn may go: ``arrived over 1 cycle (24h) ago``."""
    normal, meso, elder = report.raw_cycles
    cycles = (
        count_of(normal, "cycle") if normal == meso == elder else f"{normal}/{meso}/{elder} cycles (normal/meso/elder)"
    )
    return f"covered by blocks of an earlier night, arrived over {cycles} of {report.cycle_hours:g}h ago"


STAGE = RetentionStage()
