"""Long items as overlapping passages, so vector search sees all of them (issue 14 item 6).

Seed: cognitive-plan §2.5 (dense retrieval beside lexical). An embedding model reads a bounded
number of tokens (MiniLM: 256) and silently drops the rest, while BM25 sees every word: the
tail of a long assistant answer is invisible to the vector retriever. An item longer than the
model's window is therefore also embedded as passages: windows of the model's width, each
starting half a window after the previous one, so every stretch of the text is read whole by
at least one window. The item's own vector already covers the first window; the passages are
the windows after it. An item is then as similar to a query as its most similar vector.

Nothing here is tuned: the window is the model's declared maximum, less the tokens its special
tokens and the item's prefix take; the stride is half of it (every boundary falls inside some
window's middle).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["passage_spans"]


def passage_spans(offsets: Sequence[tuple[int, int]], window: int) -> list[tuple[int, int]]:
    """The character spans of the passages after the first window, for a text whose tokens sit at
    ``offsets`` (``(start, end)`` characters each): windows of ``window`` tokens every
    ``window // 2`` tokens, until one reaches the last token. Empty when the text fits one window."""
    if window < 2:
        raise ValueError(f"a passage window needs at least 2 tokens, not {window}")
    n = len(offsets)
    stride = window // 2
    spans: list[tuple[int, int]] = []
    start = stride
    while start - stride + window < n:  # the previous window stopped short of the end
        end = min(start + window, n)
        spans.append((offsets[start][0], offsets[end - 1][1]))
        start += stride
    return spans
