"""The pure half of a turn's content identity (issue 39 item 3; mnemo.cognition.text.turn_identity)."""

from __future__ import annotations

from datetime import UTC, datetime

from mnemo.cognition.text.turn_identity import content_identity, key_identity, turn_identities
from mnemo.models import TurnInput

AT = datetime(2024, 5, 1, 10, 0, tzinfo=UTC)


def test_identical_turns_of_one_write_are_counted_apart_and_a_second_write_matches_the_first() -> None:
    turns = [TurnInput("s", "user", "ok", created_at=AT), TurnInput("s", "user", "ok", created_at=AT)]
    first = turn_identities(turns, live=False)
    assert first[0] != first[1] and turn_identities(turns, live=False) == first
    assert first == [content_identity("s", "user", AT, "ok", 0), content_identity("s", "user", AT, "ok", 1)]


def test_every_field_and_the_time_change_the_identity() -> None:
    base = content_identity("s", "user", AT, "hello", 0)
    others = [
        content_identity("t", "user", AT, "hello", 0),
        content_identity("s", "assistant", AT, "hello", 0),
        content_identity("s", "user", AT.replace(microsecond=1), "hello", 0),
        content_identity("s", "user", None, "hello", 0),
        content_identity("s", "user", AT, "hello!", 0),
        content_identity("s1", "user", AT, "hello", 0),  # no ambiguity from where a field ends
    ]
    assert len({base, *others}) == 7 and base.startswith("sha256:")


def test_a_key_wins_and_a_live_untimed_turn_waits_for_its_stamp() -> None:
    keyed = TurnInput("s", "user", "hi", idempotency_key="m-1")
    untimed = TurnInput("s", "user", "hi")
    assert turn_identities([keyed, untimed], live=True) == [key_identity("m-1"), None]
    assert turn_identities([untimed], live=True, now=AT) == [content_identity("s", "user", AT, "hi", 0)]
    assert turn_identities([untimed], live=False) == [content_identity("s", "user", None, "hi", 0)]
