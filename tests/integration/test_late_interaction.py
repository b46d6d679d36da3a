"""Late-interaction re-ranking against the real store and the bundled model (issue 14 item 1):
token embeddings are cached with the items they belong to, fill in in the background after first
use (never during a recall), go with the item when it is forgotten, and score the hits."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import psycopg

from mnemo import AsyncArchive, RecallResult, Scope, Settings
from mnemo.embed import Embeddings
from mnemo.recall.records import Candidates
from mnemo.recall.retrieve import check, retrieve, start_embedding

SCOPE = Scope("late", "chat")

TURNS = [
    {"session": "a", "speaker": "Ana", "content": "I'm training for the Berlin marathon in September"},
    {"session": "a", "speaker": "Ben", "content": "Nice, what pace are you aiming for?"},
    {"session": "a", "speaker": "Ana", "content": "Around five minutes per kilometre, my knee permitting"},
    {"session": "b", "speaker": "Ben", "content": "I started pottery classes on Thursdays"},
    {"session": "b", "speaker": "Ana", "content": "Pottery sounds relaxing, what did you make?"},
    {"session": "b", "speaker": "Ben", "content": "A lopsided blue bowl for my sister"},
]


def _rows(url: str, scope: Scope = SCOPE) -> dict[str, tuple[bytes, str]]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT item_id::text, token_ids, slug FROM mnemo.token_vectors WHERE entity_id = %s AND namespace = %s",
            (scope.entity_id, scope.namespace),
        ).fetchall()
    return {r[0]: (bytes(r[1]), r[2]) for r in rows}


async def _import(archive: AsyncArchive, tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    path.write_text("\n".join(json.dumps(t) for t in TURNS) + "\n")
    await archive.import_file(SCOPE, path)


async def test_import_caches_each_turns_content_tokens_and_recall_scores_hits_with_them(
    archive: AsyncArchive, embeddings: Embeddings, database_url: str, tmp_path: Path
) -> None:
    await _import(archive, tmp_path)
    rows = _rows(database_url)
    assert len(rows) == len(TURNS)
    assert {slug for _, slug in rows.values()} == {str(embeddings.slug)}
    tokenizer = embeddings.tokenizer
    assert tokenizer is not None
    words = [tokenizer.decode(list(memoryview(ids).cast("i"))) for ids, _ in rows.values()]
    assert any("berlin marathon" in w for w in words)
    assert not any("[CLS]" in w or "[SEP]" in w or "[PAD]" in w for w in words)  # content tokens only

    result = await archive.recall(SCOPE, "which bowl did Ben make in pottery", k=4, read_only=True)
    assert isinstance(result, RecallResult)
    scored = [h for h in result.hits if h.late is not None]
    assert len(scored) == len(result.hits)
    best = max(scored, key=lambda h: h.late or 0.0)
    assert "bowl" in best.content  # the turn holding the rare query words matches them best
    assert result.hits[0].content == best.content
    assert all(h.components()["late"] == h.late for h in result.hits)


async def test_token_rows_are_written_with_a_memory_or_after_first_recall_and_forgotten_with_it(
    archive: AsyncArchive, embeddings: Embeddings, database_url: str
) -> None:
    memory = await archive.remember(SCOPE, "Ana's sister lives in Lisbon and teaches ceramics")
    assert set(_rows(database_url)) == {str(memory.id)}  # read in the same forward pass as its vector
    # a memory given with its vector was never read by the model here: the first recall that meets
    # it scores it without late interaction and asks for its tokens, read in the background
    text = "Ben prefers tea over coffee in the morning"
    given = await embeddings.embed_documents([embeddings.document_text(text, "semantic")])
    other = await archive.remember(SCOPE, text, embedding=given[0])
    assert set(_rows(database_url)) == {str(memory.id)}
    first = await archive.recall(SCOPE, "where does Ana's sister live", k=2, read_only=True)
    assert isinstance(first, RecallResult)
    assert {h.id for h in first.hits} == {memory.id, other.id}
    assert all(h.late is None for h in first.hits)  # one of the two has tokens: nothing to re-rank yet
    await archive._rt.backfill.wait()
    assert set(_rows(database_url)) == {str(memory.id), str(other.id)}
    assert archive._rt.backfill.read == 1
    cached = _rows(database_url)
    again = await archive.recall(SCOPE, "where does Ana's sister live", k=2, read_only=True)
    assert isinstance(again, RecallResult)
    assert all(h.late is not None for h in again.hits)
    await archive._rt.backfill.wait()
    assert _rows(database_url) == cached and archive._rt.backfill.read == 1  # not read again

    cache = archive._rt.tokens()
    slug = str(embeddings.slug)
    key = (SCOPE.entity_id, SCOPE.namespace, memory.id, slug)
    other_key = (SCOPE.entity_id, SCOPE.namespace, other.id, slug)

    def in_memory() -> set[uuid.UUID]:
        """Whose token embeddings this process holds: in its token cache or the scope's read index."""
        index = archive._rt.indexes.held((SCOPE.entity_id, SCOPE.namespace, slug))
        held = set() if index is None else set(index.late.token_ids)
        return held | {k[2] for k in cache.get([key, other_key])}

    assert in_memory() == {memory.id, other.id}  # held in memory for the next recall
    removed = await archive.forget(SCOPE, memory.id)
    assert removed.get("token_vectors") == 1
    assert set(_rows(database_url)) == {str(other.id)}
    assert memory.id not in in_memory()  # forgotten in memory too
    removed = await archive.purge(SCOPE)
    assert removed.get("token_vectors") == 1
    assert _rows(database_url) == {}
    assert in_memory() == set()


