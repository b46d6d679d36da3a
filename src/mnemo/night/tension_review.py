"""Night stage (inner life): tensions between strong values and behaviour, and their lifecycle.

Seed: cognitive-plan §4.2 ("Behavioral contradiction detection"): each value or goal memory with a
centre above 0.7 is checked against behaviour memories; a contradiction becomes a ``tension``
memory ("Internal contradiction: ..."), with the default weight (no salience bonus) and no nagging;
surfaced more than 5 times unresolved it is acknowledged; later behaviour aligned with the value
resolves it. Offline the check is :func:`mnemo.cognition.mind.tensions.opposes` on pairs the embeddings
put close; with an LLM configured, a pair the words leave undecided is asked about in an isolated
call (:func:`mnemo.llm.contradicts`).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import numpy as np

from mnemo import llm
from mnemo.cognition.mind import tensions as rules
from mnemo.models import uuid7
from mnemo.night.guard import Guard
from mnemo.store import inner_life as inner_rows
from mnemo.store import vectors as vector_rows
from mnemo.store.dynamics import MemoryState
from mnemo.write.remember import memory_row, store_memory

__all__ = ["TensionStats", "tensions"]

VALUE_KINDS = frozenset({"semantic", "preference", "reflection", "insight", "narrative"})
BEHAVIOUR_KINDS = frozenset({"episodic", "procedural"})
NEAR = 0.35
"""Cosine above which a behaviour is about a value at all (MiniLM puts a statement and its negation
at 0.6-0.9, unrelated sentences under 0.2; not fitted)."""


@dataclass(slots=True)
class TensionStats:
    found: int = 0
    acknowledged: int = 0
    resolved: int = 0
    open: int = 0


async def tensions(guard: Guard, memories: list[MemoryState], rt: Any) -> TensionStats:
    """Find new tensions, then move every unresolved one along its lifecycle."""
    stats = TensionStats()
    values = [m for m in memories if _is_value(m)]
    behaviours = [m for m in memories if m.kind in BEHAVIOUR_KINDS]
    existing = [m for m in memories if m.kind == "tension"]
    vectors = await vector_rows.vectors_of(
        guard.conn, rt.table, guard.scope.entity_id, rt.slug, [m.id for m in (*values, *behaviours)]
    )
    await _find(guard, rt, values, behaviours, existing, vectors, stats)
    await _lifecycle(guard, existing, {m.id: m for m in values}, behaviours, vectors, stats)
    return stats


def _is_value(m: MemoryState) -> bool:
    return (m.kind in VALUE_KINDS or m.anchored) and m.alpha / (m.alpha + m.beta) > rules.STRONG


def _near(vectors: dict[uuid.UUID, np.ndarray], a: uuid.UUID, b: uuid.UUID) -> bool:
    return a in vectors and b in vectors and float(vectors[a] @ vectors[b]) >= NEAR


async def _find(
    guard: Guard, rt: Any, values: list[MemoryState], behaviours: list[MemoryState], existing: list[MemoryState],
    vectors: dict[uuid.UUID, np.ndarray], stats: TensionStats,
) -> None:  # fmt: skip
    named = {
        (str((t.metadata or {}).get("value_id")), b) for t in existing for b in (t.metadata or {}).get("behaviours", [])
    }
    for value in values:
        for behaviour in behaviours:
            if (str(value.id), str(behaviour.id)) in named or not _near(vectors, value.id, behaviour.id):
                continue
            if behaviour.created_at < value.created_at and behaviour.event_time and value.event_time and \
                    behaviour.event_time < value.event_time:  # fmt: skip
                continue  # what was done before the value was held contradicts nothing
            if not await _contradicts(rt, value.content, behaviour.content):
                continue
            await _store(guard, rt, value, behaviour)
            named.add((str(value.id), str(behaviour.id)))
            stats.found += 1


async def _contradicts(rt: Any, value: str, behaviour: str) -> bool:
    if rules.opposes(value, behaviour):
        return True
    return rt.llm is not None and bool(await llm.contradicts(rt.llm, value, behaviour))


async def _store(guard: Guard, rt: Any, value: MemoryState, behaviour: MemoryState) -> None:
    text = rules.statement(value.content, behaviour.content)
    vector = np.asarray((await rt.embeddings.embed_documents([text]))[0], dtype=np.float32)
    row = memory_row(
        rt, guard.scope, uuid7(), text, "tension", source_tag="night", provenance=[str(value.id), str(behaviour.id)],
        event_time=behaviour.event_time or behaviour.created_at,
        metadata={"value_id": str(value.id), "behaviours": [str(behaviour.id)], "status": "open",
                  "detected_at": guard.at.isoformat()},
    )  # fmt: skip
    await store_memory(guard.conn, rt, guard.scope, row, vector)


async def _lifecycle(
    guard: Guard, existing: list[MemoryState], values: dict[uuid.UUID, MemoryState], behaviours: list[MemoryState],
    vectors: dict[uuid.UUID, np.ndarray], stats: TensionStats,
) -> None:  # fmt: skip
    """Surfaced (returned by recalls: its access count) more than 5 times: acknowledged; a behaviour
    written after the tension that acts on the value: resolved."""
    patches: dict[uuid.UUID, dict[str, Any]] = {}
    for t in existing:
        meta = t.metadata or {}
        status: rules.Status = meta.get("status", "open")
        if status == "resolved":
            continue
        key = _uuid(meta.get("value_id"))
        value = values.get(key) if key is not None else None
        fix = None
        if value is not None:
            fix = next((b for b in behaviours if b.created_at > t.created_at and _near(vectors, value.id, b.id)
                        and rules.aligned(value.content, b.content)), None)  # fmt: skip
        new = rules.next_status(status, t.access_count, fix is not None)
        if new == status:
            stats.open += 1
            continue
        patch: dict[str, Any] = {"status": new, "surface_count": t.access_count}
        if fix is not None:
            patch |= {"resolved_at": guard.at.isoformat(), "resolved_by": str(fix.id)}
            stats.resolved += 1
        else:
            stats.acknowledged += 1
        patches[t.id] = patch
    if patches:
        await inner_rows.patch_metadata(guard.conn, guard.scope.entity_id, patches)


def _uuid(text: object) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(text))
    except ValueError:
        return None
