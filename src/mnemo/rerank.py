"""A local cross-encoder for re-ranking recall's head, when one is configured (issue 14 item 1).

Seed: cognitive-plan §2.6 (re-ranking the top hybrid results with a finer scorer). mnemo ships
no cross-encoder, and never downloads one: ``reranker`` names a directory that holds a
sentence-transformers ``CrossEncoder`` (``modules.json``/``config.json`` and weights). When it
is set, the late-interaction stage scores the head with it instead of MaxSim.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mnemo.errors import ConfigurationError, EmbedderError

__all__ = ["Reranker", "load_reranker"]


class Reranker:
    """A sentence-transformers cross-encoder read from a local directory, loaded on first use."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                from mnemo.embed import _offline_env

                _offline_env()
                try:
                    from sentence_transformers import CrossEncoder

                    self._model = CrossEncoder(str(self.path), local_files_only=True, device="cpu")
                except Exception as exc:
                    raise EmbedderError(f"cannot load the cross-encoder at {self.path}: {exc}") from exc
            return self._model

    def _predict(self, query: str, texts: Sequence[str]) -> np.ndarray:
        model = self._load()
        scores = model.predict([(query, t) for t in texts], show_progress_bar=False, convert_to_numpy=True)
        return np.asarray(scores, dtype=np.float64).reshape(len(texts), -1)[:, -1]

    async def scores(self, query: str, texts: Sequence[str]) -> np.ndarray:
        """One relevance score per text for ``query`` (higher is more relevant)."""
        if not texts:
            return np.zeros(0, dtype=np.float64)
        return await asyncio.to_thread(self._predict, query, list(texts))


def load_reranker(path: Path | None) -> Reranker | None:
    """The configured cross-encoder (checked to be a local model directory now, loaded on first
    use), or None when none is configured."""
    if path is None:
        return None
    if not (path / "config.json").is_file():
        raise ConfigurationError(
            f"reranker {path} is not a local model directory (no config.json there); "
            "mnemo never downloads models: point it at a sentence-transformers CrossEncoder saved on disk"
        )
    return Reranker(path)
