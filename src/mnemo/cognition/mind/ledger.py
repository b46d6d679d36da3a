"""The frustration ledger's analysis: failures that persist across generations.

Seed: memory-architecture §10.6.2-10.6.3 (workers are variants of a strategy, generation after
generation; the ledger records each attempt with its lineage, outcome, failure mode and whether it
propagated; the night identifies tasks that fail across several generations and surfaces them for
reflection).

Pure functions; no I/O.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Attempt", "FailurePattern", "failure_patterns", "reflection", "task_key"]

PERSISTENT = 2
"""Failing in at least this many generations makes a failure persistent."""


@dataclass(frozen=True, slots=True)
class Attempt:
    task: str
    lineage: str
    generation: int
    success: bool
    failure_mode: str | None = None
    propagated: bool = False


@dataclass(frozen=True, slots=True)
class FailurePattern:
    """A task that kept failing."""

    key: str
    task: str
    lineages: tuple[str, ...]
    generations: tuple[int, ...]
    """The generations in which it failed."""
    attempts: int
    failures: int
    modes: tuple[tuple[str, int], ...]
    """Failure modes, most frequent first."""
    propagated_failures: int
    """Failing attempts whose variant became a template anyway."""


def task_key(task: str) -> str:
    """Attempts of the same task, however spaced or cased, share a key."""
    return re.sub(r"\s+", " ", task.strip().lower())


def failure_patterns(attempts: Sequence[Attempt], least: int = PERSISTENT) -> list[FailurePattern]:
    """Tasks that failed in at least ``least`` generations and did not succeed in their latest
    generation, worst first (most failing generations, then failures)."""
    by_task: dict[str, list[Attempt]] = {}
    for a in attempts:
        by_task.setdefault(task_key(a.task), []).append(a)
    found = []
    for key, group in by_task.items():
        failed = [a for a in group if not a.success]
        generations = sorted({a.generation for a in failed})
        latest = max(a.generation for a in group)
        if len(generations) < least or any(a.success for a in group if a.generation == latest):
            continue
        modes = Counter(a.failure_mode or "unknown" for a in failed).most_common()
        found.append(
            FailurePattern(
                key, group[0].task.strip(), tuple(sorted({a.lineage for a in group})), tuple(generations),
                len(group), len(failed), tuple(modes), sum(a.propagated for a in failed),
            )
        )  # fmt: skip
    return sorted(found, key=lambda p: (-len(p.generations), -p.failures, p.key))


def reflection(p: FailurePattern) -> str:
    """The reflection candidate's text for a persistent failure."""
    modes = ", ".join(f"{m} x{n}" for m, n in p.modes)
    spread = f"generations {p.generations[0]}-{p.generations[-1]}"
    text = (
        f"Persistent failure: '{p.task}' failed {p.failures} of {p.attempts} attempts across {spread} "
        f"({modes}); no variant of {', '.join(p.lineages)} fixed it."
    )
    if p.propagated_failures:
        text += f" {p.propagated_failures} failing variants were still propagated."
    return text
