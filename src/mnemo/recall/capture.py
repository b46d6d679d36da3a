"""What the recalls made inside :func:`capturing` saw: the benchmarks' window on the read path
(``benchmarks/learn_fusion.py`` trains the ranking model on it, ``benchmarks/refusal_removed.py``
reads the question words' support). Nothing is kept unless a benchmark asks
(:meth:`mnemo.admin.probes.Probes.capturing`).
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field

import numpy as np

__all__ = ["Capture", "Pool", "capturing", "sink"]


@dataclass(frozen=True, slots=True)
class Pool:
    """One recall's head, as the ranking model sees it."""

    ids: tuple[uuid.UUID, ...]
    """The head, in the hand-set order."""
    matrix: np.ndarray
    """One row per candidate, one column per feature (:data:`mnemo.cognition.scoring.ranker.FEATURES`)."""
    sessions: Mapping[uuid.UUID, str]
    """Each utterance's session (memories have none)."""


@dataclass(frozen=True, slots=True)
class Capture:
    """What the recalls made inside :func:`capturing` saw, one entry per recall (benchmarks only)."""

    pools: list[Pool] = field(default_factory=list)
    """Each recall's head, as the ranking model saw it."""
    support: list[dict[str, tuple[int, float]]] = field(default_factory=list)
    """Each recall's question words: how many items of the scope hold each, and how well the hits
    match it (:mod:`mnemo.recall.support`)."""
    by_hit: list[tuple[list[str], np.ndarray, dict[str, int], int]] = field(default_factory=list)
    """Each recall's question words, their match in each top hit, the items holding each, and the
    items the scope holds."""


_SINK: ContextVar[Capture | None] = ContextVar("mnemo_recall_capture", default=None)


def sink() -> Capture | None:
    """The capture of the recalls being made, if a benchmark asked for one."""
    return _SINK.get()


@contextlib.contextmanager
def capturing() -> Iterator[Capture]:
    """Collect what every recall made inside the block saw (benchmarks only)."""
    capture = Capture()
    token = _SINK.set(capture)
    try:
        yield capture
    finally:
        _SINK.reset(token)
