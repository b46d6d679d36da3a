"""The offline agent's answer composition (issue 40 item 8): which statement speaks of what a
question asks, when it was said, and how it says it does not know."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from mnemo.cognition.mind.answering import dont_know, recital_when, said_when, supports

NOW = datetime(2025, 6, 1, 12, tzinfo=UTC)


@pytest.mark.parametrize(
    ("question", "statement"),
    [
        ("Where do I live now?", "We've relocated to Porto, the new flat is lovely."),  # the claimed slot
        ("Where do I live now?", "I moved to Porto last week."),
        ("What is my job?", "I work as a nurse at the children's hospital."),  # an everyday word of the slot
        ("What is my brother's name?", "My brother is called Tomas."),  # the possessive kept
        ("Do I still play padel?", "I quit padel, my knee couldn't take it anymore."),
        ("What bike does Maya ride?", "Maya's bike is a red Gazelle."),
        ("Have I ever been to Japan?", "We spent two weeks in Japan in April."),  # only a name: it must be there
    ],
)
def test_a_statement_about_what_is_asked_supports_it(question: str, statement: str) -> None:
    assert supports(question, statement)


@pytest.mark.parametrize(
    ("question", "statement"),
    [
        ("What is my brother's name?", "My dog is called Pixel."),
        ("What is my blood type?", "I work as a nurse at the children's hospital."),
        ("What is Ana's blood type?", "My partner Ana works at a bakery downtown."),  # a name alone is no support
        ("What car do I drive?", "I changed careers last spring."),  # "car" is not a prefix of "career"
        ("Have I ever been to Japan?", "I live in Lisbon."),
    ],
)
def test_a_statement_about_something_else_does_not(question: str, statement: str) -> None:
    assert not supports(question, statement)


def test_when_it_was_said_reads_as_a_person_says_it() -> None:
    ages = [0.5, 1.5, 3, 8, 20, 120, 400, 900]
    said = [said_when(NOW - timedelta(days=d), NOW) for d in ages]
    assert said == [None, "yesterday", "3 days ago", "last week", "2 weeks ago", "4 months ago",
                    "over a year ago", "2 years ago"]  # fmt: skip


def test_an_older_statement_is_told_with_its_age_and_its_own_times_as_of_then() -> None:
    week_ago = NOW - timedelta(days=8)
    assert recital_when("I moved to Porto last week.", week_ago, NOW) == (
        "You said last week that you moved to Porto the week before."
    )
    assert recital_when("I moved to Porto last week.", NOW - timedelta(hours=2), NOW) == (
        "From memory: you moved to Porto last week."
    )
    assert recital_when("Maya's bike is a red Gazelle.", week_ago, NOW, theirs=False) == (
        "From memory (as of last week): Maya's bike is a red Gazelle."
    )
    assert recital_when("You know I hate mornings.", week_ago, NOW) == 'You said last week: "You know I hate mornings."'


@pytest.mark.parametrize(
    ("question", "said"),
    [
        ("What is my blood type?", "I don't know your blood type — you haven't told me."),
        ("what's my brother's name", "I don't know your brother's name — you haven't told me."),
        ("Who is my dentist?", "I don't know who your dentist is — you haven't told me."),
        ("Which football team do I support?", "I don't know which football team you support — you haven't told me."),
        ("Have I ever been to Japan?", "I don't know — you haven't told me that."),
    ],
)
def test_a_never_said_thing_about_the_user_is_not_known(question: str, said: str) -> None:
    assert dont_know(question) == said


def test_not_knowing_names_what_nothing_mentions_and_leaves_other_questions_to_the_caller() -> None:
    assert dont_know("Did I ever go to Kyoto?", ["Kyoto"]) == "I don't know — you haven't told me anything about Kyoto."
    assert dont_know("What is the capital of Mongolia?") is None
