"""Late interaction: MaxSim over token embeddings (ColBERT-style), for re-ranking.

Seed: cognitive-plan §2.6 (re-ranking the top hybrid results with a finer scorer). No
cross-encoder ships offline, but the bundled MiniLM's token embeddings do: a candidate's
late score is how well each query token finds its best match among the candidate's tokens,

    late(q, d) = sum_t w_t * max_j cos(q_t, d_j) / sum_t w_t,

where ``w_t`` is the inverse document frequency of query token ``t`` *among the candidates
being ranked* (``ln((N + 1) / (df_t + 0.5))``): a token every candidate shares ("what",
"did", the speaker's name) separates nothing, a rare one ("pottery") does. The weights come
from the candidates themselves, so there is nothing to fit and nothing to store per scope.

The first-stage and late scores are put on one scale (z-scores over the candidates) and
added with equal weight (:func:`combine`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["TokenVectors", "combine", "idf_weights", "late_scores", "maxsim"]


@dataclass(frozen=True, slots=True)
class TokenVectors:
    """One text's content tokens (special tokens left out), as the model read them."""

    ids: np.ndarray
    """Token ids, int32, one per row of :attr:`vectors`."""
    vectors: np.ndarray
    """Unit-length token embeddings, ``(len(ids), dim)``; float16 at rest, any float here."""

    def __post_init__(self) -> None:
        if self.vectors.ndim != 2 or self.ids.ndim != 1 or len(self.ids) != len(self.vectors):
            raise ValueError(f"token ids {self.ids.shape} and vectors {self.vectors.shape} do not match")


def idf_weights(query_ids: Sequence[int], candidates: Sequence[TokenVectors]) -> np.ndarray:
    """``ln((N + 1) / (df + 0.5))`` per query token, ``df`` counted over the candidates' token sets:
    always positive, largest for a token no candidate has."""
    n = len(candidates)
    df: dict[int, int] = {}
    for c in candidates:
        for t in set(c.ids.tolist()):
            df[t] = df.get(t, 0) + 1
    return np.array([math.log((n + 1) / (df.get(int(t), 0) + 0.5)) for t in query_ids], dtype=np.float64)


def maxsim(query: np.ndarray, doc: np.ndarray, weights: np.ndarray) -> float:
    """The weighted mean, over query tokens, of each one's best cosine among the document's tokens
    (rows are unit vectors); 0.0 for an empty query or document."""
    if len(query) == 0 or len(doc) == 0 or float(weights.sum()) <= 0.0:
        return 0.0
    best = (np.asarray(query, dtype=np.float32) @ np.asarray(doc, dtype=np.float32).T).max(axis=1)
    return float((best.astype(np.float64) * weights).sum() / weights.sum())


def late_scores(query: TokenVectors, candidates: Sequence[TokenVectors]) -> np.ndarray:
    """Every candidate's late score against the query, IDF-weighted over these candidates."""
    weights = idf_weights(query.ids.tolist(), candidates)
    return np.array([maxsim(query.vectors, c.vectors, weights) for c in candidates], dtype=np.float64)


def _z(values: np.ndarray) -> np.ndarray:
    spread = float(values.std())
    return (values - values.mean()) / spread if spread > 1e-12 else np.zeros_like(values)


def combine(first: Sequence[float] | np.ndarray, late: Sequence[float] | np.ndarray) -> np.ndarray:
    """First-stage and late scores as z-scores over the candidates, added with equal weight."""
    a = np.asarray(first, dtype=np.float64)
    b = np.asarray(late, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"{a.shape} first-stage scores but {b.shape} late scores")
    return _z(a) + _z(b)
