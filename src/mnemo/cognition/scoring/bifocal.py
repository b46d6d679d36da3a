"""Bifocal hits and the compression of migration, as pure functions.

Seeds: memory-architecture §6.1 (a packet carries prose and vector together),
§6.2 (``content_type``: full | summary | excerpt), §6.4 (during migration dead
zones condense further, margins are trimmed, live zones stay verbatim), §1.3
(cortical hits return with their live zones: breakthroughs verbatim).

A block hit does not come back whole: it quotes the lines of the block that
match the query (:func:`select_excerpt`), so consolidated memory costs about as
many tokens in a context as the raw turns it replaced.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["condense_prose", "condense_summary", "select_excerpt"]

_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def select_excerpt(similarities: Sequence[float], max_lines: int, margin: float) -> list[int]:
    """The lines a hit quotes, in their order in the block: the most similar line, then every
    line whose similarity is within ``margin`` of it, the most similar first, ``max_lines`` at most.

    >>> select_excerpt([0.2, 0.9, 0.85, 0.1], max_lines=2, margin=0.1)
    [1, 2]
    >>> select_excerpt([0.2, 0.9, 0.5], max_lines=3, margin=0.1)
    [1]
    >>> select_excerpt([], max_lines=2, margin=0.1)
    []
    """
    if not similarities or max_lines < 1:
        return []
    order = sorted(range(len(similarities)), key=lambda i: (-similarities[i], i))
    best = similarities[order[0]]
    chosen = [i for i in order if similarities[i] >= best - margin][:max_lines]
    return sorted(chosen)


def condense_summary(summary: str, max_words: int) -> str:
    """A dead-zone summary condensed further (§6.4): whole sentences while they fit in
    ``max_words`` words, the first sentence always (cut to ``max_words`` if it alone is longer)."""
    sentences = [s for s in _SENTENCE.split(summary.strip()) if s]
    if not sentences:
        return ""
    kept: list[str] = []
    words = 0
    for sentence in sentences:
        n = len(sentence.split())
        if kept and words + n > max_words:
            break
        kept.append(sentence)
        words += n
    text = " ".join(kept)
    parts = text.split()
    return text if len(parts) <= max_words else " ".join(parts[:max_words]) + " …"


def condense_prose(prose: Mapping[str, Any], max_words: int) -> dict[str, Any]:
    """A block's prose as the cortex keeps it: margins trimmed, dead-zone summaries condensed,
    live zones verbatim (§6.4)."""
    out = {k: v for k, v in prose.items() if k not in ("anterior_margin", "posterior_margin")}
    out["dead_zone_summaries"] = [
        dict(zone) | {"summary": condense_summary(str(zone.get("summary", "")), max_words)}
        for zone in prose.get("dead_zone_summaries", ())
    ]
    out["live_zones"] = [dict(zone) for zone in prose.get("live_zones", ())]
    return out


def render_prose(prose: Mapping[str, Any], header: str = "") -> str:
    """The text of a block's prose, zone by zone in turn order (live zones verbatim)."""
    zones = [(int(z.get("start", 0)), str(z.get("content", ""))) for z in prose.get("live_zones", ())]
    zones += [
        (int(z.get("start", 0)), f"[summary] {z.get('summary', '')}") for z in prose.get("dead_zone_summaries", ())
    ]
    body = "\n".join(text for _, text in sorted(zones, key=lambda z: z[0]) if text.strip())
    return f"{header}{body}" if header else body
