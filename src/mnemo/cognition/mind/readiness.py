"""Bootstrap readiness: ten milestones, each reached by a real event.

Seed: cognitive-plan §5.2 ("Bootstrap Readiness Achievements"): measurable milestones before the
first real conversation, each detected from what actually happened, never declared.
"""

from __future__ import annotations

__all__ = ["MILESTONES"]

MILESTONES: dict[str, str] = {
    "first_memory": "A memory formed through the gates: entry gate, scratch buffer, exit gate, kept.",
    "first_retrieval": "A recall returned evidence above the refusal line.",
    "first_consolidation": "A night made an insight and a narrative.",
    "first_goal_promotion": "A pattern seen 5+ times over 14+ days was promoted to goal weight.",
    "first_idle_thought_acted": "A thought of the idle loop won attention and was acted on.",
    "first_identity_promotion": "A pattern seen 10+ times over 30+ days was promoted to identity weight.",
    "first_conflict_resolution": "A tension was resolved by aligned behaviour.",
    "first_creative_association": "The idle loop linked two disparate memories into an insight candidate.",
    "first_goal_reflected": "A goal was achieved and reflected upon.",
    "first_aligned_decision": "An action the agent started itself agreed with a value it formed itself.",
}
"""The seed's ten milestones in its order, each with what reaches it."""
