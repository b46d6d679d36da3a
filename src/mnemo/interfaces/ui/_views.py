"""What the inspector's templates show, computed from records: chart geometry, filters, paging keys.

Pure functions over the archive's records (no I/O), so every page renders the same way.
"""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from mnemo._validate import check_kind, to_utc
from mnemo.archive import AsyncArchive
from mnemo.cognition.scoring.blend_components import BLEND, COMPONENTS
from mnemo.errors import InvalidContentError
from mnemo.interfaces.ui.charts import (
    activation_series,
    beta_density,
    nice_ceiling,
    place,
    polyline,
    scale,
    time_ticks,
)
from mnemo.models import MEMORY_STATUSES, EntityFacts, Hit, RecallResult, Refusal, TreeNode, TuningStep

__all__ = [
    "activation_chart",
    "alpha_shares",
    "alphas_chart",
    "density_chart",
    "explain",
    "fact_timeline",
    "generations",
    "key_text",
    "memory_filters",
    "modes",
    "night_stages",
    "nonce",
    "outline",
    "page_key",
    "salience",
    "short",
    "surprisal_chart",
    "tristate",
    "when",
    "zone_text",
]

W, H = 560, 160  # chart size in SVG units


def nonce() -> str:
    return secrets.token_urlsafe(24)


def when(value: datetime | None) -> str:
    return "" if value is None else value.astimezone(UTC).strftime("%Y-%m-%d %H:%M")


def short(value: object, n: int = 140) -> str:
    text = str(value or "")
    return text if len(text) <= n else text[: n - 1] + "…"


def tristate(value: str) -> bool | None:
    return {"yes": True, "no": False}.get(value)


def memory_filters(q: str, kind: str, status: str, anchored: str, tier: str, since: str, until: str) -> dict[str, Any]:
    """The memory list's filters, checked (a bad one is an :class:`InvalidContentError`)."""
    if status and status not in MEMORY_STATUSES:
        raise InvalidContentError(f"unknown status {status!r}")
    if tier and tier not in ("hippocampus", "cortex"):
        raise InvalidContentError(f"unknown tier {tier!r}")
    return {
        "query": q.strip()[:500] or None,
        "kind": check_kind(kind) if kind else None,
        "status": status or None,
        "anchored": tristate(anchored),
        "tier": tier or None,
        "since": to_utc(since, label="since") if since else None,
        "until": to_utc(until, label="until") if until else None,
    }


def page_key(text: str) -> tuple[datetime, uuid.UUID] | None:
    """The paging key ``<iso time>|<uuid>`` of the previous page's last row."""
    if not text:
        return None
    at, _, ident = text.partition("|")
    try:
        return to_utc(at, label="after"), uuid.UUID(ident)
    except ValueError as exc:
        raise InvalidContentError(f"not a page key: {text!r}") from exc


def key_text(key: tuple[datetime, uuid.UUID] | None) -> str:
    return "" if key is None else f"{key[0].isoformat()}|{key[1]}"


def density_chart(alpha: float, beta: float) -> dict[str, Any]:
    """The Beta(alpha, beta) density as an SVG polyline, with the mean marked."""
    points = beta_density(alpha, beta)
    line = polyline([(x * W, H - 10 - d * (H - 20)) for x, d in points])
    mean = alpha / (alpha + beta)
    return {"line": line, "mean_x": round(mean * W, 1), "mean": mean, "w": W, "h": H}


def activation_chart(uses: Sequence[datetime], created: datetime, decay: float) -> dict[str, Any] | None:
    """ACT-R activation over time from the recorded uses (None before a memory was ever used)."""
    if not uses:
        return None
    start = min(created, *uses)
    end = max(datetime.now(UTC), max(uses) + timedelta(minutes=1))
    series = [(t, v) for t, v in activation_series(list(uses), start, end, decay) if v is not None]
    ys = scale([v for _, v in series], H - 10, 10)
    span = (end - start).total_seconds()
    xs = [(t - start).total_seconds() / span * W for t, _ in series]
    ticks = [round((u - start).total_seconds() / span * W, 1) for u in uses]
    values = [v for _, v in series]
    return {"line": polyline(list(zip(xs, ys, strict=True))), "ticks": ticks, "w": W, "h": H,
            "start": start, "end": end, "low": min(values), "high": max(values)}  # fmt: skip


