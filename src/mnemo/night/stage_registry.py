"""The night's stages, in the order a night runs them: the one place a stage is declared
(issue 41 item 2; memory-architecture §8, cognitive-plan §4).

:mod:`mnemo.night.cycle` runs them, :mod:`mnemo.night.plan` plans them (``--dry-run``), the
``mnemo night`` table shows their rows and the inspector lists them in this order (both through
:attr:`mnemo.AsyncArchive.NIGHT_STAGES`); :class:`~mnemo.models.NightReport`'s attributes are
each a stage's (its ``report_fields``) or the run's (:data:`RUN_FIELDS`), which a test checks.
Adding a stage is one module that implements :class:`~mnemo.night.stage_protocol.Stage` and one
line here.

Groupings: ``blocks`` is stages 1b-6 of memory-architecture §8 (flux arcs, segments, zones,
salience, summaries, embeddings: one session at a time, in one transaction each, so they stay one
stage); ``inner`` is the inner life's night work (promotion, tensions, tuning, gut axes,
frustration, the safety guard: :mod:`mnemo.night.inner_consolidation`, one transaction).
"""

from __future__ import annotations

from mnemo.night import (
    block_building,
    cortex_clustering,
    cortex_migration,
    curator,
    decay,
    fact_extraction,
    inner_consolidation,
    insights,
    reflex_pruning,
    retention,
    surprise,
)
from mnemo.night.stage_protocol import Stage

__all__ = ["RUN_FIELDS", "STAGES", "STAGE_NAMES"]

STAGES: tuple[Stage, ...] = (
    surprise.STAGE,  # surprisal: per turn
    block_building.STAGE,  # blocks: per session
    fact_extraction.STAGE,  # knowledge: per session
    insights.STAGE,  # the scope-wide stages from here on
    curator.STAGE,  # curate
    decay.STAGE,
    inner_consolidation.STAGE,  # inner
    cortex_migration.STAGE,  # migrate
    cortex_clustering.STAGE,  # cluster
    retention.STAGE,
    reflex_pruning.STAGE,  # reflexes
)
"""Every night stage, in the order a night runs (and plans and shows) them."""

STAGE_NAMES: tuple[str, ...] = tuple(stage.name for stage in STAGES)
"""Their names: what ``--stages`` and ``night_cycle(stages=…)`` choose from."""

RUN_FIELDS = (
    "scope", "run_id", "as_of", "resumed", "turns", "seconds", "stage_seconds", "skipped", "dry_run", "plan",
)  # fmt: skip
"""The :class:`~mnemo.models.NightReport` attributes that are the run's, not a stage's (``plan``
holds the counts each stage's dry run adds under its own keys)."""