async def test_turned_off_no_token_rows_and_no_late_scores(
    database_url: str, embeddings: Embeddings, tmp_path: Path
) -> None:
    settings = Settings(database_url=database_url, seed=7, late_interaction=False)
    archive = await AsyncArchive.open(settings, embeddings=embeddings)
    try:
        await _import(archive, tmp_path)
        result = await archive.recall(SCOPE, "which bowl did Ben make in pottery", k=3, read_only=True)
    finally:
        await archive.close()
    assert isinstance(result, RecallResult)
    assert _rows(database_url) == {}
    assert result.hits and all(h.late is None for h in result.hits)


# --- late interaction as a retriever: the whole scope scanned -------------------------------------
async def _scan_best(archive: AsyncArchive, embeddings: Embeddings, database_url: str, query: str) -> str:
    """The turn MaxSim ranks first among all of the scope's turns, computed here from the stored rows."""
    from mnemo.cognition.scoring.late import late_scores
    from mnemo.store.token_vectors import fetch

    async with archive._rt.store.connection() as conn:
        cur = await conn.execute(
            "SELECT id, content FROM mnemo.turns WHERE entity_id = %s AND namespace = %s",
            (SCOPE.entity_id, SCOPE.namespace),
        )
        contents = dict(await cur.fetchall())
        stored = await fetch(conn, SCOPE.entity_id, SCOPE.namespace, str(embeddings.slug), list(contents))
    _, query_tokens = await embeddings.embed_query_with_tokens(query)
    ids = list(stored)
    scores = late_scores(query_tokens, [stored[i] for i in ids])
    return str(contents[ids[int(scores.argmax())]])


async def _candidates(archive: AsyncArchive, query: str, vector: object = None) -> Candidates:
    """What the first stage found for ``query`` (depth 1: one candidate per retriever)."""
    rt = archive._rt
    request = check(
        rt, SCOPE, query, 1, as_entity=None, read_only=True, threshold=None, kinds=("turn", "memory"), trace=False,
        query_vector=vector, cues=None, now=None, seed=None, hops=None,  # type: ignore[arg-type]
    )  # fmt: skip
    async with rt.store.connection() as conn:
        return await retrieve(rt, conn, request, start_embedding(rt, request))


