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

Late interaction also *retrieves*: a :class:`TokenIndex` lays a whole scope's token embeddings
out as one matrix, so every item is scored at once (:func:`index_scores`, IDF over the scope)
and the best join the candidates that HNSW and BM25 found. On LoCoMo the whole-scope MaxSim
alone ranks better than either first-stage retriever (R@10 73.2, against 45.0 for the same
model's single vector and 50.3 for BM25), because a question's words meet the evidence's words
one by one instead of through one pooled vector.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "QUANT",
    "SHIFT",
    "GrowingIndex",
    "Int8Product",
    "TokenIndex",
    "TokenVectors",
    "combine",
    "idf_weights",
    "index_scores",
    "index_tokens",
    "late_scores",
    "maxsim",
    "quantize",
    "shift",
]


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
    return _idf(query_ids, *_document_frequencies(candidates), len(candidates))


def _document_frequencies(candidates: Sequence[TokenVectors]) -> tuple[np.ndarray, np.ndarray]:
    """The distinct token ids over ``candidates`` (sorted) and how many candidates hold each."""
    if not candidates:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    # each candidate's distinct tokens, together: a token's count there is its document frequency
    seen = np.concatenate([np.unique(c.ids) for c in candidates]).astype(np.int64, copy=False)
    return np.unique(seen, return_counts=True)


def _idf(query_ids: Sequence[int] | np.ndarray, tokens: np.ndarray, df: np.ndarray, n: int) -> np.ndarray:
    query = np.asarray(query_ids, dtype=np.int64)
    if not len(tokens):
        return np.full(len(query), np.log((n + 1) / 0.5))
    at = np.clip(np.searchsorted(tokens, query), 0, len(tokens) - 1)
    counts = np.where(tokens[at] == query, df[at], 0)
    return np.log((n + 1) / (counts + 0.5))


def maxsim(query: np.ndarray, doc: np.ndarray, weights: np.ndarray) -> float:
    """The weighted mean, over query tokens, of each one's best cosine among the document's tokens
    (rows are unit vectors); 0.0 for an empty query or document."""
    if len(query) == 0 or len(doc) == 0 or float(weights.sum()) <= 0.0:
        return 0.0
    best = (np.asarray(query, dtype=np.float32) @ np.asarray(doc, dtype=np.float32).T).max(axis=1)
    return float((best.astype(np.float64) * weights).sum() / weights.sum())


@dataclass(frozen=True, slots=True)
class TokenIndex:
    """Many items' token embeddings laid out to be scored at once (:func:`index_scores`): one
    matrix of every token, where each item starts, and the items' token document frequencies.

    Built once per candidate set by :func:`late_scores`, or once per scope and kept, so that late
    interaction can retrieve over every item of a scope, not only re-rank the head."""

    size: int
    """How many items (those without tokens included: they score 0)."""
    rows: np.ndarray
    """Every token of the items with any, item after item, ``(tokens, dim)``: floats, or int8 codes held
    *shifted* (:func:`shift`: uint8, code + 128), the unsigned side the integer kernel reads."""
    filled: np.ndarray
    """Positions of the items with at least one token."""
    starts: np.ndarray
    """Where each of :attr:`filled` starts in :attr:`rows`."""
    scales: np.ndarray
    """Each of :attr:`filled`'s scale (what its rows are multiplied by to be unit length)."""
    vocabulary: np.ndarray
    """The distinct token ids of all items, sorted."""
    df: np.ndarray
    """How many items hold each of :attr:`vocabulary`."""

    @property
    def nbytes(self) -> int:
        return int(sum(a.nbytes for a in (self.rows, self.filled, self.starts, self.scales, self.vocabulary, self.df)))


SHIFT = 128
"""What an index adds to its int8 codes (:func:`shift`)."""


def shift(codes: np.ndarray) -> np.ndarray:
    """int8 codes as uint8 codes + :data:`SHIFT` (the sign bit flipped): MLAS's VNNI kernel multiplies
    unsigned by signed bytes, so an index holds its rows this way once, not flipped per recall (issue 42,
    decision 1)."""
    return np.bitwise_xor(codes.view(np.uint8), np.uint8(0x80))


