"""Optional LLM steps, each with an offline fallback.

Seeds: archive-adr §5 (the LLM is optional; every step works without it),
archive-adr §4 and §9 (extraction writes *candidate* facts/triples with
provenance and confidence for the curator), cognitive-plan §2.8
(contradiction check, third and most expensive layer: an isolated
meta-context call — no history, no identity — asking whether A contradicts B,
discarded after the signal) and §4.2 (deep consolidation: insights from
clusters of memories, then a causal identity narrative, "I came to value X
because of experiences Y and Z"); issue 40 item 4 (extraction, supersession
and the answerability check ask the LLM when one is configured: a fact's
``slot``, whether a new statement replaces an old one, whether recalled
passages answer a question).

The model is any Pydantic AI model or model name, configured with
``MNEMO_LLM`` or passed to :meth:`mnemo.AsyncArchive.open` as ``llm=``. Without
one, or when a call fails, the functions here return ``None`` and callers use
the offline path: :func:`mnemo.cognition.consolidation.extraction.extract`,
:func:`mnemo.cognition.consolidation.summaries.extractive_summary`,
:func:`~mnemo.cognition.consolidation.summaries.offline_insight`,
:func:`~mnemo.cognition.consolidation.summaries.offline_narrative`, the night's slot rules
(:mod:`mnemo.cognition.consolidation.slots`) and recall's offline refusal rules.

Every call is a fresh, isolated agent (instructions only, no message history)
and its output is validated, never trusted: extraction results are converted
to the same records as the offline extractor, items whose ``source`` does not
index an input turn are dropped and confidences are clamped to (0, 1].
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from mnemo.cognition.consolidation.extraction import (
    FACT_KINDS,
    PRECISIONS,
    Extraction,
    FactCandidate,
    TripleCandidate,
    TurnText,
    speaker_entity,
)
from mnemo.cognition.consolidation.slots import ONE_VALUE, slot_of
from mnemo.cognition.consolidation.summaries import INSIGHT_PREFIX, NARRATIVE_PREFIX

__all__ = ["Answerability", "answers", "contradicts", "extract", "insight", "narrative", "summarise", "supersedes"]

_log = logging.getLogger("mnemo.llm")

_CONTRADICTION_PROMPT = (
    "You compare two statements from an agent's memory. Answer true only if both cannot be true at the "
    "same time (one negates or replaces the other); answer false if they are compatible or unrelated."
)
_SUMMARY_PROMPT = (
    "You summarise passages from an agent's memory. Write one plain-prose summary of at most {max_words} words "
    "that keeps names, dates, numbers and decisions. Use only what the passages say; no preamble, no lists."
)
_EXTRACTION_PROMPT = (
    "You extract durable knowledge from numbered chat turns for a memory store. Return only what a turn states "
    'about its speaker in the first person ("I", "my"): facts (name, age, lives in, works at, is …), '
    "preferences (likes, dislikes, prefers, favourite <thing>), relations (sister, husband, dog … with the "
    "name as value) and dated events (attribute = the verb phrase, e.g. 'went to'). Rules: entity is the "
    "speaker's name as given in the turn; source is the turn's number; confidence in [0, 1]; valid_from is "
    "an ISO date resolved against the turn's date ('yesterday', 'last year' …) or null; precision is day, "
    "week, month or year; negated is true when the turn says something stopped being true ('I no longer "
    "work at X', 'I quit my job at X', 'Luna passed away', 'I gave up climbing'); value is then what ended, or "
    "empty when the turn does not name it. A change states both: 'I accepted the offer from Y' (or 'we moved to "
    "Y') is the new value (works at Y, lives in Y) and, when the turn names the old one, a negated fact for it. "
    "slot is what a one-value fact is about, whatever words say it: residence, employer, role, school, vehicle, "
    "diet, relationship or partner; null otherwise. Never turn a negation into the positive fact. Add a triple "
    "(subject, predicate, object) only when the object is a named person, pet, place or organisation. "
    "Questions, hypotheticals and small talk yield nothing."
)
_INSIGHT_PROMPT = (
    "You read statements from an agent's memory and state the single most important high-level insight they "
    "support, as one short first-person sentence (at most 25 words). No preamble."
)
_NARRATIVE_PROMPT = (
    "You write an agent's identity narrative: one or two first-person sentences of the form 'I came to "
    "<insight> because of <experiences>', citing only the given experiences. At most 60 words. No preamble."
)
_MAX_TEXT = 500  # characters kept of any string field the model returns


class _FactOut(BaseModel):
    entity: str = Field(description="who the fact is about: the speaker's name")
    attribute: str = Field(description="e.g. 'lives in', 'likes', 'sister', 'went to'")
    value: str
    confidence: float = Field(description="0 to 1")
    source: int = Field(description="number of the turn that states it")
    kind: str = Field(description="one of: fact, preference, relation, event")
    valid_from: str | None = Field(default=None, description="ISO date or null")
    precision: str | None = Field(default=None, description="day, week, month, year or null")
    negated: bool = False
    slot: str | None = Field(
        default=None, description="residence, employer, role, school, vehicle, diet, relationship, partner or null"
    )


class _TripleOut(BaseModel):
    subject: str
    predicate: str
    object: str
    confidence: float = Field(description="0 to 1")
    source: int = Field(description="number of the turn that states it")
    valid_from: str | None = Field(default=None, description="ISO date or null")
    negated: bool = False


class _ExtractionOut(BaseModel):
    facts: list[_FactOut] = Field(default_factory=list)
    triples: list[_TripleOut] = Field(default_factory=list)


async def _run(
    model: Any, output_type: Any, instructions: str, prompt: str, what: str, *, wait_s: float | None = None
) -> Any | None:
    """One isolated agent run (no history); ``None`` on any failure, or after ``wait_s`` seconds."""
    from pydantic_ai import Agent

    agent = Agent(model, output_type=output_type, instructions=instructions)
    try:
        result = await asyncio.wait_for(agent.run(prompt), wait_s)
    except Exception as exc:  # an LLM outage must not break the caller: it falls back to the offline path
        _log.warning("LLM %s failed (%s); using the offline path", what, exc)
        return None
    return result.output


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


def _clip_words(text: str, max_words: int) -> str:
    words = text.split()
    return text.strip() if len(words) <= max_words else " ".join(words[:max_words]).rstrip(",;:") + "…"


async def summarise(model: Any, texts: Sequence[str], max_words: int = 60) -> str | None:
    """A prose summary of ``texts`` in at most ``max_words`` words (longer answers are cut); ``None`` without
    a model, without texts, or when the call fails or returns nothing."""
    if model is None or not texts:
        return None
    prompt = "\n\n".join(f"[{i}] {t}" for i, t in enumerate(texts))
    out = await _run(model, str, _SUMMARY_PROMPT.format(max_words=max_words), prompt, "summary")
    if not isinstance(out, str) or not out.strip():
        return None
    return _clip_words(" ".join(out.split()), max_words)


def _turn_line(index: int, turn: TurnText) -> str:
    when = f", {turn.at.date().isoformat()}" if turn.at is not None else ""
    return f"[{index}] {speaker_entity(turn)} ({turn.role}{when}): {turn.text}"


def _clamp(confidence: float) -> float | None:
    if not math.isfinite(confidence) or confidence <= 0.0:
        return None  # no belief at all (or garbage): nothing to record
    return min(confidence, 1.0)


def _text(value: str) -> str:
    return " ".join(value.split())[:_MAX_TEXT]


def _date(value: str | None, turn: TurnText) -> datetime | None:
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        return None
    if parsed.tzinfo is None and turn.at is not None and turn.at.tzinfo is not None:
        parsed = parsed.replace(tzinfo=turn.at.tzinfo)
    elif parsed.tzinfo is not None and turn.at is not None and turn.at.tzinfo is None:
        parsed = parsed.replace(tzinfo=None)
    return parsed


def _entity(name: str, turn: TurnText) -> str:
    """The model's entity, with "I"/"me"/"speaker"/"user" mapped to the turn's speaker."""
    name = _text(name)
    if name.casefold() in {"i", "me", "myself", "speaker", "the speaker", "user", "the user"}:
        return speaker_entity(turn)
    return name


_SLOT_ATTRIBUTE = {
    "residence": "lives in",
    "employer": "works at",
    "role": "works as",
    "school": "studies at",
    "vehicle": "drives",
    "diet": "diet",
    "relationship": "relationship status",
    "partner": "partner",
}
"""The attribute a one-value slot is stored under when the model names the slot but words its
attribute otherwise ("employed by" → "works at"), so a later value of the slot closes it."""


def _attribute(attribute: str, value: str, slot: str | None) -> str:
    """The model's attribute, or its slot's own attribute when the words alone say no slot (issue 40 item 4)."""
    named = (slot or "").strip().lower()
    if named not in ONE_VALUE or slot_of(attribute, value) is not None:
        return attribute
    return _SLOT_ATTRIBUTE.get(named, attribute)


def _facts(out: _ExtractionOut, turns: Sequence[TurnText]) -> list[FactCandidate]:
    facts = []
    for item in out.facts:
        confidence = _clamp(item.confidence)
        kind = item.kind.strip().lower()
        if not 0 <= item.source < len(turns) or confidence is None or kind not in FACT_KINDS:
            continue
        turn = turns[item.source]
        entity, value = _entity(item.entity, turn), _text(item.value)
        attribute = _attribute(_text(item.attribute), value, item.slot)
        if not entity or not attribute or not (value or item.negated):
            continue
        precision = (item.precision or "").strip().lower() or None
        facts.append(
            FactCandidate(
                entity=entity,
                attribute=attribute,
                value=value,
                confidence=confidence,
                source=item.source,
                kind=kind,  # type: ignore[arg-type]  # checked against FACT_KINDS above
                valid_from=_date(item.valid_from, turn),
                negated=item.negated,
                precision=precision if precision in PRECISIONS else None,  # type: ignore[arg-type]
            )
        )
    return facts


def _triples(out: _ExtractionOut, turns: Sequence[TurnText]) -> list[TripleCandidate]:
    triples = []
    for item in out.triples:
        confidence = _clamp(item.confidence)
        if not 0 <= item.source < len(turns) or confidence is None:
            continue
        turn = turns[item.source]
        subject, predicate, obj = _entity(item.subject, turn), _text(item.predicate), _text(item.object)
        if subject and predicate and obj:
            triples.append(
                TripleCandidate(
                    subject, predicate, obj, confidence, item.source, _date(item.valid_from, turn), item.negated
                )
            )
    return triples


async def extract(model: Any, turns: Sequence[TurnText]) -> Extraction | None:
    """Candidate facts and triples from ``turns`` by ``model``, as the same records as the offline extractor.

    ``None`` without a model or when the call fails. Items with a ``source`` outside the turns, an unknown
    kind, empty fields, or a non-positive/non-finite confidence are dropped; confidences above 1 are clamped.
    """
    if model is None:
        return None
    if not turns:
        return Extraction()
    prompt = "\n".join(_turn_line(i, t) for i, t in enumerate(turns))
    out = await _run(model, _ExtractionOut, _EXTRACTION_PROMPT, prompt, "extraction")
    if not isinstance(out, _ExtractionOut):
        return None
    return Extraction(tuple(_facts(out, turns)), tuple(_triples(out, turns)))


def _prefixed(text: Any, prefix: str, max_words: int) -> str | None:
    if not isinstance(text, str) or not text.strip():
        return None
    body = " ".join(text.split())
    if body.casefold().startswith(prefix.casefold()):
        body = body[len(prefix) :].strip()
    return prefix + _clip_words(body, max_words) if body else None


async def insight(model: Any, statements: Sequence[str]) -> str | None:
    """One high-level insight supported by ``statements``, prefixed "Insight: " like
    :func:`~mnemo.cognition.consolidation.summaries.offline_insight`; ``None`` without a model or statements, or on
    failure."""
    if model is None or not statements:
        return None
    prompt = "Statements:\n" + "\n".join(f"- {s}" for s in statements)
    return _prefixed(await _run(model, str, _INSIGHT_PROMPT, prompt, "insight"), INSIGHT_PREFIX, 40)


async def narrative(model: Any, insight: str, sources: Sequence[str]) -> str | None:
    """An identity narrative ("I came to X because of Y and Z"), prefixed "Identity narrative: " like
    :func:`~mnemo.cognition.consolidation.summaries.offline_narrative`; ``None`` without a model or on failure."""
    if model is None or not insight.strip():
        return None
    core = insight.strip().removeprefix(INSIGHT_PREFIX)
    prompt = f"Insight: {core}\nExperiences:\n" + "\n".join(f"- {s}" for s in sources)
    return _prefixed(await _run(model, str, _NARRATIVE_PROMPT, prompt, "narrative"), NARRATIVE_PREFIX, 80)


_SUPERSESSION_PROMPT = (
    "You keep a person's memory current. Each numbered pair gives an OLD statement about a person and a NEW "
    "statement made later about the same person. List the numbers of the pairs where the NEW statement means "
    "the OLD one no longer holds: a new job replaces the old job, a new home the old home, a pet that died is "
    "replaced, a hobby given up for another, 'she now works at Y' replaces 'she works at X'. Two things that "
    "can both hold (two pets, two hobbies, a sister and a brother, two trips) are not replaced. When unsure, "
    "leave the pair out."
)
_ANSWERABILITY_PROMPT = (
    "You check a memory's recall before it answers. Given a question and the numbered passages the memory "
    "found, say whether the passages state the answer (answerable true), or whether the question asks about "
    "something they never say (answerable false). A passage about the same person but another subject does "
    'not answer. When false, missing names in a few words what the passages lack, e.g. "Maya\'s blood type".'
)


class _SupersessionOut(BaseModel):
    replaced: list[int] = Field(default_factory=list, description="numbers of the pairs whose NEW replaces OLD")


async def supersedes(model: Any, pairs: Sequence[tuple[str, str]], *, wait_s: float | None = None) -> list[bool] | None:
    """For each ``(old, new)`` statement pair, whether ``new`` replaces ``old`` by ``model``, in one call
    (issue 40 item 4); ``None`` without a model or when the call fails or times out. Numbers outside the
    pairs are ignored."""
    if model is None:
        return None
    if not pairs:
        return []
    prompt = "\n".join(f"[{i}] OLD: {_text(old)}\n    NEW: {_text(new)}" for i, (old, new) in enumerate(pairs))
    out = await _run(model, _SupersessionOut, _SUPERSESSION_PROMPT, prompt, "supersession", wait_s=wait_s)
    if not isinstance(out, _SupersessionOut):
        return None
    chosen = set(out.replaced)
    return [i in chosen for i in range(len(pairs))]


class Answerability(BaseModel):
    """The model's verdict on whether recalled passages answer a question."""

    answerable: bool
    missing: str = Field(default="", description="what the passages lack, in a few words, when not answerable")


async def answers(
    model: Any, question: str, passages: Sequence[str], *, wait_s: float | None = None
) -> Answerability | None:
    """Whether ``passages`` answer ``question`` by ``model`` (issue 40 item 4), with what they lack when
    they do not; ``None`` without a model or passages, or when the call fails or times out."""
    if model is None or not passages:
        return None
    prompt = f"Question: {_text(question)}\nPassages:\n" + "\n".join(
        f"[{i}] {_text(p)}" for i, p in enumerate(passages)
    )
    out = await _run(model, Answerability, _ANSWERABILITY_PROMPT, prompt, "answerability", wait_s=wait_s)
    if not isinstance(out, Answerability):
        return None
    return Answerability(answerable=out.answerable, missing=_text(out.missing)[:120])
