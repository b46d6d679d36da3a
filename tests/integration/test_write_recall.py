"""The write and recall paths end to end on the real database and embedder."""

from __future__ import annotations

import numpy as np
import psycopg
import pytest

from mnemo import (
    AsyncArchive,
    ContentTooLargeError,
    DimensionMismatchError,
    EmptyContentError,
    InvalidContentError,
    RecallResult,
    Refusal,
    Scope,
    Settings,
)
from mnemo.embed import Embeddings
from tests.conftest import snapshot

ALICE = Scope("alice", "chat")


async def test_remember_then_recall_with_component_scores(archive: AsyncArchive) -> None:
    await archive.remember(ALICE, "Alice is allergic to peanuts and carries an epinephrine pen", kind="preference")
    await archive.remember(ALICE, "The quarterly report is due on the first Friday of April")
    await archive.record_turn(ALICE, "s1", "user", "My cat Miso knocked the plant off the windowsill again")
    result = await archive.recall(ALICE, "which foods must alice avoid?", k=3)
    assert isinstance(result, RecallResult) and result
    top = result[0]
    assert "peanuts" in top.content
    assert top.item_kind == "memory" and top.memory_kind == "preference"
    assert top.vector_rank == 1
    assert top.similarity is not None and top.similarity > 0.3
    assert top.lexical_score is not None and top.lexical_score > 0  # BM25: "alice" matches
    assert top.neighbour_boost == 0.0  # memories have no conversation neighbours
    scores = [h.score for h in result]
    assert scores == sorted(scores, reverse=True)


async def test_rrf_fusion_mode_scores(settings: Settings, embeddings: Embeddings) -> None:
    archive = await AsyncArchive.open(settings, embeddings=embeddings, fusion="rrf", neighbour_weights=())
    try:
        await archive.remember(ALICE, "Alice is allergic to peanuts")
        await archive.remember(ALICE, "The quarterly report is due in April")
        result = await archive.recall(ALICE, "alice peanut allergy", k=2)
    finally:
        await archive.close()
    for hit in result:
        assert hit.fused == pytest.approx(sum(1 / (60 + r) for r in (hit.vector_rank, hit.lexical_rank) if r))
    assert result[0].content == "Alice is allergic to peanuts"


FILLER = [
    "The train was late again this morning",
    "I bought new running shoes",
    "We watched a documentary about owls",
    "My neighbour is renovating the attic",
    "The bakery on the corner closed down",
    "I finished the crossword",
    "It rained the whole weekend",
    "Our book club read a mystery novel",
    "I repotted the basil on the balcony",
    "The printer at work jammed twice",
    "We tried a new ramen place downtown",
    "I lost my umbrella on the bus",
]


async def test_neighbour_smoothing_brings_in_the_answer_turn(settings: Settings, embeddings: Embeddings) -> None:
    scope = Scope("nb", "chat")
    turns = [
        *FILLER[:6],
        "What did you end up naming the new puppy?",
        "We went with Pepper.",
        *FILLER[6:],
    ]
    results = {}
    # smoothing measured on its own: the late scan would re-weigh these near-equal filler turns
    for label, overrides in (("on", {}), ("off", {"neighbour_weights": ()})):
        archive = await AsyncArchive.open(settings, embeddings=embeddings, late_retrieval=False, **overrides)
        try:
            if label == "on":
                for i, text in enumerate(turns):
                    await archive.record_turn(scope, "s", "user" if i % 2 == 0 else "assistant", text)
            results[label] = await archive.recall(scope, "what is the puppy called?", k=3, threshold=-1.0)
        finally:
            await archive.close()
    on = [h.content for h in results["on"]]
    off = [h.content for h in results["off"]]
    assert on[0].startswith("What did you end up naming")
    answer = next(h for h in results["on"] if h.content.startswith("We went with Pepper"))
    assert answer.neighbour_boost > 0 and answer.vector_rank is not None and answer.vector_rank > 3
    assert not any(c.startswith("We went with Pepper") for c in off)


