"""Rows of the inner life: milestones, tuned parameters and their history, outcomes, gut deltas
and axes, the agent's held inputs, the frustration ledger, and safety events about parameters.

Seeds: cognitive-plan §3.9, §4.3, §4.5, §4.7, §5.1-5.3; memory-architecture §10.6.3. Every
statement is single-entity and names its scope.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from psycopg.rows import class_row
from psycopg.types.json import Jsonb

from mnemo.models import HeldInput, TaskAttempt
from mnemo.store.dynamics import STATE_COLUMNS, MemoryState

STATE_SQL = ", ".join(STATE_COLUMNS)

__all__ = [
    "GutDeltaRow",
    "OutcomeSample",
    "add_input",
    "attempts",
    "delete_inputs",
    "detect_milestones",
    "gut_axes",
    "gut_deltas",
    "held_inputs",
    "insert_attempt",
    "insert_gut_delta",
    "insert_outcome",
    "milestones",
    "outcome_kind",
    "outcome_samples",
    "reach",
    "replace_gut_axes",
    "safety_event",
    "safety_events",
    "save_tuning",
    "tuning",
    "tuning_history",
    "update_inputs",
]


# --- milestones (§5.2) -----------------------------------------------------------------------------
async def reach(
    conn: psycopg.AsyncConnection, e: str, ns: str, milestone: str, at: datetime, evidence: Mapping[str, Any]
) -> bool:
    """Record the first time ``milestone`` was reached; False when it already was."""
    cur = await conn.execute(
        """INSERT INTO mnemo.milestones (entity_id, namespace, milestone, reached_at, evidence)
           VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING""",
        (e, ns, milestone, at, Jsonb(dict(evidence))),
    )
    return cur.rowcount == 1


async def milestones(conn: psycopg.AsyncConnection, e: str, ns: str) -> dict[str, tuple[datetime, dict[str, Any]]]:
    cur = await conn.execute(
        "SELECT milestone, reached_at, evidence FROM mnemo.milestones WHERE entity_id = %s AND namespace = %s",
        (e, ns),
    )
    return {r[0]: (r[1], r[2]) for r in await cur.fetchall()}


_DETECT = """
SELECT 'first_memory', min(at), min(memory_id::text) FROM traces.gate_decisions
 WHERE entity_id = %(e)s AND namespace = %(ns)s AND gate = 'exit'
   AND action IN ('persist', 'persist_flag', 'reinforce') AND memory_id IS NOT NULL
UNION ALL
SELECT 'first_retrieval', min(at), NULL FROM traces.retrievals
 WHERE entity_id = %(e)s AND namespace = %(ns)s AND outcome = 'hits' AND NOT read_only AND reader = %(e)s
UNION ALL
SELECT 'first_consolidation',
       greatest(min(created_at) FILTER (WHERE kind = 'insight'), min(created_at) FILTER (WHERE kind = 'narrative')),
       NULL FROM mnemo.memories
 WHERE entity_id = %(e)s AND namespace = %(ns)s AND kind IN ('insight', 'narrative')
   AND coalesce(metadata->>'channel', '') = ''
UNION ALL
SELECT 'first_goal_promotion', min(at), min(memory_id::text) FROM traces.weight_changes
 WHERE entity_id = %(e)s AND namespace = %(ns)s AND reason = 'promotion: goal' AND NOT blocked
UNION ALL
SELECT 'first_identity_promotion', min(at), min(memory_id::text) FROM traces.weight_changes
 WHERE entity_id = %(e)s AND namespace = %(ns)s AND reason = 'promotion: identity' AND NOT blocked
UNION ALL
SELECT 'first_conflict_resolution', min((metadata->>'resolved_at')::timestamptz), min(id::text) FROM mnemo.memories
 WHERE entity_id = %(e)s AND namespace = %(ns)s AND kind = 'tension' AND metadata->>'status' = 'resolved'
UNION ALL
SELECT 'first_creative_association', min(created_at), min(id::text) FROM mnemo.memories
 WHERE entity_id = %(e)s AND namespace = %(ns)s AND metadata->>'channel' = 'insight'
