"""Recall stage 7b: with an LLM configured, ask it whether the hits answer the question (issue 40 item 4).

Seeds: archive-adr §5 (the LLM is optional; every step works without it) and §7 ("The Mentat
Refusal": a question about something the scope never held gets a refusal, not a guess); issue 40
items 4 and 6 (a refusal says what was missing).

The offline rules (unknown names, unsupported words, similarity threshold) decide first. When they
would answer, ``rt.llm`` is set and ``llm_answerability`` allows, the model reads the question and
the top hits' text (:func:`mnemo.llm.answers`); when it says they do not answer, the recall is
refused with what is missing ("Nothing the archive holds speaks of Maya's blood type."). Any model
error or timeout (``llm_timeout``) leaves the offline decision as it was.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from mnemo import llm
from mnemo._runtime import Runtime
from mnemo.models import Hit
from mnemo.recall.records import Decision, Request

__all__ = ["answerable", "check_answerable"]

_READ = 5  # how many of the top hits the model reads
_CHARS = 600  # characters of each hit it reads


def _passages(hits: Sequence[Hit]) -> list[str]:
    return [h.content[:_CHARS] for h in hits[:_READ] if h.content.strip()]


async def answerable(model: Any, question: str, hits: Sequence[Hit], *, wait_s: float | None = None) -> bool | None:
    """Whether the top ``hits`` answer ``question`` according to ``model``; ``None`` when it could not
    be asked (no model, no hits, a failure or a timeout)."""
    verdict = await llm.answers(model, question, _passages(hits), wait_s=wait_s)
    return None if verdict is None else verdict.answerable


async def check_answerable(rt: Runtime, request: Request, decision: Decision) -> Decision:
    """The decision, refused with what is missing when the configured LLM says the hits do not answer
    the question; unchanged without an LLM, with ``llm_answerability`` off, when refusal is turned off
    (a threshold of -1 or below), when already refused, or when the model could not be asked."""
    if rt.llm is None or not rt.settings.llm_answerability or decision.refused or request.threshold <= -1.0:
        return decision
    verdict = await llm.answers(rt.llm, request.text, _passages(decision.hits), wait_s=rt.settings.llm_timeout)
    if verdict is None or verdict.answerable:
        return decision
    missing = verdict.missing or "what the question asks"
    return dataclasses.replace(decision, refused=True, unsupported=(missing,), relevant=frozenset(), near_misses=[])
