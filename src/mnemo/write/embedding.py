"""Embedding for the write path: an item's vector and, from the same forward pass, its token
embeddings when late interaction re-ranks recall (cognitive-plan §2.6); and, for an item longer
than the model reads, the vectors of its later passages (§2.5, :mod:`mnemo.cognition.text.passages`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mnemo._runtime import Runtime
from mnemo.cognition.scoring.late import TokenVectors

__all__ = ["Embedded", "embed_items", "embed_with_tokens"]


async def embed_with_tokens(rt: Runtime, texts: Sequence[str]) -> tuple[np.ndarray, list[TokenVectors] | None]:
    """``texts``' document vectors, with their token embeddings when :attr:`Runtime.reads_tokens`."""
    if rt.reads_tokens:
        return await rt.embeddings.embed_documents_with_tokens(texts)
    return await rt.embeddings.embed_documents(texts), None


@dataclass(frozen=True, slots=True)
class Embedded:
    """What the write path stores for a batch of items, in their order."""

    vectors: np.ndarray
    """One vector per item, of its text (the first model window of a long one)."""
    tokens: list[TokenVectors] | None
    """Each item's token embeddings (late interaction), or None when they are not kept."""
    passages: list[list[np.ndarray]]
    """Each item's passage vectors after the first window (empty for most items)."""


async def embed_items(rt: Runtime, items: Sequence[tuple[str, str]]) -> Embedded:
    """Embed ``(content, prefix)`` items (the prefix: ``"Speaker: "`` or a memory-kind prefix, as
    :meth:`~mnemo.embed.Embeddings.turn_text` and ``document_text`` make them)."""
    vectors, tokens = await embed_with_tokens(rt, [prefix + content for content, prefix in items])
    windows = (
        [rt.embeddings.passages(content, prefix) for content, prefix in items]
        if rt.settings.passages
        else [[] for _ in items]
    )
    flat = [text for texts in windows for text in texts]
    embedded = list(await rt.embeddings.embed_documents(flat)) if flat else []
    passages: list[list[np.ndarray]] = []
    for texts in windows:
        passages.append(embedded[: len(texts)])
        del embedded[: len(texts)]
    return Embedded(vectors, tokens, passages)
