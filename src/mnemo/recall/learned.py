"""Recall stage 5e: the learned fusion of the head, its spreading across sessions and their representation.

Seeds: cognitive-plan §2.5 (hybrid search), §4.5 (weights from outcomes, not hand-set), §4.6
(contextual retrieval: a question's evidence can sit in several sessions).

:func:`features` describes each candidate of the head by :data:`~mnemo.cognition.scoring.ranker.FEATURES`
from what the earlier stages computed (no new search); :func:`learned_rank` orders the head by
the shipped :class:`~mnemo.cognition.scoring.ranker.Ranker` (``ranker="learned"``) or keeps the hand-set
order (``"hand"``), then spreads its top over sessions (``spread_sessions``) and represents each
session within reach of the best before any session's second candidate (``represent_sessions``,
issue 43). The head stays above
every other candidate, as after late interaction. :func:`mnemo.recall.capture.capturing` lets a
benchmark collect the features of each recall it makes (``benchmarks/learn_fusion.py`` trains the
model on them).
"""

from __future__ import annotations

import math
import re
import uuid
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path

import numpy as np
import psycopg

from mnemo._runtime import Runtime
from mnemo.cognition.scoring.ranker import (
    FEATURES,
    Ranker,
    represent_sessions,
    sessions_in_reach,
    spread_sessions,
    standardise,
)
from mnemo.cognition.scoring.refusal import proper_names
from mnemo.errors import ConfigurationError
from mnemo.recall.capture import Pool, sink
from mnemo.recall.first_stage import Said
from mnemo.recall.rank import _head
from mnemo.recall.records import Candidates, Request
from mnemo.store import search as search_rows

__all__ = ["features", "learned_rank", "load_ranker"]


