"""Example and property tests for the pure block-salience and curation modules."""

from __future__ import annotations

import itertools
import math
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemo.cognition.consolidation.curation import (
    TIERS,
    Classification,
    CuratorPolicy,
    DecayPolicy,
    RetentionPolicy,
    Signals,
    block_cutoff,
    classify,
    decay_amount,
    quality,
    raw_cutoff,
)
from mnemo.cognition.consolidation.salience import (
    BlockSalience,
    Salience,
    Zone,
    ZoneParams,
    coherence_gain,
    detect_zones,
    has_insight_marker,
    is_procedural,
    score_block,
    ties_weight,
)

FAST = settings(max_examples=60, deadline=None)
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
DIM = 8

finite = st.floats(min_value=-20.0, max_value=20.0, allow_nan=False, allow_infinity=False)
unit_floats = st.floats(min_value=0.0, max_value=1.0, allow_nan=False, allow_infinity=False)
gains = st.floats(min_value=-1.0, max_value=1.0, allow_nan=False, allow_infinity=False)


def basis(i: int, dim: int = DIM) -> np.ndarray:
    v = np.zeros(dim, dtype=np.float32)
    v[i] = 1.0
    return v


def unit(v: np.ndarray) -> np.ndarray:
    return (v / np.linalg.norm(v)).astype(np.float32)


# --- salience: zones ---------------------------------------------------------------------


def question_block() -> tuple[list[str], list[float], np.ndarray]:
    texts = [
        "How do I make search fast on a big archive?",
        "ok",
        "thanks",
        "Maybe profile the query planner first.",
        "I see — the answer is to cache the index",
        "Maybe profile the query planner first.",
    ]
    surprisals = [5.0, 2.0, 2.0, 3.1, 2.9, 3.1]
    planner = unit(0.3 * basis(0) + basis(3))
    embeddings = np.stack([basis(0), basis(1), basis(2), planner, unit(0.5 * basis(0) + basis(4)), planner])
    return texts, surprisals, embeddings


def test_breakthrough_is_live_filler_and_repeat_are_dead() -> None:
    texts, surprisals, embeddings = question_block()
    zones = detect_zones(texts, surprisals, embeddings, baseline=3.0, sigma=0.5)
    assert zones == [
        Zone(0, 0, True, ("spike", "gain", "on_topic")),
        Zone(1, 3, False, ("procedural", "stable")),
        Zone(4, 4, True, ("insight",)),
        Zone(5, 5, False, ("repeat",)),
    ]


def test_informative_turns_are_live_but_never_over_chatter_or_repeats() -> None:
    texts, surprisals, embeddings = question_block()
    flags = [False, True, False, True, False, True]  # "ok" and the repeat are flagged too
    zones = detect_zones(texts, surprisals, embeddings, baseline=3.0, sigma=0.5, informative=flags)
    assert [(z.start, z.end, z.live) for z in zones] == [(0, 0, True), (1, 2, False), (3, 4, True), (5, 5, False)]
    assert "informative" in zones[2].reasons and "insight" in zones[2].reasons
    with pytest.raises(ValueError, match="informative flags"):
        detect_zones(texts, surprisals, embeddings, baseline=3.0, sigma=0.5, informative=[True])


def test_procedural_and_repeat_win_over_live_criteria() -> None:
    # "ok" spikes far above baseline and a repeated question sits on the centroid: both stay dead.
    texts = ["Why does the build hang?", "ok", "Why does the build hang?"]
    embeddings = np.stack([basis(0), basis(1), basis(0)])
    zones = detect_zones(texts, [6.0, 9.0, 6.0], embeddings, baseline=3.0, sigma=0.5)
    assert [(z.start, z.end, z.live) for z in zones] == [(0, 0, True), (1, 2, False)]
    assert zones[1].reasons == ("procedural", "repeat")


def test_local_gain_and_on_topic_criteria() -> None:
    texts = ["The tests fail intermittently on CI.", "Because the fixture shares state.", "Noted the detail."]
    embeddings = np.stack([basis(1), basis(2), unit(basis(0) + 0.1 * basis(5))])
    centroid = basis(0)
    # turn 0 -> turn 1 drops 1 bit: gain 0.5 > 0.3; turn 2 is within ID 0.2 of the centroid.
    zones = detect_zones(texts, [3.5, 2.5, 2.5], embeddings, baseline=3.0, sigma=1.0, centroid=centroid)
    assert zones == [Zone(0, 0, True, ("gain",)), Zone(1, 1, False, ("stable",)), Zone(2, 2, True, ("on_topic",))]
    strict = ZoneParams(local_gain=0.6, max_distance=0.001)
    zones = detect_zones(texts, [3.5, 2.5, 2.5], embeddings, 3.0, 1.0, centroid, strict)
    assert zones == [Zone(0, 2, False, ("stable",))]


