"""Night stages 1b-6: flux arcs, holographic blocks, salience, compression, embedding, storage.

Seeds: memory-architecture §3.2 (flux arcs over per-turn surprisal), §3.3-3.5
(margins, live zones verbatim, dead zones summarised, salience P/C/ID at three
levels, coherence gain, merge weight), §4.2-4.4 (a session that ends inside an
unresolved arc sets the continuity flag; a session of the same cycle that opens
on the same question continues it, and both join a metablock), §7 (links:
``continues``, ``thematic`` between similar blocks of one night, ``cites`` from a
block to an earlier one whose rare subject it names), §8.2
stages 1-6, §9 (dual embedding: with ``block_embedder`` set, every block is also
embedded in a second vector space, sealed with that model's slug).

Each session is one transaction: its blocks, their memory rows (kind
``episodic``, status ``candidate``, searched by recall like every memory), the
turns' flux states and the session's progress mark commit together, so a crash
leaves a session either wholly done or untouched. A session that grows later
is continued from its mark.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

import numpy as np
import psycopg

from mnemo import llm
from mnemo._runtime import Runtime
from mnemo.cognition.consolidation.citations import cite, subjects
from mnemo.cognition.consolidation.extraction import TurnText, extract, find_times
from mnemo.cognition.consolidation.flux import FluxArc, FluxParams, detect_arcs, flux_states, open_at_end
from mnemo.cognition.consolidation.salience import (
    Zone,
    block_centroid,
    coherence_gain,
    detect_zones,
    new_information,
    score_block,
    ties_weight,
    unit_vector,
)
from mnemo.cognition.consolidation.segments import Segment, segment
from mnemo.cognition.consolidation.summaries import extractive_summary, gist_lines
from mnemo.config import Settings
from mnemo.embed import Embeddings, load_embedder
from mnemo.models import NightReport, Scope, uuid7
from mnemo.night.stage_protocol import NightPlan, NightRun, count_of
from mnemo.store import blocks as block_rows
from mnemo.store import links as link_rows
from mnemo.store import night_runs as run_rows
from mnemo.store import tiers
from mnemo.store import turn_surprisal as surprisal_rows
from mnemo.store import vectors as vector_rows
from mnemo.store.turn_surprisal import TurnRow
from mnemo.write.remember import memory_row, store_memory

__all__ = ["STAGE", "BlockStats", "BlocksStage", "build_blocks"]

_TIERS = ("normal", "meso", "elder")


@dataclass(slots=True)
class BlockStats:
    sessions: int = 0
    turns: int = 0
    blocks: int = 0
    arcs: int = 0
    open_arcs: int = 0
    continuations: int = 0
    live_turns: int = 0


async def build_blocks(
    rt: Runtime,
    scope: Scope,
    run_id: uuid.UUID,
    as_of: datetime,
    *,
    progress: Callable[[int], None] | None = None,
) -> BlockStats:
    """Cut every session with unprocessed scored turns into blocks; one transaction per session."""
    stats = BlockStats()
    async with rt.store.connection() as conn:
        sessions = await run_rows.pending_sessions(conn, scope.entity_id, scope.namespace, as_of, "blocks_through")
    for session_id, mark in sessions:
        n = await _session(rt, scope, run_id, as_of, session_id, mark, stats)
        if progress is not None:
            progress(n)
    return stats


def _line(turn: TurnRow) -> str:
    who = turn.speaker or turn.role
    return f"{who}: {turn.content}"


async def _turn_vectors(
    rt: Runtime, conn: psycopg.AsyncConnection, scope: Scope, turns: Sequence[TurnRow]
) -> np.ndarray:
    """The turns' stored vectors; turns not embedded yet (asynchronous ingestion) are embedded here."""
    stored = await vector_rows.vectors_of(conn, rt.table, scope.entity_id, rt.slug, [t.id for t in turns])
    missing = [t for t in turns if t.id not in stored]
    if missing:
        fresh = await rt.embeddings.embed_documents([rt.embeddings.turn_text(t.content, t.speaker) for t in missing])
        stored |= {t.id: v for t, v in zip(missing, fresh, strict=True)}
    return np.stack([stored[t.id] for t in turns]).astype(np.float32)


