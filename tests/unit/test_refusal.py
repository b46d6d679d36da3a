"""The refusal's evidence: the names a question is about, and the verdict (issue 14 item 5)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemo.cognition.scoring.late import TokenVectors
from mnemo.cognition.scoring.refusal import (
    Verdict,
    asked_about,
    asks,
    focus_words,
    hypothetical,
    judge,
    literal_focus,
    proper_names,
    question_words,
    relation_forms,
    unsupported,
    word_hit_support,
)


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


def test_a_known_name_beside_an_unknown_one_does_not_answer() -> None:
    """Issue 40 item 6: "When did Aiko visit Brazil?" names Aiko, whom the scope knows, and Brazil."""
    assert judge(0.5, 0.25, {"Aiko": True, "Brazil": False}) == Verdict(True, "unknown names", ("Brazil",))


def test_one_known_name_is_enough_for_a_hypothetical_question() -> None:
    assert judge(0.5, 0.25, {"Caroline": True, "Seuss": False}, hypothetical=True) == Verdict(False)
    assert judge(0.5, 0.25, {"Caroline": False, "Seuss": False}, hypothetical=True).refused
    assert hypothetical("Would Caroline likely have Dr. Seuss books on her bookshelf?")
    assert not hypothetical("When did Aiko visit Brazil?")
    assert hypothetical("Plan a dinner for Maya and Ola.")  # a request wants what is relevant, not a fact
    assert asks("where does she live") and asks("Is it raining?") and not asks("Plan a dinner for Maya.")


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


@given(st.dictionaries(_words, st.booleans(), min_size=1, max_size=5), st.floats(-1, 1), st.booleans())
def test_known_names_leave_the_decision_to_similarity(known: dict[str, bool], best: float, guess: bool) -> None:
    verdict = judge(best, 0.3, known, hypothetical=guess)
    unknown = tuple(n for n, held in known.items() if not held)
    if not unknown or best >= 0.65 or (guess and len(unknown) < len(known)):
        assert verdict == judge(best, 0.3, {})
    else:
        assert verdict.refused and verdict.unknown == unknown


@pytest.mark.parametrize(
    ("question", "focus"),
    [
        ("What is José's blood type?", ["blood"]),
        ("What sport does José do currently?", ["sport"]),
        ("What is Tom's main hobby these days?", ["hobby"]),
        ("Which university did Priya study nursing at?", ["university", "study", "nursing"]),
    ],
)
def test_the_focus_is_what_the_question_asks_about(question: str, focus: list[str]) -> None:
    assert focus_words(question) == focus
    assert "jose" not in question_words(question)  # a name with accents is the names rule's


def test_a_relation_named_literally_is_unsupported_when_no_item_holds_any_of_its_words() -> None:
    assert "mum" in relation_forms("mother") and relation_forms("pet") == ()
    assert relation_forms("dog") == ()  # said as its breed: "my greyhound Comet"
    assert literal_focus("What is the name of Aiko's sister?", ["sister"]) == ["sister"]
    assert literal_focus("What does Lukas's son Jakub do?", ["son"]) == []  # a description of Jakub
    support = {"sister": (0, 0.62), "pet": (0, 0.62)}
    assert unsupported(support, 0.3, 0, literal=["sister"]) == ["sister"]  # however close its tokens
    assert unsupported({"sister": (2, 0.1)}, 0.3, 0, literal=["sister"]) == []  # said: answerable


def test_a_refusal_names_what_was_missing_in_the_question_s_words() -> None:
    assert asked_about("What is José's blood type?", ["blood"]) == "José's blood type"
    assert asked_about("Which football team does Sam support?", ["football", "team"]) == "football or team"


def _one_by_one(query: TokenVectors, pieces: list[list[int]], hits: list[TokenVectors]) -> np.ndarray:
    """The reference: each hit on its own, each word's tokens averaged (what word_hit_support computes)."""
    asked = np.asarray(query.vectors, dtype=np.float32) * np.float32(query.scale)
    ids = [int(t) for t in query.ids]
    out = np.ones((len(pieces), len(hits)))
    for w, word in enumerate(pieces):
        rows = [n for n, t in enumerate(ids) if t in word]
        for h, hit in enumerate(hits):
            if not rows:
                continue
            if not len(hit.ids):
                out[w, h] = 0.0
                continue
            best = (asked @ (np.asarray(hit.vectors, dtype=np.float32) * np.float32(hit.scale)).T).max(axis=1)
            out[w, h] = float(best[rows].mean())
    return out


@given(st.integers(0, 2**32 - 1), st.lists(st.integers(0, 6), min_size=0, max_size=5))
def test_word_support_over_all_hits_at_once_is_each_hit_on_its_own(seed: int, sizes: list[int]) -> None:
    rng = np.random.default_rng(seed)

    def tokens(n: int) -> TokenVectors:
        vectors = rng.normal(size=(n, 8)).astype(np.float32)
        return TokenVectors(rng.integers(0, 12, size=n).astype(np.int32), vectors, 0.5)

    query = tokens(6)
    pieces = [[int(query.ids[0])], [int(query.ids[1]), int(query.ids[2])], [99]]
    hits = [tokens(n) for n in sizes]
    assert np.allclose(word_hit_support(query, pieces, hits), _one_by_one(query, pieces, hits), atol=1e-5)


def test_the_cli_gives_the_similarity_as_the_reason_only_when_it_is_one(capsys: pytest.CaptureFixture[str]) -> None:
    from mnemo.interfaces.cli._common import print_recall

    refused = {"refused": True, "best_similarity": 0.657, "threshold": 0.25, "unknown": [], "unsupported": []}
    print_recall({**refused, "message": "Nothing was similar enough."}, as_json=False)
    print_recall({**refused, "unsupported": ["sister"], "message": "Nothing speaks of Maya's sister."}, as_json=False)
    dissimilar, unsupported_ = capsys.readouterr().out.strip().splitlines()
    assert "< threshold 0.25" in dissimilar
    assert "Maya's sister" in unsupported_ and "threshold" not in unsupported_ and "0.657" in unsupported_