def test_markers() -> None:
    for text in (
        "I see, so the lock was never released",
        "That makes sense.",
        "Exactly!",
        "I realised the cache was stale",
        "Now I understand the bug",
        "got it, so we batch the writes",
        "Turns out the index was missing",
        "That's it!",
        "I decided to drop the column",
        "I'm going to rewrite the parser",
    ):
        assert has_insight_marker(text), text
    for text in ("Can you check the logs?", "I don't know exactly", "that's it for today"):
        assert not has_insight_marker(text), text
    for text in ("ok", "Thanks!", "ok, thank you so much", "Hello!", "let's meet tomorrow at 3", "see you"):
        assert is_procedural(text), text
    for text in ("OK so the bug is in the parser", "I see, thanks", "Exactly."):
        assert not is_procedural(text), text
    long_chatter = "let's meet tomorrow and go over why the parser drops the last token of every line"
    assert not is_procedural(long_chatter)


texts_pool = st.sampled_from(
    ["ok", "thanks", "hello", "I see, the answer is 42", "why does it fail?", "let's continue later", "the plan", ""]
)


@st.composite
def blocks(draw: st.DrawFn) -> tuple[list[str], list[float], np.ndarray]:
    n = draw(st.integers(min_value=1, max_value=9))
    texts = draw(st.lists(texts_pool, min_size=n, max_size=n))
    surprisals = draw(st.lists(st.floats(0.0, 10.0, allow_nan=False), min_size=n, max_size=n))
    rows = draw(st.lists(st.lists(st.floats(-1.0, 1.0, allow_nan=False), min_size=DIM, max_size=DIM), min_size=n))
    return texts, surprisals, np.asarray(rows[:n], dtype=np.float32)


@FAST
@given(blocks(), st.floats(0.0, 8.0), st.floats(0.0, 3.0))
def test_zones_partition_the_block(block: tuple[list[str], list[float], np.ndarray], base: float, sd: float) -> None:
    texts, surprisals, embeddings = block
    zones = detect_zones(texts, surprisals, embeddings, base, sd)
    assert zones[0].start == 0 and zones[-1].end == len(texts) - 1
    covered = [i for z in zones for i in range(z.start, z.end + 1)]
    assert covered == list(range(len(texts)))
    for a, b in itertools.pairwise(zones):
        assert a.live != b.live and b.start == a.end + 1
    for z in zones:
        allowed = {"spike", "gain", "on_topic", "insight"} if z.live else {"repeat", "procedural", "stable"}
        assert z.reasons and set(z.reasons) <= allowed
    for i, text in enumerate(texts):
        if is_procedural(text):
            assert not next(z for z in zones if z.start <= i <= z.end).live


# --- salience: scores -----------------------------------------------------------------------


def test_score_block_levels_and_composite() -> None:
    _, surprisals, embeddings = question_block()
    block = score_block(surprisals, embeddings, baseline=3.0, sigma=0.5)
    assert len(block.utterance) == 6 and len(block.exchange) == 3
    assert pytest.approx(0.0, abs=1e-6) == block.utterance[0].ID  # the spike turn is the centroid
    assert pytest.approx(1.0) == block.utterance[1].ID  # "ok" is orthogonal to it
    assert pytest.approx(1 / (1 + math.exp(-4.0))) == block.utterance[0].P
    # mean clipped cosine to its neighbours: orthogonal to turn 2, slightly aligned with turn 4
    assert pytest.approx((0.0 + float(embeddings[3] @ embeddings[4])) / 2, abs=1e-6) == block.utterance[3].C
    assert pytest.approx(0.0) == block.utterance[1].C
    assert pytest.approx(float(embeddings[4] @ embeddings[5]), abs=1e-6) == block.exchange[2].C
    scores = block.as_scores()
    assert set(scores) == {"utterance_level", "exchange_level", "theme_level", "composite"}
    assert 0.0 <= block.composite <= 1.0

    focused = score_block([6.0] * 4, np.stack([basis(0)] * 4), baseline=3.0, sigma=0.5)
    scattered = score_block([2.0, 1.5, 1.0, 0.5], np.stack([basis(i) for i in range(4)]), baseline=3.0, sigma=0.5)
    assert focused.composite > 0.95
    assert scattered.composite < 0.35
    assert pytest.approx(1.0) == focused.theme.C and pytest.approx(0.5) == scattered.theme.C