async def test_turns_are_numbered_and_embedded_immediately(archive: AsyncArchive) -> None:
    first = await archive.record_turn(ALICE, "s1", "user", "I started learning the cello", speaker="Alice")
    second = await archive.record_turn(ALICE, "s1", "assistant", "How are the lessons going?")
    other = await archive.record_turn(ALICE, "s2", "user", "Back from the trip to Oslo")
    assert (first.turn_number, second.turn_number, other.turn_number) == (0, 1, 0)
    assert first.token_count == len(
        archive.embeddings.tokenizer("I started learning the cello", add_special_tokens=False)["input_ids"]
    )
    result = await archive.recall(ALICE, "musical instrument practice", k=1)
    assert result[0].id == first.id and result[0].speaker == "Alice" and result[0].session_id == "s1"


async def test_lexical_candidates_find_what_embeddings_miss(archive: AsyncArchive) -> None:
    for i in range(15):
        await archive.record_turn(ALICE, "s", "user", f"We talked about the weather and the garden, day {i}")
    code = await archive.record_turn(ALICE, "s", "user", "The wifi password is XK7QPZ9")
    result = await archive.recall(ALICE, "XK7QPZ9", k=3, threshold=-1.0)
    assert result[0].id == code.id
    assert result[0].lexical_rank == 1


async def test_refusal_when_nothing_is_similar(archive: AsyncArchive) -> None:
    await archive.remember(ALICE, "Alice prefers window seats on long flights", kind="preference")
    result = await archive.recall(ALICE, "lattice quantum chromodynamics gauge fields")
    assert isinstance(result, Refusal)
    assert not result and len(result) == 0 and list(result) == []
    assert result.message == "The archive contains nothing reliable about this."
    assert result.best_similarity is not None and result.best_similarity < result.threshold
    assert result.candidates and result.candidates[0].similarity == result.best_similarity
    # the same query with the threshold lowered below the best similarity returns hits
    lowered = await archive.recall(
        ALICE, "lattice quantum chromodynamics gauge fields", threshold=result.best_similarity - 0.01
    )
    assert isinstance(lowered, RecallResult) and lowered[0].content.startswith("Alice prefers")


async def test_every_recall_is_traced(archive: AsyncArchive, database_url: str) -> None:
    memory = await archive.remember(ALICE, "Alice's birthday is on the 3rd of March")
    await archive.recall(ALICE, "when is alice's birthday?", k=2, read_only=True)
    await archive.recall(ALICE, "photosynthesis in desert cacti")
    await archive.flush()  # the recall's use is written behind it (issue 42)
    with psycopg.connect(database_url) as conn:
        rows = conn.execute(
            "SELECT query, outcome, hit_ids, read_only, reader FROM traces.retrievals ORDER BY at"
        ).fetchall()
    assert rows[0] == ("when is alice's birthday?", "hits", [memory.id], True, "alice")
    assert rows[1][:2] == ("photosynthesis in desert cacti", "refusal") and rows[1][2] == []


