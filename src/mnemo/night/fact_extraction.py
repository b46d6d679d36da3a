"""Night stage: facts and triples from the day's turns, in third normal form.

Seeds: archive-adr §4 ("Advanced Augmentation" extracts entities,
relationships and facts; extracted memory is first written as a candidate
record with provenance and confidence for the curator), §9 (mention count as a
quality signal; a claim that conflicts with an anchored fact is quarantined by
the curator); cognitive-plan §4.4 (conflict-aware reconsolidation: a new value
closes the old one, which is kept).

Extraction uses the configured LLM (structured output, :func:`mnemo.llm.extract`)
and falls back to the offline patterns of :mod:`mnemo.cognition.consolidation.extraction`;
both produce the same records. Each new fact also becomes a memory (kind
``semantic``, or ``preference``; status ``candidate``) so recall finds it;
a repeat only counts a mention. A new value of a one-value attribute
(``night_functional_attributes``) closes the open fact (``valid_to``) and
supersedes its memory; "no longer ..." closes it without a successor. Each
session's knowledge commits with its progress mark.

With an LLM configured and ``llm_supersession`` on (issue 40 item 4), a new fact
whose subject holds open values the offline slot rules leave open (a many-valued
attribute, or another attribute for the same slot) is put to the model with
them, in one bounded call per session (:func:`mnemo.llm.supersedes`); each old
value it says the new one replaces is closed and superseded like an offline
close. A failed or timed-out extraction or supersession call counts an LLM
fallback and the offline result stands.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg

from mnemo import _dynamics as dynamics
from mnemo import llm
from mnemo._runtime import Runtime
from mnemo.cognition.consolidation.extraction import (
    Extraction,
    FactCandidate,
    TripleCandidate,
    TurnText,
    extract,
    fact_hash,
    fact_key,
    normalise,
    triple_hash,
)
from mnemo.cognition.consolidation.facts import sentence
from mnemo.cognition.consolidation.slots import ANY, ONE_VALUE, slot_of, value_matches
from mnemo.cognition.scoring.claims import functional_attribute
from mnemo.models import NightReport, Scope, uuid7
from mnemo.night.stage_protocol import NightPlan, NightRun, count_of
from mnemo.store import knowledge as knowledge_rows
from mnemo.store import links as link_rows
from mnemo.store import night_runs as run_rows
from mnemo.store import turn_surprisal as surprisal_rows
from mnemo.store.turn_surprisal import TurnRow
from mnemo.write.remember import memory_row, store_memory, supersede

__all__ = ["STAGE", "KnowledgeStage", "KnowledgeStats", "extract_knowledge", "fact_text"]


@dataclass(slots=True)
class KnowledgeStats:
    sessions: int = 0
    facts_new: int = 0
    facts_repeated: int = 0
    facts_closed: int = 0
    triples_new: int = 0
    triples_repeated: int = 0
    entities: int = 0
    llm_sessions: int = 0
    llm_fallbacks: int = 0
    """LLM calls (extraction, supersession) that failed or timed out: the offline result stood."""
    llm_closed: int = 0
    """Facts closed because the LLM said a new statement replaced them (counted in ``facts_closed`` too)."""


@dataclass(frozen=True, slots=True)
class _Pair:
    """A new fact and an open fact of its subject the offline rules left open: the LLM is asked
    whether the new one replaces the old (issue 40 item 4)."""

    fact: FactCandidate
    new_id: uuid.UUID
    memory_id: uuid.UUID
    turn: TurnRow
    subject: uuid.UUID
    old: knowledge_rows.FactRow


_PAIRS_PER_FACT = 4  # the open facts of a subject one new fact is compared with, same attribute first
_PAIRS_PER_SESSION = 24  # the bound on one session's supersession call


def fact_text(fact: FactCandidate) -> str:
    """The sentence a fact is stored and searched as, e.g. ``"Caroline likes painting"``,
    ``"Maya's sister is Lena"`` (:func:`mnemo.cognition.consolidation.facts.sentence`)."""
    text = sentence(fact.entity, fact.attribute, fact.value)
    if fact.kind == "event" and fact.valid_from is not None:
        text += f" (on {fact.valid_from:%Y-%m-%d})"
    return text


def _source(role: str) -> str:
    return {"tool": "tool", "user": "user"}.get(role, "inferred")


async def extract_knowledge(
    rt: Runtime,
    scope: Scope,
    as_of: datetime,
    *,
    progress: Callable[[int], None] | None = None,
) -> KnowledgeStats:
    stats = KnowledgeStats()
    async with rt.store.connection() as conn:
        sessions = await run_rows.pending_sessions(conn, scope.entity_id, scope.namespace, as_of, "facts_through")
    for session_id, mark in sessions:
        async with rt.store.connection() as conn:
            turns = await surprisal_rows.session_turns(conn, scope.entity_id, scope.namespace, session_id, mark, as_of)
        if not turns:
            continue
        texts = [TurnText(speaker=t.speaker, role=t.role, text=t.content, at=t.created_at) for t in turns]
        found: Extraction | None = None
        if rt.llm is not None:
            found = await llm.extract(rt.llm, texts)
            stats.llm_sessions += int(found is not None)
            stats.llm_fallbacks += int(found is None)
        if found is None:
            found = extract(texts)
        positives = [f for f in found.facts if not f.negated]
        sentences = list(dict.fromkeys(fact_text(f) for f in positives))
        kinds = {fact_text(f): ("preference" if f.kind == "preference" else "semantic") for f in positives}
        vectors = await rt.embeddings.embed_documents([rt.embeddings.document_text(s, kinds[s]) for s in sentences])
        by_text = dict(zip(sentences, vectors, strict=True))
        async with rt.store.transaction() as conn:
            await _write(rt, conn, scope, turns, found, by_text, stats)
            await run_rows.set_session_progress(
                conn, scope.entity_id, scope.namespace, session_id, facts_through=turns[-1].turn_number
            )
        stats.sessions += 1
        if progress is not None:
            progress(len(turns))
    return stats


async def _entity(conn: psycopg.AsyncConnection, scope: Scope, name: str, at: datetime) -> uuid.UUID:
    norm = normalise(name) or name.casefold()
    return await knowledge_rows.upsert_entity(conn, scope.entity_id, scope.namespace, uuid7(), name, norm, at)


async def _write(
    rt: Runtime,
    conn: psycopg.AsyncConnection,
    scope: Scope,
    turns: Sequence[TurnRow],
    found: Extraction,
    vectors: dict[str, Any],
    stats: KnowledgeStats,
) -> None:
    """A session's facts, then its triples, each in the order of the turns that said them; with an
    LLM, then the replacements it finds among the pairs the offline rules left open."""
    pairs: list[_Pair] | None = [] if rt.llm is not None and rt.settings.llm_supersession else None
    for fact in sorted(found.facts, key=lambda f: f.source):
        if not (fact.entity.strip() and fact.attribute.strip()) or (not fact.negated and not fact.value.strip()):
            continue  # nothing to store (a negation may have no value: "I quit my job")
        turn = turns[fact.source]
        subject = await _entity(conn, scope, fact.entity, turn.created_at)
        if fact.negated:
            stats.facts_closed += await _end_fact(rt, conn, scope, fact, turn, subject)
        else:
            await _record_fact(rt, conn, scope, fact, turn, subject, vectors, stats, pairs)
    if pairs:
        await _supersede(rt, conn, scope, pairs[:_PAIRS_PER_SESSION], stats)
    for triple in sorted(found.triples, key=lambda t: t.source):
        if not (triple.subject.strip() and triple.predicate.strip() and triple.object.strip()):
            continue
        await _record_triple(rt, conn, scope, triple, turns[triple.source], stats)


async def _end_fact(
    rt: Runtime,
    conn: psycopg.AsyncConnection,
    scope: Scope,
    fact: FactCandidate,
    turn: TurnRow,
    subject: uuid.UUID,
) -> int:
    """A negated fact ("no longer ...", "I resigned", "Luna passed away"): close the subject's open
    facts it ends (:func:`_ends`); returns how many. A fact the same turn stated is never among them
    ("I moved from Freising to Munich" ends Freising, not the Munich it has just said)."""
    closed = 0
    for old in await knowledge_rows.open_facts_of_subject(conn, scope.entity_id, scope.namespace, subject):
        if turn.id in (old.provenance or ()) or old.fact_kind == "event" or not _ends(rt, fact, old):
            continue
        await _close(rt, conn, scope, old, fact.valid_from or turn.created_at, None, turn.id)
        await _close_its_triple(conn, scope, fact.entity, subject, old, fact.valid_from or turn.created_at)
        closed += 1
    return closed


def _ends(rt: Runtime, fact: FactCandidate, old: knowledge_rows.FactRow) -> bool:
    """Whether the ending ``fact`` closes the open fact ``old`` of the same subject (issue 40 item 3): one
    of its key that it names, or any value of its key when it names none or the attribute holds one
    value; one of its slot (the value it names, or any); one in any slot whose value it names
    (:data:`~mnemo.cognition.consolidation.slots.ANY`: "I left Google", "Luna passed away")."""
    value = fact.value.strip()
    if fact.attribute == ANY:
        return value_matches(value, old.value)
    if normalise(old.attribute) == normalise(fact.attribute):  # the same key: the subject is the same
        return not value or value_matches(value, old.value) or _one_value(rt, fact.attribute, value)
    slot = slot_of(fact.attribute, value)
    if slot is None or slot != slot_of(old.attribute, old.value):
        return False
    return not value or value_matches(value, old.value)


def _one_value(rt: Runtime, attribute: str, value: str) -> bool:
    """A new value of this attribute closes the open one: configured (``night_functional_attributes``)
    or a slot with one value at a time (:data:`~mnemo.cognition.consolidation.slots.ONE_VALUE`)."""
    configured = functional_attribute(rt.settings.night_functional_attributes, attribute)
    return configured or slot_of(attribute, value) in ONE_VALUE


async def _close_its_triple(
    conn: psycopg.AsyncConnection,
    scope: Scope,
    entity: str,
    subject: uuid.UUID,
    old: knowledge_rows.FactRow,
    at: datetime,
) -> None:
    """The triple that said the same as a closed fact ("(dog) Luna") ends with it."""
    digest = triple_hash(entity, old.attribute, old.value)
    await knowledge_rows.close_triples(
        conn, scope.entity_id, scope.namespace, subject, old.attribute, at, only_hash=digest
    )


async def _record_fact(
    rt: Runtime,
    conn: psycopg.AsyncConnection,
    scope: Scope,
    fact: FactCandidate,
    turn: TurnRow,
    subject: uuid.UUID,
    vectors: dict[str, Any],
    stats: KnowledgeStats,
    pairs: list[_Pair] | None = None,
) -> None:
    """A stated fact: a repeat counts a mention; a new one gets its memory and, for a one-value
    attribute, closes the key's other open values; with ``pairs`` (an LLM), the open values it
    left are kept for the model to judge."""
    at = turn.created_at
    key = fact_key(fact.entity, fact.attribute)
    fact_id, memory_id = uuid7(), uuid7()
    new_id, created = await knowledge_rows.record_fact(
        conn,
        {
            "entity_id": scope.entity_id,
            "id": fact_id,
            "namespace": scope.namespace,
            "subject_id": subject,
            "attribute": fact.attribute,
            "value": fact.value,
            "fact_kind": fact.kind,
            "key_hash": key,
            "hash": fact_hash(fact.entity, fact.attribute, fact.value),
            "confidence": fact.confidence,
            "first_seen": at,
            "last_seen": at,
            "provenance": [turn.id],
            "source": _source(turn.role),
            "valid_from": fact.valid_from or at,
            "memory_id": memory_id,
        },
    )
    if not created:
        stats.facts_repeated += 1
        return
    stats.facts_new += 1
    await _fact_memory(rt, conn, scope, fact, turn, new_id, memory_id, vectors[fact_text(fact)])
    await _close_slot(rt, conn, scope, fact, turn, subject, new_id, memory_id, stats)
    if pairs is not None and fact.kind != "event":
        olds = await _left_open(conn, scope, fact, turn, subject, new_id)
        pairs.extend(_Pair(fact, new_id, memory_id, turn, subject, old) for old in olds)


async def _close_slot(
    rt: Runtime,
    conn: psycopg.AsyncConnection,
    scope: Scope,
    fact: FactCandidate,
    turn: TurnRow,
    subject: uuid.UUID,
    new_id: uuid.UUID,
    memory_id: uuid.UUID,
    stats: KnowledgeStats,
) -> None:
    """The offline rule: a new value of a one-value attribute or slot closes the open values of its key
    and slot."""
    at = turn.created_at
    slot = slot_of(fact.attribute, fact.value)
    if not (_one_value(rt, fact.attribute, fact.value) or slot in ONE_VALUE):
        return
    for old in await knowledge_rows.open_facts_of_subject(conn, scope.entity_id, scope.namespace, subject):
        same_key = normalise(old.attribute) == normalise(fact.attribute)
        same_slot = slot in ONE_VALUE and slot_of(old.attribute, old.value) == slot
        if old.id != new_id and (same_key or same_slot) and old.fact_kind != "event":
            await _close(rt, conn, scope, old, fact.valid_from or at, memory_id, turn.id, new_fact=new_id)
            await _close_its_triple(conn, scope, fact.entity, subject, old, fact.valid_from or at)
            stats.facts_closed += 1


async def _left_open(
    conn: psycopg.AsyncConnection,
    scope: Scope,
    fact: FactCandidate,
    turn: TurnRow,
    subject: uuid.UUID,
    new_id: uuid.UUID,
) -> list[knowledge_rows.FactRow]:
    """The subject's open facts of the new fact's kind that the offline rules left open and a later
    statement could replace: not said by this turn, not restated since; the same attribute first, then
    the newest, at most :data:`_PAIRS_PER_FACT`."""
    olds = [
        old
        for old in await knowledge_rows.open_facts_of_subject(conn, scope.entity_id, scope.namespace, subject)
        if old.id != new_id
        and old.fact_kind == fact.kind
        and turn.id not in (old.provenance or ())
        and old.last_seen <= turn.created_at
    ]
    olds.sort(key=lambda old: (normalise(old.attribute) != normalise(fact.attribute), -old.last_seen.timestamp()))
    return olds[:_PAIRS_PER_FACT]


def _statement(entity: str, old: knowledge_rows.FactRow) -> str:
    return f"{sentence(entity, old.attribute, old.value)} (said {old.last_seen:%Y-%m-%d})"


async def _supersede(
    rt: Runtime, conn: psycopg.AsyncConnection, scope: Scope, pairs: Sequence[_Pair], stats: KnowledgeStats
) -> None:
    """Ask the LLM, in one call, which new facts replace the old ones they are paired with, and close
    those still open (issue 40 item 4); on a failure or timeout, count a fallback and close nothing."""
    asked = [
        (_statement(p.fact.entity, p.old), f"{fact_text(p.fact)} (said {p.turn.created_at:%Y-%m-%d})") for p in pairs
    ]
    verdicts = await llm.supersedes(rt.llm, asked, wait_s=rt.settings.llm_timeout)
    if verdicts is None:
        stats.llm_fallbacks += 1
        return
    for pair, replaced in zip(pairs, verdicts, strict=True):
        if not replaced:
            continue
        still = {
            f.id
            for f in await knowledge_rows.open_facts_of_subject(conn, scope.entity_id, scope.namespace, pair.subject)
        }
        if pair.old.id not in still or pair.new_id not in still:
            continue  # closed since (a later value of this session), or already replaced
        at = pair.fact.valid_from or pair.turn.created_at
        await _close(rt, conn, scope, pair.old, at, pair.memory_id, pair.turn.id, new_fact=pair.new_id)
        await _close_its_triple(conn, scope, pair.fact.entity, pair.subject, pair.old, at)
        stats.facts_closed += 1
        stats.llm_closed += 1


async def _fact_memory(
    rt: Runtime,
    conn: psycopg.AsyncConnection,
    scope: Scope,
    fact: FactCandidate,
    turn: TurnRow,
    fact_id: uuid.UUID,
    memory_id: uuid.UUID,
    vector: Any,
) -> None:
    """A new fact's memory (a candidate, so recall finds it), ``derived_from`` the turn that said it."""
    row = memory_row(
        rt,
        scope,
        memory_id,
        fact_text(fact),
        "preference" if fact.kind == "preference" else "semantic",
        status="candidate",
        source_tag="night:fact",
        source_confidence=fact.confidence,
        provenance=[str(turn.id)],
        event_time=turn.created_at,  # when it was said; the fact keeps its own validity (valid_from)
        metadata={"fact_id": str(fact_id), "entity": fact.entity, "attribute": fact.attribute},
    )
    await store_memory(conn, rt, scope, row, vector)
    await link_rows.insert_links(
        conn, scope.entity_id, scope.namespace, [(memory_id, turn.id, "derived_from", fact.confidence)]
    )


