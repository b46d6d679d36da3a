"""Night stage 9: retention by user tier.

Seeds: memory-architecture §2.3 (normal / meso / elder: one cycle of raw turns
for every tier; holographic blocks kept 0, 2 or 6 further cycles) and §8.3
(day-table cleanup: raw turns are removed only once a block covers them).

Raw turns past their tier's cutoff that a block covers are forgotten everywhere
(row, postings, vectors, trace references: :func:`mnemo.store.forget.forget_items`);
the block keeps their live zones verbatim and their dead zones summarised.
Blocks past their hot retention have their memory row archived (cold: kept,
not recalled by default) until the long-term tier takes them. A block's hot
age counts from when the night cycle made it, so importing old history does
not archive its blocks the moment they are made.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

import psycopg

from mnemo.cognition.curation import TIERS, RetentionPolicy, block_cutoff, raw_cutoff
from mnemo.config import Settings
from mnemo.models import Scope
from mnemo.store import forget as forget_rows
from mnemo.store import night as night_rows

__all__ = ["RetentionStats", "policy_from", "retain"]


@dataclass(slots=True)
class RetentionStats:
    turns_removed: int = 0
    blocks_archived: int = 0


def policy_from(settings: Settings) -> RetentionPolicy:
    raw, block = settings.retention_raw_cycles, settings.retention_block_cycles
    return RetentionPolicy(
        cycle=timedelta(hours=settings.retention_cycle_hours),
        normal_raw_cycles=raw[0],
        meso_raw_cycles=raw[1],
        elder_raw_cycles=raw[2],
        normal_block_cycles=block[0],
        meso_block_cycles=block[1],
        elder_block_cycles=block[2],
    )


async def retain(conn: psycopg.AsyncConnection, settings: Settings, scope: Scope, now: datetime) -> RetentionStats:
    """Apply retention at ``now`` inside the caller's transaction."""
    stats = RetentionStats()
    if not settings.retention:
        return stats
    policy = policy_from(settings)
    raw: dict[str, datetime] = {tier: raw_cutoff(tier, now, policy) for tier in TIERS}
    expired = await night_rows.expired_turns(conn, scope.entity_id, scope.namespace, raw)
    if expired:
        removed = await forget_rows.forget_items(conn, scope.entity_id, scope.namespace, expired, copies=False)
        stats.turns_removed = removed.get("turns", 0)
    blocks: dict[str, datetime | None] = {tier: block_cutoff(tier, now, policy) for tier in TIERS}
    stats.blocks_archived = await night_rows.archive_expired_blocks(conn, scope.entity_id, scope.namespace, blocks)
    return stats
