"""The agent's gut feeling: its attention against its subconscious, logged for the night's PCA.

Seed: cognitive-plan §5.1 ("Two-Centroid Gut Feeling"). The subconscious centroid layers the
identity's values (L0) and goals (L1) with the importance-weighted centroid of the archive's
memories (L2), and is recomputed after each deep cycle (:meth:`Gut.refresh`), not every turn; the
attention centroid is the recency-weighted centroid of the inputs attended to. Each cycle's delta is
logged with its context and action (:meth:`~mnemo.AsyncArchive.inner.log_gut`), and its outcome id is
where a later outcome links back. The feeling feeds attention's emotional charge, the window's
intensity and the blend's emotional component (recall's ``mood``). The math is in
:mod:`mnemo.cognition.mind.gut`.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from mnemo.agent.identity import Identity
from mnemo.archive import AsyncArchive
from mnemo.cognition.mind import gut as rules
from mnemo.models import Scope

__all__ = ["Gut"]


@dataclass
class Gut:
    """The gut of agent ``name`` remembering into ``scope``."""

    archive: AsyncArchive
    scope: Scope
    name: str
    identity: Identity | None = None
    subconscious: np.ndarray | None = field(default=None, repr=False)
    hope: np.ndarray | None = field(default=None, repr=False)
    """The named hope axis when the night has found one, else the goals' centroid."""
    feeling: rules.Feeling | None = None
    """The latest feeling (None before the first cycle, or with an empty mind)."""

    async def refresh(self) -> None:
        """Recompute the subconscious centroid and the hope direction (after a night or a reflection)."""
        values = await self.identity.layer(0) if self.identity else []
        goals = await self.identity.layer(1) if self.identity else []
        l0 = rules.weighted_centroid([v.vector for v in values], [v.weight for v in values])
        l1 = rules.weighted_centroid([g.vector for g in goals], [g.weight for g in goals])
        self.subconscious = rules.subconscious_centroid(l0, l1, await self.archive.inner.memory_centroid(self.scope))
        axes = (await self.archive.inner.life(self.scope)).axes
        named = next((a for a in axes if a.name.startswith("hope") and a.axis), None)
        self.hope = np.asarray(named.axis) if named else l1

    def feel(self, recent: Sequence[np.ndarray]) -> rules.Feeling | None:
        """The feeling of attending to ``recent`` (oldest first), kept as :attr:`feeling`."""
        attention = rules.attention_centroid(recent) if recent else None
        if attention is None or self.subconscious is None:
            self.feeling = None
        else:
            self.feeling = rules.feel(attention, self.subconscious, self.hope)
        return self.feeling

    def charge(self, vector: np.ndarray) -> float:
        """A candidate's emotional charge under the current feeling (0 without one)."""
        return rules.charge(vector, self.feeling)

    @property
    def mood(self) -> np.ndarray | None:
        """The direction recall's blend is congruent with: the delta, when there is a feeling."""
        if self.feeling is None or self.feeling.magnitude < 1e-6:
            return None
        return self.feeling.delta

    async def log(self, context: str, action: str) -> uuid.UUID | None:
        """Log the current feeling with what it was about and what the agent did; its outcome id."""
        if self.feeling is None:
            return None
        return await self.archive.inner.log_gut(
            self.scope, self.name, self.feeling.delta, magnitude=self.feeling.magnitude,
            valence=self.feeling.valence, context=context[:2000], action=action[:2000],
        )  # fmt: skip
