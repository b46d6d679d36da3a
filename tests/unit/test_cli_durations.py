"""``mnemo token create --expires``: the durations it accepts and the ones it refuses (issue 12,
"expiry on create"); no database."""

from __future__ import annotations

from datetime import timedelta

import pytest

from mnemo.interfaces.cli.service import parse_duration


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("90m", timedelta(minutes=90)),
        ("12h", timedelta(hours=12)),
        ("30d", timedelta(days=30)),
        ("2w", timedelta(weeks=2)),
        (" 1D ", timedelta(days=1)),
        ("5200w", timedelta(weeks=5200)),
    ],
)
def test_accepted_durations(text: str, expected: timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("0", "is zero"),
        ("0d", "is zero"),
        ("000h", "is zero"),
        ("-1d", "is negative"),
        ("-30m", "is negative"),
        ("30", "has no unit"),
        ("-0d", "is zero"),
        ("-5", "is negative"),
        ("+5d", "not a duration"),
        ("d", "not a duration"),
        ("1.5h", "not a duration"),
        ("3y", "not a duration"),
        ("30 days", "not a duration"),
        ("", "not a duration"),
        ("soon", "not a duration"),
        ("5300w", "longer than 100 years"),
        ("99999999999999999999w", "longer than 100 years"),
    ],
)
def test_refused_durations(text: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        parse_duration(text)
