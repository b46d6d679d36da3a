"""The long-term tier (issue 13): blocks migrate to a real LanceDB cortex, recall follows the
chain into it and quotes block lines (bifocal hits), a migration interrupted between the two
stores converges, forgetting leaves no trace in the cortex's files, scopes stay apart."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mnemo import AccessDeniedError, Archive, AsyncArchive, Scope, Settings
from mnemo.models import RecallResult
from mnemo.store import tiers
from tests.integration.test_http import auth, server, tokens  # noqa: F401  (fixtures)
from tests.night_data import BREAKTHROUGH, arc_conversation, record

pytestmark = pytest.mark.future_nights  # nights run days or weeks ahead of the clock

ME = Scope("alice", "history")
OTHER = Scope("mallory", "history")
LONG_AGO = datetime(2023, 5, 1, 9, 0, tzinfo=UTC)
QUESTION = "why did the kubelet evict the postgres replica from node seven?"


def one(url: str, query: str, *args: object) -> object:
    with psycopg.connect(url) as conn:
        row = conn.execute(query, args).fetchone()  # type: ignore[arg-type]
        assert row is not None
        return row[0]


async def a_week_of(archive: AsyncArchive, scope: Scope, texts: list[str] | None = None) -> tuple[int, int]:
    """Record a conversation, run tonight's night and the one 8 days later; (blocks, migrated)."""
    await record(archive, scope, "s1", texts or arc_conversation(), LONG_AGO)
    first = await archive.night_cycle(scope)
    later = await archive.night_cycle(scope, as_of=first.as_of + timedelta(days=8))
    return first.blocks, first.blocks_migrated + later.blocks_migrated


def cortex_dir(archive: AsyncArchive) -> Path:
    cortex = archive._rt.cortex
    assert cortex is not None
    return Path(cortex.uri)


def files_containing(directory: Path, needle: str) -> list[Path]:
    return [p for p in directory.rglob("*") if p.is_file() and needle.encode() in p.read_bytes()]


async def test_a_week_later_blocks_live_in_the_cortex_and_recall_quotes_them(
    archive: AsyncArchive, database_url: str
) -> None:
    blocks, migrated = await a_week_of(archive, ME)
    assert blocks > 0 and migrated == blocks  # older than 7 days: every block moved
    e = ME.entity_id
    assert (
        one(database_url, "SELECT count(*) FROM mnemo.memories WHERE entity_id = %s AND tier = 'cortex'", e) == blocks
    )
    assert one(database_url, "SELECT count(*) FROM mnemo.blocks WHERE migrated_at IS NULL") == 0
    lines = one(database_url, "SELECT count(*) FROM mnemo.block_lines")
    assert isinstance(lines, int) and lines > 0  # the verbatim lines outlive their raw turns ...
    cold = await archive._rt.cortex.count("lines", archive._rt.embeddings.dim, ME)  # type: ignore[union-attr]
    assert cold == lines  # ... and their vectors moved to the cortex with their blocks
    line_vectors = one(database_url, "SELECT count(*) FROM vectors.universal_384 WHERE item_kind = 'line'")
    assert line_vectors == 0
    hot_vectors = one(
        database_url,
        """SELECT count(*) FROM vectors.universal_384 v JOIN mnemo.memories m
           ON m.entity_id = v.entity_id AND m.id = v.item_id WHERE m.tier = 'cortex'""",
    )
    assert hot_vectors == 0  # the vectors left PostgreSQL
    assert one(database_url, "SELECT count(*) FROM mnemo.turns") == 0  # retention removed the raw turns
    versions = one(database_url, "SELECT cortex_versions FROM mnemo.night_runs ORDER BY started_at DESC LIMIT 1")
    assert isinstance(versions, dict) and versions.get("blocks_384", 0) > 0
    status = await archive.status()
    assert status.counts["cortex_blocks"] == blocks and status.counts["tree_nodes"] >= 1

    result = await archive.recall(ME, QUESTION, 3, read_only=True, kinds=("memory",))
    assert isinstance(result, RecallResult)
    hit = next(h for h in result.hits if h.tier == "cortex")
    block_turns = one(
        database_url, "SELECT turn_ids FROM mnemo.blocks WHERE id = %s", uuid.UUID(str(hit.metadata["block_id"]))
    )
    assert hit.excerpt and {line.turn_id for line in hit.excerpt} <= set(block_turns)  # type: ignore[arg-type]
    assert any("evict" in line.content.lower() for line in hit.excerpt)  # the lines that match the question
    assert all(line.content in hit.content for line in hit.excerpt)
    whole = str(one(database_url, "SELECT content FROM mnemo.memories WHERE id = %s", hit.id))
    assert hit.token_count < archive._rt.embeddings.count_tokens([whole])[0]

    said = await archive.recall(ME, QUESTION, 5, read_only=True, kinds=("turn",))  # the raw turns are gone ...
    assert isinstance(said, RecallResult) and said.hits
    for line in said.hits:  # ... and come back as their blocks' verbatim lines, from the cortex
        assert line.item_kind == "line" and line.tier == "cortex" and line.excerpt[0].turn_id == line.id
        assert line.content == line.excerpt[0].content and line.metadata["block_id"]
    assert "evict" in said.hits[0].content.lower()

    expanded = await archive.recall(ME, QUESTION, 3, read_only=True, expand=True, kinds=("memory",))
    assert isinstance(expanded, RecallResult)
    same = next(h for h in expanded.hits if h.id == hit.id)
    assert same.content == whole and same.excerpt == hit.excerpt


