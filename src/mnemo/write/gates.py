"""Entry gate, scratch buffer and exit gate: what of an agent's stream becomes memory.

Seeds: cognitive-plan §2.9 (entry gate: seeded skip rules, everything else
to a scratch buffer with a TTL; flush every N exchanges or on graceful
shutdown; crash recovery re-evaluates unflushed items) and §2.8 (exit gate:
relevance x novelty matrix deciding drop / skip / buffer / persist /
reinforce / persist-and-flag; novelty by similarity to existing memories;
contradiction detection cheapest first: negation and substitution
heuristics, embedding opposition, then the LLM when one is configured).

Relevance is the item's similarity to the current focus: the attention text
given to :func:`flush`, and the other items of the same flush window (a
leave-one-out centroid). An item flushed alone with no attention text gets
``gate_default_relevance`` (the gate starts permissive: dropping is
permanent, over-persisting is recoverable). Every decision is traced in
``traces.gate_decisions``; the scratch buffer lives in the database, so a
crash between buffer and flush loses nothing.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import psycopg

from mnemo import _dynamics as dynamics
from mnemo import llm
from mnemo._runtime import Runtime
from mnemo._upkeep import note_writes
from mnemo._validate import check_content, check_id, check_kind, check_metadata, check_role, check_text, check_vector
from mnemo.cognition.mind.gate_rules import (
    GateThresholds,
    entry_decision,
    exit_decision,
    negation_conflict,
    negation_direction,
    opposition,
    substitution_conflict,
)
from mnemo.errors import InvalidContentError
from mnemo.models import FlushReport, GateOutcome, Observation, Scope, uuid7
from mnemo.store import dynamics as dynamic_rows
from mnemo.store import inner_life as inner_rows
from mnemo.store import scratch
from mnemo.store import traces as trace_rows
from mnemo.store import vectors as vector_rows
from mnemo.write.remember import ensure_scope, memory_row, store_memory, supersede

__all__ = ["FlushReport", "GateOutcome", "Observation", "flush", "observe", "recover"]

# Example pairs for the embedding-opposition direction (layer 2), embedded once per model.
_NEGATION_EXAMPLES = (
    ("I like coffee.", "I do not like coffee."),
    ("She lives in Paris.", "She does not live in Paris."),
    ("The meeting is on Monday.", "The meeting is not on Monday."),
    ("He is allergic to peanuts.", "He is not allergic to peanuts."),
    ("We will use PostgreSQL.", "We will never use PostgreSQL."),
    ("The test passes.", "The test no longer passes."),
    ("They have a dog.", "They don't have a dog anymore."),
    ("I want to learn Spanish.", "I don't want to learn Spanish."),
)
_directions: dict[str, np.ndarray] = {}


OWN_ROLES = frozenset({"assistant"})
"""Roles whose items are the agent's own statements (issue 31: less reliable than the user's)."""


async def _thresholds(rt: Runtime, conn: psycopg.AsyncConnection, scope: Scope) -> GateThresholds:
    """The configured thresholds, with the scope's self-tuned core, peripheral and noise floor
    (cognitive-plan §4.5) when the night has tuned them."""
    c = rt.settings
    tuned = await inner_rows.tuning(conn, scope.entity_id, scope.namespace, "gate") or {}
    return GateThresholds(
        core=float(tuned.get("core", c.gate_core)),
        peripheral=float(tuned.get("peripheral", c.gate_peripheral)),
        confirming=c.gate_confirming,
        contradiction_floor=c.gate_contradiction_floor,
        noise=float(tuned.get("noise", c.gate_noise)),
    )


def trust_of(rt: Runtime, item: scratch.ScratchItem) -> float:
    """How far an item's source is trusted: the confidence its metadata states (``source_confidence``),
    else ``own_source_confidence`` for the agent's own statements, else 1 (the user's word)."""
    stated = (item.metadata or {}).get("source_confidence")
    if isinstance(stated, int | float) and not isinstance(stated, bool) and 0.0 <= stated <= 1.0:
        return float(stated)
    return rt.settings.own_source_confidence if item.role in OWN_ROLES else 1.0


async def observe(
    rt: Runtime,
    scope: Scope,
    content: object,
    *,
    kind: str = "episodic",
    role: str | None = None,
    source_tag: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    attention: str | None = None,
    now: datetime | None = None,
    interest: Sequence[float] | np.ndarray | None = None,
) -> Observation:
    """Pass one item of the agent's stream through the entry gate; flush every ``gate_flush_every`` items."""
    text = check_content(content, max_chars=rt.settings.max_content_chars)
    check_kind(kind)
    if role is not None:
        check_role(role)
    if source_tag is not None:
        source_tag = check_text(source_tag, label="source_tag")
    meta = check_metadata(metadata)
    when = now or datetime.now(UTC)
    action, reason = entry_decision(text, rt.child_rng())
    item_id = uuid7()
    async with rt.store.transaction() as conn:
        await ensure_scope(conn, rt, scope)
        if action == "buffer":
            await scratch.buffer_item(
                conn,
                {
                    "id": item_id,
                    "entity_id": scope.entity_id,
                    "namespace": scope.namespace,
                    "content": text,
                    "kind": kind,
                    "role": role,
                    "source_tag": source_tag,
                    "metadata": meta,
                    "created_at": when,
                    "expires_at": when + timedelta(hours=rt.settings.scratch_ttl_hours),
                },
            )
        await trace_rows.record_gate_decisions(
            conn,
            [_trace(scope, when, "entry", item_id, action, reason, text)],
        )
        fresh = await scratch.fresh_count(conn, scope.entity_id, scope.namespace)
    flushed = None
    if fresh >= rt.settings.gate_flush_every:
        flushed = await flush(rt, scope, attention=attention, now=when, interest=interest)
    return Observation(item_id, action, reason, flushed)