"""


async def detect_milestones(
    conn: psycopg.AsyncConnection, e: str, ns: str
) -> dict[str, tuple[datetime, dict[str, Any]]]:
    """The milestones the archive's own traces show as reached, with when and the item that showed it."""
    cur = await conn.execute(_DETECT, {"e": e, "ns": ns})
    return {name: (at, {"item_id": item} if item else {}) for name, at, item in await cur.fetchall() if at is not None}


# --- tuned parameters (§4.5) ------------------------------------------------------------------------
async def tuning(conn: psycopg.AsyncConnection, e: str, ns: str, name: str) -> dict[str, Any] | None:
    cur = await conn.execute(
        "SELECT params FROM mnemo.tuning WHERE entity_id = %s AND namespace = %s AND name = %s", (e, ns, name)
    )
    row = await cur.fetchone()
    return None if row is None else dict(row[0])


async def save_tuning(
    conn: psycopg.AsyncConnection,
    e: str,
    ns: str,
    name: str,
    params: Mapping[str, Any],
    *,
    previous: Mapping[str, Any] | None,
    applied: bool,
    reason: str,
    evidence: Mapping[str, Any],
    at: datetime,
) -> None:
    """Record a parameter change in the history; store it when ``applied``."""
    if applied:
        await conn.execute(
            """INSERT INTO mnemo.tuning (entity_id, namespace, name, params, updated_at) VALUES (%s, %s, %s, %s, %s)
               ON CONFLICT (entity_id, namespace, name) DO UPDATE SET params = EXCLUDED.params,
                                                                      updated_at = EXCLUDED.updated_at""",
            (e, ns, name, Jsonb(dict(params)), at),
        )
    if name in ("breaker", "coherence"):
        return  # bookkeeping, not a parameter: no history
    await conn.execute(
        """INSERT INTO traces.tuning_history (entity_id, namespace, at, name, previous, params, applied, reason,
                                              evidence)
           VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)""",
        (e, ns, at, name, None if previous is None else Jsonb(dict(previous)), Jsonb(dict(params)), applied, reason,
         Jsonb(dict(evidence))),
    )  # fmt: skip


async def tuning_history(
    conn: psycopg.AsyncConnection, e: str, ns: str, name: str | None = None, limit: int = 200
) -> list[tuple[datetime, str, dict[str, Any], bool, str, dict[str, Any]]]:
    """``(at, name, params, applied, reason, evidence)``, oldest first (the newest ``limit``)."""
    cur = await conn.execute(
        """SELECT at, name, params, applied, reason, evidence FROM (
               SELECT * FROM traces.tuning_history WHERE entity_id = %s AND namespace = %s
                  AND (%s::text IS NULL OR name = %s) ORDER BY at DESC, id DESC LIMIT %s) h
           ORDER BY at, id""",
        (e, ns, name, name, limit),
    )
    return [(r[0], r[1], dict(r[2]), r[3], r[4], dict(r[5])) for r in await cur.fetchall()]


# --- outcomes (§4.3, §5.3) --------------------------------------------------------------------------
async def outcome_hits(conn: psycopg.AsyncConnection, e: str, ns: str, outcome_id: uuid.UUID) -> set[uuid.UUID]:
    """The items a recall (by its outcome id) returned: what its outcome may name as used."""
    cur = await conn.execute(
        "SELECT hit_ids FROM traces.retrievals WHERE entity_id = %s AND namespace = %s AND id = %s",
        (e, ns, outcome_id),
    )
    row = await cur.fetchone()
    return set(row[0] or ()) if row else set()


async def outcome_namespace(conn: psycopg.AsyncConnection, e: str, outcome_id: uuid.UUID) -> str | None:
    """Which of entity ``e``'s namespaces holds the recall, gate decision or gut delta ``outcome_id``
    (an outcome id is unique: naming the namespace again is not needed)."""
    cur = await conn.execute(
        """SELECT namespace FROM traces.retrievals WHERE entity_id = %(e)s AND id = %(o)s
           UNION ALL SELECT namespace FROM traces.gate_decisions WHERE entity_id = %(e)s AND outcome_id = %(o)s
           UNION ALL SELECT namespace FROM mnemo.gut_deltas WHERE entity_id = %(e)s AND outcome_id = %(o)s
           LIMIT 1""",
        {"e": e, "o": outcome_id},
    )
    row = await cur.fetchone()
    return None if row is None else str(row[0])