async def test_a_recall_of_utterances_and_memories_answers_blocks_with_their_lines(
    archive: AsyncArchive, database_url: str
) -> None:
    """With utterances searched too, a block is no hit of its own: its lines are, each quoting
    itself under its block's gist; asked for memories only, or to expand, blocks come back."""
    await a_week_of(archive, ME)
    with psycopg.connect(database_url) as conn:
        rows = conn.execute("SELECT memory_id FROM mnemo.blocks WHERE entity_id = %s", (ME.entity_id,)).fetchall()
    block_memories = {str(r[0]) for r in rows}
    assert block_memories
    mixed = await archive.recall(ME, QUESTION, 10, read_only=True, threshold=-1.0)
    assert isinstance(mixed, RecallResult) and mixed.hits
    assert not [h for h in mixed.hits if str(h.id) in block_memories]
    lines = [h for h in mixed.hits if h.item_kind == "line"]
    assert lines and "evict" in lines[0].content.lower()
    assert all(h.gist and h.metadata["block_id"] and h.excerpt[0].turn_id == h.id for h in lines)
    memories = await archive.recall(ME, QUESTION, 10, read_only=True, threshold=-1.0, kinds=("memory",))
    assert isinstance(memories, RecallResult)
    assert [h for h in memories.hits if str(h.id) in block_memories]
    expanded = await archive.recall(ME, QUESTION, 10, read_only=True, threshold=-1.0, expand=True)
    assert isinstance(expanded, RecallResult)
    assert [h for h in expanded.hits if str(h.id) in block_memories]


async def test_blocks_stay_in_the_hippocampus_until_they_qualify(archive: AsyncArchive, database_url: str) -> None:
    await record(archive, ME, "s1", arc_conversation(), LONG_AGO)
    report = await archive.night_cycle(ME)  # tonight: the blocks are new, their turns still here
    hot = report.blocks - report.blocks_migrated
    assert hot > 0  # only blocks above the coherence-gain threshold left on the first night
    result = await archive.recall(ME, QUESTION, 10, read_only=True, kinds=("memory",))
    assert isinstance(result, RecallResult)
    quoted = [h for h in result.hits if h.excerpt]
    assert quoted, "a hippocampus block hit quotes its lines too"
    assert {h.tier for h in result.hits} <= {"hippocampus", "cortex"}


