"""Night stage ``reflexes``: the reflexes' self-pruning (memory-architecture §10.5). The work is
one statement family of :mod:`mnemo.store.reflexes`; this module is how the night runs, plans and
shows it."""

from __future__ import annotations

from mnemo.models import NightReport
from mnemo.night.stage_protocol import NightPlan, NightRun
from mnemo.store import reflexes as reflex_rows

__all__ = ["STAGE", "ReflexesStage"]


class ReflexesStage:
    """Night stage ``reflexes`` (scope-wide): stale reflexes removed, unobserved edges weakened."""

    name = "reflexes"
    report_fields = ("reflexes_pruned", "edges_weakened", "edges_dropped")

    async def run(self, night: NightRun) -> None:
        e, ns = night.scope.entity_id, night.scope.namespace
        x = await night.scope_wide(
            self.name, reflex_rows.PruneStats, lambda conn: reflex_rows.prune(conn, e, ns, night.as_of)
        )
        night.report.reflexes_pruned, night.report.edges_weakened = x.pruned, x.weakened
        night.report.edges_dropped = x.edges_dropped

    async def plan(self, night: NightPlan) -> None:
        e, ns = night.scope.entity_id, night.scope.namespace
        night.report.plan["reflexes_to_prune"] = await reflex_rows.prunable(night.conn, e, ns, night.report.as_of)

    def row(self, report: NightReport) -> None:
        """No row: the report table has never shown this stage (its counts are in the JSON)."""
        return None


STAGE = ReflexesStage()