def _count(rt: Runtime) -> Callable[[str], int]:
    return lambda text: rt.embeddings.count_tokens([text])[0]


async def _summary(rt: Runtime, lines: Sequence[str], vectors: np.ndarray, max_tokens: int) -> str:
    """A dead zone's summary: the configured LLM's, else the most central lines (extractive)."""
    if rt.llm is not None:
        text = await llm.summarise(rt.llm, lines, max_words=max(8, max_tokens))
        if text:
            return text
    return extractive_summary(lines, vectors, max_tokens, count_tokens=_count(rt))


@dataclass(frozen=True, slots=True)
class _Session:
    """One session's new turns, cut into flux arcs and segments (one block each)."""

    id: str
    turns: Sequence[TurnRow]
    vectors: np.ndarray  # the turns' vectors, in turn order
    surprisal: np.ndarray  # bits per token, per turn
    arcs: list[FluxArc]
    states: list[str]  # each turn's flux state
    ends_open: bool  # the session ends inside an unresolved arc (§4.2)
    segments: list[Segment]
    novel: list[bool]  # each turn names content words no earlier turn of these used (new information)

    def arc_of(self, seg: Segment) -> FluxArc | None:
        return self.arcs[seg.arc] if seg.arc is not None else None


@dataclass(frozen=True, slots=True)
class _Embedded:
    """The blocks' vectors: in the archive's space and, with ``block_embedder`` set, the second one (§9)."""

    vectors: np.ndarray
    second: Embeddings | None
    second_vectors: np.ndarray | None


async def _session(
    rt: Runtime,
    scope: Scope,
    run_id: uuid.UUID,
    as_of: datetime,
    session_id: str,
    mark: int,
    stats: BlockStats,
) -> int:
    """Stages 1b-6 for one session's turns after ``mark``: cut, render, embed, then store in one transaction."""
    async with rt.store.connection() as conn:
        turns = await surprisal_rows.session_turns(conn, scope.entity_id, scope.namespace, session_id, mark, as_of)
        if not turns:
            return 0
        vectors = await _turn_vectors(rt, conn, scope, turns)
        tails = await _open_tails(rt, conn, scope, run_id, session_id, turns[0].created_at)
    session = _cut(rt.settings, session_id, turns, vectors)
    rendered = [await _render(rt, session, seg) for seg in session.segments]
    embedded = await _embed_blocks(rt, session, rendered)
    opening = unit_vector(vectors[: min(3, len(turns))].mean(axis=0))
    continued, best = _continued(rt.settings.night_continuity_similarity, opening, tails)
    async with rt.store.transaction() as conn:
        block_ids = await _store_blocks(rt, conn, scope, run_id, session, rendered, embedded)
        await _thematic(rt, conn, scope, run_id, block_ids, embedded.vectors)
        await _cites(conn, scope, session, rendered, block_ids)
        if continued is not None and block_ids:
            await _continue(conn, rt, scope, run_id, continued, block_ids[0], best)
            stats.continuations += 1
        await _mark_session(conn, scope, session)
    stats.sessions += 1
    stats.turns += len(turns)
    stats.blocks += len(session.segments)
    stats.arcs += len(session.arcs)
    stats.open_arcs += int(session.ends_open)
    stats.live_turns += sum(r["live_turns"] for r in rendered)
    return len(turns)


