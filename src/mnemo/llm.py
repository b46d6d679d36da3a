"""Optional LLM steps, each with an offline fallback.

Seeds: archive-adr §5 (the LLM is optional; every step works without it) and
cognitive-plan §2.8 (contradiction check, third and most expensive layer: an
isolated meta-context call — no history, no identity — asking whether A
contradicts B, discarded after the signal).

The model is any Pydantic AI model or model name, configured with
``MNEMO_LLM`` or passed to :meth:`mnemo.AsyncArchive.open` as ``llm=``. Without
one, the functions here return ``None`` and callers use their offline path.
"""

from __future__ import annotations

import logging
from typing import Any

__all__ = ["contradicts"]

_log = logging.getLogger("mnemo.llm")

_CONTRADICTION_PROMPT = (
    "You compare two statements from an agent's memory. Answer true only if both cannot be true at the "
    "same time (one negates or replaces the other); answer false if they are compatible or unrelated."
)


async def contradicts(model: Any, a: str, b: str) -> bool | None:
    """Whether ``a`` contradicts ``b`` according to ``model``; ``None`` without a model or when the call fails."""
    if model is None:
        return None
    from pydantic_ai import Agent

    agent = Agent(model, output_type=bool, instructions=_CONTRADICTION_PROMPT)
    try:
        result = await agent.run(f"Statement A: {a}\nStatement B: {b}\nDoes A contradict B?")
    except Exception as exc:  # an LLM outage must not break the gate: fall back to the offline layers
        _log.warning("LLM contradiction check failed (%s); using the offline result", exc)
        return None
    return bool(result.output)
