"""Night stage (inner life): the frustration ledger's persistent failures, surfaced for reflection.

Seed: memory-architecture §10.6.3 ("Night Cycle Integration": identify tasks that fail across
several generations, surface them to higher-order processing for reflection). Each persistent
failure becomes one ``reflection`` memory with status ``candidate`` (the curator judges it like any
other candidate; the agent reads it with :meth:`~mnemo.AsyncArchive.inner.failure_patterns`); a pattern
already surfaced only has its counts brought up to date.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from mnemo.cognition.mind.ledger import Attempt, failure_patterns, reflection
from mnemo.models import uuid7
from mnemo.night.guard import Guard
from mnemo.store import inner_life as inner_rows
from mnemo.write.remember import memory_row, store_memory

__all__ = ["FrustrationStats", "frustration"]


@dataclass(slots=True)
class FrustrationStats:
    attempts: int = 0
    patterns: int = 0
    surfaced: int = 0


async def frustration(guard: Guard, rt: Any) -> FrustrationStats:
    e, ns = guard.scope.entity_id, guard.scope.namespace
    rows = await inner_rows.attempts(guard.conn, e, ns)
    stats = FrustrationStats(attempts=len(rows))
    if not rows:
        return stats
    found = failure_patterns(
        [Attempt(r.task, r.lineage, r.generation, r.success, r.failure_mode, r.propagated) for r in rows]
    )
    stats.patterns = len(found)
    known = await inner_rows.failure_reflections(guard.conn, e, ns)
    updates = {}
    for p in found:
        counts = {"failure_pattern": p.key, "failures": p.failures, "generations": list(p.generations)}
        if p.key in known:
            updates[known[p.key]] = counts
            continue
        text = reflection(p)
        vector = np.asarray((await rt.embeddings.embed_documents([text]))[0], dtype=np.float32)
        row = memory_row(rt, guard.scope, uuid7(), text, "reflection", status="candidate", source_tag="night",
                         metadata=counts)  # fmt: skip
        await store_memory(guard.conn, rt, guard.scope, row, vector)
        stats.surfaced += 1
    if updates:
        await inner_rows.patch_metadata(guard.conn, e, updates)
    return stats
