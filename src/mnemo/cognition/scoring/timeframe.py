"""Time-aware queries: the period a question asks about, and whether an item falls in it.

Seed: cognitive-plan §2.5 (hybrid retrieval with metadata), memory-architecture §1.2 (episodes
are bound to when they happened). "What did Maria donate in December 2023?", "Where did John
go last weekend?": the time expression (:mod:`mnemo.cognition.text.timex`) is resolved against the
time the question is asked at (``as_of``, default now) to a window, and a candidate is *in*
it when its time (a turn's, a memory's event time) or a time its text speaks of ("we went
camping last month", resolved against the item's own time) falls there. Recall then lifts the
candidates in the window above the others (:func:`mnemo.recall.rank.time_frame`): a question that
names a period asks about that period.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

from mnemo.cognition.text.timex import Precision, find_times, first_time, resolve_time

__all__ = ["in_window", "query_window", "span"]


def span(start: datetime, precision: Precision) -> tuple[datetime, datetime]:
    """The half-open interval a resolved time covers: its day, week, month or year (a time
    without a zone, as an absolute date with no reference resolves, is taken as UTC)."""
    if start.tzinfo is None:
        start = start.replace(tzinfo=UTC)
    if precision == "day":
        return start, start + timedelta(days=1)
    if precision == "week":
        return start, start + timedelta(days=7)
    if precision == "month":
        year, month = divmod(start.month, 12)
        return start, start.replace(year=start.year + year, month=month + 1, day=1)
    return start, start.replace(year=start.year + 1, month=1, day=1)


def query_window(text: str, at: datetime) -> tuple[datetime, datetime] | None:
    """The period the question's first time expression names, resolved against ``at`` looking
    back (a question asks about what happened); None when it names none."""
    resolved = first_time(text, at, "past")
    return None if resolved is None else span(*resolved)


def item_times(content: str, at: datetime | None) -> Iterable[tuple[datetime, datetime]]:
    """The periods an item is about: its own time's day and each time its text speaks of."""
    if at is not None:
        yield span(at.replace(hour=0, minute=0, second=0, microsecond=0), "day")
    yield from _spoken_of(content, at)


@functools.lru_cache(maxsize=1 << 16)
def _spoken_of(content: str, at: datetime | None) -> tuple[tuple[datetime, datetime], ...]:
    """The periods ``content`` speaks of, resolved against ``at`` (remembered: the same candidates
    come back query after query, and an item's text and time never change)."""
    found = (resolve_time(kind, match, at, "past") for _start, _end, kind, match in find_times(content))
    return tuple(span(*resolved) for resolved in found if resolved is not None)


def in_window(window: tuple[datetime, datetime], content: str, at: datetime | None) -> bool:
    """Whether any period the item is about overlaps ``window``."""
    start, end = window
    return any(a < end and start < b for a, b in item_times(content, at))
