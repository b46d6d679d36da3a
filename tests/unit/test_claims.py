"""What is current (issue 40 item 2): claims, supersession, endings, and the reorderings recall
makes of them (:mod:`mnemo.cognition.scoring.claims`)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemo.cognition.consolidation.extraction import TurnText, single_valued
from mnemo.cognition.scoring.claims import (
    Claim,
    Said,
    asks_about_now,
    changes_first,
    claims_of,
    endings,
    move_above,
    stale_mentions,
    successors,
    supersedes,
)

T0 = datetime(2025, 1, 1, tzinfo=UTC)


def _said(texts: list[str]) -> tuple[list[uuid.UUID], list[Claim]]:
    ids = [uuid.uuid4() for _ in texts]
    at = [T0 + timedelta(days=30 * n) for n in range(len(texts))]
    turns = [(i, TurnText("Maya", "user", t, when)) for i, t, when in zip(ids, texts, at, strict=True)]
    return ids, claims_of(turns, single_valued)


def _claim(slot: str, value: str, day: int, *, negated: bool = False, single: bool = True) -> Claim:
    return Claim(uuid.uuid4(), slot.ljust(64, "0"), value, negated, single, T0 + timedelta(days=day))


def test_a_new_home_supersedes_the_old_one_and_the_move_is_its_successor() -> None:
    ids, claims = _said(["I live in Madrid, near the park.", "I moved from Madrid to Dublin in June."])
    assert successors(ids, claims) == {ids[0]: ids[1]}


def test_quitting_one_job_does_not_make_the_new_one_stale() -> None:
    ids, claims = _said(
        ["I work at Globex as a tester.", "I started a new job at Initech last week!", "I quit my job at Globex."]
    )
    assert successors(ids, claims) == {ids[0]: ids[1]}  # Globex: replaced by Initech; Initech: current


def test_a_stated_value_is_preferred_to_a_bare_ending() -> None:
    ids, claims = _said(["I live in Madrid.", "We've moved to Dublin, the flat is tiny.", "I no longer live in Madrid"])
    assert successors(ids, claims)[ids[0]] == ids[1]


def test_a_hobby_ends_only_by_its_own_ending() -> None:
    ids, claims = _said(["I play padel every Saturday.", "I like hiking in the hills.", "I stopped playing padel."])
    assert successors(ids, claims) == {ids[0]: ids[2]}


@given(st.booleans(), st.booleans(), st.booleans(), st.integers(-5, 5))
def test_nothing_supersedes_what_was_said_after_it_or_in_another_slot(
    new_negated: bool, old_negated: bool, single: bool, days: int
) -> None:
    old = _claim("a", "madrid", 10, negated=old_negated, single=single)
    new = _claim("a", "dublin", 10 + days, negated=new_negated, single=single)
    other = _claim("b", "dublin", 20, negated=new_negated, single=single)
    assert not supersedes(other, old)
    if days <= 0:
        assert not supersedes(new, old)
    assert not (supersedes(new, old) and supersedes(old, new))


def test_a_value_said_again_after_its_ending_comes_back() -> None:
    gave_up = _claim("a", "padel", 10, negated=True, single=False)
    back = _claim("a", "padel", 20, single=False)
    assert supersedes(back, gave_up)
    assert endings([gave_up, back]) == []


def test_an_item_that_names_an_ended_value_points_to_what_holds_now() -> None:
    ids, claims = _said(["I live in Osaka with two flatmates.", "I've moved from Osaka to Tokyo, my own apartment."])
    mention = uuid.uuid4()
    texts = {mention: "the flatmates in our shared flat in osaka play music", ids[1]: "moved from osaka to tokyo"}
    assert stale_mentions(texts, endings(claims)) == {mention: ids[1]}


def test_a_successor_moves_right_above_the_first_stale_item_and_nothing_else_moves() -> None:
    a, b, c, d, new = (uuid.uuid4() for _ in range(5))
    assert move_above([a, b, c, d], {b: new, d: new}) == [a, new, b, c, d]
    assert move_above([a, b, c, d], {c: b}) == [a, b, c, d]  # already above
    assert move_above([a, b, c, d], {b: d}) == [a, d, b, c]
    # with tiers: at the head of the stale item's tier (the latest of what is about as relevant first)
    assert move_above([a, b, c, d], {c: new}, {a: 0, b: 1, c: 1, d: 2}) == [a, new, b, c, d]
    assert move_above([a, b, c, d], {c: d}, {a: 0, b: 1, c: 1, d: 2}) == [a, d, b, c]


@given(st.permutations(range(6)), st.dictionaries(st.integers(0, 5), st.integers(0, 7), max_size=4))
def test_moving_successors_keeps_every_item_once(order: list[int], current: dict[int, int]) -> None:
    ids = [uuid.UUID(int=i + 1) for i in range(8)]
    moved = move_above([ids[i] for i in order], {ids[k]: ids[v] for k, v in current.items()})
    assert len(moved) == len(set(moved))
    assert {ids[i] for i in order} <= set(moved)


def test_a_later_statement_of_change_about_the_same_name_comes_first() -> None:
    old = Said(uuid.uuid4(), "Other news: Daifuku, my hamster, learned to open his cage.", T0, own=True)
    other = Said(uuid.uuid4(), "We went to Kyoto for the weekend.", T0 + timedelta(days=10), own=True)
    died = Said(uuid.uuid4(), "Sad thing, though: Daifuku died last week.", T0 + timedelta(days=60), own=True)
    assert changes_first([old, other, died], 5) == [died.id, old.id, other.id]


@pytest.mark.parametrize(
    "later",
    [
        Said(uuid.uuid4(), "Sad thing, though: Daifuku died last week.", T0 - timedelta(days=1), own=True),  # older
        Said(uuid.uuid4(), "Sad thing, though: Kuro died last week.", T0 + timedelta(days=60), own=True),  # other name
        Said(uuid.uuid4(), "Sad thing, though: Daifuku died last week.", T0 + timedelta(days=60), own=False),  # not own
        Said(uuid.uuid4(), "Daifuku is eating well these days? No: Daifuku is fine.", None, own=True),  # no time
    ],
)
def test_no_change_statement_moves_without_a_reason(later: Said) -> None:
    old = Said(uuid.uuid4(), "Other news: Daifuku, my hamster, learned to open his cage.", T0, own=True)
    assert changes_first([old, later], 5) == [old.id, later.id]


def test_a_change_statement_moves_only_within_the_window() -> None:
    old = Said(uuid.uuid4(), "My teacher is called Sarah.", T0, own=True)
    fillers = [Said(uuid.uuid4(), f"Filler {n}.", T0, own=False) for n in range(5)]
    later = Said(uuid.uuid4(), "Sadly Sarah has stopped teaching.", T0 + timedelta(days=90), own=True)
    assert changes_first([old, *fillers, later], 5)[0] == old.id
    assert changes_first([old, *fillers, later], 7)[0] == later.id


@pytest.mark.parametrize(
    ("question", "now"),
    [
        ("Where does Maya live?", True),
        ("Does Maya still play padel?", True),
        ("What is Maya's job currently?", True),
        ("Where did Maya live before the move?", False),
        ("What did Maya do in 2023?", False),
        ("Where was Maya working last year?", False),
        ("Where does Maya live now, after she used to live in Madrid?", True),
    ],
)
def test_a_question_about_now(question: str, now: bool) -> None:
    assert asks_about_now(question) is now


# --- the live claims, laid out without comparing every pair (issue 42's million-item run) ----------
_a_claim = st.builds(
    lambda turn, value, negated, single, day: Claim(
        uuid.UUID(int=turn), "maya|lives in", value, negated, single, T0 + timedelta(days=day)
    ),
    st.integers(0, 6),
    st.sampled_from(["", "lisbon", "porto", "lisbon old town", "padel", "padel every saturday"]),
    st.booleans(),
    st.booleans(),
    st.integers(0, 5),  # few days: many claims said at the same time
)


@given(st.lists(_a_claim, max_size=25))
def test_live_claims_are_those_no_later_claim_supersedes(slot: list[Claim]) -> None:
    from mnemo.cognition.scoring.claims import _live, book

    assert _live(slot) == [c for c in slot if not any(supersedes(n, c) for n in slot)]
    ids = list(dict.fromkeys(c.turn_id for c in slot))
    assert successors(ids, book(slot)) == successors(ids, slot) and endings(book(slot)) == endings(slot)


def test_a_slot_said_many_times_is_laid_out_from_its_distinct_statements() -> None:
    from mnemo.cognition.scoring.claims import _live

    # 3,000 claims of three statements: comparing every pair would take ~9 million supersedes calls
    values = ["lisbon", "porto", "lisbon"]
    slot = [
        Claim(uuid.UUID(int=n), "maya|lives in", values[n % 3], False, True, T0 + timedelta(hours=n))
        for n in range(3000)
    ]
    assert _live(slot) == [slot[-1]]  # a one-value slot: only the last said holds