async def outcome_kind(conn: psycopg.AsyncConnection, e: str, ns: str, outcome_id: uuid.UUID) -> str | None:
    """What ``outcome_id`` names in this scope: 'retrieval', 'gate' or 'gut'; None: nothing here."""
    cur = await conn.execute(
        """SELECT 'retrieval' FROM traces.retrievals WHERE entity_id = %(e)s AND namespace = %(ns)s AND id = %(o)s
           UNION ALL SELECT 'gate' FROM traces.gate_decisions
            WHERE entity_id = %(e)s AND namespace = %(ns)s AND outcome_id = %(o)s
           UNION ALL SELECT 'gut' FROM mnemo.gut_deltas
            WHERE entity_id = %(e)s AND namespace = %(ns)s AND outcome_id = %(o)s
           LIMIT 1""",
        {"e": e, "ns": ns, "o": outcome_id},
    )
    row = await cur.fetchone()
    return None if row is None else str(row[0])


async def insert_outcome(
    conn: psycopg.AsyncConnection,
    e: str,
    ns: str,
    outcome_id: uuid.UUID,
    kind: str,
    value: float,
    used: Sequence[uuid.UUID],
    detail: str,
    at: datetime,
) -> uuid.UUID:
    cur = await conn.execute(
        """INSERT INTO traces.outcomes (entity_id, namespace, outcome_id, kind, value, used, detail, at)
           VALUES (%s, %s, %s, %s, %s, %s, %s, %s) RETURNING id""",
        (e, ns, outcome_id, kind, value, list(used), detail, at),
    )
    row = await cur.fetchone()
    assert row is not None
    return uuid.UUID(str(row[0]))


@dataclass(frozen=True, slots=True)
class OutcomeSample:
    """A recall with the components of its hits and the outcomes linked back to it."""

    at: datetime
    hit_ids: list[uuid.UUID]
    parts: list[dict[str, float]]
    value: float
    used: list[uuid.UUID]


async def outcome_samples(
    conn: psycopg.AsyncConnection, e: str, ns: str, since: datetime | None, limit: int = 5000
) -> list[OutcomeSample]:
    """Recalls with stored components and at least one outcome, oldest first: the mean of their
    outcomes' values and every item the outcomes say was used."""
    cur = await conn.cursor(row_factory=class_row(OutcomeSample)).execute(
        """SELECT r.at, r.hit_ids, r.parts, avg(o.value) AS value,
                  coalesce(array_agg(DISTINCT u) FILTER (WHERE u IS NOT NULL), '{}') AS used
           FROM traces.retrievals r
           JOIN traces.outcomes o ON o.entity_id = r.entity_id AND o.namespace = r.namespace AND o.outcome_id = r.id
           LEFT JOIN LATERAL unnest(o.used) AS u ON true
           WHERE r.entity_id = %s AND r.namespace = %s AND r.parts IS NOT NULL
             AND (%s::timestamptz IS NULL OR r.at > %s)
           GROUP BY r.id, r.at, r.hit_ids, r.parts ORDER BY r.at, r.id LIMIT %s""",
        (e, ns, since, since, limit),
    )
    return await cur.fetchall()


# --- gut (§5.1) -------------------------------------------------------------------------------------
async def insert_gut_delta(
    conn: psycopg.AsyncConnection, e: str, ns: str, agent: str, vector: Sequence[float], magnitude: float,
    valence: float, context: str, action: str, at: datetime,
) -> uuid.UUID:  # fmt: skip
    cur = await conn.execute(
        """INSERT INTO mnemo.gut_deltas (entity_id, namespace, agent, vector, magnitude, valence, context, action, at)
           VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING outcome_id""",
        (e, ns, agent, [float(x) for x in vector], magnitude, valence, context, action, at),
    )
    row = await cur.fetchone()
    assert row is not None
    return uuid.UUID(str(row[0]))


@dataclass(frozen=True, slots=True)
class GutDeltaRow:
    vector: list[float]
    magnitude: float
    valence: float
    context: str
    action: str
    at: datetime
    outcome: float | None


