"""Time-aware queries: the period a question names, and which items fall in it (issue 14 item 2)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from mnemo.cognition.scoring.timeframe import in_window, query_window, span

AT = datetime(2023, 8, 20, 15, 30, tzinfo=UTC)
_days = st.datetimes(min_value=datetime(1990, 1, 1), max_value=datetime(2090, 12, 31), timezones=st.just(UTC)).map(
    lambda d: d.replace(hour=0, minute=0, second=0, microsecond=0)
)


@given(_days, st.sampled_from(["day", "week", "month", "year"]))
def test_a_span_starts_where_its_time_does_and_lasts_its_precision(start: datetime, precision: str) -> None:
    a, b = span(start, precision)  # type: ignore[arg-type]
    assert a == start < b
    lengths = {"day": (1, 1), "week": (7, 7), "month": (1, 31), "year": (1, 366)}
    low, high = lengths[precision]
    assert timedelta(days=low) <= b - a <= timedelta(days=high)
    if precision in ("month", "year"):
        assert b.day == 1 and (precision == "month" or b.month == 1)


def test_the_period_a_question_names() -> None:
    assert query_window("What did Maria donate in December 2023?", AT) == (
        datetime(2023, 12, 1, tzinfo=UTC),
        datetime(2024, 1, 1, tzinfo=UTC),
    )
    assert query_window("What did Gina find on 1 February, 2023?", AT) == (
        datetime(2023, 2, 1, tzinfo=UTC),
        datetime(2023, 2, 2, tzinfo=UTC),
    )
    # relative to when it is asked, looking back
    assert query_window("When did Melanie go camping in June?", AT) == (
        datetime(2023, 6, 1, tzinfo=UTC),
        datetime(2023, 7, 1, tzinfo=UTC),
    )
    start, end = query_window("What did John do yesterday?", AT)  # type: ignore[misc]
    assert (start, end) == (datetime(2023, 8, 19, tzinfo=UTC), datetime(2023, 8, 20, tzinfo=UTC))
    assert query_window("What is Caroline's identity?", AT) is None


def test_an_item_is_of_a_period_by_its_own_time_or_a_time_it_speaks_of() -> None:
    june = query_window("in June 2023", AT)
    assert june is not None
    assert in_window(june, "Nice weather", datetime(2023, 6, 14, 9, tzinfo=UTC))
    assert not in_window(june, "Nice weather", datetime(2023, 7, 3, tzinfo=UTC))
    # told in July about June: "last month" resolved against the item's own time
    assert in_window(june, "We went camping last month", datetime(2023, 7, 3, tzinfo=UTC))
    assert not in_window(june, "We went camping last week", datetime(2023, 7, 20, tzinfo=UTC))
    assert in_window(june, "It was on 5 June 2023", None)


@given(_days, _days)
def test_an_items_day_is_in_a_window_exactly_when_they_overlap(day: datetime, start: datetime) -> None:
    window = span(start, "week")
    assert in_window(window, "", day) == (window[0] <= day < window[1])
