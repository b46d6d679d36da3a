"""Night stage ``migrate`` (stage 7 of memory-architecture §8.2): blocks past their hot retention
move from the hippocampus to the cortex, the long-term tier. The work is the cortex's
(:mod:`mnemo.cortex.block_migration`); this module is how the night runs, plans and shows it."""

from __future__ import annotations

from mnemo.cortex.block_migration import MigrationStats, migrate, plan_migration
from mnemo.models import NightReport
from mnemo.night.stage_protocol import NightPlan, NightRun, count_of

__all__ = ["STAGE", "MigrateStage"]


class MigrateStage:
    """Night stage ``migrate`` (scope-wide, writes LanceDB too): its error goes up, and the next run
    resumes it."""

    name = "migrate"
    report_fields = ("blocks_migrated", "lines_migrated", "cortex_versions")

    async def run(self, night: NightRun) -> None:
        m = await night.scope_wide(
            self.name,
            MigrationStats,
            lambda conn: migrate(night.rt, conn, night.scope, night.run_id, night.as_of),
            cortex=True,
        )
        night.report.blocks_migrated, night.report.lines_migrated = m.migrated, m.lines
        night.report.cortex_versions = dict(m.versions)

    async def plan(self, night: NightPlan) -> None:
        if night.rt.settings.cortex:
            moved = await plan_migration(night.rt, night.conn, night.scope, night.report.as_of)
            night.report.plan["blocks_to_migrate"] = moved

    def row(self, report: NightReport) -> str:
        if report.dry_run:
            blocks = count_of(report.plan.get("blocks_to_migrate", 0), "block")
            return f"{blocks} to move to the cortex (long-term tier)"
        return (
            f"{count_of(report.blocks_migrated, 'block')} ({report.lines_migrated} verbatim lines) moved to the "
            "cortex (long-term tier)"
        )


STAGE = MigrateStage()