async def test_the_scan_scores_every_turn_and_brings_in_the_best_late_match(
    database_url: str, embeddings: Embeddings, tmp_path: Path
) -> None:
    query = "what ceramic object did Ben create"
    # the dense retriever is pointed elsewhere (a given query vector: another turn's), so only the
    # scan can bring in what MaxSim ranks first
    elsewhere = (await embeddings.embed_documents([TURNS[2]["content"]]))[0]
    found: dict[bool, Candidates] = {}
    for scan in (False, True):
        settings = Settings(database_url=database_url, seed=7, late_retrieval=scan, candidate_depth=1)
        archive = await AsyncArchive.open(settings, embeddings=embeddings)
        try:
            if not scan:
                await _import(archive, tmp_path)
            best = await _scan_best(archive, embeddings, database_url, query)
            found[scan] = await _candidates(archive, query, elsewhere)
            contents = {i: t.content for i, t in (await _texts(archive, list(found[scan].kind_of))).items()}
        finally:
            await archive.close()
        assert (best in contents.values()) is scan
    assert found[False].scanned == {}
    assert len(found[True].scanned) == len(TURNS)  # every turn of the scope, scored
    assert set(found[False].kind_of) < set(found[True].kind_of) and len(found[True].kind_of) <= 3


async def _texts(archive: AsyncArchive, ids: list) -> dict:  # type: ignore[type-arg]
    from mnemo.store.search import item_texts

    async with archive._rt.store.connection() as conn:
        return await item_texts(conn, SCOPE.entity_id, SCOPE.namespace, ids)


async def test_the_scan_stays_in_its_scope_forgets_at_once_and_is_off_above_its_limit(
    database_url: str, embeddings: Embeddings, tmp_path: Path
) -> None:
    other = Scope("late", "elsewhere")
    query = "what did Ben make for his sister"
    archive = await AsyncArchive.open(Settings(database_url=database_url, seed=7), embeddings=embeddings)
    try:
        await _import(archive, tmp_path)
        stranger = await archive.remember(other, "Ben made a lopsided blue bowl for his sister in pottery class")
        found = await _candidates(archive, query)
        assert stranger.id not in found.scanned and len(found.scanned) == len(TURNS)
        # a forgotten turn leaves the scan at once (the scope's index is rebuilt without it)
        best = max(found.scanned, key=lambda i: found.scanned[i])
        await archive.forget(SCOPE, best)
        after = await _candidates(archive, query)
        assert best not in after.scanned and best not in after.kind_of and len(after.scanned) == len(TURNS) - 1
    finally:
        await archive.close()
    for capped in (
        Settings(database_url=database_url, seed=7, late_scan_limit=len(TURNS) - 2),  # more items than the limit
        Settings(database_url=database_url, seed=7, token_cache_mb=0),  # no memory to keep the index in
    ):
        archive = await AsyncArchive.open(capped, embeddings=embeddings)
        try:
            found = await _candidates(archive, query)
        finally:
            await archive.close()
        assert found.scanned == {} and found.query_tokens is not None  # late interaction still re-ranks


async def test_the_scan_leaves_out_items_without_token_embeddings_until_the_background_read_them(
    database_url: str, embeddings: Embeddings
) -> None:
    texts = ["Ben prefers tea over coffee in the morning", "Ana keeps a vegetable garden on her balcony"]
    given = await embeddings.embed_documents([embeddings.document_text(t, "semantic") for t in texts])
    archive = await AsyncArchive.open(Settings(database_url=database_url, seed=7), embeddings=embeddings)
    try:
        # memories given with their vectors: the model never read them here
        ids = [(await archive.remember(SCOPE, t, embedding=v)).id for t, v in zip(texts, given, strict=True)]
        mine = await archive.remember(SCOPE, "Ana waters the tomatoes every evening")
        assert set(_rows(database_url)) == {str(mine.id)}
        before = await _candidates(archive, "who grows vegetables")
        assert set(before.scanned) == {mine.id}  # the others wait for their tokens, out of the scan
        assert set(before.kind_of) >= {*ids, mine.id}  # still found by the other retrievers
        await archive._rt.backfill.wait()
        assert set(_rows(database_url)) == {str(i) for i in (*ids, mine.id)}
        after = await _candidates(archive, "who grows vegetables")
    finally:
        await archive.close()
    assert set(after.scanned) == {*ids, mine.id}
    assert max(after.scanned, key=lambda i: after.scanned[i]) == ids[1]  # the garden, by MaxSim