def surprisal_chart(turns: Sequence[Mapping[str, Any]], metrics: Mapping[str, Any]) -> dict[str, Any] | None:
    """An episode's surprisal per turn with its baseline band (baseline +/- sigma) and the spike and
    resolution turns marked; None when its raw turns (and their surprisal) are gone."""
    scored = [t for t in turns if t.get("surprisal") is not None]
    if len(scored) < 2:
        return None
    base, sigma = float(metrics.get("baseline_surprisal", 0.0)), float(metrics.get("sigma", 0.0))
    values = [float(t["surprisal"]) for t in scored]
    lo, hi = min(*values, base - sigma), max(*values, base + sigma)
    span = (hi - lo) or 1.0

    def y(v: float) -> float:
        return round(H - 10 - (v - lo) / span * (H - 20), 1)

    step = W / (len(scored) - 1)
    points = [(i * step, y(v)) for i, v in enumerate(values)]
    marks = [{"x": round(i * step, 1), "y": y(values[i]), "state": t["flux_state"], "turn": t["turn_number"]}
             for i, t in enumerate(scored) if t.get("flux_state") in ("spike", "resolution")]  # fmt: skip
    return {"line": polyline(points), "band_y": y(base + sigma), "band_h": round(y(base - sigma) - y(base + sigma), 1),
            "base_y": y(base), "marks": marks, "w": W, "h": H}  # fmt: skip


def explain(result: RecallResult | Refusal, k: int) -> dict[str, Any]:
    """Hits with a bar per blend component, the weights, and the candidates past ``k`` that lost."""
    if isinstance(result, Refusal):
        losers = [_bars(h, {}) for h in result.candidates]
        return {"refusal": result, "hits": [], "losers": losers, "weights": {}}
    weights = dict(result.weights)
    rows = [_bars(h, weights) for h in result.hits]
    return {"refusal": None, "hits": rows[:k], "losers": rows[k:], "weights": weights, "result": result}


def _bars(hit: Hit, weights: Mapping[str, float]) -> dict[str, Any]:
    parts = []
    for c in BLEND:
        value = float(getattr(hit, c.name))
        width = round(max(0.0, min(1.0, value)) * 120, 1)
        parts.append({"name": c.name, "value": value, "text": format(value, c.fmt), "width": width,
                      "weighted": value * weights.get(c.name, 0.0)})  # fmt: skip
    return {"hit": hit, "parts": parts}


def outline(nodes: Sequence[TreeNode]) -> list[dict[str, Any]]:
    """The cortex tree as nested dicts, top level first (for a collapsible outline)."""
    by_id: dict[str, dict[str, Any]] = {n.id: {"node": n, "children": []} for n in nodes}
    roots: list[dict[str, Any]] = []
    for n in sorted(nodes, key=lambda n: (-n.level, n.id)):
        entry = by_id[n.id]
        if n.parent_id and n.parent_id in by_id:
            by_id[n.parent_id]["children"].append(entry)
        else:
            roots.append(entry)
    return roots


TIMELINE_W, LABELS_W, ROW_H = 720, 230, 16  # the facts timeline: its width, its label column, a row


def fact_timeline(found: EntityFacts | None) -> dict[str, Any] | None:
    """Each fact's validity interval as a labelled bar on a common time axis (open ones run to now),
    with the axis's ticks and where now is; None when there is no fact to draw."""
    if found is None or not found.facts:
        return None
    now = datetime.now(UTC)
    starts = [f.valid_from or now for f in found.facts]
    t0, t1 = min(starts), max(now, *(f.valid_to or now for f in found.facts))
    if t1 <= t0:
        t0 -= timedelta(hours=1)  # every fact began just now: an hour of axis to draw them on
    right = TIMELINE_W - 28  # room for 'now' beside its line

    def x(t: datetime) -> float:
        return round(LABELS_W + (t - t0).total_seconds() / (t1 - t0).total_seconds() * (right - LABELS_W), 1)

    rows = []
    for i, (f, start) in enumerate(zip(found.facts, starts, strict=True)):
        x0, x1 = x(start), x(f.valid_to or now)
        rows.append({"fact": f, "x": x0, "w": max(round(x1 - x0, 1), 3.0), "y": 8 + i * ROW_H,
                     "label": short(f"{f.attribute} = {f.value}", 36)})  # fmt: skip
    axis = 8 + len(rows) * ROW_H + 4
    ticks = [{"x": x(t), "label": label} for t, label in time_ticks(t0, t1)]
    return {"rows": rows, "ticks": ticks, "axis": axis, "h": axis + 20, "w": TIMELINE_W, "left": LABELS_W,
            "right": right, "now": x(now)}  # fmt: skip


def night_stages(run: Mapping[str, Any]) -> list[tuple[str, float | None]]:
    """The stages a night run did, in the order the night runs them (:attr:`AsyncArchive.NIGHT_STAGES`),
    each with its seconds: those its summary timed, and those its ``stages_done`` marks (None: done
    by an earlier attempt of a resumed run, or the run has no summary yet)."""
    summary = (run.get("report") or {}).get("summary") or {}
    seconds = summary.get("stage_seconds") or {}
    done = set(run.get("stages_done") or ())
    names = (stage.name for stage in AsyncArchive.NIGHT_STAGES)
    return [(name, seconds.get(name)) for name in names if name in seconds or name in done]


