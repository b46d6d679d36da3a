"""Embedding for the write path: an item's vector and, when late interaction re-ranks recall, its
token embeddings from the same forward pass (cognitive-plan §2.6), so no recall has to read it again."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mnemo._runtime import Runtime
from mnemo.cognition.late import TokenVectors

__all__ = ["embed_with_tokens", "reads_tokens"]


def reads_tokens(rt: Runtime) -> bool:
    """Whether items' token embeddings are kept: late interaction is on and the embedder gives them."""
    return rt.settings.late_interaction and rt.embeddings.reads_tokens


async def embed_with_tokens(rt: Runtime, texts: Sequence[str]) -> tuple[np.ndarray, list[TokenVectors] | None]:
    """``texts``' document vectors, with their token embeddings when :func:`reads_tokens`."""
    if reads_tokens(rt):
        return await rt.embeddings.embed_documents_with_tokens(texts)
    return await rt.embeddings.embed_documents(texts), None