def index_tokens(candidates: Sequence[TokenVectors]) -> TokenIndex:
    """Lay ``candidates`` out for :func:`index_scores` (their order is the scores' order)."""
    sizes = np.array([len(c.ids) for c in candidates], dtype=np.int64)
    filled = np.flatnonzero(sizes)
    present = [candidates[int(i)] for i in filled]
    dim = present[0].vectors.shape[1] if present else 1
    codes = bool(present) and all(c.vectors.dtype == np.int8 for c in present)
    rows = np.concatenate([c.vectors for c in present]) if present else np.zeros((0, dim), dtype=np.float32)
    rows = shift(rows) if codes else rows.astype(np.float32, copy=False)
    vocabulary, df = _document_frequencies(candidates)
    return TokenIndex(
        size=len(candidates),
        rows=rows,
        filled=filled,
        starts=np.concatenate([[0], np.cumsum(sizes[filled])[:-1]]).astype(np.int64),
        scales=np.array([c.scale for c in present], dtype=np.float32),
        vocabulary=vocabulary,
        df=df,
    )


class GrowingIndex:
    """A :class:`TokenIndex` that items can be appended to without copying the rows it holds (a
    scope's index, as its new items arrive): the same index :func:`index_tokens` would build from
    all of them, in their order."""

    def __init__(self, candidates: Sequence[TokenVectors]) -> None:
        first = index_tokens(candidates)
        self._rows = first.rows
        self._used = len(first.rows)
        self._sizes = [len(c.ids) for c in candidates]
        self._counts = np.zeros(0, dtype=np.int64)
        self._count(candidates)
        self.index = first

    def _count(self, candidates: Sequence[TokenVectors]) -> None:
        """Add each candidate's distinct tokens to the per-token-id document counts."""
        for c in candidates:
            if not len(c.ids):
                continue
            distinct = np.unique(c.ids).astype(np.int64)
            if distinct[-1] >= len(self._counts):
                grown = np.zeros(max(int(distinct[-1]) + 1, 2 * len(self._counts)), dtype=np.int64)
                grown[: len(self._counts)] = self._counts
                self._counts = grown
            self._counts[distinct] += 1

    def extend(self, more: Sequence[TokenVectors]) -> TokenIndex | None:
        """Append ``more`` (after every item already held) and return the index of them all; None
        when their rows cannot join these (another width or type, or nothing held had any): lay
        everything out again with a new :class:`GrowingIndex`."""
        present = [c for c in more if len(c.ids)]
        held = np.int8 if self._rows.dtype == np.uint8 else np.float32  # what each item's rows must be
        if present and (
            not self._used or any(c.vectors.shape[1:] != self._rows.shape[1:] or c.vectors.dtype != held
                                  for c in present)
        ):  # fmt: skip
            return None
        base, rows = self._used, sum(len(c.ids) for c in present)
        if base + rows > len(self._rows):
            grown = np.empty((max(base + rows, 2 * len(self._rows)), self._rows.shape[1]), self._rows.dtype)
            grown[:base] = self._rows[:base]
            self._rows = grown
        for c in present:
            self._rows[self._used : self._used + len(c.ids)] = shift(c.vectors) if held == np.int8 else c.vectors
            self._used += len(c.ids)
        start = len(self._sizes)
        self._sizes.extend(len(c.ids) for c in more)
        self._count(more)
        old = self.index
        added = np.array([start + n for n, c in enumerate(more) if len(c.ids)], dtype=np.int64)
        offsets = base + np.cumsum([0, *(len(c.ids) for c in present)])[:-1]
        vocabulary = np.flatnonzero(self._counts)
        self.index = TokenIndex(
            size=len(self._sizes),
            rows=self._rows[: self._used],
            filled=np.concatenate([old.filled, added]).astype(np.int64),
            starts=np.concatenate([old.starts, offsets]).astype(np.int64),
            scales=np.concatenate([old.scales, np.array([c.scale for c in present], dtype=np.float32)]),
            vocabulary=vocabulary,
            df=self._counts[vocabulary],
        )
        return self.index

    @property
    def nbytes(self) -> int:
        return self.index.nbytes - self.index.rows.nbytes + self._rows.nbytes + self._counts.nbytes


