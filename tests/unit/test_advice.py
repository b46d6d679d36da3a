"""Requests for advice and the preferences they lift (issue 43, item 4): the pure parts."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemo.cognition.scoring.advice import asks_for_advice, preferences_in_reach


@pytest.mark.parametrize(
    "question",
    [
        "Suggest a birthday outing for Melanie.",
        "Can you recommend a restaurant for me?",
        "I'm making Sam a coffee. How should I make it?",
        "Aiko had a rough day. What food could I bring her to cheer her up?",
        "Plan a celebration dinner for Grace.",
        "Any ideas for a present for Tom?",
    ],
)
def test_requests_for_advice_a_choice_or_a_plan_are_told(question: str) -> None:
    assert asks_for_advice(question)


@pytest.mark.parametrize(
    "question",
    [
        "What did Maya recommend for the trip?",
        "What does Nate suggest for dairy-free baking?",
        "Has Maya recommended a book?",
        "Where did Maya go on her birthday?",
        "What is Maya's favourite food?",
        "When did Tom plan the trip?",
    ],
)
def test_questions_about_what_was_said_are_not(question: str) -> None:
    assert not asks_for_advice(question)


def test_the_person_named_narrows_the_preferences_then_the_first_tier_is_lifted() -> None:
    texts = {
        1: "Maya can't stand spicy food",
        2: "Maya prefers quiet places",
        3: "Tom loves loud bars",
        4: "Maya likes chess",
    }
    similarity = {1: 0.61, 2: 0.58, 3: 0.70, 4: 0.10}
    # Tom's preference is the most similar, but the request is about Maya; her chess is far below the others
    assert preferences_in_reach(similarity, texts, ["Maya"]) == [1, 2]
    # a name no preference mentions: all of them are weighed
    assert preferences_in_reach(similarity, texts, ["Zoe"]) == [3, 1, 2]
    assert preferences_in_reach({}, {}, ["Maya"]) == []


@given(st.dictionaries(st.integers(0, 30), st.floats(-1, 1), max_size=20))
def test_what_is_lifted_is_the_best_of_the_preferences_in_order(similarity: dict[int, float]) -> None:
    lifted = preferences_in_reach(similarity, {}, [])
    assert set(lifted) <= set(similarity) and (lifted or not similarity)
    assert [similarity[k] for k in lifted] == sorted((similarity[k] for k in lifted), reverse=True)
    if lifted:  # nothing left out is more similar than anything lifted
        assert max(similarity.values()) == similarity[lifted[0]]
        assert all(similarity[k] <= similarity[lifted[-1]] for k in similarity if k not in lifted)
