"""Bifocal packets and forks (issue 16 items 2-3, issue 27 item 2): a scope exported as packets
and imported elsewhere keeps its prose, vectors, weights and references; imports are idempotent and
keep the Dimension Lock; exporting needs the owner or an export grant, and an unknown scope is
refused as the night refuses it; a fork diverges without ever touching its parent, is discarded
whole, and merges chosen memories back with provenance. A scope that has been through nights
(archived memories, weight and access history, blocks in the cortex) forks and travels whole, and
an import, fork or merge that fails or is killed at any point leaves no trace of its target."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import psycopg
import pytest

import mnemo
from mnemo import (
    AccessDeniedError,
    AsyncArchive,
    DatabaseError,
    DimensionMismatchError,
    InvalidInputError,
    MalformedImportError,
    RecallResult,
    Scope,
    UnknownScopeError,
)
from mnemo.embed import Embeddings
from tests.conftest import snapshot
from tests.integration.test_backup import NOTES, lance_tables, vectors_of
from tests.integration.test_cli import run
from tests.integration.test_cortex import cortex_dir
from tests.integration.test_http import auth, server, tokens  # noqa: F401  (fixtures)
from tests.night_data import START, arc_conversation, record

pytestmark = pytest.mark.future_nights  # nights run days or weeks ahead of the clock

ME = Scope("alice", "home")
COPY = Scope("alice", "copy")
SAMPLE = Path(mnemo.__file__).parent / "data" / "sample_conversation.jsonl"


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


def key(scope: Scope) -> tuple[str, str]:
    return scope.entity_id, scope.namespace


async def lived(archive: AsyncArchive) -> None:
    """A scope after nights: blocks (some in the cortex), facts, links, an anchored memory, memories
    with weight and access history, one the curator archived (superseded), and a turn of today."""
    await archive.import_file(ME, SAMPLE)  # three sessions: blocks that continue one another
    assert (await archive.night_cycle(ME)).blocks > 1
    for note in NOTES:
        await archive.remember(ME, note, kind="preference")
    old = await archive.remember(ME, "Maya lives in Toronto.")
    await archive.remember(ME, "Maya lives in Lisbon now.", supersedes=[old.id])
    await archive.remember(ME, "Maya speaks Portuguese.", anchored=True)
    await archive.recall(ME, "What is Maya allergic to?")  # reinforces: weight and access history
    await archive.night_cycle(ME, as_of=datetime.now(UTC) + timedelta(days=20))
    await archive.record_turn(ME, "s2", "user", "Maya starts Portuguese lessons on Monday.")


MEMORY_STATE = """SELECT m.kind, m.content, m.status, m.anchored, m.alpha, m.beta, m.access_count,
                         m.access_timestamps::text, m.older_access_count, m.oldest_access, m.last_accessed,
                         m.event_time, m.created_at, m.compressed, m.source_tag, m.source_confidence,
                         (SELECT coalesce(array_agg((w.at, w.operation, w.gain, w.old_alpha, w.old_beta, w.new_alpha,
                                                     w.new_beta, w.reason, w.blocked)::text ORDER BY w.at, w.id), '{}')
                          FROM traces.weight_changes w WHERE w.entity_id = m.entity_id AND w.memory_id = m.id)
                  FROM mnemo.memories m"""


def copied_state(url: str, source: Scope, copy: Scope) -> tuple[list[Any], list[Any]]:
    """Every memory of ``source`` and its copy in ``copy`` (found by the packet id the copy keeps),
    with status, weight, access history and audited weight history: the two lists must be equal."""
    mine, theirs = [], []
    with psycopg.connect(url) as conn:
        ids = conn.execute(
            "SELECT id FROM mnemo.memories WHERE entity_id = %s AND namespace = %s ORDER BY id", key(source)
        ).fetchall()
        for (i,) in ids:
            mine.append(conn.execute(MEMORY_STATE + " WHERE m.entity_id = %s AND m.id = %s", (source.entity_id, i))
                        .fetchall())  # fmt: skip
            where = " WHERE m.entity_id = %s AND m.namespace = %s AND m.metadata->>'packet_id' = %s"
            theirs.append(conn.execute(MEMORY_STATE + where, (*key(copy), str(i))).fetchall())
    return mine, theirs


def counts(url: str, scope: Scope) -> dict[str, object]:
    with psycopg.connect(url) as conn:
        return {
            "turns": sorted(r[0] for r in conn.execute(
                "SELECT content FROM mnemo.turns WHERE entity_id = %s AND namespace = %s", key(scope)).fetchall()),
            "statuses": dict(conn.execute(
                "SELECT status, count(*) FROM mnemo.memories WHERE entity_id = %s AND namespace = %s GROUP BY 1",
                key(scope)).fetchall()),
        }  # fmt: skip


def trace_of(url: str, archive: AsyncArchive, scope: Scope) -> dict[str, int]:
    """Every row that names ``scope`` in any table of the mnemo, vectors and traces chambers, and in
    the cortex (LanceDB): empty when nothing of it was left."""
    with psycopg.connect(url) as conn:
        tables = conn.execute(
            """SELECT a.table_schema, a.table_name FROM information_schema.columns a
               JOIN information_schema.columns b USING (table_schema, table_name)
               WHERE a.table_schema IN ('mnemo', 'vectors', 'traces') AND a.column_name = 'entity_id'
                 AND b.column_name = 'namespace' ORDER BY 1, 2"""
        ).fetchall()
        found = {
            f"{s}.{t}": conn.execute(
                f'SELECT count(*) FROM "{s}"."{t}" WHERE entity_id = %s AND namespace = %s',  # noqa: S608
                key(scope),
            ).fetchone()[0]  # type: ignore[index]
            for s, t in tables
        }
    assert "mnemo.scopes" in found and "vectors.universal_384" in found and "traces.weight_changes" in found
    for name, rows in lance_tables(cortex_dir(archive)).items():
        found[f"cortex.{name}"] = sum(r["entity_id"] == scope.entity_id and r["namespace"] == scope.namespace
                                      for r in rows)  # fmt: skip
    return {name: n for name, n in found.items() if n}


async def no_trace(url: str, archive: AsyncArchive, scope: Scope) -> None:
    assert trace_of(url, archive, scope) == {}
    assert scope not in [s.scope for s in await archive.access.scopes()]


async def test_packets_round_trip_prose_vectors_weights_and_are_idempotent(
    archive: AsyncArchive, database_url: str, embeddings: Embeddings, tmp_path: Path
) -> None:
    await filled(archive)
    file = tmp_path / "home.jsonl"
    count = await archive.portability.export_packets(ME, file)
    packets = lines_of(file)
    types = Counter(str(p["packet_type"]) for p in packets)
    assert count == len(packets) and {"turn", "memory", "block", "line", "night"} <= set(types)
    block = next(p for p in packets if p["metadata"].get("block"))  # type: ignore[union-attr]
    assert block["prose"]["live_zones"] and block["prose"]["content_type"] == "excerpt"  # type: ignore[index]
    vector = next(iter(block["vectors"].values()))  # type: ignore[union-attr]
    assert vector["model"] == str(embeddings.slug) and vector["dimensions"] == embeddings.dim
    assert len(base64.b64decode(vector["data"])) == 4 * embeddings.dim

    report = await archive.portability.import_packets(COPY, file)
    turns, memories = types["turn"], types["memory"]
    assert (report.turns, report.memories, report.already_there, report.reembedded) == (turns, memories, 0, 0)
    with psycopg.connect(database_url) as conn:
        pairs = conn.execute(
            """SELECT a.content, a.alpha, a.beta, b.alpha, b.beta FROM mnemo.memories a JOIN mnemo.memories b
               ON b.metadata->>'packet_id' = a.id::text WHERE a.namespace = 'home' AND b.namespace = 'copy'"""
        ).fetchall()
    assert len(pairs) == memories and all(r[1:3] == r[3:5] for r in pairs)
    vectors = vectors_of(database_url)
    items = {str(p["packet_id"]) for p in packets if p["packet_type"] in ("turn", "memory")}
    copied = {old: new for old, new in report.items.items() if old in items}
    assert len(copied) == turns + memories
    hot = [(old, new) for old, new in copied.items() if f"universal_384/{old}" in vectors]
    assert 0 < len(hot) < len(copied)  # some blocks' vectors are in the cortex (full precision there) ...
    for old, new in copied.items():  # ... in the copy's cortex too: each copy's vector is where its source's is
        assert (f"universal_384/{new}" in vectors) == (f"universal_384/{old}" in vectors)
    for old, new in hot:
        assert vectors[f"universal_384/{old}"] == vectors[f"universal_384/{new}"]  # the same halfvec bits
    before = snapshot(database_url)
    again = await archive.portability.import_packets(COPY, file)
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
        async for packet in archive.portability.packets(ME):
            packet["vectors"] = {
                "native_8": {"model": "other:model:8", "dimensions": 8, "encoding": "base64",
                             "data": base64.b64encode(np.ones(8, dtype=np.float32).tobytes()).decode()}
            }  # fmt: skip
            out.write(json.dumps(packet) + "\n")
    before = snapshot(database_url)
    with pytest.raises(DimensionMismatchError, match="other:model:8"):
        await archive.portability.import_packets(COPY, foreign, strict=True)
    assert snapshot(database_url) == before
    report = await archive.portability.import_packets(COPY, foreign)
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
        await archive.portability.import_packets(COPY, file)
    assert snapshot(database_url) == before


async def test_exporting_needs_the_owner_or_an_export_grant(archive: AsyncArchive, tmp_path: Path) -> None:
    await archive.remember(ME, NOTES[0])
    with pytest.raises(AccessDeniedError) as refused:
        await archive.portability.export_packets(ME, tmp_path / "x.jsonl", as_entity="bob")
    with pytest.raises(AccessDeniedError) as absent:
        await archive.portability.export_packets(Scope("alice", "nothing-here"), tmp_path / "y.jsonl", as_entity="bob")
    assert str(refused.value).replace("home", "?") == str(absent.value).replace("nothing-here", "?")
    await archive.access.grant(ME, "bob")  # reading is not exporting
    assert isinstance(await archive.recall(ME, "Maya", as_entity="bob", read_only=True), RecallResult)
    with pytest.raises(AccessDeniedError, match="export=True"):
        await archive.portability.export_packets(ME, tmp_path / "x.jsonl", as_entity="bob")
    assert await archive.access.grant(ME, "bob", export=True)
    assert await archive.portability.export_packets(ME, tmp_path / "x.jsonl", as_entity="bob") == 1


async def test_a_fork_diverges_without_touching_its_parent_and_merges_back_with_provenance(
    archive: AsyncArchive, database_url: str
) -> None:
    await filled(archive)
    parent_before = scope_rows(database_url, ME)
    branch = await archive.portability.fork(ME, "what-if")
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

    merged = await archive.portability.merge(branch, [imagined.id])
    assert merged.memories == 1
    with psycopg.connect(database_url) as conn:
        row = conn.execute(
            "SELECT metadata, process_id FROM mnemo.memories WHERE namespace = 'home' AND content = %s",
            (imagined.content,),
        ).fetchone()
    assert row is not None and row[1] == "merge:what-if"
    assert row[0]["packet_id"] == str(imagined.id) and row[0]["merged_from"] == "alice/what-if"

    with pytest.raises(InvalidInputError, match="already exists"):
        await archive.portability.fork(ME, "what-if")
    with pytest.raises(UnknownScopeError, match="not a fork"):
        await archive.portability.discard(ME)
    removed = await archive.portability.discard(branch)
    assert removed["memories"] > 0
    with psycopg.connect(database_url) as conn:
        assert conn.execute("SELECT count(*) FROM mnemo.memories WHERE namespace = 'what-if'").fetchone() == (0,)
    with pytest.raises(UnknownScopeError):
        await archive.portability.discard(branch)


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
        empty = c.get("/v1/export")  # its own namespace holds nothing yet: unknown, as the night says
        assert empty.status_code == 404 and empty.json()["error"] == {
            "code": "not_found",
            "message": "scope alice/work does not exist (nothing was ever stored there)",
        }
    with httpx.Client(base_url=server, headers=auth(tokens["bob"]), timeout=60) as c:
        assert c.get("/v1/export").status_code == 404  # bob's scope, never alice's


# --- issue 27 item 2: a scope after nights travels whole; a failed or killed copy leaves nothing ----


async def test_a_scope_after_nights_forks_and_travels_whole_with_statuses_and_history(
    archive: AsyncArchive, database_url: str, tmp_path: Path
) -> None:
    await lived(archive)
    source = counts(database_url, ME)
    assert source["turns"] and {"active", "archived"} <= set(source["statuses"])  # type: ignore[arg-type]
    branch = await archive.portability.fork(ME, "what-if")
    file = tmp_path / "home.jsonl"
    await archive.portability.export_packets(ME, file)
    report = await archive.portability.import_packets(COPY, file)
    assert report.links > 0
    for copy in (branch, COPY):
        assert counts(database_url, copy) == source
        mine, theirs = copied_state(database_url, ME, copy)
        assert theirs == mine  # status, weight, access history and audited weight history, item by item
    assert any(rows[0][-1] for rows in mine) and any(rows[0][6] for rows in mine)  # history to keep
    again = await archive.portability.import_packets(COPY, file)
    assert (again.turns, again.memories) == (0, 0) and counts(database_url, COPY) == source


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("status", "dreaming", "status"),
        ("alpha", -1.0, "alpha"),
        ("access_timestamps", ["yesterday"], "access_timestamps"),
        ("weight_history", [{"at": "2026-01-01T00:00:00Z", "operation": "reinforce"}], "weight_history"),
        ("provenance", ["x" * 2000], "provenance"),
        ("event_time", "2999-01-01T00:00:00Z", "ahead of this machine's clock"),
    ],
)
async def test_a_bad_packet_late_in_a_file_is_refused_before_anything_is_written(
    archive: AsyncArchive, database_url: str, tmp_path: Path, field: str, value: object, says: str
) -> None:
    await record(archive, ME, "s1", arc_conversation()[:4], START)
    for note in NOTES:
        await archive.remember(ME, note)
    file = tmp_path / "home.jsonl"
    await archive.portability.export_packets(ME, file)
    packets = lines_of(file)
    last = max(i for i, p in enumerate(packets) if p["packet_type"] == "memory")
    assert last > len(packets) // 2 and packets[0]["packet_type"] == "turn"
    packets[last]["metadata"][field] = value  # type: ignore[index]
    file.write_text("".join(json.dumps(p) + "\n" for p in packets))
    before = snapshot(database_url)
    with pytest.raises(MalformedImportError, match=f"line {last + 1}: .*{says}"):
        await archive.portability.import_packets(COPY, file)
    assert snapshot(database_url) == before
    await no_trace(database_url, archive, COPY)


def _waiting_to_write(url: str, table: str = "mnemo.links") -> int | None:
    """The server process of a session that waits to write ``table`` (held up by the test's lock)."""
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            """SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()
                 AND wait_event_type = 'Lock' AND query ILIKE %s""",
            (f"%{table}%",),
        ).fetchone()
    return None if row is None else int(row[0])


