"""The curator: staged, versioned promote / keep / archive / prune / quarantine.

Seeds: archive-adr §9 (the curator loop: quality signals of recency and
reinforcement, mention count, confidence and provenance with tool-verified
facts over free claims, contradiction with anchored facts quarantined, scope
relevance; "Staged Memory Promotion": batch consolidation produces an
inspectable, numbered version rather than silently mutating the active
memory; anchors override decay and prune), cognitive-plan §4.3 (promotion is a
weight increase through ``reinforce``).

:func:`plan` computes the verdicts without writing anything (``mnemo curate
--dry-run``); :func:`stage` writes them as a new version; :func:`apply` moves
each memory to its new status and reinforces the promoted ones, audited;
:func:`night_stage` is the night cycle's curation: the three in a row.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import numpy as np
import psycopg

from mnemo import _dynamics as dynamics
from mnemo import llm
from mnemo._runtime import Runtime
from mnemo.cognition.consolidation.curation import CuratorPolicy, Provenance, Signals, classify
from mnemo.cognition.consolidation.salience import unit_vector
from mnemo.cognition.mind.gate_rules import negation_conflict, substitution_conflict
from mnemo.models import MemoryStatus, NightReport, Scope, Verdict
from mnemo.night.stage_protocol import NightPlan, NightRun, count_of
from mnemo.store import curation_versions as curation_rows
from mnemo.store import vectors as vector_rows

__all__ = ["PROMOTE_GAIN", "STAGE", "CurateStage", "CurationStats", "Verdict", "apply", "night_stage", "plan", "stage"]

PROMOTE_GAIN = 2.0  # cognitive-plan §4.3: a pattern seen often gets reinforce(2.0)
_TARGET: dict[str, MemoryStatus] = {
    "promote": "active",
    "keep": "active",
    "archive": "archived",
    "prune": "pruned",
    "quarantine": "quarantined",
}
_ANCHOR_SIMILARITY = 0.6  # a candidate this close to an anchored memory is checked for contradiction


def _provenance(row: curation_rows.CandidateRow) -> Provenance:
    if row.fact_source is not None:  # a fact's own source (the column allows only the three)
        return row.fact_source
    tag = row.source_tag or ""
    if tag.startswith("tool"):
        return "tool"
    if tag.startswith("night:insight"):
        return "inferred"
    return "user"


def _mentions(row: curation_rows.CandidateRow, meta: Mapping[str, Any]) -> tuple[int, float]:
    """How often a memory was stated or re-derived, and over how many days: a fact's repeats (from
    its first statement to its last, in the turns' own time), an insight's sources (from the oldest
    source event to the newest); anything else was said once."""
    if row.mention_count is not None:
        count, first, last = int(row.mention_count), row.first_seen, row.last_seen
    elif meta.get("mentions") is not None:
        count, first, last = int(meta["mentions"]), meta.get("first_seen"), meta.get("last_seen")
        first, last = (_when(first), _when(last))
    else:
        return 1, 0.0
    span = (last - first) / timedelta(days=1) if first is not None and last is not None else 0.0
    return max(count, 1), max(span, 0.0)


def _when(value: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        return None


async def plan(
    rt: Runtime,
    conn: psycopg.AsyncConnection,
    scope: Scope,
    now: datetime,
    policy: CuratorPolicy | None = None,
) -> list[Verdict]:
    """Every candidate or active memory's verdict; writes nothing."""
    policy = policy or CuratorPolicy()
    rows = await curation_rows.candidates(conn, scope.entity_id, scope.namespace)
    if not rows:
        return []
    vectors = await vector_rows.vectors_of(conn, rt.table, scope.entity_id, rt.slug, [r.id for r in rows])
    units = {i: unit_vector(v.astype(np.float64)) for i, v in vectors.items()}
    centroid = unit_vector(np.mean(list(units.values()), axis=0)) if units else None
    anchors = [(r, units[r.id]) for r in rows if r.anchored and r.id in units]
    out: list[Verdict] = []
    for row in rows:
        vec = units.get(row.id)
        relevance = 0.5 if vec is None or centroid is None else float(np.clip(np.dot(vec, centroid), 0.0, 1.0))
        conflict = False
        if not row.anchored and vec is not None:
            for anchor, anchor_vec in anchors:
                if float(np.dot(vec, anchor_vec)) < _ANCHOR_SIMILARITY:
                    continue
                if negation_conflict(row.content, anchor.content) or substitution_conflict(row.content, anchor.content):
                    conflict = True
                elif rt.llm is not None and row.status == "candidate":
                    # The third, most expensive layer (cognitive-plan §2.8), for new candidates only.
                    conflict = bool(await llm.contradicts(rt.llm, row.content, anchor.content))
                if conflict:
                    break
        meta = row.metadata or {}
        mentions, span = _mentions(row, meta)
        signals = Signals(
            weight_center=row.alpha / (row.alpha + row.beta),
            access_count=int(row.access_count) + int(row.older_access_count or 0),
            last_accessed=row.last_accessed,
            created_at=row.created_at,
            mention_count=mentions,
            mention_span_days=span,
            confidence=float(row.source_confidence),
            provenance=_provenance(row),
            contradicts_anchor=conflict,
            scope_relevance=relevance,
            anchored=bool(row.anchored),
            superseded=bool(meta.get("superseded_by")) or bool(row.fact_closed),
        )
        verdict = classify(signals, now, policy)
        out.append(
            Verdict(
                memory_id=row.id,
                kind=row.kind,
                content=row.content,
                from_status=row.status,
                to_status=_TARGET[verdict.verdict],
                classification=verdict,
            )
        )
    return out


