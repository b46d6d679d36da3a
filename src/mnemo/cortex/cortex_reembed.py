"""Re-embedding the cortex after an embedder change (archive-adr §8 "Dimension Lock").

Cortex rows are sealed with their model's slug and recall reads the active slug
only, so after a model swap the long-term tier is invisible until its rows have
active-slug twins. For one scope, :func:`reembed_scope` embeds the verbatim
lines that lack one (as their turns were embedded), rebuilds their blocks'
vectors the way the night does (``block_vector``: the centroid of the lines'
new vectors, or the prose embedded), and upserts both, keyed by id, into the
tables of the active width: a run stopped anywhere and started again
converges. Other vector spaces of a block (``extra_vectors``) are copied as
they are. The tree is not re-embedded: the next night's ``cluster`` stage
rebuilds it from the re-embedded blocks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mnemo._runtime import Runtime
from mnemo.cognition.consolidation.salience import block_centroid
from mnemo.cortex.lance_tables import quoted
from mnemo.models import Scope

__all__ = ["reembed_scope"]


async def reembed_scope(rt: Runtime, scope: Scope) -> int:
    """Give ``scope``'s cortex lines and blocks active-slug vectors where they lack them; returns
    how many rows were written."""
    cortex = rt.cortex
    if cortex is None:
        return 0
    lines = await _stale(rt, scope, "lines")
    blocks = await _stale(rt, scope, "blocks")
    if not lines and not blocks:
        return 0
    fresh_lines = await _reembed_lines(rt, lines)
    vectors = await _line_vectors(rt, scope, [b["id"] for b in blocks])
    fresh_blocks = await _reembed_blocks(rt, blocks, vectors)
    dim = rt.embeddings.dim
    await cortex.upsert("lines", dim, fresh_lines)
    await cortex.upsert("blocks", dim, fresh_blocks)
    return len(fresh_lines) + len(fresh_blocks)


async def _stale(rt: Runtime, scope: Scope, family: str) -> list[dict[str, Any]]:
    """The scope's rows of ``family``, in any width, whose id has no active-slug row yet."""
    assert rt.cortex is not None
    slug = rt.slug.replace("'", "''")
    have = {r["id"] for r in await rt.cortex.rows(family, rt.embeddings.dim, scope, f"slug = '{slug}'", ["id"])}
    stale: dict[str, dict[str, Any]] = {}
    for name, _ in await rt.cortex.tables(family):
        for row in await rt.cortex.rows(family, int(name.rpartition("_")[2]), scope, f"slug <> '{slug}'"):
            if row["id"] not in have:
                stale.setdefault(row["id"], row)
    return [stale[i] for i in sorted(stale)]


async def _reembed_lines(rt: Runtime, rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    if not rows:
        return []
    context = rt.settings.turn_context  # as their turns were embedded
    texts = [rt.embeddings.turn_text(r["content"], r.get("speaker") if context else None) for r in rows]
    vectors = await rt.embeddings.embed_documents(texts)
    return [_sealed(rt, r, v) for r, v in zip(rows, vectors, strict=True)]


async def _line_vectors(rt: Runtime, scope: Scope, block_ids: Sequence[str]) -> dict[str, list[np.ndarray]]:
    """Each block's lines' active-slug vectors, in turn order (the lines were re-embedded first)."""
    if not block_ids:
        return {}
    assert rt.cortex is not None
    where = f"slug = '{rt.slug.replace(chr(39), chr(39) * 2)}' AND block_id IN ({quoted(block_ids)})"
    rows = await rt.cortex.rows("lines", rt.embeddings.dim, scope, where, ["block_id", "turn_number", "vector"])
    found: dict[str, list[np.ndarray]] = {}
    for row in sorted(rows, key=lambda r: (r["block_id"], r["turn_number"])):
        found.setdefault(row["block_id"], []).append(np.asarray(row["vector"], dtype=np.float32))
    return found


async def _reembed_blocks(
    rt: Runtime, rows: Sequence[dict[str, Any]], line_vectors: Mapping[str, list[np.ndarray]]
) -> list[dict[str, Any]]:
    """Blocks with their new vector: their lines' centroid (``block_vector="centroid"``, when they
    have lines), else their content embedded as an episodic memory."""
    centroid = rt.settings.block_vector == "centroid"
    embed = [r for r in rows if not (centroid and line_vectors.get(r["id"]))]
    texts = [rt.embeddings.document_text(r["content"], "episodic") for r in embed]
    embedded: Sequence[np.ndarray] = list(await rt.embeddings.embed_documents(texts)) if embed else []
    by_id = {r["id"]: v for r, v in zip(embed, embedded, strict=True)}
    out = []
    for row in rows:
        vector = by_id[row["id"]] if row["id"] in by_id else block_centroid(np.stack(line_vectors[row["id"]]))
        out.append(_sealed(rt, row, vector))
    return out


def _sealed(rt: Runtime, row: Mapping[str, Any], vector: np.ndarray) -> dict[str, Any]:
    """``row`` with the active model's slug and ``vector`` (float32)."""
    fresh = {k: v for k, v in row.items() if not k.startswith("_")}
    fresh["slug"] = rt.slug
    fresh["vector"] = np.asarray(vector, dtype=np.float32).tolist()
    return fresh
