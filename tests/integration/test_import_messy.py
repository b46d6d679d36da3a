"""Imports of real, messy exports: all or nothing by default, ``skip_invalid`` to keep the valid
turns, precomputed vectors, and a transaction short enough not to block other writers."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest
from typer.testing import CliRunner

from mnemo import AsyncArchive, MalformedImportError, RecallResult, Scope, Settings
from mnemo.embed import Embeddings, load_embedder
from mnemo.interfaces.cli import app
from tests.conftest import snapshot

SCOPE = Scope("messy", "export")


def write_lines(path: Path, rows: list[Any]) -> Path:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    return path


def messy_export(path: Path) -> Path:
    """Six lines: four good turns, an empty turn (line 3) and a 76,000-character turn (line 5)."""
    return write_lines(
        path,
        [
            {"session": "a", "content": "I adopted a greyhound called Comet", "speaker": "Ana"},
            {"session": "a", "content": "Comet loves the beach at Cascais", "role": "assistant"},
            {"session": "a", "content": ""},
            {"session": "b", "content": "My sister plays the cello in Porto"},
            {"session": "b", "content": "word " * 15_200},
            {"session": "b", "content": "We are driving to Porto on Friday"},
        ],
    )


def turn_count(url: str) -> int:
    with psycopg.connect(url) as conn:
        return int(conn.execute("SELECT count(*) FROM mnemo.turns").fetchone()[0])  # type: ignore[index]


async def test_one_bad_line_imports_nothing_and_names_the_line(
    archive: AsyncArchive, tmp_path: Path, database_url: str
) -> None:
    await archive.record_turn(SCOPE, "existing", "user", "something already stored")
    before = snapshot(database_url)
    with pytest.raises(MalformedImportError, match=r"export.jsonl:3: content is empty") as info:
        await archive.import_file(SCOPE, messy_export(tmp_path / "export.jsonl"))
    assert info.value.line == 3
    assert snapshot(database_url) == before


async def test_skip_invalid_imports_the_rest_and_reports_each_skipped_line(
    archive: AsyncArchive, tmp_path: Path, database_url: str
) -> None:
    path = messy_export(tmp_path / "export.jsonl")
    with path.open("a", encoding="utf-8") as fh:
        fh.write("{not json\n")  # line 7
        fh.write(json.dumps({"session": "b", "content": "hi", "speaker": "B\u0000b"}) + "\n")  # line 8
        fh.write(json.dumps({"session": "c", "content": "first", "turn": 4}) + "\n")  # line 9
        fh.write(json.dumps({"session": "c", "content": "again", "turn": 4}) + "\n")  # line 10
    with path.open("ab") as fh:
        fh.write(b'{"content": "caf\xe9"}\n')  # line 11: Latin-1, not UTF-8
        # line 12: a raw U+2028 inside a JSON string is valid JSON, and not a line end
        fh.write(json.dumps({"session": "c", "content": "a\u2028b"}, ensure_ascii=False).encode() + b"\n")
    report = await archive.import_file(SCOPE, path, skip_invalid=True)
    assert (report.turns, report.sessions) == (6, 3)
    lines = [line for line, _ in report.skipped]
    assert lines == [3, 5, 7, 8, 10, 11]
    reasons = dict(report.skipped)
    assert "content is empty" in reasons[3]
    assert "76,000 characters, over the limit" in reasons[5]
    assert "invalid JSON" in reasons[7]
    assert "speaker contains a NUL" in reasons[8]
    assert "already on line 9" in reasons[10]
    assert "not valid UTF-8" in reasons[11]
    assert turn_count(database_url) == 6
    found = await archive.recall(SCOPE, "greyhound dog", k=1)
    assert isinstance(found, RecallResult)
    hit = found[0]
    assert hit.content == "I adopted a greyhound called Comet"


async def test_skip_invalid_with_nothing_valid_is_an_error(
    archive: AsyncArchive, tmp_path: Path, database_url: str
) -> None:
    before = snapshot(database_url)
    path = write_lines(tmp_path / "bad.jsonl", [{"content": ""}, "[1]"])
    with pytest.raises(MalformedImportError, match=r"no valid turns: all 2 were skipped \(first: line 1: content"):
        await archive.import_file(SCOPE, path, skip_invalid=True)
    assert snapshot(database_url) == before


async def test_skip_invalid_locomo_names_the_turn(archive: AsyncArchive, tmp_path: Path) -> None:
    conv = {
        "sample_id": "c1",
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Ben",
            "session_1": [
                {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a greyhound"},
                {"speaker": "Ben", "dia_id": "D1:2", "text": "   "},
                {"speaker": "Ben", "dia_id": "D1:3", "text": "What is its name?"},
            ],
        },
    }
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([conv]))
    with pytest.raises(MalformedImportError, match="sample 0: turn D1:2 is empty"):
        await archive.import_file(SCOPE, path)
    report = await archive.import_file(SCOPE, path, skip_invalid=True)
    assert report.turns == 2 and len(report.skipped) == 1
    line, reason = report.skipped[0]
    assert line is None and reason.startswith("sample 0 turn D1:2: turn D1:2 is empty")


def test_cli_skip_invalid(database_url: str, tmp_path: Path) -> None:
    runner = CliRunner()
    env = {"MNEMO_DATABASE_URL": database_url, "MNEMO_HOME": str(tmp_path), "MNEMO_ENTITY": "cli"}
    path = messy_export(tmp_path / "export.jsonl")
    result = runner.invoke(app, ["import", str(path)], env=env)
    assert result.exit_code == 1 and "export.jsonl:3: content is empty" in result.stderr
    result = runner.invoke(app, ["import", str(path), "--skip-invalid"], env=env)
    assert result.exit_code == 0, result.output
    assert "imported 4 turns in 2 sessions (jsonl) into cli/default" in result.stdout
    assert "skipped 2 invalid" in result.stdout
    assert "skipped line 3: content is empty" in result.stderr and "skipped line 5: content has 76,000" in result.stderr
    result = runner.invoke(app, ["import", str(path), "--skip-invalid", "--namespace", "j", "--json"], env=env)
    data = json.loads(result.stdout)
    assert data["turns"] == 4 and [s["line"] for s in data["skipped"]] == [3, 5]


def timestamp_export(path: Path) -> Path:
    """Three lines; line 2 names its time "timestamp" (not a field of a turn: "created_at" is)."""
    return write_lines(
        path,
        [
            {"session": "a", "content": "I adopted a greyhound called Comet", "created_at": "2021-05-30T09:00:00"},
            {"session": "a", "content": "I moved to Lisbon", "timestamp": "2021-06-01T10:00:00+00:00"},
            {"session": "a", "content": "Comet loves the beach at Cascais"},
        ],
    )


async def test_an_unknown_field_is_an_error_naming_the_line_and_the_field(
    archive: AsyncArchive, tmp_path: Path, database_url: str
) -> None:
    await archive.record_turn(SCOPE, "existing", "user", "something already stored")
    path = timestamp_export(tmp_path / "export.jsonl")
    before = snapshot(database_url)
    with pytest.raises(MalformedImportError, match=r"export.jsonl:2: unknown field 'timestamp'.*'created_at'") as info:
        await archive.import_file(SCOPE, path)
    assert info.value.line == 2
    assert snapshot(database_url) == before
    report = await archive.import_file(SCOPE, path, skip_invalid=True)
    assert report.turns == 2 and [line for line, _ in report.skipped] == [2]
    assert "unknown field 'timestamp'" in report.skipped[0][1]


def test_cli_import_refuses_an_unknown_field_and_skip_invalid_reports_it(database_url: str, tmp_path: Path) -> None:
    runner = CliRunner()
    env = {"MNEMO_DATABASE_URL": database_url, "MNEMO_HOME": str(tmp_path), "MNEMO_ENTITY": "cli"}
    path = timestamp_export(tmp_path / "export.jsonl")
    before = snapshot(database_url)
    result = runner.invoke(app, ["import", str(path)], env=env)
    assert result.exit_code == 1 and "export.jsonl:2: unknown field 'timestamp'" in result.stderr, result.output
    assert snapshot(database_url) == before
    result = runner.invoke(app, ["import", str(path), "--skip-invalid"], env=env)
    assert result.exit_code == 0, result.output
    assert "imported 2 turns" in result.stdout and "skipped line 2: unknown field 'timestamp'" in result.stderr


async def test_a_long_import_does_not_block_a_concurrent_record(
    archive: AsyncArchive, settings: Settings, tmp_path: Path, database_url: str
) -> None:
    """While 1,000 turns are imported, a turn recorded into the same scope (another session, from
    another archive) completes before the import has written anything: the import's transaction
    opens only once everything is embedded."""
    path = write_lines(
        tmp_path / "long.jsonl",
        [
            {"session": f"imp-{i // 100}", "content": f"Imported turn {i} about gardening, tea and trains"}
            for i in range(1000)
        ],
    )
    await archive.record_turn(SCOPE, "live", "user", "the scope exists before the import")
    # The importing archive gets its own embedder (one model must not be used from two threads),
    # embedding 100 turns per chunk, so that its progress shows the import under way.
    own = load_embedder()
    own.chunk_size = 100
    importer = await AsyncArchive.open(settings, embeddings=own)
    under_way = asyncio.Event()

    def progress(done: int, total: int) -> None:
        if done < total:
            under_way.set()

    try:
        task = asyncio.create_task(importer.import_file(SCOPE, path, progress=progress))
        waiter = asyncio.create_task(under_way.wait())
        await asyncio.wait([task, waiter], return_when=asyncio.FIRST_COMPLETED)
        assert under_way.is_set() and not task.done(), "the import should still be running"
        turn = await archive.record_turn(SCOPE, "live", "user", "written while the import runs")
        imported_when_recorded = turn_count(database_url) - 2
        finished_first = task.done()
        report = await task
    finally:
        await importer.close()
    assert not finished_first and imported_when_recorded == 0  # the record went first
    assert turn.turn_number == 1 and report.turns == 1000
    assert turn_count(database_url) == 1002


async def test_precomputed_vectors_are_used(
    archive: AsyncArchive, tmp_path: Path, database_url: str, embeddings: Embeddings
) -> None:
    slug, dim = archive._rt.slug, archive.embeddings.dim
    rng = np.random.default_rng(7)
    given = rng.normal(size=dim)
    path = write_lines(
        tmp_path / "vectors.jsonl",
        [
            {"session": "v", "content": "A turn whose vector came with the file", "embedding": given.tolist(),
             "embedding_model": slug},
            {"session": "v", "content": "A turn the embedder embeds as usual"},
        ],
    )  # fmt: skip
    report = await archive.import_file(SCOPE, path)
    assert report.turns == 2
    # the dense retriever reads the given query vector (lexical and late interaction read the text)
    result = await archive.recall(SCOPE, "ignored", k=2, query_vector=given, threshold=0.0, read_only=True)
    assert isinstance(result, RecallResult)
    hit = next(h for h in result if h.vector_rank == 1)
    assert hit.content == "A turn whose vector came with the file"
    assert hit.similarity is not None and hit.similarity > 0.999
    with psycopg.connect(database_url) as conn:
        stored = conn.execute(
            "SELECT v.embedding::vector::text FROM vectors.universal_384 v JOIN mnemo.turns t ON t.id = v.item_id "
            "WHERE t.turn_number = 0 AND t.session_id = 'v'"
        ).fetchone()
    assert stored is not None
    assert np.allclose(np.array(json.loads(stored[0])), given / np.linalg.norm(given), atol=1e-3)
    other = await archive.recall(SCOPE, "a turn the embedder embeds", k=1, read_only=True)
    assert isinstance(other, RecallResult)
    embedded = other[0]
    assert embedded.content == "A turn the embedder embeds as usual"


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"embedding_model": "openai:text-embedding-3-small:1536"}, "is not the active embedder"),
        ({"embedding": [0.1, 0.2, 0.3]}, "has 384 dimensions"),
        ({"embedding": [0.0] * 384}, "all zeros"),
        ({"embedding": ["x"] * 384}, "must be a list of numbers"),
        ({"embedding_model": None}, "needs 'embedding_model'"),
    ],
)
async def test_unusable_precomputed_vectors_are_refused_or_skipped(
    archive: AsyncArchive, tmp_path: Path, database_url: str, fields: dict[str, Any], message: str
) -> None:
    slug = archive._rt.slug
    line = {"session": "v", "content": "a turn with a vector", "embedding": [0.05] * 384, "embedding_model": slug}
    line.update(fields)
    line = {k: v for k, v in line.items() if v is not None}
    path = write_lines(tmp_path / "v.jsonl", [{"session": "v", "content": "plain turn"}, line])
    before = snapshot(database_url)
    with pytest.raises(MalformedImportError, match=rf"v.jsonl:2: .*{message}"):
        await archive.import_file(SCOPE, path)
    assert snapshot(database_url) == before
    report = await archive.import_file(SCOPE, path, skip_invalid=True)
    assert report.turns == 1 and report.skipped[0][0] == 2 and message in report.skipped[0][1]


async def test_async_ingest_writes_precomputed_vectors_and_defers_the_rest(
    settings: Settings, embeddings: Embeddings, tmp_path: Path, database_url: str
) -> None:
    archive = await AsyncArchive.open(settings, embeddings=embeddings, ingest_mode="async")
    try:
        given = np.random.default_rng(3).normal(size=embeddings.dim)
        path = write_lines(
            tmp_path / "async.jsonl",
            [
                {"content": "with a vector", "embedding": given.tolist(), "embedding_model": archive._rt.slug},
                {"content": "without a vector"},
            ],
        )
        await archive.import_file(SCOPE, path)
    finally:
        await archive.close()
    with psycopg.connect(database_url) as conn:
        vectors = conn.execute("SELECT count(*) FROM vectors.universal_384 WHERE item_kind = 'turn'").fetchone()
        jobs = conn.execute("SELECT args FROM queue.procrastinate_jobs").fetchall()
        missing = conn.execute("SELECT id::text FROM mnemo.turns WHERE content = 'without a vector'").fetchone()
    assert vectors == (1,)
    assert [j[0]["turn_ids"] for j in jobs] == [[missing[0]]]  # type: ignore[index]