def test_score_block_odd_exchange_and_errors() -> None:
    block = score_block([3.0, 4.0, 5.0], np.stack([basis(0), basis(1), basis(2)]), 3.0, 1.0, centroid=basis(2))
    assert len(block.exchange) == 3 // 2 + 1
    assert block.exchange[-1] == block.utterance[-1]
    assert pytest.approx(0.0) == block.utterance[2].ID
    with pytest.raises(ValueError):
        score_block([], np.zeros((0, DIM)), 3.0, 1.0)
    with pytest.raises(ValueError):
        score_block([1.0, 2.0], np.zeros((3, DIM)), 3.0, 1.0)
    with pytest.raises(ValueError):
        score_block([1.0], np.ones((1, DIM)), 3.0, -1.0)
    with pytest.raises(ValueError):
        score_block([1.0], np.ones((1, DIM)), 3.0, 1.0, centroid=np.ones(DIM + 1))


@FAST
@given(blocks(), st.floats(0.0, 8.0), st.floats(0.0, 3.0), st.integers(0, 8), st.floats(0.1, 5.0))
def test_score_block_ranges_and_p_monotone(
    block: tuple[list[str], list[float], np.ndarray], base: float, sd: float, k: int, bump: float
) -> None:
    _, surprisals, embeddings = block
    scored = score_block(surprisals, embeddings, base, sd)
    for s in [*scored.utterance, *scored.exchange, scored.theme]:
        assert all(0.0 <= x <= 1.0 for x in (s.P, s.C, s.ID))
    assert 0.0 <= scored.composite <= 1.0
    k %= len(surprisals)
    raised = list(surprisals)
    raised[k] += bump
    assert score_block(raised, embeddings, base, sd, centroid=basis(0)).utterance[k].P >= (
        score_block(surprisals, embeddings, base, sd, centroid=basis(0)).utterance[k].P
    )


def test_coherence_gain_examples() -> None:
    assert coherence_gain(3.0, 2.0) == pytest.approx(0.5)  # perplexity 8 -> 4
    assert coherence_gain(3.0, 3.0) == 0.0
    assert coherence_gain(2.0, 2.5) == pytest.approx(1 - 2**0.5)
    assert coherence_gain(2.0, 3.0) == -1.0  # perplexity doubled
    assert coherence_gain(1.0, 500.0) == -1.0  # no overflow
    assert coherence_gain(5.0, 0.0) == pytest.approx(1 - 2**-5)
    with pytest.raises(ValueError):
        coherence_gain(math.nan, 1.0)


@FAST
@given(finite, finite)
def test_coherence_gain_sign_and_range(baseline: float, final: float) -> None:
    gain = coherence_gain(baseline, final)
    assert -1.0 <= gain <= 1.0
    if final < baseline:
        assert gain > 0
    elif final > baseline:
        assert gain < 0


def _block(composite: float) -> BlockSalience:
    s = Salience(0.5, 0.5, 0.5)
    return BlockSalience([s], [s], s, composite)


@FAST
@given(unit_floats, gains, gains)
def test_ties_weight_monotone_in_gain(composite: float, g1: float, g2: float) -> None:
    lo, hi = sorted((g1, g2))
    w_lo, w_hi = ties_weight(_block(composite), lo), ties_weight(_block(composite), hi)
    assert 0.0 <= w_lo <= w_hi <= 1.0
    if hi - lo > 1e-6:
        assert w_hi > w_lo


@FAST
@given(unit_floats, unit_floats, gains)
def test_ties_weight_monotone_in_composite(c1: float, c2: float, gain: float) -> None:
    lo, hi = sorted((c1, c2))
    assert ties_weight(_block(lo), gain) <= ties_weight(_block(hi), gain)


def test_ties_weight_formula() -> None:
    assert ties_weight(_block(0.8), 0.5) == pytest.approx(0.5 * 0.8 + 0.5 * 0.75)
    assert ties_weight(_block(0.8), 0.5, salience_share=1.0) == pytest.approx(0.8)
    assert ties_weight(_block(0.0), -1.0) == 0.0 and ties_weight(_block(1.0), 1.0) == 1.0


# --- curation: classify ------------------------------------------------------------------------


def signals(**changes: object) -> Signals:
    base: dict[str, object] = {
        "weight_center": 0.5,
        "access_count": 2,
        "last_accessed": NOW - timedelta(days=2),
        "created_at": NOW - timedelta(days=10),
        "mention_count": 1,
        "confidence": 0.7,
        "provenance": "user",
        "contradicts_anchor": False,
        "scope_relevance": 0.6,
        "anchored": False,
        "superseded": False,
    }
    base.update(changes)
    return Signals(**base)  # type: ignore[arg-type]


