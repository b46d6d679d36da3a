"""Conversation files mnemo can import: JSON Lines of turns, and LoCoMo.

Parsing happens before anything is written and checks every field of every turn
the way the single-turn write path does (:mod:`mnemo._validate`). By default it
is all-or-nothing: the first problem is reported with its line (JSONL) or its
location (LoCoMo), and a malformed file imports nothing. Given a ``skipped``
list, a bad turn is instead left out and recorded there as ``(line, reason)``
(``line`` is ``None`` for LoCoMo, whose reason names the turn), and the valid
turns are returned.

JSONL: one object per line, blank lines ignored::

    {"session": "s1", "role": "user", "content": "I moved to Lisbon", "speaker": "Ana",
     "created_at": "2024-05-01T10:00:00+00:00", "turn": 0, "metadata": {}}

``content`` (or ``text``) is required; ``session`` defaults to ``"default"``,
``role`` to ``"user"``, ``turn`` to the next free number in the session. Any other field
(:data:`TURN_FIELDS` lists them; ``POST /v1/import`` takes the same ones) is an error that
names it, never silently dropped: a ``"timestamp"`` meant as ``"created_at"`` would
otherwise import the turn as of today. A
precomputed vector may come with a turn: ``"embedding": [...]`` and
``"embedding_model": "<slug>"``; it is used only when the slug is the active
embedder's (``mnemo status`` shows it) and the dimension matches, and the turn
is then not embedded again.

Importing a file again stores none of its turns twice: each turn's identity is its
``idempotency_key`` when it has one (1-200 characters of one line, once per file), else a
hash of its session, role, ``created_at`` (none: no time) and content, counting identical
lines of the file apart (:mod:`mnemo.cognition.text.turn_identity`). A turn the scope already holds
is skipped and counted (``ImportReport.skipped_repeats``).
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from mnemo._validate import (
    check_content,
    check_event_time,
    check_idempotency_key,
    check_metadata,
    check_role,
    check_session,
    check_text,
    check_vector,
    to_utc,
)
from mnemo.errors import InvalidInputError, MalformedImportError
from mnemo.models import TurnInput

__all__ = [
    "TURN_FIELDS",
    "Skipped",
    "TurnInput",
    "VectorSpace",
    "detect_format",
    "parse_file",
    "parse_jsonl",
    "parse_locomo",
    "parse_locomo_date",
]

Skipped = tuple[int | None, str]  # (line, reason) of a turn left out of an import; line None: no lines (LoCoMo)
VectorSpace = tuple[str, int]  # (slug, dimension) of the active embedder: what a precomputed vector must match

TURN_FIELDS = (
    "content", "text", "session", "session_id", "role", "speaker", "created_at", "turn", "turn_number", "metadata",
    "embedding", "embedding_model", "idempotency_key",
)  # fmt: skip
"""Every field a JSONL turn may have (the HTTP import's turn model has the same ones)."""
# Names other exports give a turn's fields, and the field each one means here.
_ALIASES = {
    "timestamp": "created_at", "time": "created_at", "date": "created_at", "datetime": "created_at",
    "ts": "created_at", "message": "content", "body": "content", "name": "speaker", "author": "speaker",
    "user": "speaker", "conversation": "session", "conversation_id": "session", "thread": "session",
}  # fmt: skip


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


def parse_file(
    path: Path,
    *,
    fmt: str = "auto",
    max_chars: int,
    sample: str | None = None,
    skipped: list[Skipped] | None = None,
    space: VectorSpace | None = None,
    skew_hours: float | None = None,
) -> list[TurnInput]:
    """The turns of a conversation file, every field checked.

    ``skipped``: collect bad turns there and go on (default: the first one raises
    :class:`MalformedImportError`); ``space``: the active embedder's ``(slug, dim)``, which
    precomputed vectors must match (without it a turn that carries one is an error);
    ``skew_hours``: a turn dated more than this ahead of the clock is bad
    (``Settings.clock_skew_hours``; None: any time).
    """
    if not path.is_file():
        raise MalformedImportError("file not found", path=str(path))
    fmt = detect_format(path) if fmt == "auto" else fmt
    data = path.read_bytes()
    if fmt == "jsonl":
        lines = _jsonl_lines(data, str(path), skipped)
        turns = _parse_lines(lines, max_chars, str(path), skipped, space, skew_hours)
    elif fmt == "locomo":
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data[: exc.start].count(b"\n") + 1
            raise MalformedImportError("not valid UTF-8", path=str(path), line=line) from exc
        turns = parse_locomo(
            text, max_chars=max_chars, path=str(path), sample=sample, skipped=skipped, skew_hours=skew_hours
        )
    else:
        raise MalformedImportError(f"unknown format {fmt!r} (use jsonl, locomo or auto)", path=str(path))
    if not turns:
        if skipped:
            first = skipped[0]
            raise MalformedImportError(
                f"no valid turns: all {len(skipped)} were skipped (first: line {first[0]}: {first[1]})", path=str(path)
            )
        raise MalformedImportError("no turns found", path=str(path))
    return turns


def parse_jsonl(
    text: str,
    *,
    max_chars: int,
    path: str = "<jsonl>",
    skipped: list[Skipped] | None = None,
    space: VectorSpace | None = None,
    skew_hours: float | None = None,
) -> list[TurnInput]:
    """The turns of JSON Lines text (see :func:`parse_file`)."""
    lines = enumerate((line.removesuffix("\r") for line in text.split("\n")), start=1)
    return _parse_lines(lines, max_chars, path, skipped, space, skew_hours)


def _jsonl_lines(data: bytes, path: str, skipped: list[Skipped] | None) -> Iterator[tuple[int, str]]:
    """Numbered lines of a JSONL file, split on ``\\n`` only: a JSON string may hold U+2028 or
    U+0085 unescaped, which :meth:`str.splitlines` would wrongly treat as line ends."""
    for number, raw in enumerate(data.split(b"\n"), start=1):
        try:
            yield number, raw.removesuffix(b"\r").decode("utf-8")
        except UnicodeDecodeError as exc:
            problem = f"not valid UTF-8 (byte {exc.start + 1} of the line)"
            if skipped is None:
                raise MalformedImportError(problem, path=path, line=number) from exc
            skipped.append((number, problem))


def _parse_lines(
    lines: Iterator[tuple[int, str]],
    max_chars: int,
    path: str,
    skipped: list[Skipped] | None,
    space: VectorSpace | None,
    skew_hours: float | None,
) -> list[TurnInput]:
    turns: list[TurnInput] = []
    numbered: dict[tuple[str, int], int] = {}  # explicit (session, turn) -> the line that claimed it
    keyed: dict[str, int] = {}  # idempotency key -> the line that gave it
    for number, line in lines:
        if not line.strip():
            continue
        try:
            turn = _turn_from_line(line, max_chars, space, skew_hours)
            if turn.turn_number is not None:
                key = (turn.session_id, turn.turn_number)
                if key in numbered:
                    raise MalformedImportError(
                        f"turn {key[1]} of session {key[0]!r} is already on line {numbered[key]}; "
                        "drop the explicit turn numbers to append"
                    )
                numbered[key] = number
            _claim_key(turn, number, keyed)
        except InvalidInputError as exc:
            problem = _reason(exc)
            if skipped is None:
                raise MalformedImportError(problem, path=path, line=number) from exc
            skipped.append((number, problem))
            continue
        turns.append(turn)
    return turns


def _claim_key(turn: TurnInput, line: int, keyed: dict[str, int]) -> None:
    """A file gives each idempotency key to one turn."""
    key = turn.idempotency_key
    if key is None:
        return
    if key in keyed:
        raise MalformedImportError(f"idempotency_key {key!r} is already on line {keyed[key]}; give each turn its own")
    keyed[key] = line


def _reason(exc: InvalidInputError) -> str:
    """The error's message without the file-level suffix a bare MalformedImportError carries."""
    if isinstance(exc, MalformedImportError) and exc.path is None:
        return str(exc).removesuffix(" (nothing from this file was imported)")
    return str(exc)


def _turn_from_line(line: str, max_chars: int, space: VectorSpace | None, skew_hours: float | None) -> TurnInput:
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise MalformedImportError(f"invalid JSON: {exc.msg}") from exc
    except RecursionError as exc:
        raise MalformedImportError("invalid JSON: nested too deeply") from exc
    if not isinstance(obj, dict):
        raise MalformedImportError("each line must be a JSON object")
    return _turn_from_obj(obj, max_chars, space, skew_hours)


def _text_or_number(obj: dict[str, Any], keys: tuple[str, ...], default: str, label: str) -> object:
    """The first present of ``keys`` (a JSON number becomes its text; null means absent)."""
    for key in keys:
        value = obj.get(key)
        if value is None:
            continue
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
        if not isinstance(value, str):
            raise MalformedImportError(f"{label} must be text, not {type(value).__name__}")
        return value
    return default


def _check_fields(obj: dict[str, Any]) -> None:
    """Refuse a field a turn does not have, naming it (and the one it may have meant)."""
    unknown = [key for key in obj if key not in TURN_FIELDS]
    if not unknown:
        return
    guesses = {key: _meant(key) for key in unknown}
    if len(unknown) == 1:
        key = unknown[0]
        problem = f"unknown field {_name(key)}" + (f" (did you mean {guesses[key]!r}?)" if guesses[key] else "")
    else:
        hints = [f"{guesses[k]!r} for {_name(k)}" for k in unknown if guesses[k]]
        problem = f"unknown fields {', '.join(_name(k) for k in unknown[:5])}" + ("" if len(unknown) <= 5 else ", ...")
        problem += f" (did you mean {', '.join(hints)}?)" if hints else ""
    raise MalformedImportError(f"{problem}; a turn's fields are {', '.join(TURN_FIELDS)}")


def _meant(key: str) -> str | None:
    """The turn field an unknown ``key`` probably stands for."""
    return _ALIASES.get(key.lower()) or next(iter(difflib.get_close_matches(key, TURN_FIELDS, 1)), None)


def _name(key: str) -> str:
    return repr(key if len(key) <= 40 else key[:40] + "...")


def _event_time(value: object, label: str, skew_hours: float | None) -> datetime:
    if skew_hours is None:
        return to_utc(value, label=label)
    return check_event_time(value, label=label, skew_hours=skew_hours)


def _turn_from_obj(
    obj: dict[str, Any], max_chars: int, space: VectorSpace | None = None, skew_hours: float | None = None
) -> TurnInput:
    _check_fields(obj)
    content = obj.get("content", obj.get("text"))
    if content is None:
        raise MalformedImportError("missing 'content'")
    turn = obj.get("turn", obj.get("turn_number"))
    if turn is not None and (not isinstance(turn, int) or isinstance(turn, bool) or turn < 0):
        raise MalformedImportError(f"'turn' must be a non-negative integer, not {turn!r}")
    if turn is not None and turn > 2**31 - 1:
        raise MalformedImportError(f"'turn' {turn} is too large (at most {2**31 - 1})")
    speaker = obj.get("speaker")
    created = obj.get("created_at")
    key = obj.get("idempotency_key")
    return TurnInput(
        session_id=check_session(_text_or_number(obj, ("session", "session_id"), "default", "session id")),
        role=check_role(str(_text_or_number(obj, ("role",), "user", "role"))),
        content=check_content(content, max_chars=max_chars),
        speaker=None if speaker is None else check_text(speaker, label="speaker"),
        created_at=None if created is None else _event_time(created, "created_at", skew_hours),
        turn_number=turn,
        metadata=check_metadata(obj.get("metadata")),
        embedding=_embedding(obj, space),
        idempotency_key=None if key is None else check_idempotency_key(key),
    )


def _embedding(obj: dict[str, Any], space: VectorSpace | None) -> np.ndarray | None:
    """A precomputed vector, checked against the active embedder (``space``), or None."""
    raw, model = obj.get("embedding"), obj.get("embedding_model")
    if raw is None:
        if model is not None:
            raise MalformedImportError("'embedding_model' given without 'embedding'")
        return None
    if model is None:
        hint = f" ({space[0]!r} for the active embedder)" if space else ""
        raise MalformedImportError(f"'embedding' needs 'embedding_model': the slug of the model that made it{hint}")
    model = check_text(model, label="embedding_model")
    if space is None:
        raise MalformedImportError("precomputed embeddings need the active embedder to check them against")
    slug, dim = space
    if model != slug:
        raise MalformedImportError(
            f"'embedding_model' {model!r} is not the active embedder {slug!r}; drop 'embedding' and "
            "'embedding_model' to have the text embedded, or import with that embedder"
        )
    if not isinstance(raw, list) or not all(isinstance(x, int | float) and not isinstance(x, bool) for x in raw):
        raise MalformedImportError("'embedding' must be a list of numbers")
    try:
        return check_vector(raw, dim)
    except InvalidInputError as exc:
        raise MalformedImportError(f"'embedding': {exc}") from exc


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


def parse_locomo(
    text: str,
    *,
    max_chars: int,
    path: str = "<locomo>",
    sample: str | None = None,
    skipped: list[Skipped] | None = None,
    skew_hours: float | None = None,
) -> list[TurnInput]:
    """Turns of a LoCoMo file (``locomo10.json`` format); ``sample`` picks one conversation.

    With ``skipped``, a bad turn is recorded as ``(None, "sample i turn D1:2: reason")`` and left
    out; a bad structure (no conversation, no sessions, a bad date) still fails the file.
    """
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
            turns.extend(_locomo_sample(item, max_chars, prefix_sessions, where, skipped, skew_hours))
        except _LOCOMO_ERRORS as exc:
            raise MalformedImportError(f"{where}: {_problem(exc)}", path=path) from exc
    return turns


_LOCOMO_ERRORS = (InvalidInputError, KeyError, TypeError, ValueError, AttributeError)


def _problem(exc: BaseException) -> str:
    if isinstance(exc, KeyError):
        return f"missing {exc.args[0]!r}"
    if isinstance(exc, InvalidInputError):
        return _reason(exc)
    return str(exc)


def _locomo_sample(
    item: dict[str, Any],
    max_chars: int,
    prefix_sessions: bool,
    where: str,
    skipped: list[Skipped] | None,
    skew_hours: float | None,
) -> list[TurnInput]:
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
        session_id = check_session(f"{sample_id}:session_{n}" if prefix_sessions and sample_id else f"session_{n}")
        for position, raw in enumerate(conv[f"session_{n}"]):
            try:
                dia_id = check_text(str(raw["dia_id"]), label="dia_id")
                content = str(raw["text"])
                if raw.get("blip_caption"):
                    content = f"{content} [shares a photo: {raw['blip_caption']}]"
                metadata: dict[str, Any] = {"dia_id": dia_id, "session": n}
                if sample_id:
                    metadata["sample_id"] = sample_id
                if date_text:
                    metadata["session_date"] = date_text
                when = None if start is None else start + timedelta(seconds=30 * position)
                out.append(
                    TurnInput(
                        session_id=session_id,
                        role="user" if raw["speaker"] == speaker_a else "assistant",
                        content=check_content(content, max_chars=max_chars, label=f"turn {dia_id}"),
                        speaker=check_text(raw["speaker"], label=f"turn {dia_id} speaker"),
                        created_at=None if when is None else _event_time(when, f"turn {dia_id} time", skew_hours),
                        turn_number=position,
                        metadata=check_metadata(metadata, label=f"turn {dia_id} metadata"),
                    )
                )
            except _LOCOMO_ERRORS as exc:
                if skipped is None:
                    raise
                name = raw.get("dia_id") if isinstance(raw, dict) else None
                skipped.append((None, f"{where} turn {name or f'session_{n}[{position}]'}: {_problem(exc)}"))
    return out