async def gut_deltas(conn: psycopg.AsyncConnection, e: str, ns: str, limit: int = 5000) -> list[GutDeltaRow]:
    """The newest ``limit`` deltas, oldest first, each with the mean of its linked outcomes."""
    cur = await conn.cursor(row_factory=class_row(GutDeltaRow)).execute(
        """SELECT d.vector, d.magnitude, d.valence, d.context, d.action, d.at,
                  (SELECT avg(o.value) FROM traces.outcomes o WHERE o.entity_id = d.entity_id
                      AND o.namespace = d.namespace AND o.outcome_id = d.outcome_id) AS outcome
           FROM (SELECT * FROM mnemo.gut_deltas WHERE entity_id = %s AND namespace = %s
                 ORDER BY at DESC, id DESC LIMIT %s) d ORDER BY d.at, d.id""",
        (e, ns, limit),
    )
    return await cur.fetchall()


async def replace_gut_axes(
    conn: psycopg.AsyncConnection, e: str, ns: str, axes: Sequence[tuple[int, list[float], float, float | None, str]],
    deltas: int, at: datetime,
) -> None:  # fmt: skip
    await conn.execute("DELETE FROM mnemo.gut_axes WHERE entity_id = %s AND namespace = %s", (e, ns))
    async with conn.cursor() as cur:
        await cur.executemany(
            """INSERT INTO mnemo.gut_axes (entity_id, namespace, rank, axis, variance, correlation, name, deltas,
                                           computed_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)""",
            [(e, ns, rank, axis, var, corr, name, deltas, at) for rank, axis, var, corr, name in axes],
        )


async def gut_axes(
    conn: psycopg.AsyncConnection, e: str, ns: str
) -> list[tuple[int, list[float], float, float | None, str, int, datetime]]:
    cur = await conn.execute(
        """SELECT rank, axis, variance, correlation, name, deltas, computed_at FROM mnemo.gut_axes
           WHERE entity_id = %s AND namespace = %s ORDER BY rank""",
        (e, ns),
    )
    return [tuple(r) for r in await cur.fetchall()]


# --- what the agent holds (issue 31 item 9) ---------------------------------------------------------
async def add_input(
    conn: psycopg.AsyncConnection, e: str, ns: str, agent: str, kind: str, source: str, text: str, *,
    urgency: float, charge: float, confidence: float, due_at: datetime | None,
) -> uuid.UUID:  # fmt: skip
    cur = await conn.execute(
        """INSERT INTO mnemo.agent_inputs (entity_id, namespace, agent, kind, source, text, urgency, charge,
                                           confidence, due_at)
           VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id""",
        (e, ns, agent, kind, source, text, urgency, charge, confidence, due_at),
    )
    row = await cur.fetchone()
    assert row is not None
    return uuid.UUID(str(row[0]))


async def held_inputs(conn: psycopg.AsyncConnection, e: str, ns: str, agent: str) -> list[HeldInput]:
    cur = await conn.cursor(row_factory=class_row(HeldInput)).execute(
        """SELECT id, kind, source, text, urgency, charge, confidence, waited, due_at FROM mnemo.agent_inputs
           WHERE entity_id = %s AND namespace = %s AND agent = %s ORDER BY created_at, id""",
        (e, ns, agent),
    )
    return await cur.fetchall()


async def delete_inputs(conn: psycopg.AsyncConnection, e: str, ns: str, agent: str, ids: Sequence[uuid.UUID]) -> int:
    cur = await conn.execute(
        "DELETE FROM mnemo.agent_inputs WHERE entity_id = %s AND namespace = %s AND agent = %s AND id = ANY(%s)",
        (e, ns, agent, list(ids)),
    )
    return cur.rowcount


async def update_inputs(
    conn: psycopg.AsyncConnection, e: str, ns: str, agent: str, rows: Sequence[tuple[uuid.UUID, float, int]]
) -> None:
    """Set ``(id, urgency, waited)`` of inputs still waiting."""
    async with conn.cursor() as cur:
        await cur.executemany(
            """UPDATE mnemo.agent_inputs SET urgency = %s, waited = %s
               WHERE entity_id = %s AND namespace = %s AND agent = %s AND id = %s""",
            [(u, w, e, ns, agent, i) for i, u, w in rows],
        )