async def _open_tails(
    rt: Runtime,
    conn: psycopg.AsyncConnection,
    scope: Scope,
    run_id: uuid.UUID,
    session_id: str,
    first_time: datetime,
) -> dict[uuid.UUID, np.ndarray]:
    """The open arcs this session may continue (§4.3): blocks of this run's other sessions that ended
    unresolved within ``night_continuity_hours``, each as the unit mean of its open arc's last turns."""
    hours = timedelta(hours=rt.settings.night_continuity_hours)
    candidates = [
        b
        for b in await block_rows.open_continuations(conn, scope.entity_id, scope.namespace, run_id, first_time)
        if b.session_id != session_id and b.arc_end_time >= first_time - hours
    ]
    tails: dict[uuid.UUID, np.ndarray] = {}
    for block in candidates:
        tail_ids = [uuid.UUID(i) for i in block.open_arc_turns] or list(block.turn_ids)[-5:]
        tail_vectors = await vector_rows.vectors_of(conn, rt.table, scope.entity_id, rt.slug, tail_ids)
        if tail_vectors:
            tails[block.id] = unit_vector(np.stack(list(tail_vectors.values())).mean(axis=0))
    return tails


def _cut(cfg: Settings, session_id: str, turns: Sequence[TurnRow], vectors: np.ndarray) -> _Session:
    """Stages 1b-2: flux arcs over the turns' surprisal, each turn's flux state, and the segments."""
    s = np.asarray([cast(float, t.surprisal) for t in turns], dtype=np.float64)
    params = FluxParams(
        baseline_window=cfg.night_baseline_window,
        spike_threshold=cfg.night_spike_threshold,
        stable_threshold=cfg.night_stable_threshold,
        stabilization_count=cfg.night_stabilization_count,
        min_sigma=cfg.night_min_sigma,
    )
    arcs = detect_arcs(s.tolist(), params)
    return _Session(
        id=session_id,
        turns=turns,
        vectors=vectors,
        surprisal=s,
        arcs=arcs,
        states=flux_states(len(turns), arcs),
        ends_open=open_at_end(arcs, len(turns)),
        segments=segment(len(turns), [(a.start, a.end) for a in arcs], max_span=cfg.night_max_span),
        novel=new_information([t.content for t in turns]),
    )


@dataclass(frozen=True, slots=True)
class _Levels:
    """A block's surprisal levels (bits per token): its arc's, or the segment's own when it has no arc."""

    baseline: float
    sigma: float
    final: float
    peak: float


def _levels(arc: FluxArc | None, ss: np.ndarray, min_sigma: float) -> _Levels:
    if arc is not None:
        return _Levels(arc.baseline, arc.sigma, arc.final, arc.peak)
    return _Levels(
        baseline=float(ss.mean()),
        sigma=max(float(ss.std()), min_sigma),
        final=float(ss[-min(2, len(ss)) :].mean()),
        peak=float(ss.max()),
    )


@dataclass(frozen=True, slots=True)
class _ZoneTexts:
    """A block's zones as text: live zones verbatim, dead zones summarised (§3.5)."""

    live_zones: list[dict[str, Any]]
    dead_zones: list[dict[str, Any]]
    rendered: list[str]  # the block's content, zone by zone
    live_turns: int
    verbatim: list[int]  # indices (in the block) of the turns its content quotes whole (live zones, short
    # dead zones, turns an extractive summary kept): its lines


async def _zone_texts(
    rt: Runtime, zones: Sequence[Zone], part: Sequence[TurnRow], lines: Sequence[str], vv: np.ndarray
) -> _ZoneTexts:
    cfg = rt.settings
    count = _count(rt)
    live_zones: list[dict[str, Any]] = []
    dead_zones: list[dict[str, Any]] = []
    rendered: list[str] = []
    live_turns = 0
    verbatim: list[int] = []
    for zone in zones:
        zone_lines = lines[zone.start : zone.end + 1]
        first, last = part[zone.start].turn_number, part[zone.end].turn_number
        text = "\n".join(zone_lines)
        if zone.live:
            live_turns += zone.end - zone.start + 1
            live_zones.append({"start": first, "end": last, "content": text, "reasons": list(zone.reasons)})
            rendered.append(text)
            verbatim.extend(range(zone.start, zone.end + 1))
            continue
        tokens = count(text)
        if tokens <= cfg.night_verbatim_tokens:
            summary = text
        else:
            budget = max(cfg.night_verbatim_tokens, int(tokens * cfg.night_summary_ratio))
            summary = await _summary(rt, zone_lines, vv[zone.start : zone.end + 1], budget)
        dead_zones.append({"start": first, "end": last, "summary": summary, "reasons": list(zone.reasons)})
        rendered.append(summary if summary == text else f"[summary] {summary}")
        # an extractive summary quotes some of the zone's turns whole: those are lines too
        verbatim.extend(i for i in range(zone.start, zone.end + 1) if lines[i] in summary)
    return _ZoneTexts(live_zones, dead_zones, rendered, live_turns, verbatim)


