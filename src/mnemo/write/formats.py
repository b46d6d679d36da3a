"""Conversation files mnemo can import: JSON Lines of turns, and LoCoMo.

Parsing is all-or-nothing: the whole file is read and checked before anything
is written, and the first problem is reported with its line (JSONL) or its
location (LoCoMo), so a malformed file imports nothing.

JSONL: one object per line, blank lines ignored::

    {"session": "s1", "role": "user", "content": "I moved to Lisbon", "speaker": "Ana",
     "created_at": "2024-05-01T10:00:00+00:00", "turn": 0, "metadata": {}}

``content`` (or ``text``) is required; ``session`` defaults to ``"default"``,
``role`` to ``"user"``, ``turn`` to the next free number in the session.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from mnemo._validate import check_content, check_role, check_session, to_utc
from mnemo.errors import InvalidInputError, MalformedImportError

__all__ = ["TurnInput", "detect_format", "parse_file", "parse_jsonl", "parse_locomo", "parse_locomo_date"]


@dataclass(frozen=True, slots=True)
class TurnInput:
    session_id: str
    role: str
    content: str
    speaker: str | None = None
    created_at: datetime | None = None
    turn_number: int | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


def detect_format(path: Path) -> str:
    """``jsonl`` or ``locomo`` from the extension and the first non-blank character."""
    if path.suffix in {".jsonl", ".ndjson"}:
        return "jsonl"
    with path.open("rb") as fh:
        head = fh.read(4096).lstrip()
    if head.startswith(b"["):
        return "locomo"
    if head.startswith(b"{") and b'"conversation"' in head:
        return "locomo"
    return "jsonl"


def parse_file(path: Path, *, fmt: str = "auto", max_chars: int, sample: str | None = None) -> list[TurnInput]:
    if not path.is_file():
        raise MalformedImportError("file not found", path=str(path))
    fmt = detect_format(path) if fmt == "auto" else fmt
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        line = path.read_bytes()[: exc.start].count(b"\n") + 1
        raise MalformedImportError("not valid UTF-8", path=str(path), line=line) from exc
    if fmt == "jsonl":
        turns = parse_jsonl(text, max_chars=max_chars, path=str(path))
    elif fmt == "locomo":
        turns = parse_locomo(text, max_chars=max_chars, path=str(path), sample=sample)
    else:
        raise MalformedImportError(f"unknown format {fmt!r} (use jsonl, locomo or auto)", path=str(path))
    if not turns:
        raise MalformedImportError("no turns found", path=str(path))
    return turns


def parse_jsonl(text: str, *, max_chars: int, path: str = "<jsonl>") -> list[TurnInput]:
    turns: list[TurnInput] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise MalformedImportError(f"invalid JSON: {exc.msg}", path=path, line=number) from exc
        if not isinstance(obj, dict):
            raise MalformedImportError("each line must be a JSON object", path=path, line=number)
        try:
            turns.append(_turn_from_obj(obj, max_chars))
        except InvalidInputError as exc:
            raise MalformedImportError(str(exc), path=path, line=number) from exc
    return turns


def _turn_from_obj(obj: dict[str, Any], max_chars: int) -> TurnInput:
    content = obj.get("content", obj.get("text"))
    if content is None:
        raise MalformedImportError("missing 'content'")
    turn = obj.get("turn", obj.get("turn_number"))
    if turn is not None and (not isinstance(turn, int) or isinstance(turn, bool) or turn < 0):
        raise MalformedImportError(f"'turn' must be a non-negative integer, not {turn!r}")
    metadata = obj.get("metadata", {})
    if not isinstance(metadata, dict):
        raise MalformedImportError("'metadata' must be an object")
    speaker = obj.get("speaker")
    if speaker is not None and not isinstance(speaker, str):
        raise MalformedImportError("'speaker' must be text")
    created = obj.get("created_at")
    return TurnInput(
        session_id=check_session(str(obj.get("session", obj.get("session_id", "default")))),
        role=check_role(str(obj.get("role", "user"))),
        content=check_content(content, max_chars=max_chars),
        speaker=speaker,
        created_at=None if created is None else to_utc(created, label="created_at"),
        turn_number=turn,
        metadata=metadata,
    )


_LOCOMO_DATE = re.compile(r"^\s*(\d{1,2}):(\d{2})\s*([ap]m)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})\s*$", re.I)
_MONTHS = {
    m: i
    for i, m in enumerate(
        [
            "january",
            "february",
            "march",
            "april",
            "may",
            "june",
            "july",
            "august",
            "september",
            "october",
            "november",
            "december",
        ],
        start=1,
    )
}


def parse_locomo_date(text: str) -> datetime:
    """``'1:56 pm on 8 May, 2023'`` -> an aware UTC datetime."""
    match = _LOCOMO_DATE.match(text)
    month = _MONTHS.get(match.group(5).lower()) if match else None
    if match is None or month is None:
        raise ValueError(f"unrecognised LoCoMo date {text!r}")
    hour = int(match.group(1)) % 12 + (12 if match.group(3).lower() == "pm" else 0)
    return datetime(int(match.group(6)), month, int(match.group(4)), hour, int(match.group(2)), tzinfo=UTC)


def parse_locomo(text: str, *, max_chars: int, path: str = "<locomo>", sample: str | None = None) -> list[TurnInput]:
    """Turns of a LoCoMo file (``locomo10.json`` format); ``sample`` picks one conversation."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise MalformedImportError(f"invalid JSON: {exc.msg}", path=path, line=exc.lineno) from exc
    samples = data if isinstance(data, list) else [data]
    if sample is not None:
        samples = [s for s in samples if isinstance(s, dict) and s.get("sample_id") == sample]
        if not samples:
            raise MalformedImportError(f"no sample with sample_id {sample!r}", path=path)
    prefix_sessions = len(samples) > 1
    turns: list[TurnInput] = []
    for index, item in enumerate(samples):
        where = f"sample {index}"
        try:
            turns.extend(_locomo_sample(item, max_chars, prefix_sessions))
        except (InvalidInputError, KeyError, TypeError, ValueError, AttributeError) as exc:
            if isinstance(exc, MalformedImportError):
                raise
            raise MalformedImportError(f"{where}: {exc}", path=path) from exc
    return turns


