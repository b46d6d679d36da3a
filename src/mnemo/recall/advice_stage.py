"""Recall stage 6b: a request for advice about someone looks at what that someone prefers (issue 43, item 4).

Seeds: cognitive-plan §4.6 (contextual retrieval), memory-architecture §2.4 (preference memories
shape how the agent serves its user). "Suggest a birthday outing for Melanie" shares no words with
"Melanie can't stand crowds", which the night made a preference memory of. When the question asks
for advice, a choice or a plan (:func:`~mnemo.cognition.scoring.advice.asks_for_advice`) and recall
searches memories, the scope's preference memories about the people it names (all of them when it
names none that any mentions) are scored like every candidate, and the first relevance tier of them
by similarity to the request (:func:`~mnemo.cognition.scoring.advice.preferences_in_reach`) is
lifted above the head, as :func:`~mnemo.recall.rank.time_frame` lifts the period asked about.
"""

from __future__ import annotations

import psycopg

from mnemo._runtime import Runtime
from mnemo.cognition.scoring.advice import asks_for_advice, preferences_in_reach
from mnemo.cognition.scoring.refusal import proper_names
from mnemo.recall.records import Candidates, Request
from mnemo.recall.retrieve import _score_exactly
from mnemo.store import search as search_rows

__all__ = ["PREFERENCES_READ", "preferences_asked"]

PREFERENCES_READ = 500
"""The most preference memories one request reads (newest first): a bound on the work, not a knob."""


async def preferences_asked(rt: Runtime, conn: psycopg.AsyncConnection, request: Request, found: Candidates) -> None:
    """Lift the preference memories a request for advice depends on above the head (see the module)."""
    if not rt.settings.advice_preferences or "memory" not in request.kinds or not found.final:
        return
    if not asks_for_advice(request.text):
        return
    scope = request.scope
    texts = await search_rows.preference_memories(conn, scope.entity_id, scope.namespace, PREFERENCES_READ)
    if not texts:
        return
    new = [i for i in texts if i not in found.kind_of]
    found.kind_of |= dict.fromkeys(new, "memory")
    found.ids.extend(new)
    await _score_exactly(rt, conn, request, found, new)
    similarity = {i: found.similarity[i] for i in texts if i in found.similarity}
    lifted = preferences_in_reach(similarity, texts, proper_names(request.text))
    if not lifted:
        return
    top, bottom = max(found.final.values()), min(found.final.values())
    above = top + (top - bottom) + 1.0  # a gap wider than the head's whole spread, as time_frame lifts
    found.smoothed = found.smoothed or found.final
    # best first, each a hair apart (their order is their similarity's)
    found.final = found.final | {i: above + (len(lifted) - n) * 1e-3 for n, i in enumerate(lifted)}