def _metrics(levels: _Levels, arc: FluxArc | None, seg: Segment, turns: Sequence[TurnRow]) -> dict[str, Any]:
    """A block's flux metrics: perplexities and surprisals, the arc's quality and whether it resolved."""
    metrics: dict[str, Any] = {
        "baseline_perplexity": 2.0**levels.baseline,
        "peak_perplexity": 2.0**levels.peak,
        "final_perplexity": 2.0**levels.final,
        "baseline_surprisal": levels.baseline,
        "peak_surprisal": levels.peak,
        "final_surprisal": levels.final,
        "sigma": levels.sigma,
        "flux_reversal_quality": arc.quality if arc is not None else 0.0,
        "arc_duration_turns": arc.duration if arc is not None else seg.end - seg.start + 1,
        "resolved": arc.resolved if arc is not None else True,
    }
    if arc is not None and not arc.resolved:  # the open question, matched against the next session's opening
        metrics["open_arc_turns"] = [str(t.id) for t in turns[arc.start : arc.end + 1][-5:]]
    return metrics


async def _render(rt: Runtime, session: _Session, seg: Segment) -> dict[str, Any]:
    """Stages 3-4 for one block: its prose, rendered content, compressed line, flux metrics and salience."""
    arc = session.arc_of(seg)
    part = session.turns[seg.start : seg.end + 1]
    ss = session.surprisal[seg.start : seg.end + 1]
    vv = session.vectors[seg.start : seg.end + 1]
    lines = [_line(t) for t in part]
    levels = _levels(arc, ss, rt.settings.night_min_sigma)
    novel = session.novel[seg.start : seg.end + 1]
    told = _informative(part, novel)
    zones = detect_zones(lines, ss.tolist(), vv, levels.baseline, levels.sigma, informative=told)
    gist = gist_lines([t.role for t in part], told)
    salience = score_block(ss.tolist(), vv, levels.baseline, levels.sigma)
    gain = coherence_gain(levels.baseline, levels.final)
    texts = await _zone_texts(rt, zones, part, lines, vv)
    prose: dict[str, Any] = {"live_zones": texts.live_zones, "dead_zone_summaries": texts.dead_zones}
    if arc is not None:
        prose["anterior_margin"] = "\n".join(lines[: max(0, arc.start - seg.start)])
        prose["posterior_margin"] = "\n".join(lines[arc.end - seg.start + 1 :])
    when = part[0].created_at
    return {
        "prose": prose,
        "content": f"[{when:%Y-%m-%d %H:%M}] " + "\n".join(texts.rendered),
        "compressed": extractive_summary(
            [lines[i] for i in gist], vv[gist], rt.settings.night_compressed_tokens, count_tokens=_count(rt)
        ),
        "flux_metrics": _metrics(levels, arc, seg, session.turns),
        "salience_scores": salience.as_scores(),
        "coherence_gain": gain,
        "ties_weight": ties_weight(salience, gain),
        "live_turns": texts.live_turns,
        "verbatim": texts.verbatim,
    }


def _informative(turns: Sequence[TurnRow], novel: Sequence[bool]) -> list[bool]:
    """Turns that state new information (a first-person fact, preference, relation or dated event,
    or content words the session had not used yet, ``novel``): the seed's dead zones are
    "repetition or clarification without new information" (§3.5)."""
    found = extract([TurnText(speaker=t.speaker, role=t.role, text=t.content, at=t.created_at) for t in turns])
    sources = {f.source for f in found.facts}
    return [i in sources or bool(find_times(t.content)) or novel[i] for i, t in enumerate(turns)]