def load_ranker(path: Path | None = None) -> Ranker:
    """The ranking model in ``path``, or the one shipped in the package (``mnemo/data/ranker.json``);
    :class:`~mnemo.errors.ConfigurationError` when it cannot be read or does not fit."""
    try:
        if path is None:
            return Ranker.from_json(resources.files("mnemo").joinpath("data/ranker.json").read_text(encoding="utf-8"))
        return Ranker.from_json(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        where = f"ranker_file {path}" if path is not None else "the shipped ranking model (mnemo/data/ranker.json)"
        raise ConfigurationError(f"{where}: not a ranking model mnemo can use ({exc})") from exc


_HAND = Ranker.hand_set()
"""The hand-set order as a model (``ranker="hand"``): spreading still reads scores from it."""


async def learned_rank(rt: Runtime, conn: psycopg.AsyncConnection, request: Request, found: Candidates) -> None:
    """Order the head's utterances by the ranking model (:func:`_utterances_reordered`), then spread
    its top over sessions; the head keeps its scores, handed out in the new order."""
    cfg = rt.settings
    capture = sink()
    spreads = cfg.spread_sessions and rt.ranker.penalty > 0
    if len(found.final) < 2 or (
        cfg.ranker == "hand" and not spreads and not cfg.represent_sessions and capture is None
    ):
        return  # nothing would move: the hand-set order stands
    pool = await features(rt, conn, request, found)
    if capture is not None:
        capture.pools.append(pool)
    model = rt.ranker
    scores = dict(
        zip(
            pool.ids,
            (model if cfg.ranker == "learned" else _HAND).scores(pool.matrix).tolist(),
            strict=True,
        )
    )
    order = _utterances_reordered(pool.ids, scores, found.kind_of)
    if spreads:
        order = spread_sessions(order, scores, pool.sessions, model.penalty, max(request.k, 10))
    if cfg.represent_sessions:  # issue 43: no session crowds out another as good
        order = represent_sessions(order, sessions_in_reach(order, scores, pool.sessions), pool.sessions)
    found.smoothed = found.smoothed or found.final
    found.final = _in_order(found.final, pool.ids, order)


def _utterances_reordered(
    head: Sequence[uuid.UUID], scores: Mapping[uuid.UUID, float], kind_of: Mapping[uuid.UUID, str]
) -> list[uuid.UUID]:
    """The head with its utterances (turns, lines) in the places utterances held, best score first;
    a memory keeps its place (the model learned from utterances: it has no say over memories)."""
    said = sorted((i for i in head if kind_of.get(i) in ("turn", "line")), key=lambda i: -scores[i])
    ranked = iter(said)
    return [next(ranked) if kind_of.get(i) in ("turn", "line") else i for i in head]


def _in_order(
    final: Mapping[uuid.UUID, float], head: Sequence[uuid.UUID], order: Sequence[uuid.UUID]
) -> dict[uuid.UUID, float]:
    """``final`` with the head's scores handed out along ``order``: the n-th of the new order takes
    the n-th best score of the head, so the scores keep their spread and the head its place."""
    values = sorted((final[i] for i in head), reverse=True)
    return dict(final) | dict(zip(order, values, strict=True))


async def features(rt: Runtime, conn: psycopg.AsyncConnection, request: Request, found: Candidates) -> Pool:
    """The head's :data:`FEATURES`, from the candidates' scores, positions and texts."""
    head = _head(rt, request, found.final)
    asked = proper_names(request.text)
    # the texts only tell who said what and which names it mentions: not read when nobody is named
    texts = await _said(conn, request, found, head) if asked else {}
    where = found.positions
    sessions = {i: where[i][0] for i in head if i in where}
    base = dict(zip(list(found.base), standardise(found.base, list(found.base)), strict=True))
    near = _near(head, base, where, found.bounds, (1, 2))
    columns = {
        "hand": [-math.log(n) for n in range(1, len(head) + 1)],
        "near1": near[0],
        "near2": near[1],
        "session_mass": _session_mass(head, base, where),
        "session_rank": _session_rank(head, sessions),
        "names": _names(asked, head, texts),
        "speaker": _speaker(asked, head, texts),
        "period": [float(i in found.in_period) for i in head],
        "memory": [float(found.kind_of.get(i) == "memory") for i in head],
        "line": [float(found.kind_of.get(i) == "line") for i in head],
    }
    matrix = np.array([columns[f] for f in FEATURES], dtype=np.float64).T.reshape(len(head), len(FEATURES))
    return Pool(tuple(head), matrix, sessions)


async def _said(
    conn: psycopg.AsyncConnection, request: Request, found: Candidates, head: Sequence[uuid.UUID]
) -> dict[uuid.UUID, Said]:
    """The head's texts and speakers: from the scope's read index when it is warm (the first stage
    hands out its copy), else through SQL."""
    if found.stage is not None:
        said: dict[uuid.UUID, Said] = await found.stage.said(head)
        return said
    texts = await search_rows.item_texts(conn, request.scope.entity_id, request.scope.namespace, head)
    return {i: (t.content, t.speaker) for i, t in texts.items()}


def _near(
    head: Sequence[uuid.UUID],
    base: Mapping[uuid.UUID, float],
    where: Mapping[uuid.UUID, tuple[str, int]],
    bounds: Mapping[str, tuple[int, int]],
    distances: Sequence[int],
) -> list[list[float]]:
    """For each distance, the mean evidence of each candidate's neighbours that many turns away (as
    neighbour smoothing reads it: a scored neighbour's z-score, an unscored one the lowest, none 0)."""
    at = {pos: key for key, pos in where.items() if key in base}
    floor = min(base.values(), default=0.0)
    out: list[list[float]] = [[] for _ in distances]
    for i in head:
        for column, distance in zip(out, distances, strict=True):
            column.append(_neighbours(i, base, where, bounds, at, floor, distance))
    return out


def _neighbours(
    item: uuid.UUID,
    base: Mapping[uuid.UUID, float],
    where: Mapping[uuid.UUID, tuple[str, int]],
    bounds: Mapping[str, tuple[int, int]],
    at: Mapping[tuple[str, int], uuid.UUID],
    floor: float,
    distance: int,
) -> float:
    if item not in where:
        return 0.0
    session, number = where[item]
    lo, hi = bounds.get(session, (number, number))
    seen = []
    for other in (number - distance, number + distance):
        key = at.get((session, other))
        if key is not None:
            seen.append(base[key])
        elif lo <= other <= hi:
            seen.append(floor)
    return sum(seen) / len(seen) if seen else 0.0


def _session_mass(
    head: Sequence[uuid.UUID], base: Mapping[uuid.UUID, float], where: Mapping[uuid.UUID, tuple[str, int]]
) -> list[float]:
    """How much evidence each candidate's session holds: the sum of its scored utterances' positive
    z-scores (0 for a memory)."""
    mass: dict[str, float] = {}
    for key, (session, _) in where.items():
        if key in base and base[key] > 0:
            mass[session] = mass.get(session, 0.0) + base[key]
    return [mass.get(where[i][0], 0.0) if i in where else 0.0 for i in head]


def _session_rank(head: Sequence[uuid.UUID], sessions: Mapping[uuid.UUID, str]) -> list[float]:
    """``1 / n`` for the n-th candidate of its session in the head's order (1 for a memory)."""
    seen: dict[str, int] = {}
    out = []
    for i in head:
        if i not in sessions:
            out.append(1.0)
            continue
        seen[sessions[i]] = seen.get(sessions[i], 0) + 1
        out.append(1.0 / seen[sessions[i]])
    return out


_WORD = re.compile(r"[^\W_]+")


def _speaker(asked: Sequence[str], head: Sequence[uuid.UUID], texts: Mapping[uuid.UUID, Said]) -> list[float]:
    """1 where the candidate's speaker is one of the question's names (``asked``)."""
    names = {n.lower() for n in asked}
    out = []
    for i in head:
        text = texts.get(i)
        out.append(float(text is not None and (text[1] or "").lower() in names))
    return out


def _names(asked: Sequence[str], head: Sequence[uuid.UUID], texts: Mapping[uuid.UUID, Said]) -> list[float]:
    """The share of the question's names (``asked``: :func:`~mnemo.cognition.scoring.refusal.proper_names`)
    that each candidate's text or speaker mentions."""
    names = {n.lower() for n in asked}
    if not names:
        return [0.0] * len(head)
    out = []
    for i in head:
        text = texts.get(i)
        words = set() if text is None else {w.lower() for w in _WORD.findall(f"{text[1] or ''} {text[0]}")}
        out.append(len(names & words) / len(names))
    return out