async def fails_at(url: str, table: str, call: Callable[[], Awaitable[object]]) -> None:
    """Run ``call`` while writers of ``table`` are locked out, end its database session while it waits
    there (after it wrote other rows), and expect the error."""
    with psycopg.connect(url) as lock:
        lock.execute(f"LOCK TABLE {table} IN SHARE MODE")
        task = asyncio.ensure_future(call())
        deadline = time.monotonic() + 120
        while (pid := _waiting_to_write(url, table)) is None:
            assert not task.done(), f"the call ended without writing {table}: {task.exception()!r}"
            assert time.monotonic() < deadline, f"the call never reached {table}"
            await asyncio.sleep(0.02)
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
    with pytest.raises(DatabaseError):
        await task


async def test_an_import_fork_or_merge_that_fails_midway_leaves_no_trace(
    archive: AsyncArchive, database_url: str, tmp_path: Path
) -> None:
    await lived(archive)
    source = counts(database_url, ME)
    file = tmp_path / "home.jsonl"
    await archive.portability.export_packets(ME, file)
    # links are the last thing a copy writes (they need every item's new id)
    await fails_at(database_url, "mnemo.links", lambda: archive.portability.import_packets(COPY, file))
    await no_trace(database_url, archive, COPY)
    branch = Scope("alice", "what-if")
    await fails_at(database_url, "mnemo.links", lambda: archive.portability.fork(ME, branch.namespace))
    await no_trace(database_url, archive, branch)

    assert await archive.portability.fork(ME, branch.namespace) == branch  # undisturbed, the same calls copy whole
    await archive.portability.import_packets(COPY, file)
    assert counts(database_url, branch) == counts(database_url, COPY) == source
    imagined = await archive.remember(branch, "In this timeline Maya moved to Porto.")
    with psycopg.connect(database_url) as conn:
        copies = [r[0] for r in conn.execute(
            "SELECT id FROM mnemo.memories WHERE namespace = 'what-if' AND access_count > 0").fetchall()]  # fmt: skip
    assert copies  # memories the parent holds too: merging them back reinforces the parent's (audited)
    parent_before = scope_rows(database_url, ME)
    weights_before = snapshot(database_url)["traces.weight_changes"]
    await fails_at(
        database_url, "traces.weight_changes", lambda: archive.portability.merge(branch, [imagined.id, *copies])
    )
    assert scope_rows(database_url, ME) == parent_before
    assert snapshot(database_url)["traces.weight_changes"] == weights_before
    merged = await archive.portability.merge(branch, [imagined.id, *copies])
    assert merged.memories == 1 + len(copies) and counts(database_url, ME) != source


