"""``mnemo.agent``: the optional reference runtime of the cognitive plan (issue 18).

Seed: cognitive-plan (the agent whose mind runs on this memory); archive-adr (the
memory is a substrate driver, never an autonomous loop). So this package sits
beside the interfaces and uses only what any user of mnemo can: the public
``AsyncArchive``, the embedder and Pydantic AI. Nothing in the archive imports it.

Built so far: identity layers (:mod:`.identity`), the read-only docs tool
(:mod:`.docs`), and a first loop (:mod:`.loop`: context, System 1 or the
offline responder, turns with source tags, the cost log, ``/cost`` and
``/readiness``; ``mnemo agent chat``). Reflexes live in the archive itself
(``record_outcome``, ``reflexes_for``), since any agent can use them.
"""

from __future__ import annotations

from mnemo.agent.docs import DocsTool
from mnemo.agent.identity import Identity, IdentityItem
from mnemo.agent.loop import Agent, Reply
from mnemo.agent.window import ContextWindow, Message

__all__ = ["Agent", "ContextWindow", "DocsTool", "Identity", "IdentityItem", "Message", "Reply"]