async def _record_triple(
    rt: Runtime,
    conn: psycopg.AsyncConnection,
    scope: Scope,
    triple: TripleCandidate,
    turn: TurnRow,
    stats: KnowledgeStats,
) -> None:
    """A relation: "no longer ..." ends it; a new one is recorded (a new value of a one-value relation
    ends the old one); a repeat counts a mention."""
    at = turn.created_at
    subject = await _entity(conn, scope, triple.subject, at)
    obj = triple.object.strip()
    digest = triple_hash(triple.subject, triple.predicate, obj)
    functional = functional_attribute(rt.settings.night_functional_attributes, triple.predicate)
    if triple.negated:  # "no longer ...": the relation ends, nothing new begins
        await knowledge_rows.close_triples(
            conn,
            scope.entity_id,
            scope.namespace,
            subject,
            triple.predicate,
            at,
            only_hash=None if functional else digest,
            not_from=turn.id,  # never what this very turn states ("moved from X to Y": Y stays)
        )
        return
    object_id = await _entity(conn, scope, obj, at) if obj[:1].isupper() else None
    _, created = await knowledge_rows.record_triple(
        conn,
        {
            "entity_id": scope.entity_id,
            "id": uuid7(),
            "namespace": scope.namespace,
            "subject_id": subject,
            "predicate": triple.predicate,
            "object": obj,
            "object_id": object_id,
            "hash": digest,
            "confidence": triple.confidence,
            "first_seen": at,
            "last_seen": at,
            "provenance": [turn.id],
            "valid_from": triple.valid_from or at,
        },
    )
    if not created:
        stats.triples_repeated += 1
        return
    stats.triples_new += 1
    if functional:  # a new value of a one-value relation ends the old one
        await knowledge_rows.close_triples(
            conn,
            scope.entity_id,
            scope.namespace,
            subject,
            triple.predicate,
            triple.valid_from or at,
            keep_hash=digest,
        )


