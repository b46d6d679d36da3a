"""Recall's long-term stages: the cortex search, and bifocal hits.

Seeds: memory-architecture §1.3 (the retrieval chain: the current moment probes
the hippocampus, then the cortex; cortical hits return with their live zones
verbatim), §5.4 (``retrieve_at_level``), §6 (bifocal: prose and vector travel
together; ``content_type`` excerpt), §7.4 (vector and structural retrieval).

A migrated block keeps its memory row in PostgreSQL (weights, accesses, links,
lexical postings), so once the cortex has given its similarity it is blended
like any memory. A block hit then quotes the lines of the block that match the
query (:func:`mnemo.cognition.scoring.bifocal.select_excerpt`) instead of coming back
whole: its content becomes those lines (the gist rides along in ``Hit.gist``).
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
import psycopg

from mnemo._runtime import Runtime
from mnemo.cognition.scoring.bifocal import select_excerpt
from mnemo.cognition.scoring.blend_components import RELEVANCE
from mnemo.cortex.lance_tables import ScopeVectors, quoted
from mnemo.models import ExcerptLine, Hit, Role, Scope
from mnemo.store import tiers
from mnemo.store import vectors as vector_rows

LINES_PER_BLOCK = 4  # lines searched per block candidate: a block's best lines reach the top

__all__ = [
    "at_level",
    "bifocal",
    "cortex_line_similarities",
    "cortex_neighbours",
    "cortex_similarities",
    "line_hit",
    "once",
    "render_excerpt",
]


BLOCK_COLUMNS = ("id", "memory_id")
LINE_COLUMNS = ("id", "memory_id", "block_id", "turn_number", "role", "speaker", "content", "created_at")


async def _cached(rt: Runtime, scope: Scope) -> tuple[ScopeVectors | None, ScopeVectors | None]:
    """The scope's cortex blocks and lines in memory (None: too many, search LanceDB)."""
    assert rt.cortex is not None
    dim, slug = rt.embeddings.dim, rt.slug
    return (
        await rt.cortex.scope_vectors("blocks", dim, scope, slug, BLOCK_COLUMNS),
        await rt.cortex.scope_vectors("lines", dim, scope, slug, LINE_COLUMNS),
    )


async def cortex_neighbours(
    rt: Runtime, scope: Scope, vector: np.ndarray, limit: int, *, blocks: bool = True
) -> tuple[list[tuple[uuid.UUID, float]], list[tuple[uuid.UUID, float]]]:
    """The cortex's blocks (by memory id) and lines (by turn id) nearest to ``vector`` (active model
    only), best first. A block's similarity is the best of its own vector's and its lines' (late
    interaction: a block about many things matches a question about one of them through that line).
    A scope's cortex is scored in memory (one matrix product per table, cached until the table
    changes); a very large one is searched in LanceDB. ``blocks=False``: lines only."""
    if rt.cortex is None:
        return [], []
    where = f"slug = '{_slug(rt)}'"
    lines = _nearest(
        await rt.cortex.scope_vectors("lines", rt.embeddings.dim, scope, rt.slug, LINE_COLUMNS),
        vector,
        limit * LINES_PER_BLOCK,
    )
    if lines is None:
        found = await rt.cortex.search("lines", rt.embeddings.dim, scope, vector, limit * LINES_PER_BLOCK, where=where)
        lines = _scored(found)
    if not blocks:
        return [], [(uuid.UUID(row["id"]), sim) for row, sim in lines]
    found_blocks = _nearest(
        await rt.cortex.scope_vectors("blocks", rt.embeddings.dim, scope, rt.slug, BLOCK_COLUMNS), vector, limit
    )
    if found_blocks is None:
        found_blocks = _scored(await rt.cortex.search("blocks", rt.embeddings.dim, scope, vector, limit, where=where))
    best: dict[uuid.UUID, float] = {}
    for row, sim in [*found_blocks, *lines]:
        memory_id = uuid.UUID(row["memory_id"])
        best[memory_id] = max(best.get(memory_id, -1.0), sim)
    ranked_blocks = sorted(best.items(), key=lambda x: (-x[1], str(x[0])))[:limit]
    return ranked_blocks, [(uuid.UUID(row["id"]), sim) for row, sim in lines]


