"""The offline responder's rules: question or statement, and the statement said back (issue 28 item 8)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemo.cognition.text.utterances import AUX, WH, acknowledgement, is_question, recital, second_person, told

SUBJECT = st.sampled_from(["I", "my sister", "Lena", "we", "the dog", "my brother Tomas", "our neighbours"])
BODY = st.sampled_from(
    ["allergic to peanuts", "living in Rotterdam", "a nurse", "called Pixel", "in Lisbon in May", "vegetarian"]
)
VERB = st.sampled_from(["live in Berlin", "drive a blue Volvo", "speak Portuguese", "like rock climbing"])
END = st.sampled_from(["", ".", "!", " "])
COMMA = st.sampled_from(["", "So, ", "And ", "Hey, ", "ok "])


@given(SUBJECT, BODY, END)
def test_a_plain_statement_is_not_a_question(subject: str, body: str, end: str) -> None:
    be = {"I": "am", "we": "are", "our neighbours": "are"}.get(subject, "is")
    assert not is_question(f"{subject} {be} {body}{end}")


@given(SUBJECT, VERB, END)
def test_a_statement_with_any_verb_is_not_a_question(subject: str, verb: str, end: str) -> None:
    assert not is_question(f"{subject} {verb}{end}")


@given(st.sampled_from(sorted(WH)), st.sampled_from(["is", "do", "does", "did", "can", "was"]), SUBJECT, END, COMMA)
def test_an_interrogative_opening_is_a_question_with_or_without_its_mark(
    wh: str, aux: str, subject: str, end: str, lead: str
) -> None:
    text = f"{lead}{wh} {aux} {subject} like{end}"
    assert is_question(text) and is_question(text.lower()) and is_question(text.rstrip(".! ") + "?")


@given(st.sampled_from(sorted(AUX - {"have", "has", "had"})), SUBJECT, BODY, END)
def test_auxiliary_inversion_is_a_question(aux: str, subject: str, body: str, end: str) -> None:
    assert is_question(f"{aux.capitalize()} {subject} {body}{end}")


@given(st.text(max_size=60), st.sampled_from(["?", "? ", "?\n", '?"', "?!"]))
def test_a_question_mark_that_ends_a_sentence_makes_a_question(text: str, mark: str) -> None:
    assert is_question(text + mark)
    assert is_question(f"I live in Berlin. {text}{mark}")  # one asking sentence is enough


@given(st.sampled_from(["When", "What", "Where", "Which"]), SUBJECT, VERB)
def test_a_wh_clause_before_its_subject_is_a_statement(wh: str, subject: str, verb: str) -> None:
    """ "When I was young, ..." / "What my sister likes is ..." open with a wh-word and assert."""
    assert not is_question(f"{wh} {subject} {verb}, nothing changed.")


@pytest.mark.parametrize(
    "text",
    [
        "What am I allergic to?",
        "what am I allergic to",
        "what's my dog's name",
        "Which car do I drive",
        "How old am I",
        "What kind of car do I drive",
        "Do I have a dog",
        "Does Lena eat meat",
        "Tell me where I live.",
        "Remind me of my birthday",
        "So, where do I work",
        "Can you remind me what I do for a living",
        "Am I allergic to anything",
        "I live in Berlin. Where do I work",
    ],
)
def test_questions(text: str) -> None:
    assert is_question(text)


@pytest.mark.parametrize(
    "text",
    [
        "I am allergic to peanuts.",
        "When I was young, I lived in Paris.",
        "What my sister likes is chocolate.",
        "Have a nice day.",
        "Will is my brother.",
        "May is my favourite month.",
        "Do not forget the milk.",
        "Where Lena lives is far away.",
        "The shop's site is https://example.com/?q=1 now.",
        "",
    ],
)
def test_statements(text: str) -> None:
    assert not is_question(text)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("I am allergic to peanuts.", "Noted: you are allergic to peanuts."),
        ("My dog is called Pixel", "Noted: your dog is called Pixel."),
        ("Remember that my sister Lena is vegetarian!", "Noted: your sister Lena is vegetarian."),
        ("Remember I'm a nurse.", "Noted: you're a nurse."),
        ("FYI, my car is a blue Volvo.", "Noted: your car is a blue Volvo."),
        ("When I was young, I lived in Paris.", "Noted: when you were young, you lived in Paris."),
        ("Lena and I were at school together.", "Noted: Lena and you were at school together."),
        ("We moved to the US last year.", "Noted: you moved to the US last year."),
        ("I wake at 7 am.", "Noted: you wake at 7 am."),
        ("Maya's bike is a red Gazelle.", "Noted: Maya's bike is a red Gazelle."),
        ("I told you my dog is Pixel.", 'Noted: you said "I told you my dog is Pixel."'),  # not simple: quoted
        ("Remember to buy milk.", "Noted: Remember to buy milk."),  # a request, not a "remember that"
    ],
)
def test_a_statement_is_acknowledged_from_the_listeners_side(text: str, said: str) -> None:
    assert acknowledgement(text) == said
    assert recital(text) == said.replace("Noted:", "From memory:", 1)


FIRST_PERSON = re.compile(r"\b(?:I|me|my|mine|myself|I['’](?:m|ve|ll|d))\b")


TURNS = {("I", "you"), ("my", "your"), ("me", "you"), ("mine", "yours"), ("we", "you"), ("our", "your"),
         ("am", "are"), ("was", "were")}  # fmt: skip
WORDS = ["I", "my", "me", "mine", "Lena", "dog", "am", "was", "and", "we", "our", "."]


@given(st.lists(st.sampled_from(WORDS), max_size=12))
def test_second_person_turns_only_first_person_and_its_be_and_leaves_none(words: list[str]) -> None:
    turned = second_person(" ".join(words))
    assert turned is not None and not FIRST_PERSON.search(turned)
    out = turned.split()
    assert len(out) == len(words)
    for before, (word, new) in zip([".", *words], zip(words, out, strict=True), strict=False):
        assert new == word or (word, new.lower()) in TURNS
        if word in ("am", "was") and before == "I":  # "I am" -> "you are", "I was" -> "you were"
            assert new in ("are", "were")


@given(st.text(max_size=80))
def test_every_text_gets_an_acknowledgement_and_a_verdict(text: str) -> None:
    assert isinstance(is_question(text), bool)
    said = acknowledgement(text)
    assert said.startswith("Noted: ") and said.endswith((".", '"'))
    assert recital(text).startswith("From memory: ")
    assert told(text) == told(text)


@given(st.text(alphabet="abcdefgHIJKLM ,'", max_size=40))
def test_text_that_says_you_is_quoted_not_rewritten(text: str) -> None:
    said = acknowledgement(f"I told you {text}")
    assert said.startswith('Noted: you said "I told you')
