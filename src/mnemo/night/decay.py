"""Night stage: decay of unused memories through the audited weight function.

Seeds: cognitive-plan §4.1 (light decay: unused memories nudged by
``contradict(0.01)``), §4.3 (demotion: dormant, not deleted), §4.4 (not
accessed for 90+ days and fewer than 3 accesses: ``contradict(1.0)``, once per
idle stretch: a memory is halved again only after a new access went idle for
as long); archive-adr §5.1, §8 (anchored memories never decay; decay is loss of
salience, not deletion). Every change is a ``traces.weight_changes`` row with
the reason ``decay``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import psycopg

from mnemo import _dynamics as dynamics
from mnemo._runtime import Runtime
from mnemo.cognition.consolidation.curation import DecayPolicy, decay_amount
from mnemo.models import NightReport, Scope
from mnemo.night.stage_protocol import NightPlan, NightRun
from mnemo.store import decay_marks as decay_rows

__all__ = ["STAGE", "DecayStage", "DecayStats", "decay"]


@dataclass(slots=True)
class DecayStats:
    light: int = 0
    deep: int = 0


async def decay(
    rt: Runtime,
    conn: psycopg.AsyncConnection,
    scope: Scope,
    now: datetime,
    policy: DecayPolicy | None = None,
    *,
    dry_run: bool = False,
) -> DecayStats:
    """Apply one decay pass at ``now`` inside the caller's transaction (``dry_run``: count only)."""
    policy = policy or DecayPolicy()
    stats = DecayStats()
    requests: list[dynamics.WeightRequest] = []
    deep_ids = []
    for row in await decay_rows.decay_candidates(conn, scope.entity_id, scope.namespace):
        last = row.last_accessed
        if row.deep_decayed_at:
            halved = datetime.fromisoformat(row.deep_decayed_at)
            last = halved if last is None or halved > last else last  # one halving per idle stretch
        amount = decay_amount(last, row.created_at, int(row.access_count), False, now, policy)
        if amount <= 0:
            continue
        deep = amount >= policy.deep_amount and amount > policy.light_amount
        requests.append(
            dynamics.WeightRequest(row.id, "contradict", amount, "decay", {"deep": deep, "at": now.isoformat()})
        )
        if deep:
            deep_ids.append(row.id)
            stats.deep += 1
        else:
            stats.light += 1
    if requests and not dry_run:
        await dynamics.change_weights(conn, rt.settings, scope, requests, at=now)
        await decay_rows.mark_deep_decayed(conn, scope.entity_id, deep_ids, now)
    return stats


class DecayStage:
    """Night stage ``decay`` (scope-wide): what went unused fades (cognitive-plan §4.1)."""

    name = "decay"
    report_fields = ("decayed_light", "decayed_deep")

    async def run(self, night: NightRun) -> None:
        d = await night.scope_wide(self.name, DecayStats, lambda conn: decay(night.rt, conn, night.scope, night.as_of))
        night.report.decayed_light, night.report.decayed_deep = d.light, d.deep

    async def plan(self, night: NightPlan) -> None:
        d = await decay(night.rt, night.conn, night.scope, night.report.as_of, dry_run=True)
        night.report.decayed_light, night.report.decayed_deep = d.light, d.deep

    def row(self, report: NightReport) -> str:
        return f"{report.decayed_light} light, {report.decayed_deep} deep"


STAGE = DecayStage()