async def test_precomputed_vector_is_used(archive: AsyncArchive) -> None:
    probe = await archive.embeddings.embed_query("deep sea submarines")
    memory = await archive.remember(ALICE, "An unrelated sentence about tax forms", embedding=probe * 3.0)
    result = await archive.recall(ALICE, "deep sea submarines", k=1)
    assert result[0].id == memory.id and result[0].similarity == pytest.approx(1.0, abs=2e-3)


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda a: a.remember(ALICE, ""), EmptyContentError),
        (lambda a: a.remember(ALICE, "   \n\t "), EmptyContentError),
        (lambda a: a.remember(ALICE, "x" * 40_000), ContentTooLargeError),
        (lambda a: a.remember(ALICE, "nul \x00 byte"), InvalidContentError),
        (lambda a: a.remember(ALICE, b"\xff\xfe invalid utf-8"), InvalidContentError),
        (lambda a: a.remember(ALICE, "lone surrogate \udcff"), InvalidContentError),
        (lambda a: a.remember(ALICE, "fine", kind="gossip"), InvalidContentError),
        (lambda a: a.remember(ALICE, "fine", embedding=np.ones(100)), DimensionMismatchError),
        (lambda a: a.remember(ALICE, "fine", embedding=np.zeros(384)), InvalidContentError),
        (lambda a: a.remember(ALICE, "fine", source_confidence=1.5), InvalidContentError),
        (lambda a: a.record_turn(ALICE, "s", "narrator", "fine"), InvalidContentError),
        (lambda a: a.record_turn(ALICE, "", "user", "fine"), InvalidContentError),
        (lambda a: a.record_turn(ALICE, "s", "user", "fine", embedding=[0.1] * 383), DimensionMismatchError),
        (lambda a: a.record_turn(ALICE, "s", "user", "\x00"), InvalidContentError),
    ],
)
async def test_bad_writes_raise_and_change_nothing(archive: AsyncArchive, database_url: str, call, error) -> None:
    await archive.remember(ALICE, "an existing memory")
    before = snapshot(database_url)
    with pytest.raises(error):
        await call(archive)
    assert snapshot(database_url) == before


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"query": ""}, EmptyContentError),
        ({"query": "ok", "k": 0}, InvalidContentError),
        ({"query": "ok", "k": 10_001}, InvalidContentError),
        ({"query": "ok", "kinds": ("blocks",)}, InvalidContentError),
        ({"query": "bad \x00"}, InvalidContentError),
        ({"query": "ok", "as_of": "last tuesday"}, InvalidContentError),
        ({"query": "ok", "as_of": 1_700_000_000}, InvalidContentError),
    ],
)
async def test_bad_recalls_raise_and_change_nothing(archive: AsyncArchive, database_url: str, kwargs, error) -> None:
    await archive.remember(ALICE, "an existing memory")
    before = snapshot(database_url)
    with pytest.raises(error):
        await archive.recall(ALICE, **kwargs)
    assert snapshot(database_url) == before


async def test_an_empty_question_says_the_question_is_empty(archive: AsyncArchive, database_url: str) -> None:
    """Issue 27: ``recall("")`` answered "there is nothing to remember", which is about storing."""
    await archive.remember(ALICE, "an existing memory")
    before = snapshot(database_url)
    for query in ("", "   \n"):
        with pytest.raises(EmptyContentError, match="the question is empty") as info:
            await archive.recall(ALICE, query)
        assert "remember" not in str(info.value)
        with pytest.raises(EmptyContentError, match="the question is empty: attention text is empty"):
            await archive.context(ALICE, query, 100)
    assert snapshot(database_url) == before


async def test_an_own_scope_that_holds_nothing_is_a_refusal_not_an_error(
    archive: AsyncArchive, database_url: str
) -> None:
    # A new identity's first recall (issue 12, defect 13): nothing stored yet is "I don't know".
    before = snapshot(database_url)
    result = await archive.recall(Scope("alicee", "chat"), "anything")
    assert isinstance(result, Refusal) and result.best_similarity is None and result.scope == Scope("alicee", "chat")
    await archive.flush()  # the recall's use is written behind it (issue 42)
    after = snapshot(database_url)
    changed = {table: count - before[table] for table, count in after.items() if count != before[table]}
    assert changed == {"traces.retrievals": 1}  # the refusal is traced; no scope is created by reading


async def test_kinds_filter(archive: AsyncArchive) -> None:
    await archive.remember(ALICE, "Alice runs every morning along the river")
    await archive.record_turn(ALICE, "s", "user", "I went running along the river this morning")
    only_turns = await archive.recall(ALICE, "running by the river", kinds=("turn",))
    only_memories = await archive.recall(ALICE, "running by the river", kinds=("memory",))
    assert {h.item_kind for h in only_turns} == {"turn"}
    assert {h.item_kind for h in only_memories} == {"memory"}


