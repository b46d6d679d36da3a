"""Every text field entering mnemo is checked like content: NUL bytes, control characters, lone
surrogates and over-long values are rejected with an InvalidInputError (a MalformedImportError
naming the line for an import, a clean exit 1 for the CLI, a 422 for HTTP), and nothing is written."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from mnemo import Archive, AsyncArchive, InvalidInputError, MalformedImportError, Scope, Settings
from mnemo.embed import Embeddings
from mnemo.interfaces.http import create_app
from tests.conftest import snapshot
from tests.integration.test_http import auth, serve

SCOPE = Scope("texts", "fields")
TEXT = "The quarterly budget review moved to Thursday afternoon"

# (label, bad value) for the short single-line fields
BAD_SHORT = [
    ("nul", "Ana\u0000"),
    ("escape", "\u001b[31mAna"),
    ("bell", "A\u0007na"),
    ("newline", "Ana\nBen"),
    ("delete", "Ana\u007f"),
    ("surrogate", "Ana\ud800"),
    ("too long", "A" * 1001),
]
BAD_METADATA: list[tuple[str, Any]] = [
    ("nul value", {"note": "a\u0000b"}),
    ("nul key", {"no\u0000te": "x"}),
    ("nested nul", {"tags": ["ok", {"deep": "x\u0000"}]}),
    ("control key", {"no\u001bte": "x"}),
    ("surrogate value", {"note": "\udfff"}),
    ("not finite", {"score": math.nan}),
    ("not JSON", {"when": object()}),
    ("not a mapping", ["a", "b"]),
]


@pytest.fixture
async def seeded(archive: AsyncArchive) -> AsyncArchive:
    await archive.record_turn(SCOPE, "existing", "user", "something already stored")
    return archive


@pytest.mark.parametrize(("case", "bad"), BAD_SHORT, ids=[c for c, _ in BAD_SHORT])
async def test_record_turn_rejects_bad_speaker_and_session(
    seeded: AsyncArchive, database_url: str, case: str, bad: str
) -> None:
    before = snapshot(database_url)
    with pytest.raises(InvalidInputError, match="speaker"):
        await seeded.record_turn(SCOPE, "s1", "user", TEXT, speaker=bad)
    with pytest.raises(InvalidInputError, match="session"):
        await seeded.record_turn(SCOPE, bad, "user", TEXT)
    with pytest.raises(InvalidInputError, match="role"):
        await seeded.record_turn(SCOPE, "s1", bad, TEXT)
    assert snapshot(database_url) == before


@pytest.mark.parametrize(("case", "bad"), BAD_SHORT, ids=[c for c, _ in BAD_SHORT])
async def test_remember_and_observe_reject_bad_short_fields(
    seeded: AsyncArchive, database_url: str, case: str, bad: str
) -> None:
    before = snapshot(database_url)
    with pytest.raises(InvalidInputError, match="source_tag"):
        await seeded.remember(SCOPE, TEXT, source_tag=bad)
    with pytest.raises(InvalidInputError, match="provenance"):
        await seeded.remember(SCOPE, TEXT, provenance=["turn:1", bad])
    with pytest.raises(InvalidInputError, match="kind"):
        await seeded.remember(SCOPE, TEXT, kind=bad)
    with pytest.raises(InvalidInputError, match="source_tag"):
        await seeded.observe(SCOPE, TEXT, source_tag=bad)
    with pytest.raises(InvalidInputError, match="role"):
        await seeded.observe(SCOPE, TEXT, role=bad)
    assert snapshot(database_url) == before


@pytest.mark.parametrize(("case", "bad"), BAD_METADATA, ids=[c for c, _ in BAD_METADATA])
async def test_every_write_rejects_bad_metadata(seeded: AsyncArchive, database_url: str, case: str, bad: Any) -> None:
    before = snapshot(database_url)
    with pytest.raises(InvalidInputError, match="metadata"):
        await seeded.record_turn(SCOPE, "s1", "user", TEXT, metadata=bad)
    with pytest.raises(InvalidInputError, match="metadata"):
        await seeded.remember(SCOPE, TEXT, metadata=bad)
    with pytest.raises(InvalidInputError, match="metadata"):
        await seeded.observe(SCOPE, TEXT, metadata=bad)
    assert snapshot(database_url) == before


@pytest.mark.parametrize("bad", ["bad\x01content", "ansi \x1b[31mred", "bell\x07", "del\x7f", "c1 \x85 \x92"])
async def test_content_with_control_characters_is_refused_on_every_write(
    seeded: AsyncArchive, database_url: str, tmp_path: Path, bad: str
) -> None:
    """Issue 27: content, like every other text field, holds no control characters but tab, line feed
    and carriage return (a multi-line field's rule, :func:`mnemo._validate.check_text`)."""
    before = snapshot(database_url)
    with pytest.raises(InvalidInputError, match="content contains the control character U\\+00"):
        await seeded.remember(SCOPE, bad)
    with pytest.raises(InvalidInputError, match="content contains the control character"):
        await seeded.record_turn(SCOPE, "s1", "user", bad)
    with pytest.raises(InvalidInputError, match="content contains the control character"):
        await seeded.observe(SCOPE, bad)
    with pytest.raises(InvalidInputError, match="query contains the control character"):
        await seeded.recall(SCOPE, bad)
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"content": "fine"}) + "\n" + json.dumps({"content": bad}) + "\n")
    with pytest.raises(MalformedImportError, match=r"bad\.jsonl:2: content contains the control character"):
        await seeded.import_file(SCOPE, path)
    assert snapshot(database_url) == before
    kept = await seeded.remember(SCOPE, "line one\n\tline two\r\n")
    assert kept.content == "line one\n\tline two\r\n"


