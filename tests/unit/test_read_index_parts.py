"""The read index's in-memory parts, without a database (issue 29): BM25 over held postings equals
the formula, dead entries are skipped and counted, the exact scan orders ties by id."""

from __future__ import annotations

import uuid

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from mnemo.cognition.scoring.bm25 import average_length, bm25_weights
from mnemo.recall.index_postings import LexicalIndex
from mnemo.recall.index_utterances import UtteranceIndex
from mnemo.recall.index_vectors import DenseIndex, LateIndex
from mnemo.recall.scope_index import ScopeIndex
from mnemo.store.read_index import Postings

IDS = [uuid.UUID(int=n + 1) for n in range(50)]


def _postings(rows: list[tuple[str, int, int, int]]) -> Postings:
    rows = sorted(rows)
    return Postings(
        [t for t, _, _, _ in rows],
        [IDS[i] for _, i, _, _ in rows],
        ["turn"] * len(rows),
        np.array([tf for _, _, tf, _ in rows], dtype=np.float64),
        np.array([dl for _, _, _, dl in rows], dtype=np.float64),
    )


_rows = st.lists(
    st.tuples(
        st.sampled_from(["boat", "sail", "lake", "dog"]), st.integers(0, 49), st.integers(1, 4), st.integers(1, 30)
    ),
    min_size=1,
    max_size=60,
    unique_by=lambda r: (r[0], r[1]),
)


@given(_rows, st.lists(st.integers(0, 49), max_size=10))
def test_bm25_over_held_postings_is_the_formula_over_the_live_ones(
    rows: list[tuple[str, int, int, int]], gone: list[int]
) -> None:
    lexicon = LexicalIndex()
    lexicon.load(_postings(rows))
    for i in gone:
        lexicon.items.remove(IDS[i])
    live = [r for r in rows if r[1] not in gone]
    docs, total = 50, 600
    avgdl = average_length(docs, total)
    expected: dict[uuid.UUID, float] = {}
    for term in ("boat", "lake"):
        mine = [r for r in live if r[0] == term]
        for _, i, tf, dl in mine:
            w = bm25_weights(np.array([tf], float), np.array([dl], float), len(mine), docs, avgdl)[0]
            expected[IDS[i]] = expected.get(IDS[i], 0.0) + w
    got = {i: s for i, _, s in lexicon.top(["boat", "lake"], docs, avgdl, 100, ("turn",))}
    assert got.keys() == expected.keys()
    assert all(abs(got[i] - expected[i]) < 1e-9 for i in got)
    ranked = [i for i, _, _ in lexicon.top(["boat", "lake"], docs, avgdl, 100, ("turn",))]
    assert ranked == sorted(expected, key=lambda i: (-expected[i], i))  # ties in id order, as SQL's
    assert lexicon.top(["boat", "lake"], docs, avgdl, 100, ("memory",)) == []


def test_the_exact_scan_ranks_by_cosine_with_ties_in_id_order_and_skips_the_dead() -> None:
    vectors = DenseIndex(3)
    rows = np.array([[1, 0, 0], [2, 0, 0], [0, 1, 0], [1, 1, 0]], dtype=np.float32)
    vectors.load(IDS[:4][::-1], ["turn"] * 4, rows)  # ids 4, 3, 2, 1
    hits = vectors.nearest(np.array([1.0, 0.0, 0.0]), 3)
    assert [h[0] for h in hits] == [IDS[2], IDS[3], IDS[0]]  # two at cosine 1 (ids 3 and 4), then id 1
    assert abs(hits[2][2] - np.sqrt(0.5)) < 1e-6
    vectors.items.remove(IDS[2])
    assert [h[0] for h in vectors.nearest(np.array([1.0, 0.0, 0.0]), 3)] == [IDS[3], IDS[0], IDS[1]]


def test_an_index_whose_dead_entries_outnumber_the_live_ones_asks_to_be_rebuilt() -> None:
    vectors = DenseIndex(2)
    many = [uuid.UUID(int=n + 100) for n in range(3000)]
    vectors.load(many, ["memory"] * len(many), np.ones((len(many), 2), dtype=np.float32))
    index = ScopeIndex(("e", "ns", "slug"), 1, LexicalIndex(), vectors, LateIndex(), UtteranceIndex())
    for item in many[:1400]:
        vectors.items.remove(item)
    assert not index.bloated  # 1,400 dead beside 1,600 live
    for item in many[1400:1700]:
        vectors.items.remove(item)
    assert index.bloated and index.size == 1300