def _trace(
    scope: Scope, at: datetime, gate: str, item_id: uuid.UUID, action: str, reason: str, content: str, **extra: Any
) -> dict[str, Any]:
    return {
        "id": uuid7(),
        "entity_id": scope.entity_id,
        "namespace": scope.namespace,
        "at": at,
        "gate": gate,
        "item_id": item_id,
        "action": action,
        "reason": reason,
        "content": content,
        **extra,
    }


async def _direction(rt: Runtime) -> np.ndarray:
    key = rt.slug
    if key not in _directions:
        plain = await rt.embeddings.embed_documents([p for p, _ in _NEGATION_EXAMPLES])
        negated = await rt.embeddings.embed_documents([n for _, n in _NEGATION_EXAMPLES])
        _directions[key] = negation_direction(list(zip(plain, negated, strict=True)))
    return _directions[key]


async def _contradiction(
    rt: Runtime, text: str, vector: np.ndarray, other: str, other_vector: np.ndarray | None
) -> str | None:
    """The cheapest layer that finds ``text`` contradicting ``other``, or None."""
    if negation_conflict(text, other):
        return "negation"
    if substitution_conflict(text, other):
        return "substitution"
    if other_vector is not None and opposition(vector, other_vector, await _direction(rt)):
        return "embedding"
    if rt.llm is not None and await llm.contradicts(rt.llm, text, other):
        return "llm"
    return None


def _relevance(vectors: np.ndarray, index: int, attention: np.ndarray | None, default: float) -> float:
    sims: list[float] = []
    if attention is not None:
        sims.append(float(vectors[index] @ attention))
    if len(vectors) > 1:
        others = np.delete(vectors, index, axis=0).mean(axis=0)
        norm = float(np.linalg.norm(others))
        if norm > 1e-9:
            sims.append(float(vectors[index] @ others) / norm)
    return max(sims) if sims else default


async def flush(
    rt: Runtime,
    scope: Scope,
    *,
    attention: str | None = None,
    items: Sequence[uuid.UUID | str] | None = None,
    now: datetime | None = None,
    interest: Sequence[float] | np.ndarray | None = None,
) -> FlushReport:
    """Run every buffered item of ``scope`` (only ``items`` when given: those no longer buffered are
    passed over) through the exit gate, in one transaction. ``interest``: the caller's subconscious
    centroid (cognitive-plan §5.1, the gut replaces the gate's placeholder): an item close to what the
    agent's values, goals and memories are about counts as relevant though the focus is elsewhere."""
    wanted = None if items is None else _item_ids(items)
    cfg = rt.settings
    when = now or datetime.now(UTC)
    rng = rt.child_rng()
    outcomes: list[GateOutcome] = []
    async with rt.store.transaction() as conn:
        thresholds = await _thresholds(rt, conn, scope)
        buffered = await scratch.claim(conn, scope.entity_id, scope.namespace, wanted)
        if not buffered:
            return FlushReport(scope, ())
        expired = [i for i in buffered if i.expires_at <= when]
        live = [i for i in buffered if i.expires_at > when]
        outcomes += [GateOutcome(i.id, i.content, "expired", "past its TTL unflushed") for i in expired]
        if live:
            vectors = np.asarray(
                await rt.embeddings.embed_documents([rt.embeddings.document_text(i.content, i.kind) for i in live])
            )
            focus = None if attention is None else np.asarray(await rt.embeddings.embed_query(attention))
            centroid = None if interest is None else check_vector(interest, rt.embeddings.dim)
            for index, item in enumerate(live):
                relevance = _relevance(vectors, index, focus, cfg.gate_default_relevance)
                if centroid is not None:
                    relevance = max(relevance, float(vectors[index] @ centroid))
                outcomes.append(await _decide(rt, conn, scope, item, vectors[index], relevance, rng, thresholds, when))
        kept = [o.item_id for o in outcomes if o.action == "buffer"]
        exhausted = {i.id for i in live if i.rounds + 1 >= cfg.buffer_rounds}
        outcomes = [
            GateOutcome(
                o.item_id,
                o.content,
                "drop",
                f"{o.reason}; still peripheral after {cfg.buffer_rounds} flushes",
                o.relevance,
                o.similarity,
                o.related_id,
            )
            if o.action == "buffer" and o.item_id in exhausted
            else o
            for o in outcomes
        ]
        kept = [i for i in kept if i not in exhausted]
        outcomes = [dataclasses.replace(o, outcome_id=uuid7()) for o in outcomes]
        await scratch.keep_buffered(conn, scope.entity_id, kept)
        await scratch.delete_items(conn, scope.entity_id, [o.item_id for o in outcomes if o.item_id not in kept])
        await trace_rows.record_gate_decisions(
            conn,
            [
                _trace(
                    scope,
                    when,
                    "exit",
                    o.item_id,
                    o.action,
                    o.reason,
                    o.content,
                    relevance=o.relevance,
                    similarity=o.similarity,
                    contradiction=o.contradiction,
                    related_id=o.related_id,
                    memory_id=o.memory_id,
                    outcome_id=o.outcome_id,
                )
                for o in outcomes
            ],
        )
    await note_writes(rt, sum(1 for o in outcomes if o.action in ("persist", "persist_flag")))
    return FlushReport(scope, tuple(outcomes))


