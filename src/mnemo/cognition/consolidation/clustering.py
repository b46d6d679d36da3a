"""RAPTOR clustering of cortex blocks, as pure functions over vectors.

Seed: memory-architecture §5.4 (leaf blocks -> branch -> trunk -> canopy; the
seed names HDBSCAN). The RAPTOR paper reduces the vectors with UMAP, then
clusters with a Gaussian mixture whose number of components BIC chooses. The
default here is the same shape with scikit-learn's parts: a spectral embedding
of the k-nearest-neighbour graph (``reduce="spectral"``), then the BIC-chosen
mixture (``method="gmm"``), hard labels. Measured on the LoCoMo dev split with
``benchmarks/tree_clustering.py``: over PCA a scope's blocks (all near one
another) fall into one branch whatever the method; over the spectral
embedding the mixture's branches gather the blocks one question needs best
(evidence pairs share a branch 1.78x as often as chance, HDBSCAN's 1.61x), and
HDBSCAN splits even clearly separated groups (see the unit test). HDBSCAN
leaves noise points; here they join the nearest cluster, so every block has a
branch. Both take a seed.
"""

from __future__ import annotations

import warnings
from typing import Literal

import numpy as np

__all__ = ["Method", "Reduction", "cluster"]

Method = Literal["gmm", "hdbscan"]
Reduction = Literal["spectral", "pca"]


def _reduce(vectors: np.ndarray, dims: int, seed: int, how: Reduction = "spectral") -> np.ndarray:
    """``vectors`` in at most ``dims`` dimensions: a spectral embedding of their k-nearest-neighbour
    graph (k = sqrt(n), the neighbourhood RAPTOR gives UMAP), which keeps the local structure that
    a linear projection of a scope's blocks, all near one another, flattens into one blob; or PCA."""
    n, d = vectors.shape
    k = min(dims, n - 2, d)
    if k < 1:
        return vectors
    if how == "pca":
        from sklearn.decomposition import PCA

        return PCA(n_components=k, random_state=seed).fit_transform(vectors)
    from sklearn.manifold import SpectralEmbedding

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "graph is not fully connected": its parts embed apart, as wanted
        return SpectralEmbedding(
            n_components=k, affinity="nearest_neighbors", n_neighbors=max(2, int(np.sqrt(n - 1))), random_state=seed
        ).fit_transform(vectors)


def _grid(limit: int) -> list[int]:
    """1, 2, 3, 5, 8, 13, ... up to ``limit`` (and ``limit`` itself): the component counts tried."""
    out, a, b = [1], 2, 3
    while a <= limit:
        out.append(a)
        a, b = b, a + b
    return out if out[-1] == limit else [*out, limit] if limit > 1 else out


def _gmm(points: np.ndarray, max_clusters: int, seed: int) -> np.ndarray:
    """The mixture with the lowest BIC over 1..``max_clusters`` components; hard labels."""
    from sklearn.mixture import GaussianMixture

    best_labels = np.zeros(len(points), dtype=int)
    best_bic = np.inf
    for k in _grid(max_clusters):
        gmm = GaussianMixture(n_components=k, covariance_type="diag", random_state=seed, reg_covar=1e-4)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ConvergenceWarning on tiny inputs: the BIC still ranks it
            gmm.fit(points)
        bic = gmm.bic(points)
        if bic < best_bic:
            best_bic, best_labels = bic, gmm.predict(points)
    return best_labels


def _hdbscan(points: np.ndarray, min_size: int) -> np.ndarray:
    from sklearn.cluster import HDBSCAN

    labels = HDBSCAN(min_cluster_size=max(2, min_size), min_samples=2, copy=True).fit_predict(points)
    if (labels < 0).all():
        return np.zeros(len(points), dtype=int)
    centroids = {c: points[labels == c].mean(axis=0) for c in set(labels.tolist()) if c >= 0}
    for i in np.flatnonzero(labels < 0):  # noise joins the nearest cluster: every block has a branch
        labels[i] = min(centroids, key=lambda c: float(np.linalg.norm(points[i] - centroids[c])))
    return labels


def cluster(
    vectors: np.ndarray,
    *,
    method: Method = "gmm",
    min_size: int = 5,
    seed: int = 0,
    dims: int = 10,
    reduce: Reduction = "spectral",
) -> list[list[int]]:
    """Groups of row indices of ``vectors``, each at least ``min_size`` strong where the data allows
    (fewer than ``2 * min_size`` rows make one group), largest first, indices ascending."""
    n = len(vectors)
    if n == 0:
        return []
    if n < 2 * min_size:
        return [list(range(n))]
    points = _reduce(np.asarray(vectors, dtype=np.float64), dims, seed, reduce)
    labels = _hdbscan(points, min_size) if method == "hdbscan" else _gmm(points, max(1, min(n // min_size, 50)), seed)
    groups = [sorted(np.flatnonzero(labels == c).tolist()) for c in sorted(set(labels.tolist()))]
    return sorted((g for g in groups if g), key=lambda g: (-len(g), g[0]))