def counts(verdicts: Sequence[Verdict]) -> dict[str, int]:
    return dict(Counter(v.classification.verdict for v in verdicts))


async def stage(
    conn: psycopg.AsyncConnection,
    scope: Scope,
    verdicts: Sequence[Verdict],
    *,
    as_of: datetime,
    run_id: uuid.UUID | None = None,
) -> int | None:
    """Write the verdicts that change something as a new staged version; returns its number, or None
    (and writes nothing) when no verdict changes anything."""
    items = [v.item() for v in verdicts if v.changes]
    if not items:
        return None
    return await curation_rows.stage_version(
        conn, scope.entity_id, scope.namespace, run_id=run_id, as_of=as_of, items=items, counts=counts(verdicts)
    )


async def apply(rt: Runtime, conn: psycopg.AsyncConnection, scope: Scope, version: int) -> int | None:
    """Apply a staged version inside the caller's transaction: statuses change and promoted
    memories are reinforced (audited as ``promote``). Returns how many memories changed status,
    or None when the version is not staged (unknown, or already applied: applying twice does
    nothing)."""
    items = await curation_rows.version_items(conn, scope.entity_id, scope.namespace, version)
    changed = await curation_rows.apply_version(conn, scope.entity_id, scope.namespace, version)
    if changed is None:
        return None
    promoted = [i.memory_id for i in items if i.verdict == "promote" and i.content is not None]
    if promoted:
        await dynamics.change_weights(
            conn,
            rt.settings,
            scope,
            [
                dynamics.WeightRequest(m, "reinforce", PROMOTE_GAIN, "promote", {"curation_version": version})
                for m in promoted
            ],
        )
    return changed


@dataclass(slots=True)
class CurationStats:
    """What the night's curation did: the version it staged (None: nothing to judge), the count of
    each verdict, and whether it applied the version."""

    version: int | None = None
    verdicts: dict[str, int] = field(default_factory=dict)
    applied: bool = False


async def night_stage(
    rt: Runtime, conn: psycopg.AsyncConnection, scope: Scope, as_of: datetime, run_id: uuid.UUID | None
) -> CurationStats:
    """The night's curation in the caller's transaction: plan the verdicts, stage them as a version,
    and apply it when ``curator_apply`` is set (a dry run does this too, and rolls it back)."""
    verdicts = await plan(rt, conn, scope, as_of)
    version = await stage(conn, scope, verdicts, as_of=as_of, run_id=run_id)
    applied = False
    if rt.settings.curator_apply and version is not None:
        applied = await apply(rt, conn, scope, version) is not None
    return CurationStats(version=version, verdicts=counts(verdicts), applied=applied)


class CurateStage:
    """Night stage ``curate`` (scope-wide): the curator's verdicts staged as a version, applied
    when ``curator_apply`` is set (archive-adr §9)."""

    name = "curate"
    report_fields = ("curation_version", "curation_applied", "verdicts")

    async def run(self, night: NightRun) -> None:
        c = await night.scope_wide(
            self.name, CurationStats, lambda conn: night_stage(night.rt, conn, night.scope, night.as_of, night.run_id)
        )
        night.report.curation_version, night.report.verdicts = c.version, dict(c.verdicts)
        night.report.curation_applied = bool(c.applied)

    async def plan(self, night: NightPlan) -> None:
        curated = await night_stage(night.rt, night.conn, night.scope, night.report.as_of, night.run_id)
        night.report.verdicts = curated.verdicts
        night.report.plan["memories_to_judge"] = sum(night.report.verdicts.values())

    def row(self, report: NightReport) -> str:
        verdicts = ", ".join(f"{k} {v}" for k, v in sorted(report.verdicts.items()))
        if report.dry_run:
            judged = count_of(report.plan.get("memories_to_judge", 0), "memory", "memories")
            return f"{judged} to judge (those there are now)" + (f": {verdicts}" if verdicts else "")
        state = "applied" if report.curation_applied else "staged"
        version = f"version {report.curation_version} {state}: " if report.curation_version else ""
        return version + (verdicts or "nothing to judge")


STAGE = CurateStage()