async def test_recall_with_a_precomputed_query_vector(archive: AsyncArchive, database_url: str) -> None:
    await archive.remember(ALICE, "Alice's passport expires in November")
    await archive.remember(ALICE, "Alice grows chillies on her balcony")
    text = await archive.recall(ALICE, "when does her passport run out?", k=2)
    vector = await archive.embeddings.embed_query("when does her passport run out?")
    given = await archive.recall(ALICE, "when does her passport run out?", k=2, query_vector=vector)
    assert [h.id for h in given] == [h.id for h in text]
    assert given[0].similarity == pytest.approx(text[0].similarity, abs=1e-6)
    before = snapshot(database_url)
    with pytest.raises(DimensionMismatchError):
        await archive.recall(ALICE, "passport", query_vector=np.ones(12))
    assert snapshot(database_url) == before


def test_token_counts_are_remembered_and_stay_exact(embeddings: Embeddings, monkeypatch: pytest.MonkeyPatch) -> None:
    texts = ["Melanie went camping", "", "Melanie went camping", "[2023-05-08] Caroline: a pride parade!"]
    tokenizer = embeddings.tokenizer  # (loads a deferred model)
    fresh = Embeddings(embeddings._embedder, embeddings.slug, tokenizer=tokenizer)
    exact = [len(ids) for ids in tokenizer(texts, add_special_tokens=False)["input_ids"]]
    assert fresh.count_tokens(texts) == exact  # duplicates and the empty text too
    calls: list[list[str]] = []
    real = fresh._tokenizer

    def counting(batch: list[str], **kwargs: object) -> object:
        calls.append(list(batch))
        return real(batch, **kwargs)

    monkeypatch.setattr(fresh, "_tokenizer", counting)
    assert fresh.count_tokens(texts[::-1]) == exact[::-1] and calls == []  # remembered: no tokenizer call
    monkeypatch.setattr("mnemo.embed.TOKEN_CACHE_SIZE", 4)
    assert fresh.count_tokens(["one two", "three"]) == [2, 1] and calls == [["one two", "three"]]
    assert len(fresh._token_counts) <= 4  # the memory starts afresh rather than growing past its size


async def test_recall_at_a_point_in_time_leaves_out_what_came_later(archive: AsyncArchive) -> None:
    scope = Scope("ines", "trips")
    for when, text in [
        ("2023-05-02T10:00:00+00:00", "I booked a flight to Porto for the conference"),
        ("2023-06-20T10:00:00+00:00", "The Porto trip is cancelled, I am flying to Lyon instead"),
    ]:
        await archive.record_turn(scope, "s1", "user", text, created_at=when)
    now = await archive.recall(scope, "where am I flying for the trip?", k=5, read_only=True, kinds=("turn",))
    assert len(now.hits) == 2
    then = await archive.recall(
        scope, "where am I flying for the trip?", k=5, read_only=True, kinds=("turn",), as_of="2023-06-01T00:00:00"
    )  # ISO text without an offset is UTC
    assert [h.content for h in then.hits] == ["I booked a flight to Porto for the conference"]
    block = await archive.context(scope, "where am I flying?", 500, read_only=True, as_of="2023-06-01T00:00:00Z")
    assert "Porto for the conference" in block.text and "Lyon" not in block.text
    # recency is measured from the point in time: an hour after the later turn, it is the fresher one
    after = await archive.recall(
        scope, "the trip", k=2, read_only=True, kinds=("turn",), as_of="2023-06-20T11:00:00+00:00"
    )
    fresh = {h.content[:8]: h.recency for h in after.hits}
    assert fresh["The Port"] > 0.99 > fresh["I booked"]