# --- the frustration ledger (memory-architecture §10.6.3) -------------------------------------------
async def insert_attempt(conn: psycopg.AsyncConnection, e: str, ns: str, row: Mapping[str, Any]) -> TaskAttempt:
    cur = await conn.cursor(row_factory=class_row(TaskAttempt)).execute(
        """INSERT INTO mnemo.task_attempts (entity_id, namespace, lineage, task, generation, parent_mutation_id,
                                            mutation, success, failure_mode, turns, propagated, created_at)
           VALUES (%(e)s, %(ns)s, %(lineage)s, %(task)s, %(generation)s, %(parent)s, %(mutation)s, %(success)s,
                   %(failure_mode)s, %(turns)s, %(propagated)s, %(at)s)
           RETURNING id, lineage, task, generation, mutation_id, parent_mutation_id, mutation, success,
                     failure_mode, turns, propagated, created_at""",
        {"e": e, "ns": ns, **row},
    )
    found = await cur.fetchone()
    assert found is not None
    return found


async def attempts(conn: psycopg.AsyncConnection, e: str, ns: str, limit: int = 20000) -> list[TaskAttempt]:
    cur = await conn.cursor(row_factory=class_row(TaskAttempt)).execute(
        """SELECT id, lineage, task, generation, mutation_id, parent_mutation_id, mutation, success, failure_mode,
                  turns, propagated, created_at FROM mnemo.task_attempts
           WHERE entity_id = %s AND namespace = %s ORDER BY created_at DESC, id DESC LIMIT %s""",
        (e, ns, limit),
    )
    return list(reversed(await cur.fetchall()))


# --- safety events about parameters and patterns (§3.9 phases B and C) ------------------------------
async def safety_event(
    conn: psycopg.AsyncConnection, e: str, ns: str, *, check: str, enforced: bool, detail: str, subject: str,
    at: datetime, memory_id: uuid.UUID | None = None, evidence: Mapping[str, Any] | None = None,
) -> None:  # fmt: skip
    await conn.execute(
        """INSERT INTO traces.safety_events (id, entity_id, namespace, memory_id, at, ceiling, enforced, detail,
                                             change_id, subject, evidence)
           VALUES (uuidv7(), %s, %s, %s, %s, %s, %s, %s, NULL, %s, %s)""",
        (e, ns, memory_id, at, check, enforced, detail, subject, Jsonb(dict(evidence or {}))),
    )


async def safety_events(
    conn: psycopg.AsyncConnection, e: str, ns: str, limit: int = 200
) -> list[tuple[datetime, str, bool, str, str, uuid.UUID | None]]:
    """``(at, check, enforced, subject, detail, memory_id)``, newest first."""
    cur = await conn.execute(
        """SELECT at, ceiling, enforced, subject, detail, memory_id FROM traces.safety_events
           WHERE entity_id = %s AND namespace = %s ORDER BY at DESC, id DESC LIMIT %s""",
        (e, ns, limit),
    )
    return [tuple(r) for r in await cur.fetchall()]


# --- what the night's inner stage reads (cognitive-plan §4.2-4.5) -----------------------------------
EVIDENCE_REASONS = ("confirmed", "remembered again")
"""Reinforcements that bring new evidence (the exit gate confirming, the same thing remembered again);
a recall's use (``recalled``) reinforces what is already believed."""


async def live_memories(conn: psycopg.AsyncConnection, e: str, ns: str, limit: int = 2000) -> list[MemoryState]:
    """Active memories, strongest first (at most ``limit``)."""
    cur = await conn.execute(
        f"SELECT {STATE_SQL} FROM mnemo.memories "  # noqa: S608  (fixed column list)
        "WHERE entity_id = %s AND namespace = %s AND status = 'active' ORDER BY alpha / (alpha + beta) DESC, id "
        "LIMIT %s",
        (e, ns, limit),
    )
    return [MemoryState(*r) for r in await cur.fetchall()]


