"""Okapi BM25's per-posting weight, shared by the in-database scorer and the read index.

Seed: cognitive-plan §2.5 (a lexical retriever beside the dense one). With ``N`` documents in the
scope, ``df`` of them holding the term and an average length ``avgdl``, a posting of term
frequency ``tf`` in a document of length ``dl`` weighs

    ln(1 + (N - df + 0.5) / (df + 0.5)) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl)),

and a document's score is the sum over the query's distinct terms. :mod:`mnemo.store.lexicon`
computes the same in SQL; the two agree to float64 rounding.
"""

from __future__ import annotations

import numpy as np

__all__ = ["K1", "B", "average_length", "bm25_weights"]

K1 = 1.2
B = 0.75


def average_length(docs: int, total_len: int) -> float:
    """The scope's average document length, as the SQL scorer takes it (never below 1 / docs)."""
    return float(max(total_len, 1)) / float(max(docs, 1))


def bm25_weights(tf: np.ndarray, doc_len: np.ndarray, df: int, docs: int, avgdl: float) -> np.ndarray:
    """Each posting's BM25 weight for one term held by ``df`` of the scope's ``docs`` documents."""
    idf = np.log(1.0 + (docs - df + 0.5) / (df + 0.5))
    return idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * doc_len / avgdl))