async def test_token_labels_and_grantees_reject_control_characters(seeded: AsyncArchive, database_url: str) -> None:
    before = snapshot(database_url)
    with pytest.raises(InvalidInputError, match="token label"):
        await seeded.access.create_token("alice", label="old\x00laptop")
    with pytest.raises(InvalidInputError):
        await seeded.access.revoke(SCOPE, "bob\x00")
    assert snapshot(database_url) == before


async def test_clean_text_fields_are_still_accepted(seeded: AsyncArchive) -> None:
    turn = await seeded.record_turn(
        SCOPE,
        "s-1 (déjà vu)",
        "user",
        TEXT,
        speaker="Ana María 🌻",
        metadata={"note": "line\nbreak\ttab", "n": [1, 2.5]},
    )
    assert turn.speaker == "Ana María 🌻" and turn.metadata == {"note": "line\nbreak\ttab", "n": [1, 2.5]}
    memory = await seeded.remember(SCOPE, TEXT, source_tag="calendar", provenance=[f"turn:{turn.id}"])
    assert memory.source_tag == "calendar"


@pytest.mark.parametrize(
    ("field", "line", "message"),
    [
        ({"speaker": "Ana\u0000"}, 2, "speaker contains a NUL"),
        ({"speaker": 7}, 2, "speaker must be text"),
        ({"session": "s\u0007"}, 2, "session id contains the control character U\\+0007"),
        ({"role": "user\u0000"}, 2, "unknown role"),
        ({"metadata": {"k": "v\u0000"}}, 2, "metadata"),
        ({"metadata": {"k\u0000": "v"}}, 2, "metadata key"),
    ],
)
async def test_import_names_the_line_of_a_bad_field(
    seeded: AsyncArchive, tmp_path: Path, database_url: str, field: dict[str, Any], line: int, message: str
) -> None:
    before = snapshot(database_url)
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"content": "fine"}) + "\n" + json.dumps({"content": TEXT, **field}) + "\n")
    with pytest.raises(MalformedImportError, match=rf"bad.jsonl:{line}: {message}") as info:
        await seeded.import_file(SCOPE, path)
    assert info.value.line == line
    assert snapshot(database_url) == before


async def test_locomo_speaker_with_nul_is_rejected(seeded: AsyncArchive, tmp_path: Path, database_url: str) -> None:
    before = snapshot(database_url)
    conv = {
        "sample_id": "c1",
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "B\u0000en",
            "session_1": [
                {"speaker": "Ana", "dia_id": "D1:1", "text": "hello"},
                {"speaker": "B\u0000en", "dia_id": "D1:2", "text": "hi"},
            ],
        },
    }
    path = tmp_path / "bad_locomo.json"
    path.write_text(json.dumps([conv]))
    with pytest.raises(MalformedImportError, match="speaker contains a NUL"):
        await seeded.import_file(SCOPE, path)
    assert snapshot(database_url) == before


def test_cli_import_of_a_nul_speaker_exits_cleanly(database_url: str, tmp_path: Path) -> None:
    """The real console script: one error line naming file and line, exit 1, no traceback, nothing written."""
    path = tmp_path / "speaker.jsonl"
    path.write_text(
        json.dumps({"session": "s", "content": "fine", "speaker": "Ana"})
        + "\n"
        + json.dumps({"session": "s", "content": TEXT, "speaker": "Ben\u0000"})
        + "\n"
    )
    before = snapshot(database_url)
    env = {**os.environ, "MNEMO_DATABASE_URL": database_url, "MNEMO_HOME": str(tmp_path), "NO_COLOR": "1"}
    mnemo = Path(sys.executable).with_name("mnemo")
    done = subprocess.run(
        [str(mnemo), "import", str(path), "--entity", "cli"], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr and "psycopg" not in done.stderr
    assert "speaker.jsonl:2: speaker contains a NUL" in done.stderr
    assert snapshot(database_url) == before


def test_http_nul_speaker_is_422_and_the_connection_survives(
    settings: Settings, embeddings: Embeddings, database_url: str
) -> None:
    with Archive(settings, embeddings=embeddings) as archive:
        token, _ = archive.access.create_token("alice")
    with (
        serve(create_app(settings, embeddings=embeddings)) as url,
        httpx.Client(base_url=url, headers=auth(token), timeout=30) as c,
    ):
        assert c.post("/v1/turns", json={"session": "s", "role": "user", "content": "seed"}).status_code == 201
        before = snapshot(database_url)
        for body in (
            {"session": "s", "role": "user", "content": "bad\u0001content"},
            {"session": "s", "role": "user", "content": TEXT, "speaker": "Ana\u0000"},
            {"session": "s\u0000", "role": "user", "content": TEXT},
            {"session": "s", "role": "user", "content": TEXT, "speaker": "\u001b[2J"},
        ):
            bad = c.post("/v1/turns", json=body)
            assert bad.status_code == 422 and bad.json()["error"]["code"] in {"invalid_input", "invalid_request"}, (
                bad.text
            )
            # the next request on the same keep-alive connection is answered normally
            assert c.get("/health").json()["status"] == "ok"
        assert snapshot(database_url) == before
