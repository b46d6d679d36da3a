"""Night stage 8: the cortex's RAPTOR tree, rebuilt over the scope's cortex blocks.

Seed: memory-architecture §5.4 (leaf blocks -> branch (1) -> trunk (2) -> canopy
(3); per node: summary text, summary embedding, centroid, member ids, member
count, parent link; ``retrieve_at_level``), §8.2 stage 8. A node's summary is
the configured LLM's, else extractive: the most central of its members' gists
(blocks) or summaries (nodes). Clustering: :mod:`mnemo.cognition.consolidation.clustering`.

The tree is a function of the cortex's blocks, so it is rebuilt whole for the
scope (one replace of the scope's node rows); a run that stops before its mark
simply rebuilds it again.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np
import psycopg

from mnemo import llm
from mnemo._runtime import Runtime
from mnemo.cognition.consolidation.clustering import cluster
from mnemo.cognition.consolidation.salience import unit_vector
from mnemo.cognition.consolidation.summaries import extractive_summary
from mnemo.models import Scope, TreeNode, uuid7
from mnemo.store import tiers

__all__ = ["LEVELS", "TreeStats", "build_tree", "read_tree"]

LEVELS = {1: "branch", 2: "trunk", 3: "canopy"}


@dataclass(slots=True)
class TreeStats:
    nodes: int = 0
    levels: int = 0
    versions: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class _Member:
    id: str
    text: str
    vector: np.ndarray
    block_ids: tuple[str, ...]


async def build_tree(
    rt: Runtime, conn: psycopg.AsyncConnection, scope: Scope, run_id: uuid.UUID, now: datetime
) -> TreeStats:
    """Cluster the scope's cortex blocks level by level until one node (or the canopy) remains."""
    stats = TreeStats()
    cortex = rt.cortex
    if cortex is None or not rt.settings.cortex:
        return stats
    dim = rt.embeddings.dim
    rows = await cortex.rows("blocks", dim, scope, f"slug = '{rt.slug}'", columns=["id", "gist", "content", "vector"])
    members = [
        _Member(r["id"], r["gist"] or r["content"], np.asarray(r["vector"], dtype=np.float32), (r["id"],))
        for r in sorted(rows, key=lambda r: r["id"])
    ]
    nodes: list[dict[str, Any]] = []
    level = 1
    while len(members) > 1 and level in LEVELS:
        made = await _level(rt, scope, members, level, now)
        if len(made) >= len(members):  # no grouping happened: the tree stops here
            break
        nodes.extend(node for node, _ in made)
        members = [m for _, m in made]
        stats.levels = level
        level += 1
    _link_parents(nodes)
    version = await cortex.replace_scope("nodes", dim, scope, nodes)
    stats.nodes = len(nodes)
    stats.versions = {f"nodes_{dim}": version}
    return stats


async def _level(
    rt: Runtime, scope: Scope, members: Sequence[_Member], level: int, now: datetime
) -> list[tuple[dict[str, Any], _Member]]:
    """One level's nodes over ``members``, each with the member it is for the next level."""
    cfg = rt.settings
    vectors = np.stack([m.vector for m in members])
    groups = cluster(
        vectors,
        method=cfg.cortex_clustering,
        min_size=cfg.cortex_cluster_size,
        seed=cfg.seed or 0,
        reduce=cfg.cortex_reduction,
    )
    summaries = [await _summary(rt, [members[i] for i in g], vectors[g]) for g in groups]
    embedded = await rt.embeddings.embed_documents(summaries) if summaries else np.zeros((0, vectors.shape[1]))
    made = []
    for group, summary, vector in zip(groups, summaries, embedded, strict=True):
        node_id = str(uuid7())
        blocks = tuple(b for i in group for b in members[i].block_ids)
        centroid = unit_vector(vectors[group].mean(axis=0))
        node = {
            "entity_id": scope.entity_id,
            "namespace": scope.namespace,
            "id": node_id,
            "level": level,
            "parent_id": None,
            "slug": rt.slug,
            "vector": np.asarray(vector, dtype=np.float32).tolist(),
            "centroid": np.asarray(centroid, dtype=np.float32).tolist(),
            "summary": summary,
            "member_ids": [members[i].id for i in group],
            "block_ids": list(blocks),
            "member_count": len(group),
            "created_at": now.astimezone(UTC),
        }
        made.append((node, _Member(node_id, summary, np.asarray(vector, dtype=np.float32), blocks)))
    return made


async def _summary(rt: Runtime, members: Sequence[_Member], vectors: np.ndarray) -> str:
    lines = [m.text for m in members]
    budget = rt.settings.night_compressed_tokens * 2
    if rt.llm is not None:
        text = await llm.summarise(rt.llm, lines, max_words=budget)
        if text:
            return text
    return extractive_summary(lines, vectors, budget, count_tokens=lambda t: rt.embeddings.count_tokens([t])[0])


def _link_parents(nodes: list[dict[str, Any]]) -> None:
    """Each node's ``parent_id``: the node of the next level that lists it as a member."""
    parent = {m: n["id"] for n in nodes for m in n["member_ids"] if n["level"] > 1}
    for node in nodes:
        node["parent_id"] = parent.get(node["id"])


async def read_tree(rt: Runtime, scope: Scope) -> list[TreeNode]:
    """The scope's tree as the last night left it, top levels first (empty before any clustering)."""
    if rt.cortex is None:
        return []
    async with rt.store.connection() as conn:
        if not await tiers.has_cortex(conn, scope.entity_id, scope.namespace):
            return []
    rows = await rt.cortex.rows(
        "nodes",
        rt.embeddings.dim,
        scope,
        columns=["id", "level", "parent_id", "summary", "member_ids", "block_ids"],
    )
    nodes = [
        TreeNode(r["id"], int(r["level"]), r["parent_id"], r["summary"], tuple(r["member_ids"]), len(r["block_ids"]))
        for r in rows
    ]
    return sorted(nodes, key=lambda n: (-n.level, -n.block_count, n.id))
