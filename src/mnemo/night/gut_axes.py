"""Night stage (inner life): the gut axes, principal components of the logged gut deltas.

Seed: cognitive-plan §5.1 ("PCA: run during deep consolidation, find the top 10-20 principal
components, correlate with outcomes, name axes as they acquire meaning"). An axis correlated with
good outcomes is named hope, pointing toward what went well (its opposite pole is fear;
:func:`mnemo.cognition.mind.gut.axes`); each name adds
the memory lying furthest along the axis, so an operator can read what it is about.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from mnemo.cognition.mind.gut import LEAST_DELTAS, axes
from mnemo.night.guard import Guard
from mnemo.store import inner_life as inner_rows
from mnemo.store import vectors as vector_rows

__all__ = ["GutStats", "gut_axes"]

LEAST = LEAST_DELTAS
"""Deltas needed before axes mean anything."""
AXES = 10
"""The seed's lower bound of 10-20 axes."""


@dataclass(slots=True)
class GutStats:
    deltas: int = 0
    axes: int = 0
    named: list[str] | None = None


async def gut_axes(guard: Guard, rt: Any) -> GutStats:
    e, ns = guard.scope.entity_id, guard.scope.namespace
    rows = await inner_rows.gut_deltas(guard.conn, e, ns)
    stats = GutStats(deltas=len(rows))
    if len(rows) < LEAST:
        return stats
    found = axes(np.array([r.vector for r in rows], dtype=float), [r.outcome for r in rows], AXES)
    stored, poles = [], set[str]()
    for a in found:
        pole = await _pole(guard, rt, a.axis, poles)
        stored.append((a.rank, [float(x) for x in a.axis], a.variance, a.correlation,
                       a.name + (f": toward '{pole}'" if pole else "")))  # fmt: skip
    await inner_rows.replace_gut_axes(guard.conn, e, ns, stored, len(rows), guard.at)
    stats.axes = len(stored)
    stats.named = [s[4] for s in stored if not s[4].startswith("axis")]
    return stats


async def _pole(guard: Guard, rt: Any, axis: np.ndarray, taken: set[str]) -> str | None:
    """The memory furthest along ``axis`` (a short quote) that no earlier axis is named after (two
    axes toward one memory read as one; issue 39 item 13), when the axis lives in the active space.
    Adds the quote to ``taken``."""
    if len(axis) != rt.embeddings.dim:
        return None
    found = await vector_rows.search(
        guard.conn, rt.table, rt.embeddings.dim, guard.scope.entity_id, guard.scope.namespace, rt.slug,
        np.asarray(axis, dtype=np.float32), 2 * len(taken) + 1, item_kind="memory",
    )  # fmt: skip
    for item in found:
        text = await inner_rows.memory_text(guard.conn, guard.scope.entity_id, item[0])
        quote = None if text is None else (text if len(text) <= 60 else text[:59] + "…")
        if quote is not None and quote not in taken:
            taken.add(quote)
            return quote
    return None
