"""The shared text checks (mnemo._validate) and import-line parsing, without a database."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from mnemo._validate import check_metadata, check_session, check_text
from mnemo.errors import InvalidContentError, MalformedImportError
from mnemo.write.formats import Skipped, parse_jsonl

SPACE = ("test:model:4", 4)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("a\x00b", "NUL byte"),
        ("a\x1bb", "control character U\\+001B at position 1"),
        ("a\nb", "control character U\\+000A"),
        ("a\tb", "control character U\\+0009"),
        ("a\x85b", "control character U\\+0085"),
        ("a\ud800", "not valid UTF-8"),
        ("   ", "empty"),
        ("x" * 257, "257 characters, over the limit of 256"),
        (42, "must be text, not int"),
    ],
)
def test_check_text_rejects(value: object, message: str) -> None:
    with pytest.raises(InvalidContentError, match=message):
        check_text(value, label="speaker")


def test_check_text_accepts_and_multiline() -> None:
    assert check_text("Ana María 🌻", label="speaker") == "Ana María 🌻"
    assert check_text("line\nnext\ttab\r\n", label="note", multiline=True) == "line\nnext\ttab\r\n"
    with pytest.raises(InvalidContentError, match="U\\+0007"):
        check_text("bell\x07", label="note", multiline=True)
    assert check_text("", label="key", allow_blank=True) == ""
    assert check_session("s" * 200) == "s" * 200
    with pytest.raises(InvalidContentError, match="session id has 201 characters"):
        check_session("s" * 201)


def test_check_metadata() -> None:
    assert check_metadata(None) == {}
    value = {"a": [1, 2.5, True, None, {"b": "line\nbreak\u2028ok"}], "t": ("x",)}
    assert check_metadata(value) == {"a": [1, 2.5, True, None, {"b": "line\nbreak\u2028ok"}], "t": ["x"]}
    for bad, message in [
        ({"a": {"b": ["x\x00"]}}, r"metadata\.a\.b\[0\] contains a NUL"),
        ({1: "x"}, "key 1 must be text"),
        ({"k": math.inf}, r"metadata\.k is inf"),
        ({"k": {1, 2}}, "is a set"),
        ("text", "must be a JSON object"),
    ]:
        with pytest.raises(InvalidContentError, match=message):
            check_metadata(bad)
    deep: dict[str, object] = {}
    node = deep
    for _ in range(40):
        node["d"] = {}
        node = node["d"]  # type: ignore[assignment]
    with pytest.raises(InvalidContentError, match="nested more than 32"):
        check_metadata(deep)


def lines(*rows: object) -> str:
    return "\n".join(r if isinstance(r, str) else json.dumps(r, ensure_ascii=False) for r in rows)


def test_parse_jsonl_splits_on_newline_only() -> None:
    text = lines({"content": "a\u2028b\u2029c"}, {"content": "second"}) + "\r\n"
    turns = parse_jsonl(text, max_chars=100)
    assert [t.content for t in turns] == ["a\u2028b\u2029c", "second"]
    # U+0085 (NEL) is a line end to str.splitlines too, and a control character: the line is kept
    # whole and refused for it, like content with any other control character
    with pytest.raises(MalformedImportError, match="<jsonl>:1: content contains the control character U\\+0085"):
        parse_jsonl(lines({"content": "a\u0085b"}, {"content": "second"}), max_chars=100)


def test_parse_jsonl_all_or_nothing_and_skip() -> None:
    text = lines(
        {"content": "ok"},
        {"content": "x", "speaker": "\x00"},
        {"content": "x", "session": ["a"]},
        {"content": "x", "turn": 2**31},
        {"content": "y", "session": 7, "role": None},
    )
    with pytest.raises(MalformedImportError, match="<jsonl>:2: speaker contains a NUL") as info:
        parse_jsonl(text, max_chars=100)
    assert info.value.line == 2
    skipped: list[Skipped] = []
    turns = parse_jsonl(text, max_chars=100, skipped=skipped)
    assert [(t.content, t.session_id, t.role) for t in turns] == [("ok", "default", "user"), ("y", "7", "user")]
    assert [s[0] for s in skipped] == [2, 3, 4]
    assert "session id must be text, not list" in skipped[1][1] and "too large" in skipped[2][1]
    assert not any("nothing from this file" in reason for _, reason in skipped)


def test_parse_jsonl_precomputed_vectors() -> None:
    good = {"content": "v", "embedding": [3, 0, 0, 4], "embedding_model": SPACE[0]}
    (turn,) = parse_jsonl(lines(good), max_chars=100, space=SPACE)
    assert turn.embedding is not None and np.allclose(turn.embedding, [0.6, 0, 0, 0.8])
    with pytest.raises(MalformedImportError, match="need the active embedder"):
        parse_jsonl(lines(good), max_chars=100)
    with pytest.raises(MalformedImportError, match="'embedding_model' given without 'embedding'"):
        parse_jsonl(lines({"content": "v", "embedding_model": SPACE[0]}), max_chars=100, space=SPACE)
    with pytest.raises(MalformedImportError, match="'embedding': vector contains NaN"):
        parse_jsonl(
            '{"content": "v", "embedding": [NaN, 1, 1, 1], "embedding_model": "test:model:4"}',
            max_chars=100,
            space=SPACE,
        )


def test_parse_jsonl_refuses_an_unknown_field_naming_the_line_and_the_field() -> None:
    """Issue 27 item 4: a misnamed field ("timestamp" for "created_at") is an error, never dropped."""
    text = lines({"content": "ok"}, {"content": "I moved to Lisbon", "timestamp": "2021-06-01T10:00:00+00:00"})
    with pytest.raises(
        MalformedImportError, match=r"<jsonl>:2: unknown field 'timestamp' \(did you mean 'created_at'"
    ) as info:
        parse_jsonl(text, max_chars=100)
    assert info.value.line == 2
    skipped: list[Skipped] = []
    turns = parse_jsonl(text + "\n" + lines({"content": "x", "sesion": "a", "zzz": 1}), max_chars=100, skipped=skipped)
    assert [t.content for t in turns] == ["ok"]
    assert [line for line, _ in skipped] == [2, 3]
    assert "unknown fields 'sesion', 'zzz'" in skipped[1][1] and "did you mean 'session'" in skipped[1][1]


def test_the_jsonl_turn_fields_are_the_http_import_turn_fields() -> None:
    """One turn model on every face: ``mnemo import`` and ``POST /v1/import`` know the same fields."""
    from mnemo.interfaces.shapes import ImportTurnIn
    from mnemo.write.formats import TURN_FIELDS

    assert set(TURN_FIELDS) == set(ImportTurnIn.model_fields)


def test_a_turn_dated_beyond_the_clock_skew_is_refused_in_jsonl_and_locomo() -> None:
    """Issue 27 item 5: with ``skew_hours`` (the archive passes ``Settings.clock_skew_hours``), a time
    further ahead of the clock than that is a bad turn; within it, or without a limit, it is kept."""
    from datetime import UTC, datetime, timedelta

    from mnemo.write.formats import parse_locomo

    soon = (datetime.now(UTC) + timedelta(hours=2)).isoformat()
    text = lines({"content": "ok", "created_at": soon}, {"content": "x", "created_at": "2999-01-01T00:00:00"})
    with pytest.raises(
        MalformedImportError, match=r"<jsonl>:2: created_at 2999-01-01T00:00:00\+00:00 is more than 3 hours"
    ):
        parse_jsonl(text, max_chars=100, skew_hours=3)
    with pytest.raises(MalformedImportError, match=r"<jsonl>:1: created_at .* is more than 1 hour ahead"):
        parse_jsonl(text, max_chars=100, skew_hours=1)
    assert len(parse_jsonl(text, max_chars=100)) == 2
    conv = {
        "conversation": {
            "speaker_a": "Ana",
            "session_1_date_time": "1:56 pm on 8 May, 2999",
            "session_1": [{"speaker": "Ana", "dia_id": "D1:1", "text": "hello"}],
        }
    }
    with pytest.raises(MalformedImportError, match="turn D1:1 time 2999-05-08T13:56:00\\+00:00 is more than 24 hours"):
        parse_locomo(json.dumps(conv), max_chars=100, skew_hours=24)
    assert len(parse_locomo(json.dumps(conv), max_chars=100)) == 1