def _item_ids(items: Sequence[uuid.UUID | str]) -> list[uuid.UUID]:
    if isinstance(items, (str, bytes)) or not isinstance(items, Sequence):
        raise InvalidContentError("items must be a list of scratch item ids")
    return [check_id(i, label="items") for i in items]


async def _decide(
    rt: Runtime,
    conn: psycopg.AsyncConnection,
    scope: Scope,
    item: scratch.ScratchItem,
    vector: np.ndarray,
    relevance: float,
    rng: Any,
    thresholds: GateThresholds,
    when: datetime,
) -> GateOutcome:
    cfg = rt.settings
    text = item.content
    nearest = await vector_rows.search(
        conn, rt.table, rt.embeddings.dim, scope.entity_id, scope.namespace, rt.slug, vector, 3, item_kind="memory"
    )
    states = await dynamic_rows.memory_states(conn, scope.entity_id, scope.namespace, [n[0] for n in nearest])
    nearest = [n for n in nearest if n[0] in states]
    similarity = nearest[0][2] if nearest else 0.0
    related = nearest[0][0] if nearest else None
    layer = None
    candidates = [n for n in nearest if n[2] > thresholds.contradiction_floor]
    if candidates:
        stored = await vector_rows.vectors_of(conn, rt.table, scope.entity_id, rt.slug, [n[0] for n in candidates])
        for other_id, _, sim in candidates:
            layer = await _contradiction(rt, text, vector, states[other_id].content, stored.get(other_id))
            if layer:
                related, similarity = other_id, sim
                break
    decision = exit_decision(relevance, similarity, layer is not None, rng, thresholds)
    reason = f"{decision.cell.relevance} x {decision.cell.novelty}" + (" (noise floor)" if decision.noise else "")
    memory_id = None
    trust = trust_of(rt, item)
    # a less trusted source (the agent's own word) may flag a contradiction, never overrule a belief
    overrules = related is not None and trust >= states[related].source_confidence if related in states else False
    if decision.action in ("persist", "persist_flag"):
        memory_id = uuid7()
        meta = dict(item.metadata or {})
        if decision.action == "persist_flag" and related is not None:
            meta |= {"flagged": True, "contradicts": [str(related)]}
            if overrules:
                meta["supersedes"] = [str(related)]
        row = memory_row(
            rt,
            scope,
            memory_id,
            text,
            item.kind,
            source_tag=item.source_tag or "gate",
            source_confidence=trust,
            provenance=[f"scratch:{item.id}"],
            event_time=item.created_at,
            metadata=meta,
        )
        await store_memory(conn, rt, scope, row, vector)
        if decision.action == "persist_flag" and related is not None and overrules:
            await supersede(conn, rt, scope, [related], memory_id, reason="contradicted", evidence={"layer": layer})
    elif decision.action == "reinforce" and related is not None:
        memory_id = related
        await dynamics.change_weights(
            conn,
            cfg,
            scope,
            [
                dynamics.WeightRequest(
                    related,
                    "reinforce",
                    cfg.gate_reinforce_gain * trust,  # the agent cannot talk itself into a belief
                    "confirmed",
                    {"by": text[:200], "similarity": similarity, "source": item.source_tag, "trust": trust},
                )
            ],
            at=when,
        )
    return GateOutcome(item.id, text, decision.action, reason, relevance, similarity, related, layer, memory_id)


async def recover(rt: Runtime, *, before: datetime | None = None) -> list[FlushReport]:
    """Crash recovery: flush every scope with buffered items (older than ``before``, when given)."""
    async with rt.store.connection() as conn:
        found = await scratch.pending_scopes(conn, before)
    return [await flush(rt, Scope(e, ns)) for e, ns in found]
