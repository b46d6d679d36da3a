"""The learned fusion's pure parts (issue 32): the ranking model, session spreading, the question
words and their support."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemo.cognition.scoring.late import TokenVectors
from mnemo.cognition.scoring.ranker import (
    FEATURES,
    Ranker,
    represent_sessions,
    sessions_in_reach,
    spread_sessions,
    standardise,
)
from mnemo.cognition.scoring.refusal import Verdict, judge, question_words, unsupported, word_support
from mnemo.errors import ConfigurationError
from mnemo.recall.learned import load_ranker


def _matrix(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, len(FEATURES)))
    x[:, FEATURES.index("hand")] = [-math.log(r) for r in range(1, n + 1)]
    return x


@given(st.integers(2, 60), st.integers(0, 10_000))
def test_the_hand_set_model_keeps_the_hand_set_order(n: int, seed: int) -> None:
    scores = Ranker.hand_set().scores(_matrix(n, seed))
    assert list(np.argsort(-scores, kind="stable")) == list(range(n))


def test_a_model_reads_back_as_written_and_refuses_what_does_not_fit() -> None:
    model = Ranker(FEATURES, (0.5,) * len(FEATURES), (2.0,) * len(FEATURES), tuple(range(len(FEATURES))), 0.3, "x")
    assert Ranker.from_json(model.to_json()) == model
    raw = json.loads(model.to_json())
    with pytest.raises(ValueError, match="does not fit"):
        Ranker.from_json(json.dumps(raw | {"features": ["dense"]}))
    with pytest.raises(ValueError, match="positive"):
        Ranker.from_json(json.dumps(raw | {"scale": [0.0] * len(FEATURES)}))
    with pytest.raises(ValueError, match="finite"):
        Ranker.from_json(json.dumps(raw | {"penalty": float("nan")}))
    with pytest.raises(ValueError, match="columns"):
        model.scores(np.zeros((3, 2)))


def test_a_model_scores_standardised_features() -> None:
    weights = tuple(float(f == "speaker") for f in FEATURES)
    model = Ranker(FEATURES, (1.0,) * len(FEATURES), (2.0,) * len(FEATURES), weights)
    x = np.zeros((2, len(FEATURES)))
    x[0, FEATURES.index("speaker")] = 5.0
    assert model.scores(x).tolist() == [2.0, -0.5]


def test_the_shipped_model_fits_and_was_cross_validated() -> None:
    shipped = load_ranker()
    assert shipped.features == FEATURES
    assert "cross-validated by conversation" in shipped.note
    # it is not the hand-set order in disguise: other features carry weight
    assert sum(abs(w) for f, w in zip(shipped.features, shipped.weights, strict=True) if f != "hand") > 1.0


def test_a_model_file_that_cannot_be_used_is_a_configuration_error(tmp_path) -> None:  # type: ignore[no-untyped-def]
    bad = tmp_path / "model.json"
    bad.write_text('{"features": ["dense"]}', encoding="utf-8")
    with pytest.raises(ConfigurationError, match="not a ranking model"):
        load_ranker(bad)
    with pytest.raises(ConfigurationError, match="not a ranking model"):
        load_ranker(tmp_path / "missing.json")


@given(st.lists(st.floats(-100, 100), min_size=1, max_size=30))
def test_standardised_values_have_mean_zero_and_the_missing_take_the_lowest(values: list[float]) -> None:
    keys = list(range(len(values) + 1))  # the last key has no value
    z = standardise(dict(enumerate(values)), keys)
    assert abs(sum(z[:-1])) < 1e-6 * len(values) + 1e-9
    assert z[-1] == pytest.approx(min(z[:-1]))


sessions_st = st.lists(st.sampled_from("abcd"), min_size=2, max_size=25)


@given(sessions_st, st.floats(0.0, 5.0), st.integers(2, 12))
def test_spreading_is_a_permutation_and_penalty_zero_keeps_the_order(
    sessions: list[str], penalty: float, slots: int
) -> None:
    order = list(range(len(sessions)))
    scores = {i: float(len(sessions) - i) for i in order}
    spread = spread_sessions(order, scores, dict(enumerate(sessions)), penalty, slots)
    assert sorted(spread) == order
    assert spread_sessions(order, scores, dict(enumerate(sessions)), 0.0, slots) == order


@given(sessions_st, st.integers(2, 12))
def test_a_heavy_penalty_gives_every_session_a_slot_before_any_takes_two(sessions: list[str], slots: int) -> None:
    order = list(range(len(sessions)))
    scores = {i: float(len(sessions) - i) for i in order}
    spread = spread_sessions(order, scores, dict(enumerate(sessions)), 1000.0, slots)
    distinct = len(set(sessions))
    first = [sessions[i] for i in spread[: min(slots, distinct)]]
    assert len(set(first)) == len(first)


def test_a_mild_penalty_lets_a_much_stronger_candidate_of_the_same_session_stay() -> None:
    order = [0, 1, 2]
    sessions = {0: "a", 1: "a", 2: "b"}
    assert spread_sessions(order, {0: 10.0, 1: 9.0, 2: 0.0}, sessions, 0.2, 3) == [0, 1, 2]
    assert spread_sessions(order, {0: 10.0, 1: 9.0, 2: 8.95}, sessions, 0.2, 3) == [0, 2, 1]


# --- session representation (issue 43) ----------------------------------------------------------
mixed_st = st.lists(st.sampled_from(["a", "b", "c", "d", None]), min_size=0, max_size=30)


@given(mixed_st, st.sets(st.sampled_from("abcdz"), max_size=5))
def test_representation_puts_each_reached_session_before_any_second_candidate(
    sessions: list[str | None], reach: set[str]
) -> None:
    order = list(range(len(sessions)))
    session_of = {i: s for i, s in enumerate(sessions) if s is not None}
    got = represent_sessions(order, reach, session_of)
    assert sorted(got) == order  # a permutation
    for name in {*sessions} - {None}:  # each session's candidates keep their order
        assert [i for i in got if session_of.get(i) == name] == [i for i in order if session_of.get(i) == name]
    assert [i for i in got if i not in session_of] == [i for i in order if i not in session_of]
    present = reach & set(session_of.values())
    if len(reach) < 2:
        assert got == order
    elif present == reach:  # every reached session's first candidate comes before any second candidate
        seen: set[str] = set()
        firsts_done = False
        for i in got:
            name = session_of.get(i)
            if name is None:
                continue
            if name in seen:
                assert firsts_done or not (reach - seen), (got, reach)
            seen.add(name)
            firsts_done = firsts_done or not (reach - seen)


def test_one_long_session_does_not_crowd_out_another_as_good() -> None:
    # session a's five turns score 10, 9.9, 9.8, 9.7, 9.6; b's best 9.75, c's 2 (past a clear gap: not in reach)
    order = ["a1", "a2", "a3", "b1", "a4", "a5", "c1", "b2"]
    scores = {"a1": 10.0, "a2": 9.9, "a3": 9.8, "b1": 9.75, "a4": 9.7, "a5": 9.6, "c1": 2.0, "b2": 1.9}
    session_of = {k: k[0] for k in order}
    reach = sessions_in_reach(order, scores, session_of)
    assert reach == {"a", "b"}
    assert represent_sessions(order, reach, session_of) == ["a1", "b1", "a2", "a3", "a4", "a5", "c1", "b2"]
    # one session far ahead of every other: only it is in reach, nothing moves
    lone = {**scores, "b1": 2.1}
    assert sessions_in_reach(order, lone, session_of) == {"a"}
    assert represent_sessions(order, sessions_in_reach(order, lone, session_of), session_of) == order


def test_question_words_are_what_the_question_is_about() -> None:
    assert question_words("What kind of pot did Mel and her kids make with clay in May?") == [
        "pot",
        "kids",
        "make",
        "clay",
    ]
    assert question_words("Would Caroline like Dr. Seuss books?") == ["like", "books"]
    assert question_words("When did it happen?") == ["happen"]
    assert question_words("What did they do?") == []


def _tokens(ids: list[int], rows: list[list[float]]) -> TokenVectors:
    v = np.asarray(rows, dtype=np.float32)
    return TokenVectors(np.asarray(ids, dtype=np.int32), v / np.linalg.norm(v, axis=1, keepdims=True))


def test_a_word_is_supported_by_the_hits_tokens_that_match_it() -> None:
    query = _tokens([10, 11, 12], [[1, 0, 0], [0, 1, 0], [0, 0, 1]])
    hits = [_tokens([20], [[1, 0, 0]]), _tokens([21], [[0, 1, 1]])]
    cat, peru, absent = word_support(query, [[10], [12], [99]], hits)
    assert cat == pytest.approx(1.0)
    assert peru == pytest.approx(math.sqrt(0.5), abs=1e-6)
    assert absent == 1.0  # a word the query does not hold is not judged
    assert word_support(query, [[10]], []) == [0.0]


def test_unsupported_words_are_rare_in_the_scope_and_unmatched() -> None:
    support = {"cat": (0, 0.3), "trip": (4, 0.2), "went": (-1, 0.1), "peru": (0, 0.9)}
    assert unsupported(support, 0.5, 0) == ["cat"]
    assert unsupported(support, 0.5, 5) == ["cat", "trip"]
    assert unsupported(support, 0.95, 0) == ["cat", "peru"]


def test_the_verdict_names_the_unsupported_words_after_the_names_rule() -> None:
    assert judge(0.6, 0.25, {}, ["cat"]) == Verdict(True, "unsupported", ("cat",))
    assert judge(0.6, 0.25, {"Gina": False}, ["cat"]).reason == "unknown names"
    assert judge(0.6, 0.25, {}, []) == Verdict(False)