LEVELS = (("utterance_level", "utterance"), ("exchange_level", "exchange"), ("theme_level", "theme"))


def salience(scores: Mapping[str, Any]) -> list[tuple[str, str]]:
    """A block's salience at its three levels (P, C and ID each) and the composite, as text."""
    out = []
    for key, label in LEVELS:
        level = scores.get(key) or {}
        out.append((label, " ".join(f"{k} {float(v):.2f}" for k, v in level.items()) or "–"))
    out.append(("composite", f"{float(scores.get('composite', 0.0)):.2f}"))
    return out


def zone_text(zone: Any) -> str:
    """A live or dead zone's text (zones are stored as text, or as records with their text)."""
    if isinstance(zone, Mapping):
        return str(zone.get("content") or zone.get("summary") or zone.get("text") or "")
    return str(zone)


# --- the inner life (issue 31) -------------------------------------------------------------------------
ALPHAS_W, ALPHAS_H = 560, 200
ALPHAS_BOX = (44.0, 12.0, ALPHAS_W - 14.0, ALPHAS_H - 26.0)  # left, top, right, bottom of the plot area
SERIES = 6  # line styles (s0 … s5 in the stylesheet), reused past six components


def _components(alphas: Sequence[Mapping[str, Any]]) -> list[str]:
    """The blend's components in the order recall explains them, then any others by name."""
    present = {str(k) for a in alphas for k in a}
    return [c for c in COMPONENTS if c in present] + sorted(present - set(COMPONENTS))


def alpha_shares(alphas: Mapping[str, float], chart: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """The alphas in force, one row per component, each with its share of the blend and the style of
    its line in ``chart`` (:func:`alphas_chart`; None when it has none there)."""
    total = sum(float(v) for v in alphas.values())
    styles = {line["name"]: line["style"] for line in (chart or {}).get("lines", ())}
    return [{"name": c, "alpha": float(alphas[c]), "share": float(alphas[c]) / total if total > 0 else 0.0,
             "style": styles.get(c)} for c in _components([alphas])]  # fmt: skip


def alphas_chart(history: Sequence[TuningStep]) -> dict[str, Any] | None:
    """The blend's alphas over time: one line per component through the applied ``blend`` steps of
    the tuning history (their ``params["alphas"]``), on a time axis with a value axis from 0; None
    when the night never changed them."""
    steps = sorted(
        ((s.at, s.params["alphas"]) for s in history
         if s.name == "blend" and s.applied and isinstance(s.params.get("alphas"), Mapping)),
        key=lambda step: step[0],
    )  # fmt: skip
    if not steps:
        return None
    start, end = steps[0][0], steps[-1][0]
    names = _components([a for _, a in steps])
    high = nice_ceiling(max(float(v) for _, a in steps for v in a.values()))
    lines = []
    for i, name in enumerate(names):
        points = [(at, float(a[name])) for at, a in steps if name in a]
        xy = place(points, start, end, high, ALPHAS_BOX)
        dots = [{"x": round(x, 1), "y": round(y, 1), "at": at, "value": v}
                for (x, y), (at, v) in zip(xy, points, strict=True)]  # fmt: skip
        lines.append({"name": name, "style": f"s{i % SERIES}", "points": polyline(xy), "dots": dots})
    left, top, right, bottom = ALPHAS_BOX
    marks = time_ticks(start, end) if end > start else [(start, when(start))]
    ticks = [{"x": round(place([(t, 0.0)], start, end, high, ALPHAS_BOX)[0][0], 1), "label": label}
             for t, label in marks]  # fmt: skip
    levels = [{"y": round(bottom - f * (bottom - top), 1), "label": f"{f * high:g}"} for f in (0.0, 0.5, 1.0)]
    return {"lines": lines, "ticks": ticks, "levels": levels, "steps": len(steps), "start": start, "end": end,
            "w": ALPHAS_W, "h": ALPHAS_H, "left": left, "top": top, "right": right, "bottom": bottom}  # fmt: skip


def generations(found: Sequence[int]) -> str:
    """A failure pattern's generations: ``0–2`` when they run on, else listed."""
    gens = sorted(set(found))
    if len(gens) > 2 and gens == list(range(gens[0], gens[-1] + 1)):
        return f"{gens[0]}–{gens[-1]}"
    return ", ".join(str(g) for g in gens)


def modes(found: Mapping[str, int]) -> str:
    """A failure pattern's modes, most frequent first: ``timeout ×3, error ×1``."""
    return ", ".join(f"{m} ×{n}" for m, n in sorted(found.items(), key=lambda mn: (-mn[1], mn[0])))