Int8Product = Callable[[np.ndarray, np.ndarray], np.ndarray]
"""``rows @ codes.T`` exactly, int8 codes ``(n, dim)`` (held shifted, :func:`shift`) by int8 ``(q, dim)``
into int32 ``(n, q)``: an
integer kernel (:func:`mnemo._onnx.int8_product`, VNNI where the CPU has it) handed in by the
caller, since this module computes without one (issue 42, decision 1)."""


def index_scores(query: TokenVectors, index: TokenIndex, product: Int8Product | None = None) -> np.ndarray:
    """Every indexed item's late score against the query, IDF-weighted over the indexed items:
    one matrix product over all their tokens, then each item's best match per query token.

    With ``product`` and int8 codes in the index, the query's unit rows become int8 codes too
    (:data:`QUANT`) and the product is int8 x int8 into int32 (issue 42, decision 1): exact
    integers, so every kernel gives the same scores, within ~0.005 of the float product's."""
    weights = _idf(query.ids, index.vocabulary, index.df, index.size)
    scores = np.zeros(index.size, dtype=np.float64)
    if len(query.ids) == 0 or len(index.filled) == 0 or float(weights.sum()) <= 0.0:
        return scores
    query_rows = np.asarray(query.vectors, dtype=np.float32) * np.float32(query.scale)
    # an item's scale is positive and shared by its tokens: apply it after the max
    if product is not None and index.rows.dtype == np.uint8:
        codes = np.clip(np.rint(query_rows * QUANT), -QUANT, QUANT).astype(np.int8)
        counts = product(index.rows, codes)  # (all item tokens, query tokens), int32
        best = np.maximum.reduceat(counts, index.starts, axis=0).astype(np.float32)
        best *= index.scales[:, None] / np.float32(QUANT)  # (filled items, query tokens)
    else:
        sims = _similarities(query_rows, index.rows)  # (all item tokens, query tokens)
        best = np.maximum.reduceat(sims, index.starts, axis=0) * index.scales[:, None]  # (filled items, query tokens)
    scores[index.filled] = (best.astype(np.float64) @ weights) / weights.sum()
    return scores


BLOCK = 4096
"""Item tokens converted to floats at a time: a block stays in cache between its conversion and
its product, so the int8 codes are the only thing read from memory (2.4x faster than converting
them all first)."""


def _similarities(query_rows: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``rows @ query_rows.T`` in float32, ``rows`` (floats, or shifted codes: :func:`shift`) converted
    block by block: the item tokens stream through the product as its long side, the few query tokens
    stay in cache (a third faster than the other orientation on two cores)."""
    columns = np.ascontiguousarray(query_rows.T)
    if rows.dtype == np.float32:
        return rows @ columns
    sims = np.empty((len(rows), len(query_rows)), dtype=np.float32)
    block = np.empty((min(BLOCK, len(rows)), rows.shape[1]), dtype=np.float32)
    for start in range(0, len(rows), BLOCK):
        part = rows[start : start + BLOCK]
        np.copyto(block[: len(part)], part, casting="unsafe")
        block[: len(part)] -= SHIFT
        np.matmul(block[: len(part)], columns, out=sims[start : start + len(part)])
    return sims


def late_scores(
    query: TokenVectors, candidates: Sequence[TokenVectors], product: Int8Product | None = None
) -> np.ndarray:
    """Every candidate's late score against the query, IDF-weighted over these candidates (int8
    codes through ``product`` as :func:`index_scores` says)."""
    return index_scores(query, index_tokens(candidates), product)


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