def _nearest(cache: ScopeVectors | None, vector: np.ndarray, limit: int) -> list[tuple[dict[str, Any], float]] | None:
    if cache is None:
        return None
    return [(cache.rows[i], sim) for i, sim in cache.nearest(vector, limit)]


def _scored(rows: Sequence[dict[str, Any]]) -> list[tuple[dict[str, Any], float]]:
    return [(row, 1.0 - float(row["_distance"])) for row in rows]


async def cortex_line_similarities(
    rt: Runtime, scope: Scope, vector: np.ndarray, turn_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, float]:
    """Exact similarity of ``vector`` to cortex lines named by their turn id."""
    if rt.cortex is None or not turn_ids:
        return {}
    _, cache = await _cached(rt, scope)
    q = _unit(vector)
    if cache is not None:
        at = [(t, cache.position[str(t)]) for t in turn_ids if str(t) in cache.position]
        return {t: float(cache.matrix[i] @ q) for t, i in at}
    where = f"slug = '{_slug(rt)}' AND id IN ({quoted(turn_ids)})"
    rows = await rt.cortex.rows("lines", rt.embeddings.dim, scope, where, columns=["id", "vector"])
    return {uuid.UUID(r["id"]): float(_unit(np.asarray(r["vector"])) @ q) for r in rows}


async def at_level(rt: Runtime, scope: Scope, vector: np.ndarray, level: int, k: int) -> list[Hit]:
    """``retrieve_at_level`` (§5.4): the ``k`` tree nodes of ``level`` (1 branch, 2 trunk, 3 canopy)
    nearest to ``vector``, as hits whose content is the node's summary. A node is as near as the
    better of its summary's embedding and its members' centroid: an extractive summary quotes a
    few members, the centroid stands for them all."""
    if rt.cortex is None:
        return []
    rows = await rt.cortex.rows(
        "nodes",
        rt.embeddings.dim,
        scope,
        f"slug = '{_slug(rt)}' AND level = {int(level)}",
        columns=["id", "summary", "vector", "centroid", "block_ids", "member_count", "created_at", "level"],
    )
    q = _unit(vector)
    scored = [
        (max(float(_unit(np.asarray(r["vector"])) @ q), float(_unit(np.asarray(r["centroid"])) @ q)), r) for r in rows
    ]
    scored.sort(key=lambda x: (-x[0], x[1]["id"]))
    hits = []
    for rank, (similarity, row) in enumerate(scored[:k], start=1):
        relevance: dict[str, Any] = {RELEVANCE: similarity}  # a node is not blended: its relevance is its similarity
        hits.append(
            Hit(
                id=uuid.UUID(row["id"]),
                item_kind="node",
                content=row["summary"],
                score=similarity,
                similarity=similarity,
                vector_rank=rank,
                lexical_rank=None,
                lexical_score=None,
                created_at=row["created_at"],
                scope=scope,
                token_count=rt.embeddings.count_tokens([row["summary"]])[0],
                metadata={"block_ids": list(row["block_ids"]), "member_count": int(row["member_count"])},
                tier="cortex",
                level=int(row["level"]),
                gist=row["summary"],
                **relevance,
            )
        )
    return hits


async def cortex_similarities(
    rt: Runtime, scope: Scope, vector: np.ndarray, memory_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, float]:
    """Exact similarity of ``vector`` to cortex blocks named by memory id (lexical-only candidates):
    the best of the block's vector and its lines', as :func:`cortex_neighbours` scores them."""
    if rt.cortex is None or not memory_ids:
        return {}
    q = _unit(vector)
    best: dict[uuid.UUID, float] = {}
    for family, cache in zip(("blocks", "lines"), await _cached(rt, scope), strict=True):
        if cache is not None:
            picked = [(cache.rows[i]["memory_id"], cache.matrix[i]) for i in cache.where("memory_id", memory_ids)]
        else:
            where = f"slug = '{_slug(rt)}' AND memory_id IN ({quoted(memory_ids)})"
            rows = await rt.cortex.rows(family, rt.embeddings.dim, scope, where, columns=["memory_id", "vector"])
            picked = [(r["memory_id"], _unit(np.asarray(r["vector"]))) for r in rows]
        for memory_text, row_vector in picked:
            memory_id = uuid.UUID(memory_text)
            best[memory_id] = max(best.get(memory_id, -1.0), float(np.asarray(row_vector, dtype=np.float64) @ q))
    return best


