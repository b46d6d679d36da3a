"""Surprisal models (mnemo.cognition.consolidation.surprisal) and flux arcs (mnemo.cognition.consolidation.flux)."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemo.cognition.consolidation.flux import (
    FLUX_STATES,
    FluxArc,
    FluxParams,
    detect_arcs,
    flux_states,
    open_at_end,
    with_margins,
)
from mnemo.cognition.consolidation.surprisal import (
    UNK,
    LogprobSurprise,
    NGramModel,
    SurpriseModel,
    score_stream,
    sentences,
    tokenize,
)

# ---------------------------------------------------------------------------------------------------------------
# Text fixtures

COOKING = [
    "I'm making pasta tonight with garlic, olive oil and a little chili.",
    "Should I salt the water before the pasta goes in?",
    "Yes, salt the water well, it should taste like the sea.",
    "How long do I cook the spaghetti for?",
    "About nine minutes for al dente, but taste it a minute early.",
    "I want the sauce to be creamy without cream.",
    "Save a cup of the pasta water and toss it with the sauce and cheese.",
    "The starch in the pasta water makes the sauce creamy.",
    "Should I add the garlic at the start or at the end?",
    "Cook the garlic gently in the olive oil so it does not burn.",
    "Burnt garlic makes the whole sauce bitter.",
    "Can I use parmesan or should it be pecorino?",
    "Pecorino is saltier, parmesan is milder, both work with pasta.",
    "I also have some fresh basil and a few tomatoes.",
    "Add the tomatoes to the olive oil and garlic and cook them down.",
    "Tear the basil at the end so it stays green.",
    "How much pasta should I cook for two people?",
    "About two hundred grams of dry pasta for two people.",
    "The sauce tastes flat, what should I add?",
    "Add a pinch of salt and a squeeze of lemon to brighten the sauce.",
]
SAME_TOPIC = "Should I add the basil and the cheese to the pasta sauce at the end?"
NEW_TOPIC = "Kubernetes evicted my pods because the node ran out of ephemeral storage quota."

WORDS = ["a", "b", "c", "d", "the", "cat", "sat", ".", "?", "on", "mat"]
histories = st.lists(
    st.lists(st.sampled_from(WORDS), min_size=0, max_size=12).map(" ".join),
    min_size=0,
    max_size=8,
)


def _trained(texts: list[str], **kwargs: object) -> NGramModel:
    model = NGramModel(**kwargs)  # type: ignore[arg-type]
    for text in texts:
        model.observe(text)
    return model


# ---------------------------------------------------------------------------------------------------------------
# Tokens


def test_tokenize_lowercases_and_splits_punctuation_and_numbers() -> None:
    assert tokenize("Hello, World! It's 3.14 now.") == ["hello", ",", "world", "!", "it's", "3.14", "now", "."]
    assert tokenize("Don\u2019t") == ["don't"]
    assert tokenize("  \n\t ") == []


@given(st.text(alphabet=st.characters(codec="ascii"), max_size=80))
@settings(max_examples=100, deadline=None)
def test_tokenize_is_deterministic_case_free_and_whitespace_free(text: str) -> None:
    tokens = tokenize(text)
    assert tokens == tokenize(text)
    assert tokens == tokenize(text.upper())
    assert all(tok and not any(ch.isspace() for ch in tok) for tok in tokens)
    assert all(tok == tok.lower() for tok in tokens)


@given(st.lists(st.sampled_from(["x", "y", ".", "!", "?"]), max_size=20))
def test_sentences_partition_tokens_at_terminal_runs(tokens: list[str]) -> None:
    parts = sentences(tokens)
    assert [tok for part in parts for tok in part] == tokens
    assert all(part for part in parts)
    for part in parts[:-1]:
        assert part[-1] in {".", "!", "?"}
    assert sentences(["ok", "?", "!", "yes"]) == [["ok", "?", "!"], ["yes"]]


# ---------------------------------------------------------------------------------------------------------------
# N-gram model: the distribution


def test_kneser_ney_matches_a_hand_computed_value() -> None:
    model = _trained(["a b"], order=2, discount=0.5, oov_types=1)
    # Bigrams (<s> a) (a b) (b </s>), each once; unigram continuation counts a, b, </s> each 1 of 3; V = 3.
    p_uni_b = (1 - 0.5 + 0.5 * 3 * (1 / 4)) / 3
    dist = model.next_token_distribution(["a"])
    assert dist["b"] == pytest.approx(0.5 + 0.5 * p_uni_b)
    assert dist[UNK] == pytest.approx(0.5 * (0.5 * 3 * (1 / 4)) / 3)
    assert model.surprisal("a b") == pytest.approx(
        -(
            math.log2(model.next_token_distribution([])["a"])
            + math.log2(dist["b"])
            + math.log2(model.next_token_distribution(["b"])["</s>"])
        )
        / 3
    )


@given(
    history=histories,
    context=st.lists(st.sampled_from([*WORDS, "zebra"]), max_size=4),
    order=st.integers(1, 4),
    discount=st.floats(0.05, 1.0),
)
@settings(max_examples=150, deadline=None)
def test_next_token_distribution_sums_to_one(
    history: list[str], context: list[str], order: int, discount: float
) -> None:
    model = _trained(history, order=order, discount=discount)
    dist = model.next_token_distribution(context)
    assert len(dist) == model.vocabulary_size + 1 and UNK in dist
    assert all(p > 0 for p in dist.values())
    assert math.fsum(dist.values()) == pytest.approx(1.0, abs=1e-9)


@given(history=histories, text=st.text(max_size=60), order=st.integers(1, 4))
@settings(max_examples=100, deadline=None)
def test_surprisal_is_finite_non_negative_and_pure(history: list[str], text: str, order: int) -> None:
    model = _trained(history, order=order)
    before = model.to_state()
    value = model.surprisal(text)
    assert math.isfinite(value) and value >= 0
    assert model.to_state() == before
    if not tokenize(text):
        assert value == 0.0


def test_empty_text_scores_zero_and_teaches_nothing() -> None:
    model = _trained(COOKING)
    seen = model.tokens_seen
    assert model.surprisal("") == 0.0
    assert model.surprisal("   ") == 0.0
    model.observe("   ")
    assert model.tokens_seen == seen
    assert seen == sum(len(tokenize(t)) for t in COOKING)


def test_unseen_word_costs_log2_oov_types_more() -> None:
    plain = _trained(COOKING, oov_types=1)
    penalised = _trained(COOKING, oov_types=1024)
    text = "the quokka sauce"  # 3 tokens + </s>, one of them unseen
    assert penalised.surprisal(text) - plain.surprisal(text) == pytest.approx(10 / 4)
    # A fresh model with the penalty does not call its first text unsurprising.
    assert NGramModel(oov_types=1024).surprisal("hello there") == pytest.approx(10.0)
    assert NGramModel(oov_types=1).surprisal("hello there") == 0.0


def test_constructor_rejects_nonsense() -> None:
    for kwargs in ({"order": 0}, {"discount": 0.0}, {"discount": 1.5}, {"oov_types": 0}, {"order": True}):
        with pytest.raises(ValueError):
            NGramModel(**kwargs)


# ---------------------------------------------------------------------------------------------------------------
# N-gram model: the behaviour flux analysis relies on


def test_new_topic_is_clearly_more_surprising_than_same_topic() -> None:
    model = _trained(COOKING * 3)
    same = model.surprisal(SAME_TOPIC)
    new = model.surprisal(NEW_TOPIC)
    assert new > same + 3.0, (same, new)


def test_repeating_a_new_topic_makes_its_surprisal_settle() -> None:
    model = _trained(COOKING * 3)
    scores = score_stream(model, [NEW_TOPIC] * 6)
    assert all(b <= a + 1e-9 for a, b in itertools.pairwise(scores)), scores
    assert scores[-1] < scores[0] / 2, scores
    assert scores[-1] < model.surprisal(NEW_TOPIC.replace("pods", "cats")) + 1e-9


def test_score_stream_is_prequential() -> None:
    texts = [*COOKING[:6], NEW_TOPIC, COOKING[0]]
    streamed = NGramModel()
    scores = score_stream(streamed, texts)
    manual = NGramModel()
    expected = []
    for text in texts:
        expected.append(manual.surprisal(text))
        manual.observe(text)
    assert scores == expected
    assert streamed.to_state() == manual.to_state()
    assert scores[-1] < scores[0]  # the repeated first text is now familiar


@given(history=histories, later=histories, probe=st.text(max_size=40), order=st.integers(1, 4))
@settings(max_examples=60, deadline=None)
def test_state_round_trip_gives_identical_surprisal(
    history: list[str], later: list[str], probe: str, order: int
) -> None:
    model = _trained(history, order=order, discount=0.6, oov_types=7)
    restored = NGramModel.from_state(json.loads(json.dumps(model.to_state())))
    assert restored.tokens_seen == model.tokens_seen
    assert restored.surprisal(probe) == model.surprisal(probe)
    # ... and it keeps learning exactly as the original would have.
    for text in later:
        model.observe(text)
        restored.observe(text)
    assert restored.surprisal(probe) == model.surprisal(probe)
    assert restored.next_token_distribution(["the"]) == pytest.approx(model.next_token_distribution(["the"]))


def test_round_trip_on_real_text_and_malformed_states() -> None:
    model = _trained(COOKING)
    state = json.loads(json.dumps(model.to_state()))
    assert NGramModel.from_state(state).surprisal(NEW_TOPIC) == model.surprisal(NEW_TOPIC)
    bad_states = [
        {**state, "kind": "other"},
        {**state, "version": 99},
        {k: v for k, v in state.items() if k != "ngrams"},
        {**state, "ngrams": [[["a", "b"], 1]]},
        {**state, "ngrams": [[["a", "b", "c"], 0]]},
        {**state, "ngrams": [[["a", "b", "c"], 1], [["a", "b", "c"], 2]]},
        {**state, "ngrams": [[["a", "b", UNK], 1]]},
        {**state, "tokens_seen": -1},
    ]
    for bad in bad_states:
        with pytest.raises(ValueError):
            NGramModel.from_state(bad)


# ---------------------------------------------------------------------------------------------------------------
# LLM log-prob adapter


def test_logprob_surprise_converts_nats_to_bits() -> None:
    adapter = LogprobSurprise(lambda text: [-math.log(2.0), -math.log(8.0)])
    assert isinstance(adapter, SurpriseModel)
    assert adapter.surprisal("two tokens") == pytest.approx(2.0)
    assert adapter.surprisal("   ") == 0.0
    assert not adapter.last_used_fallback and adapter.failures == 0


def test_logprob_surprise_falls_back_to_the_offline_model() -> None:
    calls = {"n": 0}

    def flaky(text: str) -> list[float]:
        calls["n"] += 1
        if calls["n"] % 2 == 0:
            raise ConnectionError("endpoint down")
        return [-1.0]

    fallback = NGramModel()
    reference = NGramModel()
    adapter = LogprobSurprise(flaky, fallback=fallback)
    for text in COOKING:
        adapter.observe(text)
        reference.observe(text)
    assert fallback.tokens_seen == reference.tokens_seen > 0  # observe feeds the fallback
    assert adapter.surprisal(NEW_TOPIC) == pytest.approx(1 / math.log(2.0))
    assert adapter.surprisal(NEW_TOPIC) == reference.surprisal(NEW_TOPIC)
    assert adapter.last_used_fallback and adapter.failures == 1
    assert isinstance(adapter.last_error, ConnectionError)


@pytest.mark.parametrize("values", [[float("nan")], [-float("inf")], [0.5], ["x"]])
def test_logprob_surprise_treats_invalid_logprobs_as_failure(values: list[object]) -> None:
    fallback = _trained(COOKING)
    adapter = LogprobSurprise(lambda text: values, fallback=fallback)  # type: ignore[arg-type,return-value]
    assert adapter.surprisal(SAME_TOPIC) == fallback.surprisal(SAME_TOPIC)
    assert adapter.failures == 1


# ---------------------------------------------------------------------------------------------------------------
# Flux arcs: hand-made series

RNG = np.random.default_rng(20240601)


def _flat(n: int, level: float = 6.0, amplitude: float = 0.1) -> list[float]:
    return [float(v) for v in level + RNG.uniform(-amplitude, amplitude, n)]


def test_params_validation() -> None:
    FluxParams()
    bad = [
        {"baseline_window": 0},
        {"smoothing_window": 0},
        {"spike_threshold": 0.0},
        {"stable_threshold": -0.1},
        {"stabilization_count": 0},
        {"min_history": 0},
        {"min_sigma": -1.0},
        {"min_sigma": float("nan")},
        {"max_arc_turns": 4},  # < smoothing_window + stabilization_count
        {"min_history": 30},  # > baseline_window
        {"baseline_window": 2.5},
    ]
    for kwargs in bad:
        with pytest.raises(ValueError):
            FluxParams(**kwargs)  # type: ignore[arg-type]


def test_empty_and_invalid_series() -> None:
    assert detect_arcs([]) == []
    assert flux_states(0, []) == []
    assert not open_at_end([], 0)
    with pytest.raises(ValueError):
        detect_arcs([1.0, float("nan"), 2.0])


@given(
    level=st.floats(0.0, 20.0),
    noise=st.lists(st.floats(-0.15, 0.15), min_size=0, max_size=120),
)
@settings(max_examples=100, deadline=None)
def test_flat_noise_has_no_arcs(level: float, noise: list[float]) -> None:
    # Smoothed values stay within 0.3 of each other, below the 1.5 * 0.25 floor on the spike margin.
    series = [level + v for v in noise]
    assert detect_arcs(series) == []
    assert set(flux_states(len(series), [])) <= {"baseline"}


def test_single_spike_gives_one_resolved_arc() -> None:
    series = [*_flat(30), 10.0, 9.0, 7.5, 6.5, 6.1, *_flat(25)]
    arcs = detect_arcs(series)
    assert len(arcs) == 1
    arc = arcs[0]
    assert arc.resolved
    assert arc.start == 30 and arc.peak_index == 30 and arc.peak == 10.0
    # Resolution needs the smoothing window to pass the decay, then 2 stable turns.
    assert 34 <= arc.end <= 45
    assert arc.baseline == pytest.approx(6.0, abs=0.1)
    assert arc.sigma == 0.25  # the flat baseline's std is under the floor
    assert arc.final == pytest.approx(6.0, abs=0.2)
    assert arc.final == pytest.approx(float(np.mean(series[arc.end - 2 : arc.end + 1])))  # the smoothed level
    assert arc.quality == pytest.approx((10.0 - arc.final) * arc.duration)
    assert arc.quality > 0
    assert abs(arc.arrete) < 0.15
    states = flux_states(len(series), arcs)
    assert states[:30] == ["baseline"] * 30
    assert states[30] == "spike"
    assert states[31 : arc.end + 1] == ["resolution"] * (arc.end - 30)
    assert states[arc.end + 1 :] == ["stable"] * (len(series) - arc.end - 1)
    assert not open_at_end(arcs, len(series))
    assert with_margins(arc, len(series)) == (28, arc.end + 2)


def test_moderate_spike_is_dated_to_its_turn_not_to_the_detection_turn() -> None:
    # +1 bit: the 3-turn average alone crosses the threshold only a turn later.
    series = [*([6.0] * 25), 7.0, 6.8, 6.0, *([6.0] * 15)]
    arcs = detect_arcs(series)
    assert len(arcs) == 1
    assert arcs[0].start == 25 and arcs[0].peak_index == 25


def test_stability_is_judged_only_once_the_average_has_passed_the_peak() -> None:
    # A one-turn spike keeps the 3-turn average flat for 3 turns; that is not yet the settled level.
    series = [*([6.0] * 20), 10.0, *([6.0] * 10)]
    arcs = detect_arcs(series)
    assert len(arcs) == 1
    assert (arcs[0].start, arcs[0].end) == (20, 25)
    assert arcs[0].resolved and arcs[0].final == 6.0


def test_baseline_ignores_the_turns_of_an_earlier_arc() -> None:
    # A big first arc inside the next spike's baseline window must not inflate its sigma.
    series = [*([6.0] * 20), 20.0, *([6.0] * 11), 10.0, *([6.0] * 8)]
    arcs = detect_arcs(series)
    assert [(a.start, a.end) for a in arcs] == [(20, 25), (32, 37)]
    assert arcs[1].baseline == 6.0 and arcs[1].sigma == 0.25


def test_two_separated_spikes_give_two_arcs() -> None:
    series = [*_flat(25), 11.0, 9.0, 7.0, 6.2, *_flat(25), 12.0, 10.0, 7.0, 6.1, *_flat(25)]
    arcs = detect_arcs(series)
    assert [a.start for a in arcs] == [25, 54]
    assert all(a.resolved for a in arcs)
    assert arcs[0].end < arcs[1].start
    assert [a.peak for a in arcs] == [11.0, 12.0]
    states = flux_states(len(series), arcs)
    assert states[arcs[0].end + 1 : 54] == ["stable"] * (54 - arcs[0].end - 1)


def test_spike_at_the_end_is_open() -> None:
    series = [*_flat(30), 11.0]
    arcs = detect_arcs(series)
    assert len(arcs) == 1
    arc = arcs[0]
    assert not arc.resolved
    assert arc.start == arc.peak_index == arc.end == 30
    assert open_at_end(arcs, len(series))
    assert flux_states(len(series), arcs)[-1] == "spike"
    assert with_margins(arc, len(series)) == (28, 30)
    # The same spike with time to settle is no longer open.
    assert not open_at_end(detect_arcs([*series, *_flat(12)]), len(series) + 12)


def test_arc_that_never_settles_is_cut_at_max_arc_turns() -> None:
    params = FluxParams(max_arc_turns=10)
    climb = [10.0 + 0.5 * i for i in range(15)]  # keeps rising: never stable
    series = [*_flat(20), *climb, *([50.0] * 5)]
    arcs = detect_arcs(series, params)
    assert arcs[0].start == 20
    assert arcs[0].duration == 10 and not arcs[0].resolved
    assert arcs[0].peak_index == 29
    states = flux_states(len(series), arcs)
    assert states[20:30] == ["spike"] * 10
    assert not open_at_end(arcs[:1], len(series))


def test_arrete_on_perplexities() -> None:
    def arc(baseline: float, final: float) -> FluxArc:
        return FluxArc(0, 0, 0, baseline=baseline, sigma=1.0, peak=9.0, final=final, resolved=True)

    assert arc(5.0, 5.0).arrete == 0.0
    assert arc(5.0, 4.0).arrete == pytest.approx(0.5)  # perplexity 32 -> 16
    assert arc(5.0, 3.0).arrete == pytest.approx((2**5 - 2**3) / 2**5)
    assert arc(5.0, 6.0).arrete == -1.0  # perplexity doubles: clipped
    assert arc(1.0, 5000.0).arrete == -1.0


def test_flux_states_and_margins_validate_arcs() -> None:
    a = FluxArc(2, 3, 5, 1.0, 0.25, 4.0, 1.0, True)
    b = FluxArc(5, 6, 7, 1.0, 0.25, 4.0, 1.0, True)
    with pytest.raises(ValueError):
        flux_states(10, [a, b])
    with pytest.raises(ValueError):
        flux_states(5, [a])
    assert (
        flux_states(8, [a]) == ["baseline", "baseline", "spike", "spike", "resolution", "resolution"] + ["stable"] * 2
    )
    cut = FluxArc(2, 3, 5, 1.0, 0.25, 4.0, 3.0, False)
    assert flux_states(8, [cut])[6:] == ["baseline", "baseline"]
    assert not open_at_end([cut], 8) and open_at_end([cut], 6)
    assert with_margins(a, 6, before=5, after=5) == (0, 5)
    assert with_margins(a, 10, before=0, after=1) == (2, 6)
    with pytest.raises(ValueError):
        with_margins(a, 4)


# ---------------------------------------------------------------------------------------------------------------
# Flux arcs: properties

grid_series = st.lists(st.integers(0, 96), max_size=90).map(lambda vs: [v / 8 for v in vs])
spiky_series = st.lists(
    st.one_of(st.integers(40, 44), st.integers(40, 44), st.integers(40, 44), st.integers(60, 100)),
    max_size=90,
).map(lambda vs: [v / 8 for v in vs])
params_st = st.builds(
    FluxParams,
    baseline_window=st.integers(3, 25),
    smoothing_window=st.integers(1, 5),
    spike_threshold=st.sampled_from([1.0, 1.5, 2.0]),
    stable_threshold=st.sampled_from([0.1, 0.3, 1.0]),
    stabilization_count=st.integers(1, 3),
    min_history=st.integers(1, 3),
    min_sigma=st.sampled_from([0.0, 0.25, 0.5]),
    max_arc_turns=st.integers(8, 40),
)


@given(series=st.one_of(grid_series, spiky_series), params=params_st)
@settings(max_examples=200, deadline=None)
def test_arc_invariants(series: list[float], params: FluxParams) -> None:
    n = len(series)
    arcs = detect_arcs(series, params)
    previous_end = -1
    for arc in arcs:
        assert 0 <= arc.start <= arc.peak_index <= arc.end < n
        assert arc.start > previous_end
        assert arc.start >= params.min_history
        assert arc.duration <= params.max_arc_turns
        assert arc.peak == max(series[arc.start : arc.end + 1])
        assert arc.sigma >= params.min_sigma
        # The start turn itself rose above the spike threshold.
        assert series[arc.start] >= arc.baseline + params.spike_threshold * arc.sigma - 1e-9
        assert arc.peak > arc.baseline
        if arc.resolved:
            assert arc.duration >= params.stabilization_count + 1
            if arc.final <= arc.peak:
                assert arc.quality >= 0
        elif arc.end != n - 1:
            assert arc.duration == params.max_arc_turns
        previous_end = arc.end
    # Only the last arc can be open at the end.
    assert all(a.resolved or a.end < n - 1 or a is arcs[-1] for a in arcs)
    states = flux_states(n, arcs)
    assert len(states) == n
    assert set(states) <= set(FLUX_STATES)
    for arc in arcs:
        assert states[arc.start] == "spike"
    in_arc = {i for a in arcs for i in range(a.start, a.end + 1)}
    assert all((states[i] in {"spike", "resolution"}) == (i in in_arc) for i in range(n))
    assert open_at_end(arcs, n) == bool(arcs and not arcs[-1].resolved and arcs[-1].end == n - 1)
    assert detect_arcs(series, params) == arcs  # deterministic


@given(
    series=st.one_of(grid_series, spiky_series),
    shift=st.integers(-800, 800).map(lambda v: v / 8),
    params=params_st,
)
@settings(max_examples=150, deadline=None)
def test_shifting_all_values_leaves_arcs_unchanged(series: list[float], shift: float, params: FluxParams) -> None:
    arcs = detect_arcs(series, params)
    moved = detect_arcs([v + shift for v in series], params)
    assert [(a.start, a.peak_index, a.end, a.resolved) for a in moved] == [
        (a.start, a.peak_index, a.end, a.resolved) for a in arcs
    ]
    for a, b in zip(arcs, moved, strict=True):
        assert b.baseline == pytest.approx(a.baseline + shift)
        assert b.peak == pytest.approx(a.peak + shift)
        assert b.final == pytest.approx(a.final + shift)
        assert b.sigma == pytest.approx(a.sigma)


@given(
    series=spiky_series,
    before=st.integers(0, 5),
    after=st.integers(0, 5),
)
@settings(max_examples=80, deadline=None)
def test_margins_are_clamped_and_contain_the_arc(series: list[float], before: int, after: int) -> None:
    n = len(series)
    for arc in detect_arcs(series):
        lo, hi = with_margins(arc, n, before, after)
        assert 0 <= lo <= arc.start and arc.end <= hi <= n - 1
        assert lo == max(0, arc.start - before) and hi == min(n - 1, arc.end + after)


def test_end_to_end_topic_shift_opens_an_arc() -> None:
    model = NGramModel()
    chat = [*COOKING, *COOKING, *COOKING[:10]]
    shifted = [
        *chat,
        NEW_TOPIC,
        "The pods keep getting evicted from the node, ephemeral storage again.",
        "Kubernetes says the node storage quota is exceeded for the pods.",
    ]
    scores = score_stream(model, shifted)
    arcs = detect_arcs(scores)
    assert arcs and arcs[-1].start == len(chat)
    assert open_at_end(arcs, len(scores))
