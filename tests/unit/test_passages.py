"""Passage windows over long items (issue 14 item 6)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemo.cognition.text.passages import passage_spans


def _offsets(n: int) -> list[tuple[int, int]]:
    return [(4 * i, 4 * i + 3) for i in range(n)]  # token i is characters 4i..4i+3


@given(st.integers(0, 400), st.integers(2, 64))
def test_every_token_is_read_by_some_window_and_windows_overlap_by_half(n: int, window: int) -> None:
    offsets = _offsets(n)
    spans = passage_spans(offsets, window)
    if n <= window:
        assert spans == []  # the item's own vector reads it all
        return
    covered = set(range(min(n, window)))  # the first window: the item's own vector
    for start_char, end_char in spans:
        first, last = start_char // 4, (end_char - 3) // 4
        assert first % (window // 2) == 0 and last - first + 1 <= window
        covered |= set(range(first, last + 1))
    assert covered == set(range(n))
    assert spans[-1][1] == offsets[-1][1]  # the last passage reaches the end
    starts = [s // 4 for s, _ in spans]
    assert starts == sorted(starts) and len(set(starts)) == len(starts)
    # no passage is wasted: each one reads tokens the windows before it did not
    assert all(s - window // 2 + window < n for s in starts)


def test_a_window_must_hold_two_tokens() -> None:
    with pytest.raises(ValueError, match="at least 2"):
        passage_spans(_offsets(10), 1)