async def sightings(
    conn: psycopg.AsyncConnection, e: str, ns: str, ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, list[tuple[datetime, float]]]:
    """Per memory, when new evidence reinforced it and how far that evidence's source is trusted."""
    cur = await conn.execute(
        """SELECT memory_id, at, coalesce((evidence->>'trust')::float8, 1.0) FROM traces.weight_changes
           WHERE entity_id = %s AND namespace = %s AND memory_id = ANY(%s) AND operation = 'reinforce'
             AND NOT blocked AND reason = ANY(%s) ORDER BY at""",
        (e, ns, list(ids), list(EVIDENCE_REASONS)),
    )
    found: dict[uuid.UUID, list[tuple[datetime, float]]] = {}
    for memory_id, at, trust in await cur.fetchall():
        found.setdefault(memory_id, []).append((at, float(trust)))
    return found


async def reinforced_since(
    conn: psycopg.AsyncConnection, e: str, ns: str, since: datetime | None, until: datetime
) -> dict[uuid.UUID, bool]:
    """Memories reinforced in ``(since, until]`` (promotions aside), each with whether new evidence from a
    fully trusted source came with it."""
    cur = await conn.execute(
        """SELECT memory_id, bool_or(reason = ANY(%s) AND coalesce((evidence->>'trust')::float8, 1.0) >= 1.0)
           FROM traces.weight_changes
           WHERE entity_id = %s AND namespace = %s AND operation = 'reinforce' AND NOT blocked
             AND reason NOT LIKE 'promotion%%' AND (%s::timestamptz IS NULL OR at > %s) AND at <= %s
           GROUP BY memory_id""",
        (list(EVIDENCE_REASONS), e, ns, since, since, until),
    )
    return {r[0]: bool(r[1]) for r in await cur.fetchall()}


async def patch_metadata(
    conn: psycopg.AsyncConnection, e: str, patches: Mapping[uuid.UUID, Mapping[str, Any]], drop: Sequence[str] = ()
) -> None:
    """Merge each patch into its memory's metadata (and remove the keys in ``drop``)."""
    async with conn.cursor() as cur:
        await cur.executemany(
            """UPDATE mnemo.memories SET metadata = (metadata - %s::text[]) || %s, updated_at = now()
               WHERE entity_id = %s AND id = %s""",
            [(list(drop), Jsonb(dict(p)), e, i) for i, p in patches.items()],
        )


async def uses(
    conn: psycopg.AsyncConnection, e: str, ns: str, ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, list[float]]:
    """Per memory, the values of the outcomes that say it was used."""
    cur = await conn.execute(
        """SELECT u, o.value FROM traces.outcomes o CROSS JOIN LATERAL unnest(o.used) AS u
           WHERE o.entity_id = %s AND o.namespace = %s AND u = ANY(%s)""",
        (e, ns, list(ids)),
    )
    found: dict[uuid.UUID, list[float]] = {}
    for memory_id, value in await cur.fetchall():
        found.setdefault(memory_id, []).append(float(value))
    return found


@dataclass(frozen=True, slots=True)
class GateReview:
    """An exit-gate decision old enough to judge, with what became of it."""

    outcome_id: uuid.UUID
    at: datetime
    action: str
    content: str
    memory_id: uuid.UUID | None
    retrieved: bool
    """Its memory was accessed after the decision."""


async def unreviewed_gate_decisions(
    conn: psycopg.AsyncConnection, e: str, ns: str, before: datetime, limit: int = 2000
) -> list[GateReview]:
    """Exit-gate decisions made before ``before`` that no outcome links back to yet."""
    cur = await conn.cursor(row_factory=class_row(GateReview)).execute(
        """SELECT g.outcome_id, g.at, g.action, g.content, g.memory_id,
                  coalesce(m.last_accessed > g.at, false) AS retrieved
           FROM traces.gate_decisions g
           LEFT JOIN mnemo.memories m ON m.entity_id = g.entity_id AND m.id = g.memory_id
           WHERE g.entity_id = %s AND g.namespace = %s AND g.gate = 'exit' AND g.at < %s
             AND g.action IN ('persist', 'persist_flag', 'drop', 'skip')
             AND NOT EXISTS (SELECT 1 FROM traces.outcomes o WHERE o.entity_id = g.entity_id
                             AND o.namespace = g.namespace AND o.outcome_id = g.outcome_id)
           ORDER BY g.at LIMIT %s""",
        (e, ns, before, limit),
    )
    return await cur.fetchall()