@st.composite
def any_signals(draw: st.DrawFn) -> Signals:
    created = draw(st.floats(0.0, 2000.0))
    accessed = draw(st.none() | st.floats(0.0, 2000.0))
    return Signals(
        weight_center=draw(unit_floats),
        access_count=draw(st.integers(0, 50)),
        last_accessed=None if accessed is None else NOW - timedelta(days=accessed),
        created_at=NOW - timedelta(days=created),
        mention_count=draw(st.integers(0, 20)),
        confidence=draw(unit_floats),
        provenance=draw(st.sampled_from(["tool", "user", "inferred"])),
        contradicts_anchor=draw(st.booleans()),
        scope_relevance=draw(unit_floats),
        anchored=draw(st.booleans()),
        superseded=draw(st.booleans()),
    )


def test_classify_examples() -> None:
    promoted = classify(
        signals(
            provenance="tool",
            confidence=0.95,
            mention_count=5,
            access_count=10,
            last_accessed=NOW - timedelta(days=1),
            scope_relevance=0.9,
            weight_center=0.7,
        ),
        NOW,
    )
    assert promoted.verdict == "promote" and promoted.score >= 0.7
    assert "tool-verified" in promoted.reasons[-1]

    stale_junk = signals(
        provenance="inferred",
        confidence=0.2,
        access_count=0,
        last_accessed=None,
        created_at=NOW - timedelta(days=200),
        scope_relevance=0.3,
        weight_center=0.2,
    )
    pruned = classify(stale_junk, NOW)
    assert pruned.verdict == "prune" and pruned.score < 0.25
    assert "never accessed" in pruned.reasons[-1] and "confidence" in pruned.reasons[-1]

    decent = signals(confidence=0.8, access_count=1, last_accessed=NOW - timedelta(days=45), scope_relevance=0.7)
    archived = classify(decent, NOW)
    assert archived.verdict == "archive" and "stale" in archived.reasons[-1]
    # Decent memories are archived, not pruned, even long after the prune horizon.
    old_decent = signals(confidence=0.8, access_count=1, last_accessed=NOW - timedelta(days=400), scope_relevance=0.7)
    assert classify(old_decent, NOW).verdict == "archive"

    assert classify(signals(), NOW).verdict == "keep"
    # a high score but one unverified mention is kept, not promoted
    once = signals(confidence=1.0, access_count=20, mention_count=1, scope_relevance=1.0, weight_center=1.0)
    assert quality(once, NOW) >= 0.7 and classify(once, NOW).verdict == "keep"
    assert classify(signals(superseded=True), NOW).verdict == "archive"
    stale_superseded = signals(superseded=True, last_accessed=NOW - timedelta(days=31), access_count=30)
    assert classify(stale_superseded, NOW).verdict == "prune"


def test_contradiction_with_anchor() -> None:
    quarantined = classify(signals(contradicts_anchor=True, provenance="tool", mention_count=9), NOW)
    assert quarantined.verdict == "quarantine"
    assert "contradicts an anchored fact" in quarantined.reasons[-1]
    anchored = classify(signals(contradicts_anchor=True, anchored=True), NOW)
    assert anchored.verdict == "keep"
    assert any("anchored itself" in r for r in anchored.reasons)


@FAST
@given(any_signals(), st.floats(0.0, 3000.0))
def test_anchored_never_archived_or_pruned(sig: Signals, later: float) -> None:
    now = NOW + timedelta(days=later)
    result = classify(sig, now)
    assert isinstance(result, Classification) and 0.0 <= result.score <= 1.0 and result.reasons
    if sig.anchored:
        assert result.verdict in ("keep", "promote")
    elif sig.contradicts_anchor:
        assert result.verdict == "quarantine"
    if result.verdict == "promote":
        assert result.score >= CuratorPolicy().promote_score
        assert sig.mention_count >= 2 or sig.provenance == "tool"


@FAST
@given(any_signals(), unit_floats, unit_floats)
def test_quality_monotone_in_confidence_and_provenance(sig: Signals, c1: float, c2: float) -> None:
    lo, hi = sorted((c1, c2))
    fields = {f: getattr(sig, f) for f in Signals.__slots__}
    assert quality(Signals(**{**fields, "confidence": lo}), NOW) <= quality(
        Signals(**{**fields, "confidence": hi}), NOW
    )
    by_source = [quality(Signals(**{**fields, "provenance": p}), NOW) for p in ("inferred", "user", "tool")]
    assert by_source == sorted(by_source)


