"""Bifocal hits and migration compression (issue 13), and the RAPTOR clustering: pure functions."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from mnemo.cognition.consolidation.citations import cite, subjects
from mnemo.cognition.consolidation.clustering import cluster
from mnemo.cognition.consolidation.salience import block_centroid, new_information
from mnemo.cognition.scoring.bifocal import condense_prose, condense_summary, render_prose, select_excerpt
from mnemo.cortex.cortex_search import once, render_excerpt
from mnemo.models import ExcerptLine, Hit, Scope

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)

sims = st.lists(st.floats(-1, 1, allow_nan=False), max_size=40)


@given(sims, st.integers(1, 10), st.floats(0, 2, allow_nan=False))
def test_an_excerpt_quotes_the_best_line_and_only_lines_near_it(values: list[float], n: int, margin: float) -> None:
    chosen = select_excerpt(values, n, margin)
    if not values:
        assert chosen == []
        return
    assert chosen == sorted(set(chosen)) and 1 <= len(chosen) <= n
    best = max(values)
    assert any(values[i] == best for i in chosen)
    assert all(values[i] >= best - margin for i in chosen)
    left_out = [values[i] for i in range(len(values)) if i not in chosen]
    if len(chosen) < n:  # nothing within the margin was left out when there was room
        assert all(v < best - margin for v in left_out)


@given(st.lists(st.text(alphabet="abc ", min_size=1, max_size=30), min_size=1, max_size=8), st.integers(3, 40))
def test_a_condensed_summary_is_never_longer(sentences: list[str], words: int) -> None:
    text = ". ".join(s.strip() or "a" for s in sentences) + "."
    out = condense_summary(text, words)
    assert len(out.replace(" …", "").split()) <= max(words, 0) or out == ""
    assert len(out.split()) <= len(text.split()) + 1


def test_migration_trims_margins_condenses_dead_zones_and_keeps_live_zones_verbatim() -> None:
    live = {"start": 3, "end": 4, "content": "Bob: I see, the WAL archive fills the disk.\nAlice: Exactly."}
    long_summary = "The cluster evicted the replica. " * 20
    prose = {
        "anterior_margin": "Alice: hello",
        "posterior_margin": "Bob: bye",
        "live_zones": [live],
        "dead_zone_summaries": [{"start": 0, "end": 2, "summary": long_summary}],
    }
    out = condense_prose(prose, 12)
    assert "anterior_margin" not in out and "posterior_margin" not in out
    assert out["live_zones"] == [live]
    assert len(out["dead_zone_summaries"][0]["summary"].split()) <= 12
    text = render_prose(out)
    assert text.index("[summary]") < text.index("WAL archive")  # zones in turn order


def test_clusters_partition_the_blocks_and_find_separated_groups() -> None:
    rng = np.random.default_rng(7)
    a = rng.normal(0, 0.05, (20, 32)) + np.eye(32)[0]
    b = rng.normal(0, 0.05, (25, 32)) + np.eye(32)[1]
    vectors = np.vstack([a, b])
    # (HDBSCAN over the spectral embedding splits these clear groups further: benchmarks/tree_clustering.py)
    for method, reduce in (("gmm", "spectral"), ("gmm", "pca"), ("hdbscan", "pca")):
        groups = cluster(vectors, method=method, min_size=5, seed=1, reduce=reduce)  # type: ignore[arg-type]
        assert sorted(i for g in groups for i in g) == list(range(45))  # every block in exactly one group
        assert sorted(map(len, groups)) == [20, 25]
        assert set(groups[0]) == set(range(20, 45))
    assert cluster(vectors[:6], min_size=5) == [list(range(6))]  # too few to split
    assert cluster(vectors, seed=3) == cluster(vectors, seed=3)  # seeded: reproducible


def test_subjects_are_mid_sentence_names_and_codes_without_speakers_or_calendar_words() -> None:
    text = "Caroline: I went to the LGBTQ support group in Boston on Monday. Then Melanie asked about the RTX4090."
    assert subjects(text, ["Caroline", "Melanie"]) == {"lgbtq", "boston", "rtx4090"}
    assert subjects("Then we left. Later it rained.") == frozenset()  # capitals that open sentences are not names


def test_a_block_cites_earlier_blocks_by_rare_shared_subjects_only() -> None:
    earlier = [frozenset({"boston", "common"}), frozenset({"common"}), frozenset({"common", "nina"})]
    new = [frozenset({"boston", "nina", "common"}), frozenset({"common"}), frozenset()]
    found = cite(new, earlier, rare=2)
    assert sorted(i for i, _ in found[0]) == [0, 2]  # "common" is in 3 earlier blocks: not a reference
    assert found[1] == [] and found[2] == []
    assert cite(new, earlier, rare=3, most=1)[1] == [(2, 1)]  # ties: the latest earlier block first


def _hit(kind: str, item: uuid.UUID, excerpt: tuple[ExcerptLine, ...] = (), content: str = "") -> Hit:
    return Hit(
        id=item, item_kind=kind, content=content or render_excerpt(None, excerpt), score=1.0, similarity=0.5,  # type: ignore[arg-type]
        vector_rank=None, lexical_rank=None, lexical_score=None, created_at=NOW, scope=Scope("u"), excerpt=excerpt,
    )  # fmt: skip


def _line(turn: uuid.UUID, text: str) -> ExcerptLine:
    return ExcerptLine(turn, 1, "user", "Ann", text, NOW, 0.5)


def test_a_context_never_pays_twice_for_a_line() -> None:
    a, b, c = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    turn = _hit("line", a, (_line(a, "we moved to Lisbon"),), content="we moved to Lisbon")
    both = _hit("memory", uuid.uuid4(), (_line(a, "we moved to Lisbon"), _line(b, "in May")))
    again = _hit("memory", uuid.uuid4(), (_line(a, "we moved to Lisbon"),))
    whole = _hit("memory", uuid.uuid4(), (_line(c, "x"),), content="the whole block, expanded")
    out = once([turn, both, again, turn, whole], lambda t: len(t.split()))
    assert [h.id for h in out] == [turn.id, both.id, whole.id]  # the repeat and the spent block are gone
    assert [line.turn_id for line in out[1].excerpt] == [b] and "Lisbon" not in out[1].content
    assert out[1].token_count == len(out[1].content.split())
    assert out[2].content == "the whole block, expanded"  # an expanded block stays whole


def test_new_information_is_content_words_the_session_had_not_used() -> None:
    texts = [
        "I adopted a rescue kitten named Bailey last week",
        "Aww, a kitten! Bailey is a lovely name",  # repeats: nothing new enough
        "She loves chasing laser pointers around the apartment",
        "Thanks!",
    ]
    assert new_information(texts) == [True, False, True, False]
    assert new_information(texts, min_new=1)[1] is True  # "lovely", "name" are new words
    assert new_information([]) == []


def test_a_scope_in_memory_ranks_as_an_exact_cosine_search() -> None:
    import pyarrow as pa

    from mnemo.cortex.lance_tables import ScopeVectors

    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(30, 8)).astype(np.float32)
    data = pa.table({"id": [f"r{i}" for i in range(30)], "vector": pa.array(list(vectors), pa.list_(pa.float32(), 8))})
    cache = ScopeVectors.from_arrow(7, data, ("id",), 8)
    q = rng.normal(size=8)
    exact = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)) @ (q / np.linalg.norm(q))
    got = cache.nearest(q, 5)
    assert [i for i, _ in got] == list(np.argsort(-exact)[:5])
    assert np.allclose([s for _, s in got], np.sort(exact)[::-1][:5], atol=1e-5)
    assert cache.position["r4"] == 4 and cache.rows[4] == {"id": "r4"} and cache.version == 7
    assert cache.nearest(q, 0) == [] and len(cache.nearest(q, 100)) == 30


# --- a block's vector: the centroid of its turns' ------------------------------------------------
_rows = st.integers(1, 6).flatmap(
    lambda n: st.lists(
        st.lists(st.floats(-1, 1, allow_nan=False, width=32), min_size=4, max_size=4), min_size=n, max_size=n
    )
)


@given(_rows)
def test_a_block_centroid_is_a_unit_vector_that_ignores_turn_order_and_length(rows: list[list[float]]) -> None:
    vectors = np.asarray(rows, dtype=np.float64)
    centroid = block_centroid(vectors)
    norms = np.linalg.norm(vectors, axis=1)
    # a turn vector is either nothing or a direction: a norm near the zero threshold is neither
    assume(all(n == 0.0 or n > 1e-6 for n in norms))
    units = vectors[norms > 1e-6] / norms[norms > 1e-6, None]
    mean = units.mean(axis=0) if len(units) else np.zeros(4)
    if np.linalg.norm(mean) > 1e-3:
        assert abs(float(np.linalg.norm(centroid)) - 1.0) < 1e-5
        assert np.allclose(centroid, block_centroid(vectors[::-1]), atol=1e-5)  # order does not matter
        assert np.allclose(centroid, block_centroid(vectors * 3.0), atol=1e-5)  # nor a turn's length
        # it is the direction nearest the turns on average: no turn-free direction does better
        assert float(units.mean(axis=0) @ centroid) >= float(units.mean(axis=0) @ units[0]) - 1e-5


def test_one_turns_block_points_where_the_turn_does() -> None:
    assert np.allclose(block_centroid(np.array([[3.0, 4.0]])), [0.6, 0.8])
    with pytest.raises(ValueError):
        block_centroid(np.zeros((0, 3)))
