"""``mnemo.agent``: the optional reference runtime of the cognitive plan (issue 18).

Seed: cognitive-plan (the agent whose mind runs on this memory); archive-adr (the
memory is a substrate driver, never an autonomous loop). So this package sits
beside the interfaces and uses only what any user of mnemo can: the public
``AsyncArchive``, the embedder and Pydantic AI. Nothing in the archive imports it.

Modules: :mod:`.identity` (values and goals, embedded and cached), :mod:`.docs`
(read-only docs), :mod:`.window` (the adaptive context window and its exit gate),
:mod:`.metacognition` (confidence signals and escalation triggers), :mod:`.tools`
(System 1's actions, System 2 as a tool) and :mod:`.loop` (:class:`Agent`: the
attention-agnostic loop, the reflection bank, the cost log, ``mnemo agent chat``), :mod:`.gut` (the
two-centroid gut feeling) and :mod:`.idle` (the idle loop, issue 31).
The pure rules live in :mod:`mnemo.cognition` (attention, window, actions,
confidence, escalation). Reflexes live in the archive itself (``archive.reflexes``:
``record_outcome``, ``matching``), since any agent can use them.
"""

from __future__ import annotations

from mnemo.agent.docs import DocsTool
from mnemo.agent.gut_feeling import Gut
from mnemo.agent.identity import Identity, IdentityItem
from mnemo.agent.idle_loop import IdleLoop, IdleReport
from mnemo.agent.loop import Agent, Reply
from mnemo.agent.window import ContextWindow, Message

__all__ = [
    "Agent",
    "ContextWindow",
    "DocsTool",
    "Gut",
    "Identity",
    "IdentityItem",
    "IdleLoop",
    "IdleReport",
    "Message",
    "Reply",
]
