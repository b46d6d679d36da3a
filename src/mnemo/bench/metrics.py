"""Retrieval metrics for the LoCoMo protocol (pure functions).

- recall@k: the share of a question's evidence ids found in the top k of the
  ranking; a question without evidence scores 1 (LoCoMo paper, Table 3).
- recall_any@k: 1 when any of a question's evidence ids is in the top k, else 0 (the
  figure some peers publish; a question without evidence scores 1);
- recall_all@k: 1 when every one of a question's evidence ids is in the top k, else 0 (issue 43:
  a question whose answer is spread over several turns is answered only when all of them are
  found; a question without evidence scores 1);
- budget recall: the share of evidence a caller gets if it fills ``budget``
  tokens of context from the top of the ranking (an item that does not fit
  ends the context).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

__all__ = [
    "EVIDENCE_RE",
    "budget_recall",
    "evidence_sessions",
    "mean",
    "parse_evidence",
    "percentile",
    "recall_all_at_k",
    "recall_any_at_k",
    "recall_at_k",
]

EVIDENCE_RE = re.compile(r"D\d+:\d+")


def parse_evidence(items: Iterable[object]) -> list[str]:
    """Evidence dia_ids, split with ``D\\d+:\\d+`` (some entries hold two ids), de-duplicated in order."""
    found: list[str] = []
    for item in items:
        for match in EVIDENCE_RE.findall(str(item)):
            if match not in found:
                found.append(match)
    return found


def _covered(item: str, cover: Mapping[str, Iterable[str]] | None) -> Iterable[str]:
    return cover.get(item, (item,)) if cover is not None else (item,)


def recall_at_k(
    ranking: Sequence[str], evidence: Sequence[str], k: int, cover: Mapping[str, Iterable[str]] | None = None
) -> float:
    """``cover`` maps an item that stands for several evidence ids (a block, a fact) to them."""
    if k < 1:
        raise ValueError("k must be >= 1")
    wanted = set(evidence)
    if not wanted:
        return 1.0
    found = {e for item in ranking[:k] for e in _covered(item, cover)}
    return len(wanted & found) / len(wanted)


def recall_any_at_k(
    ranking: Sequence[str], evidence: Sequence[str], k: int, cover: Mapping[str, Iterable[str]] | None = None
) -> float:
    """1.0 when the top ``k`` hold at least one evidence id (or there is none to hold), else 0.0."""
    if k < 1:
        raise ValueError("k must be >= 1")
    wanted = set(evidence)
    if not wanted:
        return 1.0
    return float(any(e in wanted for item in ranking[:k] for e in _covered(item, cover)))


def recall_all_at_k(
    ranking: Sequence[str], evidence: Sequence[str], k: int, cover: Mapping[str, Iterable[str]] | None = None
) -> float:
    """1.0 when the top ``k`` hold every evidence id (or there is none to hold), else 0.0."""
    return float(recall_at_k(ranking, evidence, k, cover) == 1.0)


def evidence_sessions(evidence: Iterable[str]) -> int:
    """How many sessions a question's evidence sits in: the distinct ``D<session>`` of its dia_ids."""
    return len({e.split(":", 1)[0] for e in evidence})


def budget_recall(
    ranking: Sequence[str],
    tokens: Mapping[str, int],
    evidence: Sequence[str],
    budget: int,
    cover: Mapping[str, Iterable[str]] | None = None,
) -> float:
    wanted = set(evidence)
    if not wanted:
        return 1.0
    used = 0
    included: set[str] = set()
    for item in ranking:
        cost = tokens[item]
        if used + cost > budget:
            break
        used += cost
        included.update(_covered(item, cover))
    return len(wanted & included) / len(wanted)


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def percentile(values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile (``p`` in 0..100)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(p / 100 * (len(ordered) - 1))))
    return ordered[index]