async def _close(
    rt: Runtime,
    conn: psycopg.AsyncConnection,
    scope: Scope,
    old: knowledge_rows.FactRow,
    at: datetime,
    by_memory: uuid.UUID | None,
    turn_id: uuid.UUID,
    *,
    new_fact: uuid.UUID | None = None,
) -> None:
    """Close a fact's validity interval; its memory is superseded (by the new value's memory) or,
    for "no longer ...", contradicted. Nothing is deleted."""
    await knowledge_rows.close_fact(conn, scope.entity_id, old.id, at, new_fact)
    old_memory = old.memory_id
    if old_memory is None:
        return
    if by_memory is not None:
        await supersede(
            conn, rt, scope, [old_memory], by_memory, reason="fact updated", evidence={"turn": str(turn_id)}
        )
    else:
        await dynamics.change_weights(
            conn,
            rt.settings,
            scope,
            [
                dynamics.WeightRequest(
                    old_memory, "contradict", rt.settings.gate_contradict_gain, "fact ended", {"turn": str(turn_id)}
                )
            ],
            missing_ok=True,
        )


class KnowledgeStage:
    """Night stage ``knowledge`` (per session): facts and triples mined from the new scored turns,
    a transaction per session."""

    name = "knowledge"
    report_fields = ("facts_new", "facts_repeated", "facts_closed", "triples_new", "llm_fallbacks")

    async def run(self, night: NightRun) -> None:
        progress = night.tick(self.name, night.report.turns)
        k = await night.per_turn(
            self.name, lambda: extract_knowledge(night.rt, night.scope, night.as_of, progress=progress)
        )
        if k is None:
            return
        report = night.report
        report.facts_new, report.facts_repeated, report.facts_closed = k.facts_new, k.facts_repeated, k.facts_closed
        report.triples_new, report.llm_fallbacks = k.triples_new, k.llm_fallbacks

    async def plan(self, night: NightPlan) -> None:
        e, ns = night.scope.entity_id, night.scope.namespace
        scored_only = "surprisal" not in night.todo  # the night scores first, then mines what was scored
        sessions, turns = await run_rows.pending_work(
            night.conn, e, ns, night.report.as_of, "facts_through", scored_only=scored_only
        )
        night.report.plan |= {"sessions_to_mine": sessions, "turns_to_mine": turns}

    def row(self, report: NightReport) -> str:
        if report.dry_run:
            plan = report.plan
            sessions = count_of(plan.get("sessions_to_mine", 0), "session")
            return f"{plan.get('turns_to_mine', 0)} turns in {sessions} to mine for facts"
        return (
            f"{report.facts_new} new facts, {report.facts_repeated} repeats, {report.facts_closed} closed; "
            f"{report.triples_new} new triples"
        )


STAGE = KnowledgeStage()
