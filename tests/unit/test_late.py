"""Late interaction: IDF-weighted MaxSim and its combination with the first-stage score (issue 14)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from mnemo.cognition.scoring.late import TokenVectors, combine, idf_weights, late_scores, maxsim, quantize


def _unit(rows: np.ndarray) -> np.ndarray:
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def _tokens(seed: int, n: int, dim: int = 8, vocab: int = 20) -> TokenVectors:
    rng = np.random.default_rng(seed)
    return TokenVectors(rng.integers(0, vocab, size=n).astype(np.int32), _unit(rng.normal(size=(n, dim))))


_seeds = st.integers(0, 10_000)
_lengths = st.integers(1, 12)


def test_token_ids_and_vectors_must_match() -> None:
    with pytest.raises(ValueError, match="do not match"):
        TokenVectors(np.arange(3, dtype=np.int32), np.zeros((2, 4)))
    with pytest.raises(ValueError, match="do not match"):
        TokenVectors(np.arange(3, dtype=np.int32), np.zeros(3))


@given(_seeds, st.integers(1, 8))
def test_idf_is_positive_and_falls_as_more_candidates_share_a_token(seed: int, n: int) -> None:
    candidates = [_tokens(seed + i, 6) for i in range(n)]
    query_ids = list(range(25))  # some in no candidate (vocabulary is 0..19), some in many
    weights = idf_weights(query_ids, candidates)
    df = [sum(t in set(c.ids.tolist()) for c in candidates) for t in query_ids]
    assert (weights > 0).all()
    for w1, d1 in zip(weights, df, strict=True):
        for w2, d2 in zip(weights, df, strict=True):
            if d1 < d2:
                assert w1 > w2
    assert math.isclose(weights[-1], math.log((n + 1) / 0.5))  # token 24 is in no candidate


@given(_seeds, _lengths, _lengths)
def test_maxsim_is_a_weighted_mean_of_best_cosines(seed: int, nq: int, nd: int) -> None:
    q, d = _tokens(seed, nq), _tokens(seed + 1, nd)
    w = np.random.default_rng(seed).uniform(0.1, 3.0, size=nq)
    score = maxsim(q.vectors, d.vectors, w)
    assert -1.0 - 1e-6 <= score <= 1.0 + 1e-6
    # the document's token order does not matter; more document tokens never lower it
    assert math.isclose(score, maxsim(q.vectors, d.vectors[::-1], w), abs_tol=1e-6)
    more = np.vstack([d.vectors, _tokens(seed + 2, 3).vectors])
    assert maxsim(q.vectors, more, w) >= score - 1e-6
    # a document holding every query token scores 1
    assert math.isclose(maxsim(q.vectors, np.vstack([d.vectors, q.vectors]), w), 1.0, abs_tol=1e-5)


def test_maxsim_of_nothing_is_zero() -> None:
    q = _tokens(1, 3)
    assert maxsim(q.vectors[:0], q.vectors, np.ones(0)) == 0.0
    assert maxsim(q.vectors, q.vectors[:0], np.ones(3)) == 0.0
    assert maxsim(q.vectors, q.vectors, np.zeros(3)) == 0.0


def test_a_rare_query_token_decides_more_than_a_common_one() -> None:
    """Two candidates each match one of two query tokens exactly; the one matching the token fewer
    candidates share ranks first."""
    e = np.eye(4)
    common, rare = 10, 11
    query = TokenVectors(np.array([common, rare], np.int32), e[:2])
    filler = TokenVectors(np.array([common], np.int32), e[[0]])  # makes `common` common
    has_common = TokenVectors(np.array([common, 5], np.int32), e[[0, 2]])
    has_rare = TokenVectors(np.array([rare, 6], np.int32), e[[1, 3]])
    scores = late_scores(query, [has_common, has_rare, filler, filler])
    assert scores[1] > scores[0]
    # unweighted, the two would tie
    plain = np.ones(2)
    tie = maxsim(query.vectors, has_common.vectors, plain), maxsim(query.vectors, has_rare.vectors, plain)
    assert math.isclose(*tie)


@given(
    st.lists(st.floats(-5, 5, allow_nan=False), min_size=2, max_size=20),
    st.floats(0.1, 10),
    st.floats(-10, 10),
)
def test_combine_ignores_the_scale_of_either_score(first: list[float], scale: float, shift: float) -> None:
    assume(float(np.std(first)) > 1e-6)
    late = np.linspace(0.0, 1.0, len(first))
    a = combine(first, late)
    b = combine(np.asarray(first) * scale + shift, late * 3.0 - 1.0)
    assert np.allclose(a, b, atol=1e-6)


@given(st.lists(st.floats(-5, 5, allow_nan=False), min_size=2, max_size=20, unique=True))
def test_a_late_score_that_separates_nothing_keeps_the_first_ranking(first: list[float]) -> None:
    assume(float(np.std(first)) > 1e-6 and min(np.diff(sorted(first))) > 1e-9)
    combined = combine(first, [0.4] * len(first))
    assert list(np.argsort(combined, kind="stable")) == list(np.argsort(first, kind="stable"))


def test_combine_needs_one_late_score_per_candidate() -> None:
    with pytest.raises(ValueError, match="late scores"):
        combine([1.0, 2.0], [1.0])


@given(_seeds, st.lists(st.integers(0, 9), min_size=1, max_size=8), _lengths)
def test_late_scores_are_each_candidates_maxsim_under_candidate_idf(seed: int, sizes: list[int], nq: int) -> None:
    """The batched scorer agrees with scoring candidates one by one (an empty candidate scores 0)."""
    query = _tokens(seed, nq)
    candidates = [
        _tokens(seed + 1 + i, n) if n else TokenVectors(np.zeros(0, np.int32), np.zeros((0, 8)))
        for i, n in enumerate(sizes)
    ]
    weights = idf_weights(query.ids.tolist(), candidates)
    df = [sum(int(t) in set(c.ids.tolist()) for c in candidates) for t in query.ids]
    assert np.allclose(weights, [math.log((len(candidates) + 1) / (d + 0.5)) for d in df])
    expected = [maxsim(query.vectors, c.vectors, weights) for c in candidates]
    assert np.allclose(late_scores(query, candidates), expected, atol=1e-5)


@given(_seeds, _lengths, st.lists(_lengths, min_size=1, max_size=6))
def test_int8_codes_score_within_a_hundredth_of_floats(seed: int, nq: int, sizes: list[int]) -> None:
    query = _tokens(seed, nq, dim=32)
    candidates = [_tokens(seed + 1 + i, n, dim=32) for i, n in enumerate(sizes)]
    codes = [quantize(c) for c in candidates]
    assert all(c.vectors.dtype == np.int8 and c.scale == pytest.approx(1 / 127) for c in codes)
    # each code is off by at most 0.5/127, so a cosine by at most sqrt(dim) * 0.5/127 (Cauchy-Schwarz);
    # a max and a weighted mean of such values move no further
    bound = math.sqrt(32) * 0.5 / 127 + 1e-6
    assert np.allclose(late_scores(query, codes), late_scores(query, candidates), atol=bound, rtol=0)
    assert quantize(codes[0]) is codes[0]  # already codes


# --- the in-process cache of token embeddings ------------------------------------------------------
def test_the_token_cache_keeps_the_most_recently_read_within_its_bytes_and_forgets_on_demand() -> None:
    import uuid

    from mnemo.store.token_vectors import Cache

    one = quantize(_tokens(1, 10, dim=16))  # 10 * 4 + 10 * 16 bytes, plus overhead
    size = one.ids.nbytes + one.vectors.nbytes + 64
    cache = Cache(max_bytes=3 * size)
    ids = [uuid.UUID(int=i) for i in range(5)]
    keys = [("ana", "chat", i, "m") for i in ids]
    cache.put({keys[0]: one, keys[1]: one, keys[2]: one})
    assert len(cache) == 3
    assert set(cache.get([keys[0]])) == {keys[0]}  # read: now the most recent
    cache.put({keys[3]: one})  # over the bound: the least recently read (keys[1]) goes
    assert set(cache.get(keys)) == {keys[0], keys[2], keys[3]}
    cache.drop("ana", [ids[2]])
    assert set(cache.get(keys)) == {keys[0], keys[3]}
    cache.put({("ana", "work", ids[4], "m"): one, ("bob", "chat", ids[4], "m"): one})
    cache.drop_scope("ana", "chat")
    assert len(cache) == 2 and cache.get([("ana", "work", ids[4], "m")])
    cache.drop_scope("ana")
    assert list(cache.get([("bob", "chat", ids[4], "m")])) == [("bob", "chat", ids[4], "m")] and len(cache) == 1
    off = Cache(max_bytes=0)
    off.put({keys[0]: one})
    assert len(off) == 0


# --- the index: late interaction over a whole scope -----------------------------------------------
@given(_seeds, st.lists(st.integers(0, 9), min_size=1, max_size=8), _lengths)
def test_an_index_scores_as_late_scores_does_with_idf_over_every_indexed_item(
    seed: int, sizes: list[int], nq: int
) -> None:
    from mnemo.cognition.scoring.late import index_scores, index_tokens

    query = _tokens(seed, nq)
    items = [
        quantize(_tokens(seed + 1 + i, n)) if n else TokenVectors(np.zeros(0, np.int32), np.zeros((0, 8), np.int8))
        for i, n in enumerate(sizes)
    ]
    index = index_tokens(items)
    assert index.size == len(items) and len(index.filled) == sum(n > 0 for n in sizes)
    # codes stay codes (4x less memory than floats), held shifted for the integer kernel: code + 128
    present = [c.vectors for c in items if len(c.ids)]
    if present:
        assert index.rows.dtype == np.uint8
        assert np.array_equal(index.rows.astype(np.int16) - 128, np.concatenate(present).astype(np.int16))
    assert np.allclose(index_scores(query, index), late_scores(query, items), atol=1e-6)
    weights = idf_weights(query.ids.tolist(), items)
    expected = [maxsim(query.vectors, c.vectors.astype(np.float32) * c.scale, weights) for c in items]
    assert np.allclose(index_scores(query, index), expected, atol=1e-5)
    assert index.nbytes >= index.rows.nbytes


@given(_seeds, st.lists(st.lists(st.integers(0, 9), min_size=0, max_size=6), min_size=1, max_size=5), _lengths)
def test_a_growing_index_is_the_index_of_everything_appended_to_it(
    seed: int, batches: list[list[int]], nq: int
) -> None:
    """Appending items batch by batch gives the index laying them all out at once would: the same
    rows, positions, scales and document frequencies, so the same scores, bit for bit."""
    from mnemo.cognition.scoring.late import GrowingIndex, index_scores, index_tokens

    query = _tokens(seed, nq)
    made: list[TokenVectors] = []

    def item(n: int) -> TokenVectors:
        if not n:
            return TokenVectors(np.zeros(0, np.int32), np.zeros((0, 8), np.int8))
        return quantize(_tokens(seed + 1 + len(made), n))

    first = [item(n) for n in batches[0]]
    made.extend(first)
    growing = GrowingIndex(first)
    for batch in batches[1:]:
        more = [item(n) for n in batch]
        grown = growing.extend(more)
        made.extend(more)
        if grown is None:  # nothing held had rows yet: laid out again
            growing = GrowingIndex(made)
    whole = index_tokens(made)
    got = growing.index
    assert got.size == whole.size
    for name in ("rows", "filled", "starts", "scales", "vocabulary", "df"):
        assert np.array_equal(getattr(got, name), getattr(whole, name)), name
    assert np.array_equal(index_scores(query, got), index_scores(query, whole))


def test_the_cache_keeps_a_scopes_index_only_for_the_items_it_was_built_from() -> None:
    import uuid

    from mnemo.cognition.scoring.late import index_tokens
    from mnemo.store.token_vectors import Cache

    one = quantize(_tokens(1, 10, dim=16))
    ids = tuple(uuid.UUID(int=i) for i in range(3))
    index = index_tokens([one, one, one])
    cache = Cache(max_bytes=2 * index.nbytes + 1)
    cache.keep_index(("ana", "chat", "m"), ids, index)
    assert cache.index(("ana", "chat", "m"), ids) is index
    assert cache.index(("ana", "chat", "m"), ids[:2]) is None  # an item came or went: rebuilt
    assert cache.index(("ana", "work", "m"), ids) is None  # another scope's is never served
    cache.keep_index(("ana", "work", "m"), ids, index)
    cache.keep_index(("bob", "chat", "m"), ids, index)  # over the bound: the least recently read goes
    assert cache.index(("ana", "chat", "m"), ids) is None and cache.index(("bob", "chat", "m"), ids) is index
    cache.drop("bob", [ids[1]])  # forgetting one of its items drops the index
    assert cache.index(("bob", "chat", "m"), ids) is None
    cache.drop_scope("ana", "work")
    assert cache.index(("ana", "work", "m"), ids) is None
    Cache(max_bytes=0).keep_index(("ana", "chat", "m"), ids, index)  # too big for the budget: not kept
    small = Cache(max_bytes=0)
    small.keep_index(("ana", "chat", "m"), ids, index)
    assert small.index(("ana", "chat", "m"), ids) is None


def test_scoring_block_by_block_gives_the_same_scores(monkeypatch: pytest.MonkeyPatch) -> None:
    from mnemo.cognition.scoring import late

    query = _tokens(3, 5)
    items = [quantize(_tokens(10 + i, n)) for i, n in enumerate([4, 7, 1, 9, 3])]
    whole = late.index_scores(query, late.index_tokens(items))
    monkeypatch.setattr(late, "BLOCK", 3)  # blocks that split items
    assert np.allclose(late.index_scores(query, late.index_tokens(items)), whole, atol=1e-6)


# --- decision 1 of issue 42: MaxSim as int8 x int8 into int32 -------------------------------------
@settings(deadline=None)  # the first call builds the ONNX Runtime session
@given(_seeds, st.integers(1, 300), st.integers(1, 40), st.integers(1, 64))
def test_the_int8_product_is_the_exact_integer_product(seed: int, n: int, q: int, dim: int) -> None:
    from mnemo.cognition.scoring.late import shift
    from mnemo.embed import int8_product

    rng = np.random.default_rng(seed)
    rows = rng.integers(-127, 128, size=(n, dim)).astype(np.int8)
    codes = rng.integers(-127, 128, size=(q, dim)).astype(np.int8)
    got = int8_product(rows, codes)
    assert got.dtype == np.int32 and got.shape == (n, q)
    assert np.array_equal(got, rows.astype(np.int64) @ codes.astype(np.int64).T)
    # rows held shifted, as a token index holds them, are the same rows to the kernel
    assert np.array_equal(int8_product(shift(rows), codes), got)


@settings(deadline=None)
@given(_seeds, st.lists(st.integers(0, 9), min_size=1, max_size=8), _lengths)
def test_int8_queries_score_within_two_hundredths_of_floats_and_floats_ignore_the_kernel(
    seed: int, sizes: list[int], nq: int
) -> None:
    from mnemo.cognition.scoring.late import index_scores, index_tokens
    from mnemo.embed import int8_product

    query = _tokens(seed, nq, dim=32)
    floats = [_tokens(seed + 1 + i, n, dim=32) for i, n in enumerate(sizes)]
    items = [quantize(c) if len(c.ids) else TokenVectors(c.ids, np.zeros((0, 32), np.int8)) for c in floats]
    index = index_tokens(items)
    exact = index_scores(query, index)
    int8 = index_scores(query, index, int8_product)
    # the query's codes are off by at most 0.5/127 each as the items' are: twice the bound of one side
    bound = 2 * math.sqrt(32) * 0.5 / 127 + 1e-6
    assert np.allclose(int8, exact, atol=bound, rtol=0)
    assert np.allclose(late_scores(query, items, int8_product), int8, atol=1e-9, rtol=0)
    # a product is an integer one: an index of floats (fresh from the model) keeps the float product
    with_floats = index_tokens(floats)
    assert np.array_equal(index_scores(query, with_floats, int8_product), index_scores(query, with_floats))
