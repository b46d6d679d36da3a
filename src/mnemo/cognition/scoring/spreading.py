"""Co-access (Hebbian) links and spreading activation over them.

Seed: cognitive-plan §3.1 ("memory_co_access": updated every time memories
are retrieved together; after the direct co-access lookup, 1-hop spreading
to each partner's top partners at 0.3x, 2-hop at 0.1x on request; decay old
associations and track only those above a threshold) and §4.1 (co-access
update as light background consolidation).

An edge's strength saturates with use and fades with time since it was last
used: ``(1 - exp(-count / saturation)) * 0.5 ** (age / half_life)``.
Pruning keeps each memory's ``max_edges`` strongest edges and drops edges
weaker than ``min_strength``, so the table grows O(N * max_edges), not O(N^2).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from itertools import combinations
from typing import TypeVar

__all__ = ["HOP_DECAY", "edge_strength", "pairs", "prune", "spread"]

K = TypeVar("K", bound=Hashable)

HOP_DECAY = (1.0, 0.3, 0.1)


def edge_strength(
    count: int, age_seconds: float, *, saturation: float = 3.0, half_life_seconds: float = 30 * 86400.0
) -> float:
    """Strength in [0, 1) of a link used ``count`` times, last ``age_seconds`` ago."""
    if count <= 0:
        return 0.0
    return (1.0 - math.exp(-count / saturation)) * math.pow(0.5, max(age_seconds, 0.0) / half_life_seconds)


def pairs(ids: Iterable[K]) -> list[tuple[K, K]]:
    """Every unordered pair of distinct ids, each as ``(smaller, larger)`` by ``str`` order."""
    unique = sorted(set(ids), key=str)
    return list(combinations(unique, 2))


def spread(
    seeds: Mapping[K, float],
    neighbours: Mapping[K, Sequence[tuple[K, float]]],
    hops: int = 1,
    *,
    fan_out: int = 3,
    decay: Sequence[float] = HOP_DECAY,
) -> dict[K, float]:
    """Activation reached from ``seeds`` through co-access links.

    Hop 0 activates the seeds' direct partners at ``seed * strength``; each further hop
    (``hops`` of them, at most ``len(decay) - 1``) follows each activated memory's
    ``fan_out`` strongest partners at ``decay[hop]`` times that. A memory keeps its highest
    activation. Seeds can be activated by other seeds (two active memories that are often used
    together support each other), never by themselves.
    """
    if hops < 0 or hops >= len(decay):
        raise ValueError(f"hops must be between 0 and {len(decay) - 1}")
    activated: dict[K, float] = {}
    frontier = dict(seeds)
    for hop in range(hops + 1):
        nxt: dict[K, float] = {}
        for node, level in frontier.items():
            partners = sorted(neighbours.get(node, ()), key=lambda p: (-p[1], str(p[0])))
            if hop > 0:
                partners = partners[:fan_out]
            for partner, strength in partners:
                if partner == node or (hop > 0 and partner in seeds):
                    continue  # seeds are activated directly by other seeds only, never by a path back
                score = level * strength * decay[hop]
                if score > activated.get(partner, 0.0):
                    activated[partner] = score
                    nxt[partner] = max(nxt.get(partner, 0.0), score)
        frontier = nxt
    return activated


def prune(edges: Mapping[tuple[K, K], float], *, max_edges: int = 32, min_strength: float = 0.05) -> set[tuple[K, K]]:
    """The edges to delete: those under ``min_strength`` and those outside both ends' top ``max_edges``."""
    keep_for: dict[K, list[tuple[float, tuple[K, K]]]] = {}
    doomed: set[tuple[K, K]] = set()
    for edge, strength in edges.items():
        if strength < min_strength:
            doomed.add(edge)
            continue
        for end in edge:
            keep_for.setdefault(end, []).append((strength, edge))
    ranked: dict[K, set[tuple[K, K]]] = {
        end: {e for _, e in sorted(found, key=lambda x: (-x[0], str(x[1])))[:max_edges]}
        for end, found in keep_for.items()
    }
    for edge in edges:
        if edge in doomed:
            continue
        a, b = edge
        if edge not in ranked.get(a, set()) or edge not in ranked.get(b, set()):
            doomed.add(edge)
    return doomed
