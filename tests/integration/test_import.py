"""Bulk import of JSONL and LoCoMo files: COPY, batched embedding, all or nothing."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest

from mnemo import AsyncArchive, MalformedImportError, Scope
from mnemo.write.formats import detect_format
from tests.conftest import snapshot

SCOPE = Scope("importer", "conv")


def write_jsonl(path: Path, rows: list[object]) -> Path:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    return path


def tiny_locomo() -> list[dict]:
    return [
        {
            "sample_id": "conv-x",
            "conversation": {
                "speaker_a": "Ana",
                "speaker_b": "Ben",
                "session_1_date_time": "1:56 pm on 8 May, 2023",
                "session_1": [
                    {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a greyhound called Comet!"},
                    {
                        "speaker": "Ben",
                        "dia_id": "D1:2",
                        "text": "Lovely. Look at my garden",
                        "blip_caption": "a photo of sunflowers in a garden",
                        "img_url": ["x"],
                        "query": "garden",
                    },
                ],
                "session_2_date_time": "10:05 am on 2 June, 2023",
                "session_2": [
                    {"speaker": "Ben", "dia_id": "D2:1", "text": "How is Comet doing with the cats?"},
                ],
            },
            "qa": [],
        }
    ]


async def test_jsonl_import(archive: AsyncArchive, tmp_path: Path, database_url: str) -> None:
    path = write_jsonl(
        tmp_path / "c.jsonl",
        [
            {
                "session": "a",
                "role": "user",
                "content": "I'm training for the Berlin marathon",
                "speaker": "Ana",
                "created_at": "2024-03-01T10:00:00+00:00",
            },
            "",
            {"session": "a", "role": "assistant", "content": "What's your target time?"},
            {"session": "b", "text": "My knee hurts after long runs"},
        ],
    )
    report = await archive.import_file(SCOPE, path)
    assert (report.turns, report.sessions, report.format) == (3, 2, "jsonl")
    with psycopg.connect(database_url) as conn:
        rows = conn.execute(
            "SELECT session_id, turn_number, role, speaker, created_at FROM mnemo.turns "
            "ORDER BY session_id, turn_number"
        ).fetchall()
        vectors = conn.execute("SELECT count(*) FROM vectors.universal_384 WHERE item_kind = 'turn'").fetchone()
    assert [r[:4] for r in rows] == [
        ("a", 0, "user", "Ana"),
        ("a", 1, "assistant", None),
        ("b", 0, "user", None),
    ]
    assert rows[0][4] == datetime(2024, 3, 1, 10, tzinfo=UTC)
    assert vectors == (3,)
    hit = (await archive.recall(SCOPE, "running injury", k=1))[0]
    assert hit.content == "My knee hurts after long runs"
    # the same file again stores nothing: its turns are repeats (issue 39 item 3)
    again = await archive.import_file(SCOPE, path)
    assert (again.turns, again.skipped_repeats) == (0, 3)
    # another file without turn numbers appends to the sessions
    more = write_jsonl(
        tmp_path / "more.jsonl", [{"session": "a", "content": "Sub three hours"}, {"session": "a", "content": "ok"}]
    )
    await archive.import_file(SCOPE, more)
    with psycopg.connect(database_url) as conn:
        numbers = conn.execute("SELECT turn_number FROM mnemo.turns WHERE session_id = 'a' ORDER BY 1").fetchall()
    assert [n[0] for n in numbers] == [0, 1, 2, 3]


async def test_locomo_import_keeps_metadata(archive: AsyncArchive, tmp_path: Path) -> None:
    path = tmp_path / "mini_locomo.json"
    path.write_text(json.dumps(tiny_locomo()))
    assert detect_format(path) == "locomo"
    report = await archive.import_file(SCOPE, path)
    assert (report.turns, report.sessions, report.format) == (3, 2, "locomo")
    result = await archive.recall(SCOPE, "sunflowers", k=1)
    hit = result[0]
    assert hit.metadata["dia_id"] == "D1:2" and hit.speaker == "Ben" and hit.role == "assistant"
    assert "[shares a photo: a photo of sunflowers in a garden]" in hit.content
    assert hit.created_at == datetime(2023, 5, 8, 13, 56, 30, tzinfo=UTC)
    # the same conversation again stores nothing: every turn is a repeat (issue 39 item 3)
    again = await archive.import_file(SCOPE, path)
    assert (again.turns, again.skipped_repeats) == (0, 3)
    # an edited turn is new, and its turn number is taken: refused, nothing written
    edited = tiny_locomo()
    edited[0]["conversation"]["session_2"][0]["text"] = "How is Comet doing with the dogs?"
    path.write_text(json.dumps(edited))
    with pytest.raises(MalformedImportError, match="turn numbers already used"):
        await archive.import_file(SCOPE, path)


@pytest.mark.parametrize(
    ("lines", "line_no", "message"),
    [
        ([{"content": "fine"}, "{not json", {"content": "fine"}], 2, "invalid JSON"),
        ([{"content": "fine"}, {"content": ""}], 2, "empty"),
        ([{"content": "fine"}, {"content": "a\u0000b"}], 2, "NUL"),
        ([{"content": "fine"}, {"role": "user"}], 2, "missing 'content'"),
        ([{"content": "fine"}, {"content": "x", "role": "wizard"}], 2, "unknown role"),
        ([{"content": "fine"}, [1, 2]], 2, "must be a JSON object"),
        ([{"content": "fine"}, {"content": "x", "turn": -1}], 2, "non-negative"),
        ([{"content": "fine"}, {"content": "x", "created_at": "last tuesday"}], 2, "ISO-8601"),
        ([{"content": "x" * 40_000}], 1, "over the limit"),
    ],
)
async def test_malformed_jsonl_reports_the_line_and_imports_nothing(
    archive: AsyncArchive, tmp_path: Path, database_url: str, lines, line_no: int, message: str
) -> None:
    await archive.record_turn(SCOPE, "existing", "user", "something already stored")
    before = snapshot(database_url)
    path = write_jsonl(tmp_path / "bad.jsonl", lines)
    with pytest.raises(MalformedImportError, match=rf"bad.jsonl:{line_no}: .*{message}") as info:
        await archive.import_file(SCOPE, path)
    assert info.value.line == line_no
    assert "nothing from this file was imported" in str(info.value)
    assert snapshot(database_url) == before


async def test_invalid_utf8_file_reports_line(archive: AsyncArchive, tmp_path: Path, database_url: str) -> None:
    await archive.record_turn(SCOPE, "existing", "user", "something already stored")
    before = snapshot(database_url)
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(b'{"content": "ok"}\n{"content": "caf\xe9"}\n')
    with pytest.raises(MalformedImportError, match=r"latin1.jsonl:2: not valid UTF-8"):
        await archive.import_file(SCOPE, path)
    assert snapshot(database_url) == before


async def test_malformed_locomo_and_missing_files(archive: AsyncArchive, tmp_path: Path, database_url: str) -> None:
    await archive.record_turn(SCOPE, "existing", "user", "something already stored")
    before = snapshot(database_url)
    broken = tiny_locomo()
    del broken[0]["conversation"]["session_2"][0]["text"]
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(broken))
    with pytest.raises(MalformedImportError, match="sample 0"):
        await archive.import_file(SCOPE, path)
    with pytest.raises(MalformedImportError, match="no sample with sample_id 'conv-404'"):
        path.write_text(json.dumps(tiny_locomo()))
        await archive.import_file(SCOPE, path, sample="conv-404")
    with pytest.raises(MalformedImportError, match="file not found"):
        await archive.import_file(SCOPE, tmp_path / "nope.jsonl")
    empty = write_jsonl(tmp_path / "empty.jsonl", ["", ""])
    with pytest.raises(MalformedImportError, match="no turns found"):
        await archive.import_file(SCOPE, empty)
    assert snapshot(database_url) == before