def test_policy_and_signal_validation() -> None:
    with pytest.raises(ValueError):
        CuratorPolicy(prune_score=0.8)
    with pytest.raises(ValueError):
        CuratorPolicy(tool_factor=0.5, user_factor=0.8)
    with pytest.raises(ValueError):
        CuratorPolicy(prune_after_days=10.0)
    with pytest.raises(ValueError):
        signals(confidence=1.5)
    with pytest.raises(ValueError):
        signals(provenance="rumour")
    with pytest.raises(ValueError):
        DecayPolicy(deep_amount=0.001)
    with pytest.raises(ValueError):
        RetentionPolicy(cycle=timedelta(0))


# --- curation: decay -------------------------------------------------------------------------


def idle(days: float) -> datetime:
    return NOW - timedelta(days=days)


def test_decay_examples() -> None:
    created = idle(1000)
    assert decay_amount(idle(0.5), created, 0, False, NOW) == 0.0
    assert decay_amount(idle(1), created, 0, False, NOW) == 0.01
    assert decay_amount(idle(89.9), created, 0, False, NOW) == 0.01
    assert decay_amount(idle(90), created, 2, False, NOW) == 1.0
    assert decay_amount(idle(500), created, 3, False, NOW) == 0.01  # well used: light only
    assert decay_amount(idle(500), created, 0, True, NOW) == 0.0
    # never accessed: idle time runs from creation
    assert decay_amount(None, idle(95), 0, False, NOW) == 1.0
    assert decay_amount(None, idle(0.2), 0, False, NOW) == 0.0
    # a last access after "now" counts as idle 0
    assert decay_amount(NOW + timedelta(days=3), created, 0, False, NOW) == 0.0


@FAST
@given(st.none() | st.floats(0.0, 1000.0), st.floats(0.0, 1000.0), st.integers(0, 10))
def test_decay_anchored_is_zero(accessed: float | None, created: float, count: int) -> None:
    last = None if accessed is None else idle(accessed)
    assert decay_amount(last, idle(created), count, True, NOW) == 0.0


@FAST
@given(st.floats(0.0, 1000.0), st.floats(0.0, 1000.0), st.integers(0, 10))
def test_decay_monotone_in_idle_time(d1: float, d2: float, count: int) -> None:
    lo, hi = sorted((d1, d2))
    a, b = decay_amount(idle(lo), idle(2000), count, False, NOW), decay_amount(idle(hi), idle(2000), count, False, NOW)
    assert a <= b
    assert b in (0.0, 0.01, 1.0)
    if b == 1.0:
        assert hi >= 90 and count < 3


# --- curation: retention ----------------------------------------------------------------------


def test_retention_cutoffs() -> None:
    assert all(raw_cutoff(t, NOW) == NOW - timedelta(days=1) for t in TIERS)
    cutoffs = [block_cutoff(t, NOW) for t in TIERS]
    assert cutoffs == [NOW - timedelta(days=1), NOW - timedelta(days=3), NOW - timedelta(days=7)]
    assert block_cutoff("normal", NOW) == raw_cutoff("normal", NOW)  # no blocks kept past the raw cycle
    forever = RetentionPolicy(elder_block_cycles=None, cycle=timedelta(hours=12))
    assert block_cutoff("elder", NOW, forever) is None
    assert block_cutoff("meso", NOW, forever) == NOW - timedelta(hours=36)
    with pytest.raises(ValueError):
        raw_cutoff("vip", NOW)  # type: ignore[arg-type]


@FAST
@given(st.integers(0, 5), st.integers(0, 3), st.integers(0, 3), st.integers(0, 3), st.floats(0.1, 10.0))
def test_retention_ordered_by_tier(raw: int, b1: int, b2: int, b3: int, hours: float) -> None:
    lo, mid, hi = sorted((b1, b2, b3))
    policy = RetentionPolicy(
        cycle=timedelta(hours=hours),
        normal_raw_cycles=raw,
        meso_raw_cycles=raw,
        elder_raw_cycles=raw,
        normal_block_cycles=lo,
        meso_block_cycles=lo + mid,
        elder_block_cycles=lo + mid + hi,
    )
    normal, meso, elder = (block_cutoff(t, NOW, policy) for t in TIERS)
    assert normal is not None and meso is not None and elder is not None
    assert NOW >= normal >= meso >= elder
    assert all(raw_cutoff(t, NOW, policy) >= normal for t in TIERS)
