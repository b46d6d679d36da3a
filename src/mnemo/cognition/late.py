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

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["QUANT", "TokenVectors", "combine", "idf_weights", "late_scores", "maxsim", "quantize"]


@dataclass(frozen=True, slots=True)
class TokenVectors:
    """One text's content tokens (special tokens left out), as the model read them."""

    ids: np.ndarray
    """Token ids, int32, one per row of :attr:`vectors`."""
    vectors: np.ndarray
    """Token embeddings, ``(len(ids), dim)``: unit length once multiplied by :attr:`scale` (int8
    codes at rest, see :func:`quantize`; floats fresh from the model)."""
    scale: float = 1.0
    """What :attr:`vectors` are multiplied by to be unit length."""

    def __post_init__(self) -> None:
        if self.vectors.ndim != 2 or self.ids.ndim != 1 or len(self.ids) != len(self.vectors):
            raise ValueError(f"token ids {self.ids.shape} and vectors {self.vectors.shape} do not match")


QUANT = 127.0
"""int8 codes of a unit vector's components: ``round(x * 127)``; a cosine from codes is off by
well under 0.01, and they read 4x faster than float32 (2x float16, without its slow conversion)."""


def quantize(tv: TokenVectors) -> TokenVectors:
    """``tv`` as int8 codes (scale ``1/127``), how the store keeps token embeddings."""
    if tv.vectors.dtype == np.int8:
        return tv
    unit = np.asarray(tv.vectors, dtype=np.float32) * tv.scale
    codes = np.clip(np.rint(unit * QUANT), -QUANT, QUANT).astype(np.int8)
    return TokenVectors(tv.ids, codes, 1.0 / QUANT)


def idf_weights(query_ids: Sequence[int] | np.ndarray, candidates: Sequence[TokenVectors]) -> np.ndarray:
    """``ln((N + 1) / (df + 0.5))`` per query token, ``df`` counted over the candidates' token sets:
    always positive, largest for a token no candidate has."""
    query = np.asarray(query_ids, dtype=np.int64)
    n = len(candidates)
    # each candidate's distinct tokens, together: a token's count there is its document frequency
    seen = np.concatenate([np.unique(c.ids) for c in candidates]) if n else np.zeros(0, np.int64)
    tokens, df = np.unique(seen, return_counts=True)
    at = np.clip(np.searchsorted(tokens, query), 0, max(len(tokens) - 1, 0))
    found = df[at] if len(tokens) else np.zeros(len(query), np.int64)
    counts = np.where((tokens[at] == query) if len(tokens) else False, found, 0)
    return np.log((n + 1) / (counts + 0.5))


def maxsim(query: np.ndarray, doc: np.ndarray, weights: np.ndarray) -> float:
    """The weighted mean, over query tokens, of each one's best cosine among the document's tokens
    (rows are unit vectors); 0.0 for an empty query or document."""
    if len(query) == 0 or len(doc) == 0 or float(weights.sum()) <= 0.0:
        return 0.0
    best = (np.asarray(query, dtype=np.float32) @ np.asarray(doc, dtype=np.float32).T).max(axis=1)
    return float((best.astype(np.float64) * weights).sum() / weights.sum())


def late_scores(query: TokenVectors, candidates: Sequence[TokenVectors]) -> np.ndarray:
    """Every candidate's late score against the query, IDF-weighted over these candidates: one
    matrix product over all their tokens, then each candidate's best match per query token."""
    weights = idf_weights(query.ids, candidates)
    scores = np.zeros(len(candidates), dtype=np.float64)
    sizes = np.array([len(c.ids) for c in candidates], dtype=np.int64)
    filled = np.flatnonzero(sizes)
    if len(query.ids) == 0 or len(filled) == 0 or float(weights.sum()) <= 0.0:
        return scores
    present = [candidates[int(i)] for i in filled]
    tokens = np.concatenate([c.vectors for c in present]).astype(np.float32, copy=False)
    query_rows = np.asarray(query.vectors, dtype=np.float32) * np.float32(query.scale)
    sims = query_rows @ tokens.T  # (query tokens, all candidate tokens)
    starts = np.concatenate([[0], np.cumsum(sizes[filled])[:-1]])
    # a candidate's scale is positive and shared by its tokens: apply it after the max
    scales = np.array([c.scale for c in present], dtype=np.float32)
    best = np.maximum.reduceat(sims, starts, axis=1) * scales  # (query tokens, filled candidates)
    scores[filled] = (weights @ best.astype(np.float64)) / weights.sum()
    return scores


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
