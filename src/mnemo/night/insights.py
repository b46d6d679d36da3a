"""Night stage: merge near-duplicate memories into insights, with narratives and reconsolidation.

Seed: cognitive-plan §4.2 (cluster similar memories, similarity > 0.85, into an
insight; do not replace the originals: lower their weight with
``contradict(0.3)`` so the insight surfaces first; ``supersedes`` links; a
causal narrative for clusters of three or more; ``why_do_i_believe`` traces
the chain) and §4.4 (decay, not deletion). With a configured LLM the insight
and narrative are written by it; offline, the insight is the cluster's most
central statement that says every source's times, names and objects (else
all of them, joined) and the narrative a template over the sources. Only
statements of one claim cluster: two that disagree on a date, a name or a
fact's object are two events, however near their vectors.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import psycopg

from mnemo import _dynamics as dynamics
from mnemo import llm
from mnemo._runtime import Runtime
from mnemo.cognition.consolidation.summaries import Claim, claim_of, offline_insight, offline_narrative, same_claim
from mnemo.cognition.mind.gate_rules import negation_conflict
from mnemo.models import NightReport, Scope, uuid7
from mnemo.night.stage_protocol import NightPlan, NightRun
from mnemo.store import links as link_rows
from mnemo.store import vectors as vector_rows
from mnemo.store.links import InsightCandidate
from mnemo.write.remember import memory_row, store_memory

__all__ = ["STAGE", "InsightStats", "InsightsStage", "clusters", "derive_insights", "plan_insights"]

_RECENT = 200


@dataclass(slots=True)
class InsightStats:
    insights: int = 0
    narratives: int = 0
    sources: int = 0


def clusters(
    vectors: np.ndarray, threshold: float, conflicts: Callable[[int, int], bool] | None = None
) -> list[list[int]]:
    """Greedy single-pass clusters of unit vectors: each item joins the first cluster whose every
    member is at least ``threshold`` similar (complete linkage) and none ``conflicts`` with it, in
    input order; only clusters of two or more are returned. ("Dana lives in Lisbon" and "Dana lives
    in Porto" are near in embedding space but are an update, not a pattern.)"""
    groups: list[list[int]] = []
    for i in range(vectors.shape[0]):
        for group in groups:
            if all(float(vectors[i] @ vectors[j]) >= threshold and not (conflicts and conflicts(i, j)) for j in group):
                group.append(i)
                break
        else:
            groups.append([i])
    return [g for g in groups if len(g) >= 2]


def _latest(members: list[InsightCandidate]) -> datetime | None:
    """An insight is as old as its newest source experience (so it does not look fresh to recall)."""
    times = [m.event_time for m in members if m.event_time is not None]
    return max(times) if times else None


def _seen(members: list[InsightCandidate]) -> dict[str, Any]:
    """How often and over what time the insight's pattern was seen (the curator's mention signals):
    one mention per source, from the oldest source event to the newest."""
    times = [m.event_time for m in members if m.event_time is not None]
    span = {"first_seen": min(times).isoformat(), "last_seen": max(times).isoformat()} if times else {}
    return {"mentions": len(members), **span}


async def derive_insights(rt: Runtime, conn: psycopg.AsyncConnection, scope: Scope, run_id: uuid.UUID) -> InsightStats:
    """Insights (and narratives) for the new clusters, source weights lowered, in the caller's
    transaction."""
    cfg = rt.settings
    stats = InsightStats()
    if cfg.night_insights_max == 0:
        return stats
    rows, matrix = await _candidates(rt, conn, scope)
    if len(rows) < 2:
        return stats
    for group in clusters(matrix, cfg.night_insight_similarity, _conflicts(rows))[: cfg.night_insights_max]:
        await _insight(rt, conn, scope, run_id, [rows[i] for i in group], matrix[group], stats)
    return stats


async def plan_insights(rt: Runtime, conn: psycopg.AsyncConnection, scope: Scope) -> InsightStats:
    """The insights (and narratives) :func:`derive_insights` would make from the memories there are
    now; writes nothing and asks no LLM (``mnemo night --dry-run``)."""
    stats = InsightStats()
    if rt.settings.night_insights_max == 0:
        return stats
    rows, matrix = await _candidates(rt, conn, scope)
    if len(rows) < 2:
        return stats
    for group in clusters(matrix, rt.settings.night_insight_similarity, _conflicts(rows))[
        : rt.settings.night_insights_max
    ]:
        stats.insights += 1
        stats.narratives += len(group) >= 3
        stats.sources += len(group)
    return stats


async def _candidates(
    rt: Runtime, conn: psycopg.AsyncConnection, scope: Scope
) -> tuple[list[InsightCandidate], np.ndarray]:
    """The recent memories that may join a cluster, in a deterministic order, with their unit vectors
    (none when fewer than two have a vector)."""
    rows = await link_rows.insight_candidates(conn, scope.entity_id, scope.namespace, _RECENT)
    stored = await vector_rows.vectors_of(conn, rt.table, scope.entity_id, rt.slug, [r.id for r in rows])
    rows = [r for r in rows if r.id in stored]
    if len(rows) < 2:
        return rows, np.empty((0, 0))
    rows.sort(key=lambda r: str(r.id))  # deterministic clustering order
    matrix = np.stack([stored[r.id] for r in rows]).astype(np.float64)
    matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
    return rows, matrix


def _claim(row: InsightCandidate) -> Claim:
    return claim_of(row.content, subject=row.entity, predicate=row.attribute)


def _conflicts(rows: Sequence[InsightCandidate]) -> Callable[[int, int], bool]:
    claims = [_claim(r) for r in rows]

    def conflicts(i: int, j: int) -> bool:
        """Two values of one fact key are an update or a contradiction, not a pattern; two items
        drawn from the same turns are one experience, not a pattern either; two statements that
        disagree on their times, names or objects are two events or claims, however near."""
        a, b = rows[i], rows[j]
        if a.attribute and (a.entity, a.attribute) == (b.entity, b.attribute):
            return True
        if set(a.provenance) & set(b.provenance):
            return True
        if not same_claim(claims[i], claims[j]):
            return True
        return negation_conflict(a.content, b.content)

    return conflicts


async def _insight(
    rt: Runtime,
    conn: psycopg.AsyncConnection,
    scope: Scope,
    run_id: uuid.UUID,
    members: list[InsightCandidate],
    vectors: np.ndarray,
    stats: InsightStats,
) -> None:
    """One cluster's insight memory (and narrative, for three or more), linked to its sources, whose
    weights are lowered so the insight surfaces first."""
    cfg = rt.settings
    texts = [m.content for m in members]
    text = await llm.insight(rt.llm, texts) if rt.llm is not None else None
    text = text or offline_insight(texts, vectors, [_claim(m) for m in members])
    vector = (await rt.embeddings.embed_documents([rt.embeddings.document_text(text, "insight")]))[0]
    insight_id = uuid7()
    source_ids = [m.id for m in members]
    row = memory_row(
        rt,
        scope,
        insight_id,
        text,
        "insight",
        status="candidate",
        source_tag="night:insight",
        provenance=[str(i) for i in source_ids],
        event_time=_latest(members),
        metadata={"sources": [str(i) for i in source_ids], "run_id": str(run_id), **_seen(members)},
    )
    await store_memory(conn, rt, scope, row, vector)
    links: list[tuple[uuid.UUID, uuid.UUID, str, float | None]] = []
    for source in source_ids:
        links += [(insight_id, source, "derived_from", None), (insight_id, source, "supersedes", None)]
    if len(members) >= 3:
        story_id = await _narrative(rt, conn, scope, run_id, insight_id, text, members)
        links.append((story_id, insight_id, "derived_from", None))
        stats.narratives += 1
    await link_rows.insert_links(conn, scope.entity_id, scope.namespace, links)
    await dynamics.change_weights(
        conn,
        cfg,
        scope,
        [
            dynamics.WeightRequest(
                s, "contradict", cfg.night_insight_source_gain, "insight", {"insight": str(insight_id)}
            )
            for s in source_ids
        ],
    )
    stats.insights += 1
    stats.sources += len(source_ids)


async def _narrative(
    rt: Runtime,
    conn: psycopg.AsyncConnection,
    scope: Scope,
    run_id: uuid.UUID,
    insight_id: uuid.UUID,
    text: str,
    members: list[InsightCandidate],
) -> uuid.UUID:
    """The causal narrative of an insight's sources, stored as a memory; returns its id."""
    texts = [m.content for m in members]
    story = await llm.narrative(rt.llm, text, texts) if rt.llm is not None else None
    story = story or offline_narrative(text, texts)
    story_vec = (await rt.embeddings.embed_documents([rt.embeddings.document_text(story, "narrative")]))[0]
    story_id = uuid7()
    await store_memory(
        conn,
        rt,
        scope,
        memory_row(
            rt,
            scope,
            story_id,
            story,
            "narrative",
            status="candidate",
            source_tag="night:narrative",
            provenance=[str(insight_id)],
            event_time=_latest(members),
            metadata={"insight": str(insight_id), "run_id": str(run_id)},
        ),
        story_vec,
    )
    return story_id


class InsightsStage:
    """Night stage ``insights`` (scope-wide): insights and narratives over clusters of memories."""

    name = "insights"
    report_fields = ("insights", "narratives")

    async def run(self, night: NightRun) -> None:
        i = await night.scope_wide(
            self.name, InsightStats, lambda conn: derive_insights(night.rt, conn, night.scope, night.run_id)
        )
        night.report.insights, night.report.narratives = i.insights, i.narratives

    async def plan(self, night: NightPlan) -> None:
        i = await plan_insights(night.rt, night.conn, night.scope)
        night.report.insights, night.report.narratives = i.insights, i.narratives

    def row(self, report: NightReport) -> str:
        text = f"{report.insights} insights, {report.narratives} narratives"
        return text + " (from the memories there are now)" if report.dry_run else text


STAGE = InsightsStage()
