"""The refusal's evidence: the names a question is about, and the verdict (issue 14 item 5)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemo.cognition.refusal import Verdict, judge, proper_names


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("When did Caroline go to the LGBTQ support group?", ["Caroline", "LGBTQ"]),
        ("What is Caroline's identity?", ["Caroline"]),
        ("What did Melanie’s kids make?", ["Melanie"]),
        ("Would Caroline likely have Dr. Seuss books?", ["Caroline", "Dr", "Seuss"]),
        ("What did I say about Tokyo? And about Paris.", ["Tokyo", "Paris"]),
        ("I went to Paris. Then I left.", ["Paris"]),  # "Then" begins a sentence
        ("What did Jon do in May, on a Monday?", ["Jon"]),  # months and weekdays name times
        ("Caroline, when did you go?", []),  # a sentence's first word says nothing
        ("what did nate adopt", []),
        ("", []),
        ("Did Nate and Nate's dog meet Nate?", ["Nate"]),
    ],
)
def test_the_names_a_question_is_about(text: str, names: list[str]) -> None:
    assert proper_names(text) == names


_words = st.text(alphabet="abcdefgHIJKLMnopQRstUVwxyzÉéÅåßÖö", min_size=1, max_size=8)


@given(st.lists(_words, min_size=1, max_size=10))
def test_names_are_capitalised_words_of_the_text_each_once(words: list[str]) -> None:
    text = "so " + " ".join(words)
    names = proper_names(text)
    assert len(names) == len(set(names))
    assert all(n[:1].isupper() and n in text for n in names)
    # lower-casing the text leaves no names
    assert proper_names(text.lower()) == []


def test_refused_when_every_name_is_unknown_with_the_names() -> None:
    verdict = judge(0.6, 0.25, {"Melanie": False, "Paris": False})
    assert verdict == Verdict(True, "unknown names", ("Melanie", "Paris"))


def test_one_known_name_is_enough_to_answer() -> None:
    assert judge(0.5, 0.25, {"Caroline": True, "Seuss": False}) == Verdict(False)


def test_a_strong_match_in_meaning_outweighs_unknown_names() -> None:
    """'Who moved to Portugal?' over '... moved to Lisbon': half-way from the threshold to 1 answers."""
    assert judge(0.625, 0.25, {"Portugal": False}) == Verdict(False)
    assert judge(0.62, 0.25, {"Portugal": False}).refused
    assert judge(0.7, 0.5, {"Portugal": False}).refused  # a stricter threshold asks for more


@given(st.floats(-1, 1) | st.none(), st.floats(-1, 1))
def test_without_names_the_similarity_threshold_decides(best: float | None, threshold: float) -> None:
    verdict = judge(best, threshold, {})
    assert verdict.refused == (best is None or best < threshold)
    assert verdict.unknown == ()
    assert verdict.reason == ("dissimilar" if verdict.refused else None)


@given(st.dictionaries(_words, st.booleans(), min_size=1, max_size=5), st.floats(-1, 1))
def test_known_names_leave_the_decision_to_similarity(known: dict[str, bool], best: float) -> None:
    verdict = judge(best, 0.3, known)
    if any(known.values()) or best >= 0.65:
        assert verdict == judge(best, 0.3, {})
    else:
        assert verdict.refused and verdict.unknown == tuple(known)
