"""The read index's ANN above ``exact_scan_limit`` (issue 42, decision 2), without a database: on an
easy set its hits equal the exact scan's, item for item and score for score (every candidate is
re-scored exactly); it grows with caught-up items, forgets removed ones, counts in ``index_mb``,
and the same scope gives the same graph and the same answers."""

from __future__ import annotations

import uuid

import numpy as np

from mnemo.recall.index_postings import LexicalIndex
from mnemo.recall.index_utterances import UtteranceIndex
from mnemo.recall.index_vectors import DenseIndex, LateIndex
from mnemo.recall.scope_index import ScopeIndex

DIM = 32
IDS = [uuid.UUID(int=n + 1) for n in range(2000)]


def _easy(n: int, seed: int = 7) -> tuple[np.ndarray, np.ndarray]:
    """``n`` vectors in 40 tight clusters and one query near each cluster's centre."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(40, DIM)).astype(np.float32)
    rows = centres[np.arange(n) % 40] + rng.normal(scale=0.05, size=(n, DIM)).astype(np.float32)
    queries = centres + rng.normal(scale=0.02, size=centres.shape).astype(np.float32)
    return rows.astype(np.float32), queries


def _pair(rows: np.ndarray, ann_above: int = 100) -> tuple[DenseIndex, DenseIndex]:
    """The same rows in an index with the graph and in an exact one."""
    ann, exact = DenseIndex(DIM, ann_above=ann_above), DenseIndex(DIM)
    for index in (ann, exact):
        index.load(IDS[: len(rows)], ["turn"] * len(rows), rows)
    ann.layout_ann()
    assert ann.ann is not None and exact.ann is None
    return ann, exact


def test_the_ann_hits_equal_the_exact_scans_on_an_easy_set() -> None:
    rows, queries = _easy(1200)
    ann, exact = _pair(rows)
    for q in queries:
        assert ann.nearest(q, 10) == exact.nearest(q, 10)


def test_no_graph_at_or_below_the_limit() -> None:
    rows, _ = _easy(100)
    index = DenseIndex(DIM, ann_above=100)
    index.load(IDS[:100], ["turn"] * 100, rows)
    index.layout_ann()
    assert index.ann is None and not index.outgrown
    index.load(IDS[100:101], ["turn"], rows[:1])
    assert index.outgrown  # past the limit: a rebuild lays the graph out
    scope = ScopeIndex(("e", "ns", "slug"), 1, LexicalIndex(), index, LateIndex(), UtteranceIndex())
    assert scope.bloated


def test_caught_up_items_join_the_graph_and_removed_ones_leave_it() -> None:
    rows, queries = _easy(1200)
    ann, exact = _pair(rows[:1000])
    more = IDS[1000:1200]
    for index in (ann, exact):
        index.load(more, ["memory"] * len(more), rows[1000:1200])
        for item in IDS[:1200:3]:
            index.remove(item)
    assert ann.ann is not None and len(ann.ann) == len(ann.items.slot) == 800
    for q in queries:
        hits = ann.nearest(q, 10)
        assert hits == exact.nearest(q, 10)
        assert not {h[0] for h in hits} & set(IDS[:1200:3])
    assert any(h[1] == "memory" for q in queries for h in ann.nearest(q, 10))


def test_the_graph_counts_in_the_index_memory() -> None:
    rows, _ = _easy(1200)
    ann, exact = _pair(rows)
    assert ann.ann is not None
    assert ann.nbytes == exact.nbytes + ann.ann.memory_usage > exact.nbytes


def test_the_same_scope_gives_the_same_graph_and_answers() -> None:
    rows, _ = _easy(1500, seed=3)
    queries = np.random.default_rng(11).normal(size=(30, DIM)).astype(np.float32)  # hard: far from all
    one, _ = _pair(rows)
    two, _ = _pair(rows)
    for q in queries:
        assert one.nearest(q, 20) == two.nearest(q, 20)
