"""Bifocal packets and forks (issue 16 items 2-3): a scope exported as packets and imported
elsewhere keeps its prose, vectors, weights and references; imports are idempotent and keep the
Dimension Lock; exporting needs the owner or an export grant; a fork diverges without ever
touching its parent, is discarded whole, and merges chosen memories back with provenance."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import psycopg
import pytest

from mnemo import (
    AccessDeniedError,
    AsyncArchive,
    DimensionMismatchError,
    InvalidInputError,
    MalformedImportError,
    RecallResult,
    Scope,
    UnknownScopeError,
)
from mnemo.embed import Embeddings
from tests.conftest import snapshot
from tests.integration.test_backup import NOTES, vectors_of
from tests.integration.test_http import auth, server, tokens  # noqa: F401  (fixtures)
from tests.night_data import START, arc_conversation, record

ME = Scope("alice", "home")
COPY = Scope("alice", "copy")


async def filled(archive: AsyncArchive) -> None:
    await record(archive, ME, "s1", arc_conversation(), START)
    report = await archive.night_cycle(ME)
    assert report.blocks > 0
    for note in NOTES:
        await archive.remember(ME, note, kind="preference")


def lines_of(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def scope_rows(url: str, scope: Scope) -> dict[str, list[tuple[object, ...]]]:
    """What a scope holds, by table (the 'parent unchanged' check)."""
    with psycopg.connect(url) as conn:
        out = {}
        for table in ("turns", "memories", "blocks", "postings", "links", "co_access", "facts", "triples"):
            out[table] = conn.execute(
                f"SELECT x::text FROM mnemo.{table} x WHERE entity_id = %s AND namespace = %s ORDER BY 1",  # noqa: S608
                (scope.entity_id, scope.namespace),
            ).fetchall()
        return out


async def test_packets_round_trip_prose_vectors_weights_and_are_idempotent(
    archive: AsyncArchive, database_url: str, embeddings: Embeddings, tmp_path: Path
) -> None:
    await filled(archive)
    file = tmp_path / "home.jsonl"
    count = await archive.export_packets(ME, file)
    packets = lines_of(file)
    assert count == len(packets) and {p["packet_type"] for p in packets} == {"turn", "memory"}
    block = next(p for p in packets if p["metadata"].get("block"))  # type: ignore[union-attr]
    assert block["prose"]["live_zones"] and block["prose"]["content_type"] == "excerpt"  # type: ignore[index]
    vector = next(iter(block["vectors"].values()))  # type: ignore[union-attr]
    assert vector["model"] == str(embeddings.slug) and vector["dimensions"] == embeddings.dim
    assert len(base64.b64decode(vector["data"])) == 4 * embeddings.dim

    report = await archive.import_packets(COPY, file)
    turns = sum(p["packet_type"] == "turn" for p in packets)
    assert (report.turns, report.memories, report.already_there, report.reembedded) == (turns, count - turns, 0, 0)
    with psycopg.connect(database_url) as conn:
        pairs = conn.execute(
            """SELECT a.content, a.alpha, a.beta, b.alpha, b.beta FROM mnemo.memories a JOIN mnemo.memories b
               ON b.metadata->>'packet_id' = a.id::text WHERE a.namespace = 'home' AND b.namespace = 'copy'"""
        ).fetchall()
    assert len(pairs) == count - turns and all(r[1:3] == r[3:5] for r in pairs)
    vectors = vectors_of(database_url)
    assert all(f"universal_384/{new}" in vectors for new in report.items.values())  # every copy has its vector
    hot = [(old, new) for old, new in report.items.items() if f"universal_384/{old}" in vectors]
    assert len(hot) < len(report.items)  # some blocks' vectors came from the cortex (full precision there)
    for old, new in hot:
        assert vectors[f"universal_384/{old}"] == vectors[f"universal_384/{new}"]  # the same halfvec bits
    before = snapshot(database_url)
    again = await archive.import_packets(COPY, file)
    assert (again.turns, again.memories, again.already_there) == (0, 0, count)
    assert snapshot(database_url) == before
    hit = await archive.recall(COPY, "What is Maya allergic to?", read_only=True)
    assert isinstance(hit, RecallResult) and "peanuts" in hit.hits[0].content


async def test_the_dimension_lock_holds_for_packets_of_another_model(
    archive: AsyncArchive, database_url: str, tmp_path: Path
) -> None:
    await archive.remember(ME, NOTES[0])
    await archive.remember(ME, NOTES[1])
    foreign = tmp_path / "foreign.jsonl"
    with foreign.open("w") as out:
        async for packet in archive.packets(ME):
            packet["vectors"] = {
                "native_8": {"model": "other:model:8", "dimensions": 8, "encoding": "base64",
                             "data": base64.b64encode(np.ones(8, dtype=np.float32).tobytes()).decode()}
            }  # fmt: skip
            out.write(json.dumps(packet) + "\n")
    before = snapshot(database_url)
    with pytest.raises(DimensionMismatchError, match="other:model:8"):
        await archive.import_packets(COPY, foreign, strict=True)
    assert snapshot(database_url) == before
    report = await archive.import_packets(COPY, foreign)
    assert report.memories == 2 and report.reembedded == 2
    with psycopg.connect(database_url) as conn:
        slugs = conn.execute("SELECT DISTINCT slug FROM vectors.universal_384 WHERE namespace = 'copy'").fetchall()
    assert slugs == [(str(archive.embeddings.slug),)]


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("{not json", "line 2"),
        ('{"packet_id": "x", "packet_type": "dream"}', "packet_type"),
        ('{"packet_id": "a b", "packet_type": "turn", "timestamp": "2026-01-01T00:00:00Z", "prose": {"content": "hi"}}',
         "packet_id"),
        ('{"packet_id": "v", "packet_type": "memory", "timestamp": "2026-01-01T00:00:00Z", "prose": {"content": "hi"},'
         ' "vectors": {"s": {"model": "m", "dimensions": 3, "data": "AAAA"}}}', "3"),
        ('{"packet_id": "k", "packet_type": "memory", "timestamp": "2026-01-01T00:00:00Z", "prose": {"content": "hi"},'
         ' "metadata": {"kind": "dream"}}', "kind"),
        ('{"packet_id": "e", "packet_type": "memory", "timestamp": "2026-01-01T00:00:00Z", "prose": {"content": " "}}',
         "empty"),
    ],
)  # fmt: skip
async def test_a_malformed_packet_is_refused_with_its_line_and_nothing_is_written(
    archive: AsyncArchive, database_url: str, tmp_path: Path, line: str, says: str
) -> None:
    good = {"packet_id": "g1", "packet_type": "memory", "timestamp": "2026-01-01T00:00:00Z",
            "prose": {"content": "A good memory."}}  # fmt: skip
    file = tmp_path / "bad.jsonl"
    file.write_text(json.dumps(good) + "\n" + line + "\n")
    before = snapshot(database_url)
    with pytest.raises(MalformedImportError, match=says):
        await archive.import_packets(COPY, file)
    assert snapshot(database_url) == before


async def test_exporting_needs_the_owner_or_an_export_grant(archive: AsyncArchive, tmp_path: Path) -> None:
    await archive.remember(ME, NOTES[0])
    with pytest.raises(AccessDeniedError) as refused:
        await archive.export_packets(ME, tmp_path / "x.jsonl", as_entity="bob")
    with pytest.raises(AccessDeniedError) as absent:
        await archive.export_packets(Scope("alice", "nothing-here"), tmp_path / "y.jsonl", as_entity="bob")
    assert str(refused.value).replace("home", "?") == str(absent.value).replace("nothing-here", "?")
    await archive.grant(ME, "bob")  # reading is not exporting
    assert isinstance(await archive.recall(ME, "Maya", as_entity="bob", read_only=True), RecallResult)
    with pytest.raises(AccessDeniedError, match="export=True"):
        await archive.export_packets(ME, tmp_path / "x.jsonl", as_entity="bob")
    assert await archive.grant(ME, "bob", export=True)
    assert await archive.export_packets(ME, tmp_path / "x.jsonl", as_entity="bob") == 1


async def test_a_fork_diverges_without_touching_its_parent_and_merges_back_with_provenance(
    archive: AsyncArchive, database_url: str
) -> None:
    await filled(archive)
    parent_before = scope_rows(database_url, ME)
    branch = await archive.fork(ME, "what-if")
    assert branch == Scope("alice", "what-if")
    found = await archive.recall(branch, "What is Maya allergic to?")  # a mutating recall, in the fork
    assert isinstance(found, RecallResult) and "peanuts" in found.hits[0].content
    imagined = await archive.remember(branch, "In this timeline Maya outgrew her peanut allergy.")
    await archive.record_turn(branch, "s9", "user", "Let us imagine Maya eats peanut butter now.")
    await archive.forget(branch, found.hits[0].id)
    await archive.night_cycle(branch)
    assert scope_rows(database_url, ME) == parent_before  # nothing done in the fork reached the parent
    with psycopg.connect(database_url) as conn:
        writers = dict(conn.execute(
            "SELECT content, process_id FROM mnemo.memories WHERE namespace = 'what-if'").fetchall())  # fmt: skip
    assert writers[NOTES[1]] == "fork:what-if" and writers[imagined.content] == "core"

    merged = await archive.merge(branch, [imagined.id])
    assert merged.memories == 1
    with psycopg.connect(database_url) as conn:
        row = conn.execute(
            "SELECT metadata, process_id FROM mnemo.memories WHERE namespace = 'home' AND content = %s",
            (imagined.content,),
        ).fetchone()
    assert row is not None and row[1] == "merge:what-if"
    assert row[0]["packet_id"] == str(imagined.id) and row[0]["merged_from"] == "alice/what-if"

    with pytest.raises(InvalidInputError, match="already exists"):
        await archive.fork(ME, "what-if")
    with pytest.raises(UnknownScopeError, match="not a fork"):
        await archive.discard(ME)
    removed = await archive.discard(branch)
    assert removed["memories"] > 0
    with psycopg.connect(database_url) as conn:
        assert conn.execute("SELECT count(*) FROM mnemo.memories WHERE namespace = 'what-if'").fetchone() == (0,)
    with pytest.raises(UnknownScopeError):
        await archive.discard(branch)


def test_http_exports_the_tokens_own_scope_only(server: str, tokens: dict[str, Any]) -> None:  # noqa: F811
    with httpx.Client(base_url=server, headers=auth(tokens["alice"]), timeout=60) as c:
        made = [c.post("/v1/memories", json={"content": note}).json()["id"] for note in NOTES]
        got = c.get("/v1/export")
        assert got.status_code == 200 and got.headers["content-type"].startswith("application/x-ndjson")
        packets = [json.loads(line) for line in got.text.splitlines()]
        assert sorted(p["packet_id"] for p in packets) == sorted(made)
        assert all(p["source_scope"] == "alice/default" and p["vectors"] for p in packets)
    with httpx.Client(base_url=server, headers=auth(tokens["alice_work"]), timeout=60) as c:
        assert c.get("/v1/export", params={"namespace": "default"}).status_code == 403
        assert c.get("/v1/export").text == ""  # its own namespace holds nothing yet
    with httpx.Client(base_url=server, headers=auth(tokens["bob"]), timeout=60) as c:
        assert c.get("/v1/export").text == ""  # bob's scope, never alice's
