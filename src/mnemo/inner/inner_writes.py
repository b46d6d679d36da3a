"""Writes of the inner life: outcomes, gut deltas, task attempts, milestones, held inputs,
and what an agent holds between cycles (approvals and the inner stage on demand are in
:mod:`mnemo.inner.reflect_on_demand`).

Seeds: cognitive-plan §4.3 and §5.3 (every gate decision, retrieval and gut delta has a
forward-linkable outcome id; outcomes link back: user feedback, task success), §5.1 (every gut
delta is logged with its context, action and outcome slot), §5.2 (milestones reached by real
events), §4.7 and §3.10 (what the agent holds between cycles survives a restart);
memory-architecture §10.6.3 (the frustration ledger). Every input is checked before anything is
written; the SQL is in :mod:`mnemo.store.inner_life`.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mnemo._runtime import Runtime
from mnemo._validate import check_content, check_id, check_process, check_text, time_or_now, to_utc
from mnemo.cognition.mind.readiness import MILESTONES
from mnemo.errors import InvalidContentError, UnknownItemError
from mnemo.models import HeldInput, Scope, TaskAttempt
from mnemo.store import inner_life as inner_rows
from mnemo.write.remember import ensure_scope

__all__ = [
    "add_input",
    "feedback",
    "held_inputs",
    "log_gut",
    "outcome_scope",
    "reach_milestone",
    "record_attempt",
    "release_inputs",
    "wait_inputs",
]


def _number(value: object, label: str, lo: float, hi: float) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not lo <= value <= hi
    ):
        raise InvalidContentError(f"{label} must be a number from {lo:g} to {hi:g}, not {value!r}")
    return float(value)


async def feedback(
    rt: Runtime, scope: Scope, outcome_id: object, value: object, *, used: Sequence[object] = (),
    kind: str = "feedback", detail: object = "", at: object = None,
) -> uuid.UUID:  # fmt: skip
    """Link an outcome back to a recall, gate decision or gut delta of ``scope`` (its outcome id):
    ``value`` from -1 (went badly) to 1 (went well), ``used`` the recalled items that were used."""
    target = check_id(outcome_id, label="outcome_id")
    score = _number(value, "value", -1.0, 1.0)
    if kind not in ("feedback", "task"):
        raise InvalidContentError(f"kind must be 'feedback' or 'task', not {kind!r}")
    if isinstance(used, str | bytes) or not isinstance(used, Sequence):
        raise InvalidContentError("used must be a list of item ids")
    items = [check_id(u, label="used") for u in used]
    note = check_text(detail, label="detail", allow_blank=True, multiline=True)
    when = time_or_now(at, skew_hours=rt.settings.clock_skew_hours, label="at")
    await rt.uses.barrier(scope.entity_id, scope.namespace)  # the recall's trace is written behind it (issue 42)
    async with rt.store.transaction() as conn:
        linked = await inner_rows.outcome_kind(conn, scope.entity_id, scope.namespace, target)
        if linked is None:
            raise UnknownItemError(f"no recall, gate decision or gut delta {target} in scope {scope}")
        if items and linked != "retrieval":
            raise InvalidContentError("used names recalled items: give it only for a recall's outcome")
        hits = await inner_rows.outcome_hits(conn, scope.entity_id, scope.namespace, target) if items else set()
        if stray := [i for i in items if i not in hits]:
            raise InvalidContentError(f"used names {stray[0]}, which was not a hit of recall {target}")
        return await inner_rows.insert_outcome(conn, scope.entity_id, scope.namespace, target, kind, score, items,
                                               note, when)  # fmt: skip


async def outcome_scope(rt: Runtime, entity_id: str, outcome_id: object) -> Scope | None:
    """The scope of ``entity_id`` that holds the outcome id (a recall's, a gate decision's, a gut
    delta's); None when none does."""
    target = check_id(outcome_id, label="outcome_id")
    async with rt.store.connection() as conn:
        namespace = await inner_rows.outcome_namespace(conn, Scope(entity_id).entity_id, target)
    return None if namespace is None else Scope(entity_id, namespace)


async def log_gut(
    rt: Runtime, scope: Scope, agent: object, delta: Sequence[float] | np.ndarray, *, magnitude: object,
    valence: object, context: object = "", action: object = "", at: object = None,
) -> uuid.UUID:  # fmt: skip
    """Log one gut delta of ``agent`` (cognitive-plan §5.1); returns its outcome id."""
    name = check_process(agent)
    if isinstance(delta, str | bytes):
        raise InvalidContentError("delta must be a vector of numbers")
    raw = np.asarray(delta, dtype=float)
    if raw.ndim != 1 or len(raw) != rt.embeddings.dim or not np.all(np.isfinite(raw)):
        raise InvalidContentError(f"delta must be {rt.embeddings.dim} finite numbers")
    size = _number(magnitude, "magnitude", 0.0, 1.0)
    sign = _number(valence, "valence", -1.0, 1.0)
    texts = [check_text(t, label=label, allow_blank=True, multiline=True, max_chars=2000)
             for t, label in ((context, "context"), (action, "action"))]  # fmt: skip
    when = time_or_now(at, skew_hours=rt.settings.clock_skew_hours, label="at")
    async with rt.store.transaction() as conn:
        await ensure_scope(conn, rt, scope)
        return await inner_rows.insert_gut_delta(conn, scope.entity_id, scope.namespace, name, raw.tolist(), size,
                                                 sign, texts[0], texts[1], when)  # fmt: skip


async def record_attempt(
    rt: Runtime, scope: Scope, task: object, *, lineage: object, generation: object, success: object,
    failure_mode: object = None, parent: object = None, mutation: object = "", turns: object = None,
    propagated: object = False, at: object = None,
) -> TaskAttempt:  # fmt: skip
    """Record one attempt in the frustration ledger (memory-architecture §10.6.3)."""
    text = check_content(task, max_chars=rt.settings.max_content_chars, label="task")
    row = {
        "task": text,
        "lineage": check_text(lineage, label="lineage", max_chars=200),
        "generation": _count(generation, "generation"),
        "success": _flag(success, "success"),
        "failure_mode": None if failure_mode is None else check_text(failure_mode, label="failure_mode", max_chars=200),
        "parent": None if parent is None else check_id(parent, label="parent"),
        "mutation": check_text(mutation, label="mutation", allow_blank=True, multiline=True, max_chars=2000),
        "turns": None if turns is None else _count(turns, "turns"),
        "propagated": _flag(propagated, "propagated"),
        "at": time_or_now(at, skew_hours=rt.settings.clock_skew_hours, label="at"),
    }
    if row["success"] and row["failure_mode"] is not None:
        raise InvalidContentError("a successful attempt has no failure_mode")
    async with rt.store.transaction() as conn:
        await ensure_scope(conn, rt, scope)
        found = await inner_rows.insert_attempt(conn, scope.entity_id, scope.namespace, row)
    return found


def _count(value: object, label: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidContentError(f"{label} must be an integer >= 0, not {value!r}")
    return value


def _flag(value: object, label: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidContentError(f"{label} must be true or false, not {value!r}")
    return value


async def reach_milestone(
    rt: Runtime, scope: Scope, name: object, evidence: Mapping[str, Any] | None = None, at: object = None
) -> bool:
    """Record that a real event reached milestone ``name`` (cognitive-plan §5.2); False when it already was."""
    if name not in MILESTONES:
        raise InvalidContentError(f"unknown milestone {name!r}; the milestones are {', '.join(MILESTONES)}")
    if evidence is not None and not isinstance(evidence, Mapping):
        raise InvalidContentError("evidence must be a mapping")
    when = time_or_now(at, skew_hours=rt.settings.clock_skew_hours, label="at")
    async with rt.store.transaction() as conn:
        await ensure_scope(conn, rt, scope)
        return await inner_rows.reach(conn, scope.entity_id, scope.namespace, str(name), when,
                                      {str(k): str(v) for k, v in (evidence or {}).items()})  # fmt: skip


# --- what an agent holds between cycles -----------------------------------------------------------
async def add_input(
    rt: Runtime, scope: Scope, agent: object, text: object, *, source: object, kind: str = "pending",
    urgency: object = 0.0, charge: object = 0.0, confidence: object = 1.0, due_at: object = None,
) -> uuid.UUID:  # fmt: skip
    """Keep one pending input or scheduled task of ``agent`` in the database."""
    name = check_process(agent)
    body = check_content(text, max_chars=rt.settings.max_content_chars, label="text")
    if kind not in ("pending", "scheduled"):
        raise InvalidContentError(f"kind must be 'pending' or 'scheduled', not {kind!r}")
    due = None if due_at is None else to_utc(due_at, label="due_at")
    if kind == "scheduled" and due is None:
        raise InvalidContentError("a scheduled task needs due_at")
    values = (_number(urgency, "urgency", 0.0, 10.0), _number(charge, "charge", -1.0, 1.0),
              _number(confidence, "confidence", 0.0, 1.0))  # fmt: skip
    async with rt.store.transaction() as conn:
        await ensure_scope(conn, rt, scope)
        return await inner_rows.add_input(
            conn, scope.entity_id, scope.namespace, name, kind, check_text(source, label="source"), body,
            urgency=values[0], charge=values[1], confidence=values[2], due_at=due,
        )  # fmt: skip


async def held_inputs(rt: Runtime, scope: Scope, agent: object) -> list[HeldInput]:
    name = check_process(agent)
    async with rt.store.connection() as conn:
        return await inner_rows.held_inputs(conn, scope.entity_id, scope.namespace, name)


async def release_inputs(rt: Runtime, scope: Scope, agent: object, ids: Sequence[object]) -> int:
    """Forget inputs the agent attended to (or dropped)."""
    name = check_process(agent)
    wanted = [check_id(i, label="ids") for i in ids]
    async with rt.store.transaction() as conn:
        return await inner_rows.delete_inputs(conn, scope.entity_id, scope.namespace, name, wanted)


async def wait_inputs(rt: Runtime, scope: Scope, agent: object, waiting: Sequence[tuple[object, float, int]]) -> None:
    """Store the decayed urgency and wait count of inputs that lost this cycle."""
    name = check_process(agent)
    rows = [(check_id(i, label="ids"), _number(u, "urgency", 0.0, 10.0), _count(w, "waited")) for i, u, w in waiting]
    async with rt.store.transaction() as conn:
        await inner_rows.update_inputs(conn, scope.entity_id, scope.namespace, name, rows)
