"""The inner life (cognitive-plan §4): feedback, readiness, reflection, promotion, wandering, in one home.

:class:`Inner` is ``archive.inner`` (issue 41 item 1); cognitive-plan §3.9, §4.2-4.7, §5.1-5.3.

Inside: :mod:`.inner_writes` (outcomes, gut deltas, task attempts, milestones), :mod:`.inner_reads`
(readiness, the inner-life page, persistent failures, the idle sample) and
:mod:`.reflect_on_demand` (the night's inner stage now, and approving a waiting promotion). The
rows are in ``store/inner_life.py``; the pure rules in ``cognition/mind`` (gut, idle sampling,
tensions, promotion, readiness, ledger) and ``cognition/consolidation/tuning.py``; the night's
stages in ``night/`` (inner_consolidation, promote, tension_review, gut_axes, frustration, tune,
guard).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from mnemo._runtime import Runtime
from mnemo.inner import inner_reads, inner_writes, reflect_on_demand
from mnemo.models import FailurePatternRecord, InnerLife, Readiness, Scope, TaskAttempt, Wandering

__all__ = ["Inner"]


class Inner:
    """The inner life and self-tuning of an open archive: ``archive.inner``."""

    def __init__(self, runtime: Runtime) -> None:
        self._rt = runtime

    async def feedback(
        self,
        scope: Scope,
        outcome_id: uuid.UUID | str,
        value: float = 1.0,
        *,
        used: Sequence[uuid.UUID | str] = (),
        kind: str = "feedback",
        detail: str = "",
    ) -> uuid.UUID:
        """Link an outcome back to a recall (its ``RecallResult.outcome_id``), a gate decision or a gut
        delta: ``value`` from -1 (went badly) to 1 (went well); ``used``: the recalled items that were
        used; ``kind``: ``feedback`` (the user's) or ``task`` (a task's success). The night tunes the
        blend's alphas on these (cognitive-plan §4.5). Returns the outcome's id."""
        return await inner_writes.feedback(self._rt, scope, outcome_id, value, used=used, kind=kind, detail=detail)

    async def log_gut(
        self,
        scope: Scope,
        agent: str,
        delta: Sequence[float] | np.ndarray,
        *,
        magnitude: float,
        valence: float,
        context: str = "",
        action: str = "",
    ) -> uuid.UUID:
        """Log one gut delta of ``agent`` (cognitive-plan §5.1) with its context and action; returns the
        outcome id an outcome links back to. The night's PCA of the deltas names the gut axes."""
        return await inner_writes.log_gut(
            self._rt, scope, agent, delta, magnitude=magnitude, valence=valence, context=context, action=action
        )

    async def record_attempt(
        self,
        scope: Scope,
        task: str,
        *,
        lineage: str,
        generation: int,
        success: bool,
        failure_mode: str | None = None,
        parent: uuid.UUID | str | None = None,
        mutation: str = "",
        turns: int | None = None,
        propagated: bool = False,
    ) -> TaskAttempt:
        """Record a task attempted by a strategy or sub-agent ``lineage`` in its ``generation``, with
        its parent variant and outcome (the frustration ledger, memory-architecture §10.6.3)."""
        return await inner_writes.record_attempt(
            self._rt, scope, task, lineage=lineage, generation=generation, success=success,
            failure_mode=failure_mode, parent=parent, mutation=mutation, turns=turns, propagated=propagated,
        )  # fmt: skip

    async def failure_patterns(self, scope: Scope) -> list[FailurePatternRecord]:
        """Tasks that failed across generations and still fail, worst first, each with its reflection."""
        await self._rt.uses.settled(scope)  # what its recalls used is written (issue 42)
        return await inner_reads.failures(self._rt, scope)

    async def readiness(self, scope: Scope) -> Readiness:
        """The ten bootstrap readiness milestones (cognitive-plan §5.2), each reached by a real event."""
        await self._rt.uses.settled(scope)  # what its recalls used is written (issue 42)
        return await inner_reads.readiness(self._rt, scope)

    async def reach_milestone(
        self, scope: Scope, name: str, evidence: Mapping[str, Any] | None = None, *, at: datetime | str | None = None
    ) -> bool:
        """Record that a real event of an agent reached milestone ``name`` (those only an agent sees: an
        idle thought acted on, a goal reflected upon, a decision aligned with its own values), dated
        ``at`` (the event's clock; default now); False when it was already reached."""
        return await inner_writes.reach_milestone(self._rt, scope, name, evidence, at)

    async def life(self, scope: Scope) -> InnerLife:
        """Milestones, gut axes, tensions, the blend's alphas and their history, safety events,
        promotions awaiting approval and persistent failures (the inspector's inner-life page)."""
        await self._rt.uses.settled(scope)  # what its recalls used is written (issue 42)
        return await inner_reads.inner_life(self._rt, scope)

    async def reflect(self, scope: Scope, *, as_of: datetime | str | None = None) -> Mapping[str, Any]:
        """Run the night's inner-life stage alone, now: promotion, tensions, self-tuning, gut axes, the
        frustration ledger, the safety monitors and milestones. Returns what it did."""
        return await reflect_on_demand.reflect(self._rt, scope, as_of=as_of)

    async def approve_promotion(
        self, scope: Scope, memory_id: uuid.UUID | str, *, at: datetime | str | None = None
    ) -> bool:
        """Apply a promotion that waits for the operator (past a 0.85 centre at ``operator_trust`` < 3),
        dated ``at`` (default now; a replay or simulation brings its own clock)."""
        return await reflect_on_demand.approve(self._rt, scope, memory_id, at=at)

    async def wander(
        self, scope: Scope, n: int = 3, *, seed: int | None = None, avoid: Sequence[uuid.UUID] = ()
    ) -> list[Wandering]:
        """The idle loop's sample (cognitive-plan §4.7): ``n`` memories drawn with a bias toward
        neglected important ones, tensions, distant and self-related ones, each with what co-access
        links reach two hops away; ``avoid``: topics the entropy guard keeps out."""
        return await inner_reads.wander(self._rt, scope, n, seed=seed, avoid=frozenset(avoid))

    async def memory_centroid(self, scope: Scope) -> np.ndarray | None:
        """The importance-weighted centroid of the scope's memories (the gut's memory layer, §5.1)."""
        return await inner_reads.memory_centroid(self._rt, scope)