async def bifocal(
    rt: Runtime,
    conn: psycopg.AsyncConnection,
    scope: Scope,
    vector: np.ndarray,
    hits: Sequence[Hit],
    *,
    expand: bool = False,
) -> tuple[Hit, ...]:
    """Block hits with their excerpt (the matching verbatim lines) and gist; with ``expand`` the
    content stays the whole block, the excerpt is still given."""
    blocks = {h.id: _block_id(h) for h in hits if h.item_kind == "memory" and _block_id(h) is not None}
    if not blocks:
        return tuple(hits)
    lines = await _lines(rt, conn, scope, hits, blocks)
    q = _unit(vector)
    out = []
    for hit in hits:
        block_lines = lines.get(blocks.get(hit.id)) if hit.id in blocks else None
        if not block_lines:
            out.append(hit)
            continue
        sims = [float(_unit(line.vector) @ q) for line in block_lines]
        chosen = select_excerpt(sims, rt.settings.excerpt_lines, rt.settings.excerpt_margin)
        excerpt = tuple(_excerpt_line(block_lines[i], sims[i]) for i in chosen)
        gist = hit.compressed
        if expand:
            out.append(dataclasses.replace(hit, excerpt=excerpt, gist=gist))
            continue
        content = render_excerpt(None, excerpt)  # the gist rides in Hit.gist: a context pays for the lines only
        tokens = rt.embeddings.count_tokens([content])[0]
        out.append(dataclasses.replace(hit, excerpt=excerpt, gist=gist, content=content, token_count=tokens))
    return tuple(out)


def render_excerpt(gist: str | None, excerpt: Sequence[ExcerptLine]) -> str:
    """A bifocal hit's text: each quoted line with its time and speaker, after the block's gist."""
    quoted_lines = [
        f"[{line.created_at.astimezone(UTC):%Y-%m-%d %H:%M}] {line.speaker or line.role}: {line.content}"
        for line in excerpt
    ]
    return "\n".join([f"(episode: {gist})", *quoted_lines] if gist else quoted_lines)


async def _lines(
    rt: Runtime,
    conn: psycopg.AsyncConnection,
    scope: Scope,
    hits: Sequence[Hit],
    blocks: Mapping[uuid.UUID, uuid.UUID | None],
) -> dict[uuid.UUID | None, list[_Line]]:
    """The verbatim lines of the hit blocks: from PostgreSQL for hippocampus blocks, from the cortex for the others."""
    hot: list[uuid.UUID] = [b for h in hits if (b := blocks.get(h.id)) is not None and h.tier == "hippocampus"]
    cold: list[uuid.UUID] = [b for h in hits if (b := blocks.get(h.id)) is not None and h.tier == "cortex"]
    found: dict[uuid.UUID | None, list[_Line]] = {}
    hot_lines = await tiers.block_lines(conn, scope.entity_id, scope.namespace, hot)
    vectors = await vector_rows.vectors_of(
        conn, rt.table, scope.entity_id, rt.slug, [r.turn_id for rows in hot_lines.values() for r in rows]
    )
    for block_id, rows in hot_lines.items():
        found[block_id] = [
            _Line(r.turn_id, r.turn_number, r.role, r.speaker, r.content, r.created_at, vectors[r.turn_id])
            for r in rows
            if r.turn_id in vectors
        ]
    if cold and rt.cortex is not None:
        _, cache = await _cached(rt, scope)
        if cache is not None:
            for i, row in sorted(
                ((i, cache.rows[i]) for i in cache.where("block_id", cold)),
                key=lambda x: (x[1]["block_id"], x[1]["turn_number"]),
            ):
                found.setdefault(uuid.UUID(row["block_id"]), []).append(_Line.of_cortex(row, cache.matrix[i]))
            return found
        cold_rows = await rt.cortex.rows(
            "lines",
            rt.embeddings.dim,
            scope,
            f"slug = '{_slug(rt)}' AND block_id IN ({quoted(cold)})",
            columns=["id", "block_id", "turn_number", "role", "speaker", "content", "created_at", "vector"],
        )
        for row in sorted(cold_rows, key=lambda r: (r["block_id"], r["turn_number"])):
            line = _Line.of_cortex(row, np.asarray(row["vector"], dtype=np.float32))
            found.setdefault(uuid.UUID(row["block_id"]), []).append(line)
    return found


