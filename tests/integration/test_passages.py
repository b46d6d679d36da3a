"""Long items are embedded as overlapping passages, so their tail is visible to vector search
(issue 14 item 6), with the real model and store."""

from __future__ import annotations

import psycopg

from mnemo import AsyncArchive, RecallResult, Refusal, Scope, Settings
from mnemo.embed import Embeddings

ME = Scope("long", "notes")
GARDEN = " ".join(
    f"In week {i} of spring I weeded the tomato beds, staked the beans and watered the herbs at dawn."
    for i in range(1, 16)
)
TAIL = "Later that summer my cousin Ilse and I sailed a rented catamaran around Crete for nine days."
LONG = f"{GARDEN} {TAIL}"
QUERY = "the catamaran sailing holiday around Crete with Ilse"


def _passages(url: str) -> list[tuple[str, int]]:
    with psycopg.connect(url) as conn:
        return [
            (str(r[0]), int(r[1]))
            for r in conn.execute("SELECT item_id, passage FROM mnemo.passages ORDER BY passage").fetchall()
        ]


async def test_a_long_memorys_tail_is_found_by_its_passages(
    archive: AsyncArchive, embeddings: Embeddings, database_url: str
) -> None:
    assert embeddings.count_tokens([LONG])[0] > embeddings.max_tokens  # type: ignore[operator]
    memory = await archive.remember(ME, LONG)
    expected = embeddings.passages(LONG, embeddings.document_prefix("semantic"))
    assert expected and _passages(database_url) == [(str(memory.id), n) for n in range(1, len(expected) + 1)]
    assert TAIL in expected[-1]  # the last passage reads the tail whole

    whole = (await embeddings.embed_documents([embeddings.document_text(LONG, "semantic")]))[0]
    query = await embeddings.embed_query(QUERY)
    tail_sims = [float(v @ query) for v in await embeddings.embed_documents(expected)]
    result = await archive.recall(ME, QUERY, k=1, read_only=True)
    assert isinstance(result, RecallResult)
    [hit] = result.hits
    assert hit.id == memory.id
    # the item is as similar as its best passage, far above what its truncated vector sees
    assert abs((hit.similarity or 0.0) - max(tail_sims)) < 0.01
    assert (hit.similarity or 0.0) > float(whole @ query) + 0.1

    removed = await archive.forget(ME, memory.id)
    assert removed["passages"] == len(expected) and _passages(database_url) == []


async def test_short_items_have_no_passages_and_the_setting_turns_them_off(
    database_url: str, embeddings: Embeddings
) -> None:
    settings = Settings(database_url=database_url, seed=5, passages=False)
    archive = await AsyncArchive.open(settings, embeddings=embeddings)
    try:
        await archive.remember(ME, "A short note about the tomato beds")
        long = await archive.remember(ME, LONG)
        result = await archive.recall(ME, QUERY, k=2, read_only=True)
    finally:
        await archive.close()
    assert _passages(database_url) == []
    # the tail is invisible: nothing is similar enough, so the recall is refused
    assert isinstance(result, Refusal) and result.unknown == ()
    whole = (await embeddings.embed_documents([embeddings.document_text(LONG, "semantic")]))[0]
    query = await embeddings.embed_query(QUERY)
    hit = next(h for h in result.candidates if h.id == long.id)
    assert abs((hit.similarity or 0.0) - float(whole @ query)) < 0.01  # only the first window counts


async def test_imported_long_turns_get_passages_with_their_speaker(
    archive: AsyncArchive, embeddings: Embeddings, database_url: str, tmp_path
) -> None:
    import json

    path = tmp_path / "long.jsonl"
    rows = [
        {"session": "s", "speaker": "Ana", "content": "How was your year?"},
        {"session": "s", "speaker": "Ben", "content": LONG},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    await archive.import_file(ME, path)
    stored = _passages(database_url)
    assert (
        len(stored) == len(embeddings.passages(LONG, embeddings.turn_prefix("Ben")))
        and len({i for i, _ in stored}) == 1
    )
    result = await archive.recall(ME, QUERY, k=1, read_only=True)
    assert isinstance(result, RecallResult) and result.hits[0].speaker == "Ben"
