"""Night stage ``cluster`` (stage 8 of memory-architecture §8.2): the cortex's RAPTOR tree rebuilt
over the scope's cortex blocks. The work is the cortex's (:mod:`mnemo.cortex.tree`); this module is
how the night runs, plans and shows it."""

from __future__ import annotations

from mnemo.cortex.tree import TreeStats, build_tree
from mnemo.models import NightReport
from mnemo.night.stage_protocol import NightPlan, NightRun, count_of

__all__ = ["STAGE", "ClusterStage"]


class ClusterStage:
    """Night stage ``cluster`` (scope-wide, writes LanceDB too): its error goes up, and the next run
    resumes it."""

    name = "cluster"
    report_fields = ("tree_nodes", "cortex_versions")

    async def run(self, night: NightRun) -> None:
        t = await night.scope_wide(
            self.name,
            TreeStats,
            lambda conn: build_tree(night.rt, conn, night.scope, night.run_id, night.as_of),
            cortex=True,
        )
        night.report.tree_nodes = t.nodes
        night.report.cortex_versions |= dict(t.versions)  # after the versions migration ended at

    async def plan(self, night: NightPlan) -> None:
        """Nothing to count: the tree is rebuilt whole over the cortex's blocks."""

    def row(self, report: NightReport) -> str:
        if report.dry_run:
            return "the cortex's tree rebuilt over its blocks"
        return f"cortex tree: {count_of(report.tree_nodes, 'node')}"


STAGE = ClusterStage()
