"""LoCoMo date parsing for bulk import (no database; the import itself: tests/integration/test_import.py)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from mnemo.write.formats import parse_locomo_date


def test_locomo_dates() -> None:
    assert parse_locomo_date("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert parse_locomo_date("12:09 am on 13 September, 2023") == datetime(2023, 9, 13, 0, 9, tzinfo=UTC)
    assert parse_locomo_date("12:30 pm on 1 January, 2024").hour == 12
    with pytest.raises(ValueError):
        parse_locomo_date("yesterday")