async def _embed_blocks(rt: Runtime, session: _Session, rendered: Sequence[dict[str, Any]]) -> _Embedded:
    """Stage 5: each block's vector in the active space (``block_vector``: the centroid of its turns'
    vectors, or its prose embedded as an episodic memory) and, with ``block_embedder``, its prose
    embedded in the second space."""
    if rt.settings.block_vector == "centroid":
        vectors = np.stack([block_centroid(session.vectors[seg.start : seg.end + 1]) for seg in session.segments])
    else:
        vectors = await rt.embeddings.embed_documents(
            [rt.embeddings.document_text(r["content"], "episodic") for r in rendered]
        )
    second = await _second_embeddings(rt)
    second_vectors = (
        await second.embed_documents([second.document_text(r["content"], "episodic") for r in rendered])
        if second is not None
        else None
    )
    return _Embedded(vectors, second, second_vectors)


def _continued(
    threshold: float, opening: np.ndarray, tails: dict[uuid.UUID, np.ndarray]
) -> tuple[uuid.UUID | None, float]:
    """The open block whose tail this session's opening resembles most, above ``threshold``, and how much."""
    continued = None
    best = 0.0
    for block_id, tail in tails.items():
        similarity = float(np.dot(opening, tail))
        if similarity > threshold and similarity > best:
            continued, best = block_id, similarity
    return continued, best


async def _store_blocks(
    rt: Runtime,
    conn: psycopg.AsyncConnection,
    scope: Scope,
    run_id: uuid.UUID,
    session: _Session,
    rendered: Sequence[dict[str, Any]],
    embedded: _Embedded,
) -> list[uuid.UUID]:
    """Stage 6: each block with its memory row (and its vector in the second space); returns the block ids."""
    block_ids: list[uuid.UUID] = []
    memory_ids: list[uuid.UUID] = []
    for index, (seg, info, vector) in enumerate(zip(session.segments, rendered, embedded.vectors, strict=True)):
        block_id, memory_id = uuid7(), uuid7()
        block_ids.append(block_id)
        memory_ids.append(memory_id)
        part = session.turns[seg.start : seg.end + 1]
        row = memory_row(
            rt,
            scope,
            memory_id,
            info["content"],
            "episodic",
            compressed=info["compressed"],
            status="candidate",
            source_tag="night:block",
            provenance=[str(t.id) for t in part],
            event_time=part[-1].created_at,  # as old as its newest turn: never newer than what it tells
            metadata={
                "block_id": str(block_id),
                "session_id": session.id,
                "turns": [part[0].turn_number, part[-1].turn_number],
            },
        )
        await store_memory(conn, rt, scope, row, vector)
        is_last = index == len(session.segments) - 1
        await block_rows.insert_block(conn, _block_row(scope, run_id, session, seg, info, block_id, memory_id, is_last))
        await tiers.insert_lines(conn, _line_rows(scope, session, seg, info["verbatim"], block_id))
    second, second_vectors = embedded.second, embedded.second_vectors
    if second is not None and second_vectors is not None:
        table = await vector_rows.ensure_space(conn, rt.settings.block_space, second.dim)
        await vector_rows.upsert_vectors(
            conn,
            table,
            [
                (scope.entity_id, scope.namespace, m, "memory", str(second.slug), v)
                for m, v in zip(memory_ids, second_vectors, strict=True)
            ],
        )
    return block_ids


def _line_rows(
    scope: Scope, session: _Session, seg: Segment, verbatim: Sequence[int], block_id: uuid.UUID
) -> list[dict[str, Any]]:
    """The block's verbatim lines: what a block hit quotes, and what outlives the raw turns (§6)."""
    rows = []
    for i in verbatim:
        turn = session.turns[seg.start + i]
        rows.append({
            "entity_id": scope.entity_id,
            "namespace": scope.namespace,
            "block_id": block_id,
            "turn_id": turn.id,
            "session_id": session.id,
            "turn_number": turn.turn_number,
            "role": turn.role,
            "speaker": turn.speaker,
            "content": turn.content,
            "created_at": turn.created_at,
            "metadata": turn.metadata or {},
        })  # fmt: skip
    return rows