async def texts_since(
    conn: psycopg.AsyncConnection, e: str, ns: str, since: datetime, limit: int = 5000
) -> list[tuple[datetime, str]]:
    """What was asked (recall queries) and said (entry-gate items) after ``since``, oldest first."""
    cur = await conn.execute(
        """(SELECT at, query FROM traces.retrievals WHERE entity_id = %(e)s AND namespace = %(ns)s AND at > %(s)s
            ORDER BY at LIMIT %(n)s)
           UNION ALL
           (SELECT at, content FROM traces.gate_decisions WHERE entity_id = %(e)s AND namespace = %(ns)s
              AND gate = 'entry' AND at > %(s)s ORDER BY at LIMIT %(n)s)""",
        {"e": e, "ns": ns, "s": since, "n": limit},
    )
    return sorted((r[0], r[1]) for r in await cur.fetchall())


async def action_record(conn: psycopg.AsyncConnection, e: str, ns: str) -> tuple[int, int]:
    """Successes and attempts over the latest 200 task attempts and the reflexes' counts."""
    cur = await conn.execute(
        """SELECT coalesce(sum(s), 0), coalesce(sum(n), 0) FROM (
             (SELECT success::int AS s, 1 AS n FROM mnemo.task_attempts WHERE entity_id = %(e)s AND namespace = %(ns)s
              ORDER BY created_at DESC LIMIT 200)
             UNION ALL
             SELECT success_count, total_count FROM mnemo.reflexes WHERE entity_id = %(e)s AND namespace = %(ns)s
           ) x""",
        {"e": e, "ns": ns},
    )
    row = await cur.fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


async def pathological_weights(
    conn: psycopg.AsyncConnection, e: str, ns: str, limit: float
) -> list[tuple[uuid.UUID, float, float]]:
    cur = await conn.execute(
        """SELECT id, alpha, beta FROM mnemo.memories WHERE entity_id = %s AND namespace = %s
             AND status = 'active' AND (alpha > %s OR beta > %s) LIMIT 100""",
        (e, ns, limit, limit),
    )
    return [(r[0], float(r[1]), float(r[2])) for r in await cur.fetchall()]


async def gate_counts(conn: psycopg.AsyncConnection, e: str, ns: str) -> dict[str, int]:
    """Over the exit-gate decisions judged since the gate last moved: dropped, and needed later;
    persisted, and never retrieved."""
    cur = await conn.execute(
        """SELECT count(*) FILTER (WHERE g.action IN ('drop', 'skip') AND o.value < 0),
                  count(*) FILTER (WHERE g.action IN ('drop', 'skip')),
                  count(*) FILTER (WHERE g.action IN ('persist', 'persist_flag') AND o.value < 0),
                  count(*) FILTER (WHERE g.action IN ('persist', 'persist_flag'))
           FROM traces.gate_decisions g JOIN traces.outcomes o
             ON o.entity_id = g.entity_id AND o.namespace = g.namespace AND o.outcome_id = g.outcome_id
           WHERE g.entity_id = %s AND g.namespace = %s AND o.kind = 'reaccess'
             AND o.at > coalesce((SELECT updated_at FROM mnemo.tuning t WHERE t.entity_id = g.entity_id
                                  AND t.namespace = g.namespace AND t.name = 'gate'), '-infinity')""",
        (e, ns),
    )
    row = await cur.fetchone()
    assert row is not None
    return {"needed": int(row[0]), "dropped": int(row[1]), "unretrieved": int(row[2]), "persisted": int(row[3])}


async def memory_text(conn: psycopg.AsyncConnection, e: str, memory_id: uuid.UUID) -> str | None:
    cur = await conn.execute(
        "SELECT coalesce(compressed, content) FROM mnemo.memories WHERE entity_id = %s AND id = %s", (e, memory_id)
    )
    row = await cur.fetchone()
    return None if row is None else str(row[0])


async def failure_reflections(conn: psycopg.AsyncConnection, e: str, ns: str) -> dict[str, uuid.UUID]:
    """The reflection memories the ledger's analysis made, by failure pattern key."""
    cur = await conn.execute(
        """SELECT metadata->>'failure_pattern', id FROM mnemo.memories
           WHERE entity_id = %s AND namespace = %s AND metadata ? 'failure_pattern'""",
        (e, ns),
    )
    return {r[0]: r[1] for r in await cur.fetchall()}