@dataclasses.dataclass(frozen=True, slots=True)
class _Line:
    """A block's verbatim line with its vector: a hippocampus block's from PostgreSQL, a cortex block's from there."""

    turn_id: uuid.UUID
    turn_number: int
    role: Role
    speaker: str | None
    content: str
    created_at: datetime
    vector: np.ndarray

    @classmethod
    def of_cortex(cls, row: Mapping[str, Any], vector: np.ndarray) -> _Line:
        """A line row of the cortex (its ``id`` is the turn's)."""
        return cls(
            uuid.UUID(row["id"]),
            int(row["turn_number"]),
            row["role"],
            row.get("speaker"),
            row["content"],
            row["created_at"],
            vector,
        )


def _excerpt_line(line: _Line, similarity: float) -> ExcerptLine:
    return ExcerptLine(
        turn_id=line.turn_id,
        turn_number=int(line.turn_number),
        role=line.role,
        speaker=line.speaker,
        content=line.content,
        created_at=line.created_at,
        similarity=round(similarity, 6),
    )


def _block_id(hit: Hit) -> uuid.UUID | None:
    text = (hit.metadata or {}).get("block_id")
    try:
        return uuid.UUID(str(text)) if text else None
    except ValueError:
        return None


def _unit(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, dtype=np.float64)
    n = float(np.linalg.norm(v))
    return v / n if n > 0 else v


def _slug(rt: Runtime) -> str:
    return rt.slug.replace("'", "''")


def line_hit(hit: Hit, row: tiers.LineHit) -> Hit:
    """A line item as a bifocal hit: the verbatim line as its own excerpt, its block's gist and tier."""
    line = ExcerptLine(
        turn_id=hit.id,
        turn_number=int(row.turn_number),
        role=row.role,
        speaker=row.speaker,
        content=row.content,
        created_at=row.created_at,
        similarity=round(hit.similarity or 0.0, 6),
    )
    metadata = {**(row.metadata or {}), "block_id": str(row.block_id)}
    return dataclasses.replace(hit, excerpt=(line,), gist=row.gist, metadata=metadata)


def once(
    hits: Sequence[Hit],
    count_tokens: Callable[[str], int],
    stated: Mapping[uuid.UUID, Collection[uuid.UUID]] | None = None,
) -> list[Hit]:
    """The hits, best first, with no line shown twice: a turn or line hit shows its line; a block
    hit quoting lines keeps those no better hit showed, and is dropped when none is left (an
    expanded block, shown whole, always stays). ``stated``: per fact hit, the turns that state it:
    a fact and the turn it was read from say one thing, so whichever ranks first stands for both."""
    shown: set[uuid.UUID] = set()
    out = []
    for hit in hits:
        if stated and hit.id in stated:
            if shown & set(stated[hit.id]):
                continue
            shown.update(stated[hit.id])
        elif hit.item_kind in ("turn", "line"):
            if hit.id in shown:
                continue
            shown.add(hit.id)
        elif hit.excerpt and hit.content == render_excerpt(None, hit.excerpt):
            fresh = tuple(line for line in hit.excerpt if line.turn_id not in shown)
            if not fresh:
                continue
            if len(fresh) < len(hit.excerpt):
                content = render_excerpt(None, fresh)
                hit = dataclasses.replace(hit, excerpt=fresh, content=content, token_count=count_tokens(content))
            shown.update(line.turn_id for line in fresh)
        elif hit.excerpt:
            shown.update(line.turn_id for line in hit.excerpt)
        out.append(hit)
    return out