@pytest.mark.slow
async def test_a_killed_import_leaves_no_trace_and_a_rerun_copies_whole(
    archive: AsyncArchive, database_url: str, tmp_path: Path
) -> None:
    await lived(archive)
    file = tmp_path / "home.jsonl"
    await archive.portability.export_packets(ME, file)
    command = [str(Path(sys.executable).parent / "mnemo"), "import-packets", str(file), "--into", str(COPY)]
    env = {**os.environ, "MNEMO_DATABASE_URL": database_url}
    with psycopg.connect(database_url) as lock:
        lock.execute("LOCK TABLE mnemo.links IN SHARE MODE")  # holds the import just before its end
        proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # noqa: ASYNC220
        try:
            deadline = time.monotonic() + 120
            while (pid := _waiting_to_write(database_url)) is None:
                assert proc.poll() is None, f"the import ended before the kill: {proc.communicate()[1]!r}"
                assert time.monotonic() < deadline, "the import never reached its links"
                time.sleep(0.02)  # noqa: ASYNC251  # the test waits for the real process on purpose
            proc.send_signal(signal.SIGKILL)
        finally:
            proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    deadline = time.monotonic() + 60  # the server finds its client gone at the next message and rolls back
    while _session_alive(database_url, pid):
        assert time.monotonic() < deadline
        time.sleep(0.05)  # noqa: ASYNC251
    await no_trace(database_url, archive, COPY)
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300, check=False)  # noqa: ASYNC221
    assert done.returncode == 0, done.stderr
    assert counts(database_url, COPY) == counts(database_url, ME)


def _session_alive(url: str, pid: int) -> bool:
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone() == (1,)


async def test_exporting_an_unknown_scope_is_refused_as_the_night_refuses_it(
    archive: AsyncArchive, database_url: str, tmp_path: Path
) -> None:
    nobody = Scope("nobody", "x")
    with pytest.raises(UnknownScopeError) as night:
        await archive.night_cycle(nobody)
    with pytest.raises(UnknownScopeError) as export:
        await archive.portability.export_packets(nobody, tmp_path / "x.jsonl")
    assert str(export.value) == str(night.value)
    assert not (tmp_path / "x.jsonl").exists()  # refused before the file is made
    with pytest.raises(UnknownScopeError, match="does not exist"):
        await archive.portability.fork(nobody, "what-if")
    env = {"MNEMO_DATABASE_URL": database_url, "MNEMO_HOME": str(tmp_path)}
    night_code, _, night_said = run(env, "night", "--scope", "nobody/x")
    export_code, exported, export_said = run(env, "export", "nobody/x")
    assert (export_code, export_said, exported) == (night_code, night_said, "") and export_code != 0
    assert "nobody/x does not exist" in export_said