async def test_a_migration_stopped_between_the_two_stores_converges(
    archive: AsyncArchive, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    await record(archive, ME, "s1", arc_conversation(), LONG_AGO)
    first = await archive.night_cycle(ME)
    real = tiers.mark_migrated

    async def crash(*args: object, **kwargs: object) -> None:
        raise RuntimeError("killed after the cortex write, before the hippocampus commit")

    monkeypatch.setattr(tiers, "mark_migrated", crash)
    later = first.as_of + timedelta(days=8)
    with pytest.raises(RuntimeError, match="killed"):
        await archive.night_cycle(ME, as_of=later)
    cortex = archive._rt.cortex
    assert cortex is not None
    dim = archive._rt.embeddings.dim
    assert await cortex.count("blocks", dim, ME) == first.blocks  # the cortex got the rows ...
    assert one(database_url, "SELECT count(*) FROM mnemo.blocks WHERE migrated_at IS NULL") > 0  # ... PG did not

    monkeypatch.setattr(tiers, "mark_migrated", real)
    resumed = await archive.night_cycle(ME, as_of=later)
    assert resumed.resumed
    assert await cortex.count("blocks", dim, ME) == first.blocks  # upserts: no duplicates
    assert one(database_url, "SELECT count(*) FROM mnemo.blocks WHERE migrated_at IS NULL") == 0
    stored = {r["id"] for r in await cortex.rows("blocks", dim, ME, columns=["id"])}
    assert stored == {str(b) for b in await _block_ids(archive)}


async def _block_ids(archive: AsyncArchive) -> list[uuid.UUID]:
    async with archive._rt.store.connection() as conn:
        cur = await conn.execute("SELECT id FROM mnemo.blocks WHERE entity_id = %s", (ME.entity_id,))
        return [r[0] for r in await cur.fetchall()]


SECRET = "Zanzibar-quokka-8841"


async def test_forgetting_a_cortex_block_leaves_no_trace_in_the_cortex_files(archive: AsyncArchive) -> None:
    texts = arc_conversation()
    texts[texts.index(BREAKTHROUGH)] = f"I see, so the WAL archive on the node disk {SECRET} causes the eviction."
    await a_week_of(archive, ME, texts)
    directory = cortex_dir(archive)
    assert files_containing(directory, SECRET), "the quoted line is stored verbatim in the cortex"
    result = await archive.recall(ME, QUESTION, 5, read_only=True, expand=True)
    assert isinstance(result, RecallResult)
    hit = next(h for h in result.hits if SECRET in h.content)
    removed = await archive.forget(ME, hit.id)
    assert removed.get("cortex_blocks") == 1
    assert files_containing(directory, SECRET) == []  # old LanceDB versions cleaned up too

    await archive.purge(ME)
    cortex = archive._rt.cortex
    assert cortex is not None
    assert await cortex.count("blocks", archive._rt.embeddings.dim, ME) == 0
    assert files_containing(directory, "WAL archive") == []


async def test_the_cortex_keeps_scopes_apart(archive: AsyncArchive) -> None:
    await a_week_of(archive, ME)
    await a_week_of(archive, OTHER, [t.replace("Postgres", "MySQL") for t in arc_conversation()])
    mine = await archive.recall(ME, QUESTION, 10, read_only=True, threshold=-1.0)
    theirs = await archive.recall(OTHER, QUESTION, 10, read_only=True, threshold=-1.0)
    assert isinstance(mine, RecallResult) and isinstance(theirs, RecallResult)
    assert any(h.tier == "cortex" for h in mine.hits)
    assert all(h.scope == ME and "MySQL" not in h.content for h in mine.hits)
    assert all("Postgres" not in h.content for h in theirs.hits)
    assert {h.id for h in mine.hits}.isdisjoint({h.id for h in theirs.hits})
    with pytest.raises(AccessDeniedError):
        await archive.recall(ME, QUESTION, 3, as_entity=OTHER.entity_id)
    await archive.access.grant(ME, OTHER.entity_id)
    granted = await archive.recall(ME, QUESTION, 3, as_entity=OTHER.entity_id, read_only=True)
    assert isinstance(granted, RecallResult) and any(h.tier == "cortex" for h in granted.hits)


GARDEN = [
    "My tomatoes in the raised bed got blossom end rot this summer.",
    "Blossom end rot comes from uneven watering and calcium uptake in tomatoes.",
    "I water the raised bed every morning with the drip line now.",
    "A drip line keeps the soil moisture even, the tomatoes will recover.",
    "The basil next to the tomatoes is growing like crazy too.",
    "Basil and tomatoes are good companions in a raised bed.",
    "I will add mulch around the tomato plants this weekend.",
    "Mulch keeps the water in the soil and stops the rot.",
]


async def test_the_tree_covers_every_cortex_block_once(archive: AsyncArchive) -> None:
    await record(archive, ME, "s1", arc_conversation(), LONG_AGO)
    await record(archive, ME, "s2", GARDEN * 2, LONG_AGO + timedelta(days=3))
    await record(archive, ME, "s3", arc_conversation(), LONG_AGO + timedelta(days=6))
    first = await archive.night_cycle(ME)
    later = await archive.night_cycle(ME, as_of=first.as_of + timedelta(days=8))
    nodes = await archive.inspect.cortex_tree(ME)
    assert nodes and later.tree_nodes == len(nodes)
    by_id = {n.id: n for n in nodes}
    branches = [n for n in nodes if n.level == 1]
    under = [b for n in branches for b in n.member_ids]
    assert sorted(under) == sorted(str(b) for b in await _block_ids(archive))  # each block in one branch
    for node in nodes:
        if node.parent_id is not None:
            assert node.id in by_id[node.parent_id].member_ids and by_id[node.parent_id].level == node.level + 1
        if node.level > 1:
            assert node.block_count == sum(by_id[m].block_count for m in node.member_ids)
        assert node.summary


async def test_recall_at_a_level_returns_tree_nodes(archive: AsyncArchive) -> None:
    with pytest.raises(ValueError, match="level"):
        await archive.recall(ME, QUESTION, 3, level=4)
    await record(archive, ME, "s1", arc_conversation(), LONG_AGO)
    await record(archive, ME, "s2", GARDEN * 2, LONG_AGO + timedelta(days=3))
    first = await archive.night_cycle(ME)
    before = await archive.recall(ME, "tomatoes in the garden", 3, level=1, threshold=-1.0)
    assert not before.hits or all(h.item_kind == "node" for h in before.hits)
    await archive.night_cycle(ME, as_of=first.as_of + timedelta(days=8))
    result = await archive.recall(ME, "tomatoes in the garden", 3, level=1, threshold=-1.0)
    assert isinstance(result, RecallResult) and result.hits
    nodes = {n.id: n for n in await archive.inspect.cortex_tree(ME)}
    for hit in result.hits:
        assert hit.item_kind == "node" and hit.level == 1 and hit.tier == "cortex"
        assert hit.content == nodes[str(hit.id)].summary
    with pytest.raises(AccessDeniedError):
        await archive.recall(ME, "tomatoes", 3, level=1, as_entity=OTHER.entity_id)


TOPICS = ["hiking in the alps", "baking sourdough bread", "learning the violin", "fixing a bicycle"]


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(plan=st.lists(st.tuples(st.integers(0, 2), st.integers(0, 3)), min_size=6, max_size=14), data=st.data())
def test_random_histories_in_the_cortex_never_cross_scopes(
    sync_archive: Archive, plan: list[tuple[int, int]], data: st.DataObject
) -> None:
    """The no-cross-scope property, reaching the cortex: random turns in three scopes, a week of
    nights (every block migrates), then recalls of every scope see only their own lines."""
    tag = uuid.uuid4().hex[:6]  # examples share the database: each one's scopes are new
    scopes = [Scope(f"e{i}x{tag}", "ns") for i in range(3)]
    for n, (who, topic) in enumerate(plan):
        sync_archive.record_turn(scopes[who], "s", "user", f"[{scopes[who]}] talked about {TOPICS[topic]} #{n}")
    written = sorted({who for who, _ in plan})
    for who in written:
        first = sync_archive.night_cycle(scopes[who])
        sync_archive.night_cycle(scopes[who], as_of=first.as_of + timedelta(days=8))
    for who in written:
        query = TOPICS[data.draw(st.integers(0, 3))]
        result = sync_archive.recall(scopes[who], query, k=20, threshold=-1.0, read_only=True)
        hits = result.hits if isinstance(result, RecallResult) else result.candidates
        assert any(h.tier == "cortex" for h in hits)
        for hit in hits:
            assert f"[{scopes[who]}]" in hit.content
            assert all(f"[{s}]" not in hit.content for s in scopes if s != scopes[who])


def test_http_recall_takes_expand_and_level(server: str, tokens: dict[str, object], settings: Settings) -> None:  # noqa: F811
    alice = Scope("alice")
    with Archive(settings) as archive:
        for i, text in enumerate(arc_conversation()):
            archive.record_turn(alice, "s1", "user", text, created_at=LONG_AGO + timedelta(minutes=i))
        first = archive.night_cycle(alice)
        archive.night_cycle(alice, as_of=first.as_of + timedelta(days=8))
    with httpx.Client(base_url=server, headers=auth(str(tokens["alice"])), timeout=60) as c:
        assert c.post("/v1/recall", json={"query": QUESTION, "level": 4}).status_code == 422
        lines = c.post("/v1/recall", json={"query": QUESTION, "k": 5}).json()
        assert lines["hits"] and {h["tier"] for h in lines["hits"]} == {"cortex"}
        assert any(h["item_kind"] == "line" and h["excerpt"] for h in lines["hits"])
        whole = c.post("/v1/recall", json={"query": QUESTION, "k": 5, "expand": True}).json()
        blocks = [h for h in whole["hits"] if h["item_kind"] == "memory" and h["excerpt"]]
        assert all(len(h["content"]) > len(h["excerpt"][0]["content"]) for h in blocks)
        nodes = c.post("/v1/recall", json={"query": QUESTION, "level": 1}).json()
        assert all(h["item_kind"] == "node" and h["level"] == 1 for h in nodes.get("hits", nodes.get("candidates")))


async def test_recall_sees_every_write_to_the_cortex(archive: AsyncArchive) -> None:
    """The in-memory copy of a scope's cortex follows the table's version: a night that migrates
    more blocks after a recall is seen by the next recall."""
    from mnemo.cortex.cortex_search import cortex_neighbours

    await record(archive, ME, "s1", arc_conversation(), LONG_AGO)
    first = await archive.night_cycle(ME)
    vector = await archive._rt.embeddings.embed_query(QUESTION)
    blocks, _ = await cortex_neighbours(archive._rt, ME, vector, 1000)
    assert 0 < len(blocks) == first.blocks_migrated < first.blocks  # loaded, with more to come
    later = await archive.night_cycle(ME, as_of=first.as_of + timedelta(days=8))
    blocks, lines = await cortex_neighbours(archive._rt, ME, vector, 1000)
    assert len(blocks) == first.blocks_migrated + later.blocks_migrated == first.blocks
    assert lines and all(-1.0 <= sim <= 1.0 for _, sim in lines)
