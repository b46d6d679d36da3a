"""Turns carry a content identity: a retried or re-imported turn is a repeat, counted and skipped
(issue 39 item 3; :mod:`mnemo.cognition.text.turn_identity`). Library face; the CLI, HTTP and MCP faces are
tested in their own files."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest

from mnemo import AsyncArchive, InvalidInputError, Scope
from mnemo.cognition.text.turn_identity import content_identity
from mnemo.store import Store
from mnemo.store.migrate import load_migrations

SCOPE = Scope("ana", "chat")

ROWS = [
    {"session": "s1", "role": "user", "content": "My dog is called Comet", "created_at": "2024-05-01T10:00:00Z"},
    {"session": "s1", "role": "assistant", "content": "What a lovely name", "created_at": "2024-05-01T10:00:05Z"},
    {"session": "s1", "role": "user", "content": "He loves the beach", "created_at": "2024-05-01T10:01:00Z"},
]


def jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


async def turn_rows(url: str) -> list[tuple[str, int, str]]:
    async with await psycopg.AsyncConnection.connect(url) as conn:
        cur = await conn.execute(
            "SELECT session_id, turn_number, content FROM mnemo.turns WHERE entity_id = %s ORDER BY 1, 2",
            (SCOPE.entity_id,),
        )
        return [(r[0], int(r[1]), r[2]) for r in await cur.fetchall()]


async def test_reimporting_a_file_stores_each_turn_once_and_counts_the_repeats(
    archive: AsyncArchive, tmp_path: Path, database_url: str
) -> None:
    path = jsonl(tmp_path / "chat.jsonl", ROWS)
    first = await archive.import_file(SCOPE, path)
    assert (first.turns, first.skipped_repeats) == (3, 0)
    again = await archive.import_file(SCOPE, path)
    assert (again.turns, again.sessions, again.skipped_repeats) == (0, 0, 3)
    assert len(await turn_rows(database_url)) == 3
    # A grown file: the old turns are repeats, the new one appends after them, no gap.
    grown = jsonl(
        tmp_path / "grown.jsonl",
        [*ROWS, {"session": "s1", "content": "And the sea", "created_at": "2024-05-01T10:02:00Z"}],
    )
    report = await archive.import_file(SCOPE, grown)
    assert (report.turns, report.skipped_repeats) == (1, 3)
    assert [n for _, n, _ in await turn_rows(database_url)] == [0, 1, 2, 3]
    hits = await archive.recall(SCOPE, "What is the dog called?", 5)
    assert sum(1 for h in hits if h.content == "My dog is called Comet") == 1


async def test_a_file_without_times_is_a_repeat_but_its_identical_lines_are_two_turns(
    archive: AsyncArchive, tmp_path: Path, database_url: str
) -> None:
    rows = [{"session": "s", "content": "ok"}, {"session": "s", "role": "assistant", "content": "Sure"}]
    path = jsonl(tmp_path / "untimed.jsonl", [*rows, {"session": "s", "content": "ok"}])
    assert (await archive.import_file(SCOPE, path)).turns == 3
    again = await archive.import_file(SCOPE, path)
    assert (again.turns, again.skipped_repeats) == (0, 3)
    assert [c for _, _, c in await turn_rows(database_url)] == ["ok", "Sure", "ok"]


async def test_import_turns_returns_each_repeat_as_the_held_turn(archive: AsyncArchive, tmp_path: Path) -> None:
    turns = archive.parse_turns("\n".join(json.dumps(r) for r in ROWS), max_chars=10_000)
    stored = await archive.import_turns(SCOPE, turns)
    again = await archive.import_turns(SCOPE, turns)
    assert [t.repeat for t in stored] == [False] * 3
    assert [t.repeat for t in again] == [True] * 3
    assert [t.id for t in again] == [t.id for t in stored]


async def test_a_retried_record_turn_with_a_key_stores_once(archive: AsyncArchive, database_url: str) -> None:
    first = await archive.record_turn(SCOPE, "s", "user", "Book the table for 8", idempotency_key="msg-1")
    retry = await archive.record_turn(SCOPE, "s", "user", "Book the table for 8", idempotency_key="msg-1")
    assert not first.repeat and retry.repeat
    assert (retry.id, retry.turn_number) == (first.id, first.turn_number)
    after = await archive.record_turn(SCOPE, "s", "assistant", "Done", idempotency_key="msg-2")
    assert after.turn_number == first.turn_number + 1  # the repeat took no number
    assert len(await turn_rows(database_url)) == 2


async def test_live_turns_without_a_key_are_stamped_now_so_the_same_words_twice_are_two_turns(
    archive: AsyncArchive, database_url: str
) -> None:
    a = await archive.record_turn(SCOPE, "s", "user", "thanks")
    b = await archive.record_turn(SCOPE, "s", "user", "thanks")
    assert not a.repeat and not b.repeat and a.id != b.id
    # With an explicit time the same turn is the same event: a repeat.
    when = datetime(2024, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    c = await archive.record_turn(SCOPE, "s", "user", "thanks", created_at=when)
    d = await archive.record_turn(SCOPE, "s", "user", "thanks", created_at=when)
    assert d.repeat and d.id == c.id
    assert len(await turn_rows(database_url)) == 3


async def test_concurrent_retries_with_one_key_store_once(archive: AsyncArchive, database_url: str) -> None:
    # Four retries of one turn at once: one stores it, the others get it back as a repeat.
    sends = [archive.record_turn(SCOPE, "s1", "user", "Pay the invoice", idempotency_key="pay-7") for _ in range(4)]
    done = await asyncio.gather(*sends)
    assert sum(1 for t in done if not t.repeat) == 1
    assert len({t.id for t in done}) == 1
    # The same key at once into two sessions (no shared session lock): the unique index lets one in,
    # and the other is told that the key names another turn.
    other = [archive.record_turn(SCOPE, s, "user", "Call Bo", idempotency_key="call-1") for s in ("s2", "s3")]
    results = await asyncio.gather(*other, return_exceptions=True)
    assert sum(1 for r in results if isinstance(r, InvalidInputError)) == 1
    assert sorted(await turn_rows(database_url))[:1] == [("s1", 0, "Pay the invoice")]
    assert len(await turn_rows(database_url)) == 2


async def test_a_bad_or_reused_key_is_a_clear_error_and_changes_nothing(
    archive: AsyncArchive, tmp_path: Path, database_url: str
) -> None:
    for bad in ("", "   ", "two\nlines", "x" * 201, 7):
        with pytest.raises(InvalidInputError, match="idempotency_key"):
            await archive.record_turn(SCOPE, "s", "user", "hello", idempotency_key=bad)  # type: ignore[arg-type]
    await archive.record_turn(SCOPE, "s", "user", "hello", idempotency_key="k1")
    with pytest.raises(InvalidInputError, match="already names turn 0"):
        await archive.record_turn(SCOPE, "s", "user", "something else", idempotency_key="k1")
    keyed = [{"content": "a", "idempotency_key": "dup"}, {"content": "b", "idempotency_key": "dup"}]
    with pytest.raises(InvalidInputError, match="already on line 1"):
        await archive.import_file(SCOPE, jsonl(tmp_path / "dup.jsonl", keyed))
    assert await turn_rows(database_url) == [("s", 0, "hello")]


async def test_imported_keys_make_repeats_whatever_the_content_time(
    archive: AsyncArchive, tmp_path: Path, database_url: str
) -> None:
    rows = [
        {"session": "s", "content": "Hi", "idempotency_key": "m1"},
        {"session": "s", "content": "Yo", "idempotency_key": "m2"},
    ]
    assert (await archive.import_file(SCOPE, jsonl(tmp_path / "k.jsonl", rows))).turns == 2
    report = await archive.import_file(SCOPE, jsonl(tmp_path / "k2.jsonl", [*rows, {"session": "s", "content": "Hi"}]))
    assert (report.turns, report.skipped_repeats) == (1, 2)
    assert await archive.record_turn(SCOPE, "s", "user", "Yo", idempotency_key="m2") is not None
    assert [n for _, n, _ in await turn_rows(database_url)] == [0, 1, 2]


async def test_a_forgotten_turn_sent_again_is_stored_again(archive: AsyncArchive, database_url: str) -> None:
    first = await archive.record_turn(SCOPE, "s", "user", "my pin is 1234", idempotency_key="oops")
    await archive.forget(SCOPE, first.id)
    assert await turn_rows(database_url) == []
    again = await archive.record_turn(SCOPE, "s", "user", "my pin is 1234", idempotency_key="oops")
    assert not again.repeat and again.id != first.id


async def test_migration_0020_backfills_the_identity_new_writes_compute(empty_database_url: str) -> None:
    # A database at 0019 holding a file imported twice (the old duplicates) and one other turn.
    at = datetime(2024, 5, 1, 10, 0, 0, 123456, tzinfo=UTC)
    with psycopg.connect(empty_database_url, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA IF NOT EXISTS mnemo")
        conn.execute(
            "CREATE TABLE mnemo.schema_migrations (version integer PRIMARY KEY, name text NOT NULL, "
            "checksum text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        for m in load_migrations():
            if m.version < 20:
                conn.execute(m.sql.encode())
                conn.execute("INSERT INTO mnemo.schema_migrations VALUES (%s, %s, %s)", (m.version, m.name, m.checksum))
        conn.execute("INSERT INTO mnemo.scopes (entity_id, namespace) VALUES ('ana', 'chat')")
        for number, content in enumerate(["Hé, ça va? 🐕", "Hé, ça va? 🐕", "other"]):
            conn.execute(
                "INSERT INTO mnemo.turns (entity_id, id, namespace, session_id, turn_number, role, content, "
                "created_at) "
                "VALUES ('ana', gen_random_uuid(), 'chat', 's', %s, 'user', %s, %s)",
                (number, content, at),
            )
    store = await Store.open(empty_database_url)
    await store.close()
    with psycopg.connect(empty_database_url) as conn:
        found = [r[0] for r in conn.execute("SELECT identity FROM mnemo.turns ORDER BY turn_number")]
    assert found == [
        content_identity("s", "user", at, "Hé, ça va? 🐕", 0),
        content_identity("s", "user", at, "Hé, ça va? 🐕", 1),
        content_identity("s", "user", at, "other", 0),
    ]
