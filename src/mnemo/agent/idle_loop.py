"""The idle loop: what the agent thinks about when no one is talking to it.

Seed: cognitive-plan §4.7 ("DMN / Idle Loop"): not a separate pipeline: it samples memories
(:meth:`~mnemo.AsyncArchive.inner.wander`: biased toward neglected important, tense, distant and
self-related memories, each with what co-access reaches two hops away) and turns them into inputs
that queue for the main loop at low urgency: a memory that touches a goal becomes a self-prompt; one
that touches a value, an evaluation signal; a disparate pair (a memory and an association unlike
it), an insight candidate for consolidation. It is suppressed during conversation (the DMN-task
anticorrelation): while a user input waits, or for ``quiet`` seconds after one. An entropy guard
keeps a topic that keeps coming back out of the next draws; metacognitive review prompts ask whether
the last cycle's attention was right.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from mnemo.cognition.mind import idle_sampling as rules
from mnemo.models import Wandering

if TYPE_CHECKING:
    from mnemo.agent.loop import Agent

__all__ = ["IdleLoop", "IdleReport"]

CLOSE = 0.05
"""A loser this close to the winner's salience gets a review prompt (not fitted)."""


@dataclass(frozen=True, slots=True)
class IdleReport:
    """What one idle cycle produced (at most one insight candidate: the draw's most disparate link)."""

    suppressed: bool
    sampled: tuple[Wandering, ...] = ()
    inputs: tuple[tuple[str, str], ...] = ()
    """``(channel, text)`` queued for attention: ``self_prompt``, ``evaluation`` or ``review``."""
    insights: tuple[uuid.UUID, ...] = ()
    """Insight candidates stored for consolidation."""
    avoided: tuple[uuid.UUID, ...] = ()
    """Topics the entropy guard kept out of this draw."""


@dataclass
class IdleLoop:
    """The idle loop of ``agent``."""

    agent: Agent
    n: int = 3
    """Memories drawn per idle cycle."""
    quiet: float = 60.0
    """Seconds after a user input during which the idle loop stays quiet."""
    topics: list[uuid.UUID] = field(default_factory=list)
    """The memories drawn lately (the entropy guard's window)."""
    _last_user: float | None = field(default=None, init=False)
    _reviewed: int = field(default=-1, init=False)

    def heard_user(self) -> None:
        """Note that the user spoke now (the loop keeps quiet for a while)."""
        self._last_user = self.agent.clock()

    def suppressed(self) -> bool:
        """During conversation: a user input waits, or one came within ``quiet`` seconds."""
        if any(c.source == "external_user" for c in self.agent.pending):
            return True
        return self._last_user is not None and self.agent.clock() - self._last_user < self.quiet

    async def think(self, seed: int | None = None) -> IdleReport:
        """One idle cycle (see the module docstring); nothing when suppressed."""
        if self.suppressed():
            return IdleReport(True)
        avoid = rules.needs_broadening(self.topics)
        drawn = await self.agent.archive.inner.wander(self.agent.scope, self.n, seed=seed, avoid=list(avoid))  # type: ignore[arg-type]
        self.topics = [*self.topics, *(w.id for w in drawn)][-32:]
        inputs: list[tuple[str, str]] = []
        insights: list[uuid.UUID] = []
        goals = await self.agent.identity.layer(1) if self.agent.identity else []
        values = await self.agent.identity.layer(0) if self.agent.identity else []
        floor = self.agent.archive.settings.refusal_threshold
        disparate: list[tuple[float, Wandering, str, uuid.UUID]] = []
        for w in drawn:
            v = np.asarray(w.vector, dtype=np.float32)
            goal = max(((float(v @ g.vector), g.text) for g in goals), default=(-1.0, ""))
            value = max(((float(v @ x.vector), x.text) for x in values), default=(-1.0, ""))
            partner = await self._partner(w, v, drawn)
            where = rules.channel(goal[0], value[0], partner[0] if partner else None, floor)
            if where == "self_prompt":
                inputs.append((where, f"Thinking about my goal '{goal[1]}': {w.content}"))
            elif where == "evaluation":
                inputs.append((where, f"Does this still fit what I value ('{value[1]}')? {w.content}"))
            if partner is not None and partner[0] < floor:
                disparate.append((partner[0], w, partner[1], partner[2]))
        if disparate:  # channel 2 whatever the others said: the most disparate link of this draw
            _, w, other, other_id = min(disparate, key=lambda d: d[0])
            insights.append(await self._insight(w, other, other_id))
        if review := self._review():
            inputs.append(("review", review))
        for _, text in inputs:
            await self.agent.submit(text, "internal_dmn")
        return IdleReport(False, tuple(drawn), tuple(inputs), tuple(insights), tuple(avoid))  # type: ignore[arg-type]

    async def _partner(
        self, w: Wandering, v: np.ndarray, drawn: list[Wandering]
    ) -> tuple[float, str, uuid.UUID] | None:
        """The least similar memory the sample reaches: an association two hops away, else another draw."""
        texts = [(t, i) for i, _, t in w.associations] or [(o.content, o.id) for o in drawn if o.id != w.id]
        if not texts:
            return None
        vectors = await self.agent.archive.embeddings.embed_documents([t for t, _ in texts])
        sims = [float(v @ np.asarray(x, dtype=np.float32)) for x in vectors]
        best = int(np.argmin(sims))
        return sims[best], texts[best][0], texts[best][1]

    async def _insight(self, w: Wandering, other: str, other_id: uuid.UUID) -> uuid.UUID:
        """A creative association (channel 2), kept as an insight candidate for consolidation."""
        memory = await self.agent.archive.remember(
            self.agent.scope, f"A connection between '{w.content}' and '{other}'.", kind="insight",
            status="candidate", source_tag="internal_dmn", source_confidence=0.5,
            metadata={"channel": "insight", "sources": [str(w.id), str(other_id)]},
        )  # fmt: skip
        return memory.id

    def _review(self) -> str | None:
        """A metacognitive review prompt when last cycle's winner only just beat another input."""
        scored = self.agent.last_allocation
        if scored is None or len(scored) < 2 or scored[0].salience - scored[1].salience > CLOSE:
            return None
        if self._reviewed == self.agent.cycles:
            return None
        self._reviewed = self.agent.cycles
        first, second = scored[0].candidate, scored[1].candidate
        return (f"Last cycle I attended to '{first.text[:80]}' over '{second.text[:80]}'. Was that right? "
                "Should I revisit it?")  # fmt: skip