def _block_row(
    scope: Scope,
    run_id: uuid.UUID,
    session: _Session,
    seg: Segment,
    info: dict[str, Any],
    block_id: uuid.UUID,
    memory_id: uuid.UUID,
    is_last: bool,
) -> dict[str, Any]:
    """A block's ``mnemo.blocks`` row; the session's last block carries the continuity flag (§4.2)."""
    part = session.turns[seg.start : seg.end + 1]
    return {
        "entity_id": scope.entity_id,
        "id": block_id,
        "namespace": scope.namespace,
        "kind": seg.kind,
        "session_id": session.id,
        "first_turn": part[0].turn_number,
        "last_turn": part[-1].turn_number,
        "turn_ids": [t.id for t in part],
        "prose": info["prose"],
        "content": info["content"],
        "flux_metrics": info["flux_metrics"],
        "salience_scores": info["salience_scores"],
        "coherence_gain": info["coherence_gain"],
        "ties_weight": info["ties_weight"],
        "user_tier": max((t.user_tier or "normal" for t in part), key=_TIERS.index, default="normal"),
        "arc_start_time": part[0].created_at,
        "arc_end_time": part[-1].created_at,
        "session_continuity": bool(is_last and session.ends_open),
        "memory_id": memory_id,
        "run_id": run_id,
    }


async def _mark_session(conn: psycopg.AsyncConnection, scope: Scope, session: _Session) -> None:
    """The turns' flux states and the session's progress mark, committed with its blocks."""
    await surprisal_rows.set_flux_states(
        conn, scope.entity_id, [(t.id, state) for t, state in zip(session.turns, session.states, strict=True)]
    )
    await run_rows.set_session_progress(
        conn,
        scope.entity_id,
        scope.namespace,
        session.id,
        blocks_through=session.turns[-1].turn_number,
        open_arc=session.ends_open,
    )


async def _continue(
    conn: psycopg.AsyncConnection,
    rt: Runtime,
    scope: Scope,
    run_id: uuid.UUID,
    earlier: uuid.UUID,
    later: uuid.UUID,
    similarity: float,
) -> None:
    """Link ``later`` as the continuation of ``earlier`` and put both in one metablock (§4.3)."""
    parent = await block_rows.metablock_of(conn, scope.entity_id, earlier)
    if parent is None:
        parent = uuid7()
        await block_rows.create_metablock(conn, scope.entity_id, scope.namespace, parent, [earlier, later], run_id)
    else:
        await block_rows.extend_metablock(conn, scope.entity_id, parent, later)
    await block_rows.link_continuation(conn, scope.entity_id, earlier, later, parent)
    await link_rows.insert_links(conn, scope.entity_id, scope.namespace, [(later, earlier, "continues", similarity)])


async def _second_embeddings(rt: Runtime) -> Embeddings | None:
    """The block embedder of the second vector space, loaded once per archive (offline only)."""
    spec = rt.settings.block_embedder
    if spec is None:
        return None
    key = f"{spec}@{rt.settings.block_embedder_truncate_dim}"
    if key not in rt.extra_embeddings:
        rt.extra_embeddings[key] = await asyncio.to_thread(
            load_embedder,
            spec,
            **rt.settings.embedder_options(),
            truncate_dim=rt.settings.block_embedder_truncate_dim,
        )
    return rt.extra_embeddings[key]