def _locomo_sample(item: dict[str, Any], max_chars: int, prefix_sessions: bool) -> list[TurnInput]:
    sample_id = str(item.get("sample_id", ""))
    conv = item["conversation"]
    speaker_a = conv.get("speaker_a")
    numbers = sorted(int(m.group(1)) for k in conv if (m := re.fullmatch(r"session_(\d+)", k)))
    if not numbers:
        raise ValueError("conversation has no session_N lists")
    out: list[TurnInput] = []
    for n in numbers:
        date_text = conv.get(f"session_{n}_date_time")
        start = parse_locomo_date(date_text) if date_text else None
        session_id = f"{sample_id}:session_{n}" if prefix_sessions and sample_id else f"session_{n}"
        for position, raw in enumerate(conv[f"session_{n}"]):
            dia_id = str(raw["dia_id"])
            content = str(raw["text"])
            if raw.get("blip_caption"):
                content = f"{content} [shares a photo: {raw['blip_caption']}]"
            metadata: dict[str, Any] = {"dia_id": dia_id, "session": n}
            if sample_id:
                metadata["sample_id"] = sample_id
            if date_text:
                metadata["session_date"] = date_text
            out.append(
                TurnInput(
                    session_id=session_id,
                    role="user" if raw["speaker"] == speaker_a else "assistant",
                    content=check_content(content, max_chars=max_chars, label=f"turn {dia_id}"),
                    speaker=str(raw["speaker"]),
                    created_at=None if start is None else start + timedelta(seconds=30 * position),
                    turn_number=position,
                    metadata=metadata,
                )
            )
    return out