async def _thematic(
    rt: Runtime,
    conn: psycopg.AsyncConnection,
    scope: Scope,
    run_id: uuid.UUID,
    block_ids: Sequence[uuid.UUID],
    vectors: np.ndarray,
) -> None:
    """``thematic`` links from each new block to the earlier blocks of this run it resembles (§7.2)."""
    earlier = await block_rows.run_blocks(conn, scope.entity_id, scope.namespace, run_id, exclude=block_ids)
    if not earlier:
        return
    stored = await vector_rows.vectors_of(conn, rt.table, scope.entity_id, rt.slug, [m for _, m in earlier])
    pairs = [(b, stored[m]) for b, m in earlier if m in stored]
    if not pairs:
        return
    matrix = np.stack([v for _, v in pairs]).astype(np.float64)
    matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
    links: list[tuple[uuid.UUID, uuid.UUID, str, float | None]] = []
    for block_id, vector in zip(block_ids, vectors, strict=True):
        sims = matrix @ unit_vector(vector.astype(np.float64))
        for (other, _), sim in zip(pairs, sims, strict=True):
            if sim >= rt.settings.night_thematic_similarity:
                links.append((block_id, other, "thematic", round(float(sim), 6)))
    await link_rows.insert_links(conn, scope.entity_id, scope.namespace, links)


async def _cites(
    conn: psycopg.AsyncConnection,
    scope: Scope,
    session: _Session,
    rendered: Sequence[dict[str, Any]],
    block_ids: Sequence[uuid.UUID],
) -> None:
    """``cites`` links (§7.2): a new block naming a rare subject of an earlier block of another
    session cites it (:mod:`mnemo.cognition.consolidation.citations`); the block's ``citations`` list them."""
    if not block_ids:
        return
    first = session.turns[0].created_at
    earlier = await block_rows.earlier_blocks(conn, scope.entity_id, scope.namespace, session.id, first, 500)
    if not earlier:
        return
    speakers = {str(t.speaker) for t in session.turns if t.speaker}
    old = [subjects(text, speakers) for _, text in earlier]
    new = [subjects(r["content"], speakers) for r in rendered]
    links: list[tuple[uuid.UUID, uuid.UUID, str, float | None]] = []
    cited: list[tuple[uuid.UUID, list[str]]] = []
    for block_id, found in zip(block_ids, cite(new, old), strict=True):
        if found:
            links += [(block_id, earlier[i][0], "cites", float(n)) for i, n in found]
            cited.append((block_id, [str(earlier[i][0]) for i, _ in found]))
    await link_rows.insert_links(conn, scope.entity_id, scope.namespace, links)
    await block_rows.set_citations(conn, scope.entity_id, cited)


class BlocksStage:
    """Night stage ``blocks`` (per session; stages 1b-6 of memory-architecture §8: flux arcs,
    segments, live and dead zones, salience, summaries, embeddings, thematic links): every session
    with new scored turns cut into holographic blocks, a transaction per session."""

    name = "blocks"
    report_fields = ("sessions", "blocks", "arcs", "open_arcs", "continuations", "live_turns")

    async def run(self, night: NightRun) -> None:
        progress = night.tick(self.name, night.report.turns)
        stats = await night.per_turn(
            self.name, lambda: build_blocks(night.rt, night.scope, night.run_id, night.as_of, progress=progress)
        )
        if stats is None:
            return
        report = night.report
        report.sessions, report.blocks, report.arcs = stats.sessions, stats.blocks, stats.arcs
        report.open_arcs, report.continuations, report.live_turns = (
            stats.open_arcs,
            stats.continuations,
            stats.live_turns,
        )

    async def plan(self, night: NightPlan) -> None:
        e, ns = night.scope.entity_id, night.scope.namespace
        scored_only = "surprisal" not in night.todo  # the night scores first, then cuts what was scored
        sessions, turns = await run_rows.pending_work(
            night.conn, e, ns, night.report.as_of, "blocks_through", scored_only=scored_only
        )
        night.report.plan |= {"sessions_to_cut": sessions, "turns_to_cut": turns}

    def row(self, report: NightReport) -> str:
        if report.dry_run:
            plan = report.plan
            return f"{count_of(plan.get('sessions_to_cut', 0), 'session')} to cut ({plan.get('turns_to_cut', 0)} turns)"
        return (
            f"{report.blocks} blocks from {report.sessions} sessions; {report.arcs} flux arcs, "
            f"{report.open_arcs} open at session end, {report.continuations} continued; "
            f"{report.live_turns} turns in live zones"
        )


STAGE = BlocksStage()
