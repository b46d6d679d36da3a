"""Input checks shared by every write: run before anything touches the database.

Seed: archive-adr §4 (attributed, validated ingestion). Each failure is a
specific :class:`~mnemo.errors.InvalidInputError` subclass with a message that
says what to change.
"""

from __future__ import annotations

import math
import re
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # numpy loads where a vector is checked: the command line imports this module first
    import numpy as np

from mnemo.errors import (
    ContentTooLargeError,
    DimensionMismatchError,
    EmptyContentError,
    InvalidContentError,
)
from mnemo.models import MEMORY_KINDS, ROLES

__all__ = [
    "MAX_FIELD_CHARS",
    "check_content",
    "check_event_time",
    "check_id",
    "check_kind",
    "check_metadata",
    "check_process",
    "check_query",
    "check_role",
    "check_session",
    "check_text",
    "check_vector",
    "to_utc",
]

MAX_FIELD_CHARS = 256  # short text fields: speaker, source tag, provenance entry, metadata key, label
MAX_METADATA_DEPTH = 32

# Control characters (Unicode category Cc: C0, DEL, C1). Short fields allow none of them; multi-line
# text allows tab, line feed and carriage return.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
_CONTROL_MULTILINE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def check_content(content: object, *, max_chars: int, label: str = "content") -> str:
    """Return ``content`` as a clean ``str`` or raise a specific error: text of at most
    ``max_chars`` characters, not blank, valid UTF-8 without NUL, and no control character but
    tab, line feed and carriage return (the rule of every multi-line field, :func:`check_text`)."""
    if isinstance(content, bytes | bytearray | memoryview):
        try:
            content = bytes(content).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidContentError(f"{label} is not valid UTF-8 (byte {exc.start}); send UTF-8 text") from exc
    if not isinstance(content, str):
        raise InvalidContentError(f"{label} must be text, not {type(content).__name__}")
    _utf8(content, label)
    _printable(content, label, multiline=True)
    if not content.strip():
        raise EmptyContentError(f"{label} is empty or whitespace only; there is nothing to remember")
    if len(content) > max_chars:
        raise ContentTooLargeError(
            f"{label} has {len(content):,} characters, over the limit of {max_chars:,} "
            "(MNEMO_MAX_CONTENT_CHARS); split it or raise the limit"
        )
    return content


def check_query(query: object, *, max_chars: int, label: str = "query") -> str:
    """A question to look memory up with (a recall's query, a context's attention text): the checks
    of :func:`check_content`, and an empty one is called an empty question."""
    if isinstance(query, str) and not query.strip():
        raise EmptyContentError(f"the question is empty: {label} is empty or whitespace only; ask about something")
    return check_content(query, max_chars=max_chars, label=label)


def _printable(value: str, label: str, *, multiline: bool) -> None:
    """Reject control characters: all of them on one line; tab, line feed and carriage return allowed
    when ``multiline``."""
    bad = (_CONTROL_MULTILINE if multiline else _CONTROL).search(value)
    if bad is not None:
        raise InvalidContentError(
            f"{label} contains the control character U+{ord(bad.group()):04X} at position {bad.start()}; "
            "remove it" + ("" if multiline else " (this field is one line of printable text)")
        )


def _utf8(value: str, label: str) -> None:
    """Reject NUL (PostgreSQL text and jsonb cannot hold it) and lone surrogates (not UTF-8)."""
    if "\x00" in value:
        raise InvalidContentError(f"{label} contains a NUL byte (\\x00); remove it before storing")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidContentError(
            f"{label} is not valid UTF-8 (lone surrogate at position {exc.start}); send UTF-8 text"
        ) from exc


def check_text(
    value: object,
    *,
    label: str,
    max_chars: int = MAX_FIELD_CHARS,
    multiline: bool = False,
    allow_blank: bool = False,
) -> str:
    """A short text field (speaker, session id, source tag, label, ...) as a clean ``str``.

    Rejected: non-text, NUL, lone surrogates, control characters (tab, newline and carriage
    return are allowed when ``multiline``), blank text (unless ``allow_blank``) and more than
    ``max_chars`` characters.
    """
    if not isinstance(value, str):
        raise InvalidContentError(f"{label} must be text, not {type(value).__name__}")
    _utf8(value, label)
    _printable(value, label, multiline=multiline)
    if not allow_blank and not value.strip():
        raise InvalidContentError(f"{label} is empty or whitespace only")
    if len(value) > max_chars:
        raise InvalidContentError(f"{label} has {len(value):,} characters, over the limit of {max_chars:,}")
    return value


MAX_KEY_CHARS = 200
"""The longest idempotency key a client may give a turn."""


def check_idempotency_key(value: object, *, label: str = "idempotency_key") -> str:
    """A turn's idempotency key (:mod:`mnemo.cognition.text.turn_identity`): one line of printable text,
    1-200 characters; the scope holds each key once."""
    return check_text(value, label=label, max_chars=MAX_KEY_CHARS)


def check_metadata(value: object, *, label: str = "metadata") -> dict[str, Any]:
    """A JSON object that PostgreSQL's jsonb accepts, as a plain ``dict``.

    Keys are short one-line text (:func:`check_text`); string values may be multi-line but hold
    no NUL (jsonb rejects ``\\u0000``) and no lone surrogates; numbers are finite; only JSON types
    (object, array, string, number, boolean, null), nested at most 32 deep.
    """
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidContentError(f"{label} must be a JSON object (a mapping), not {type(value).__name__}")
    return _json_object(value, label, 0)


def _json_object(value: Mapping[Any, Any], where: str, depth: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, item in value.items():
        if not isinstance(key, str):
            raise InvalidContentError(f"{where} key {key!r} must be text")
        check_text(key, label=f"{where} key {key!r}", allow_blank=True)
        out[key] = _json_value(item, f"{where}.{key}", depth + 1)
    return out


def _json_value(value: object, where: str, depth: int) -> Any:
    if depth > MAX_METADATA_DEPTH:
        raise InvalidContentError(f"{where} is nested more than {MAX_METADATA_DEPTH} levels deep")
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidContentError(f"{where} is {value}; JSON numbers must be finite")
        return value
    if isinstance(value, str):
        _utf8(value, where)
        return value
    if isinstance(value, Mapping):
        return _json_object(value, where, depth)
    if isinstance(value, list | tuple):
        return [_json_value(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(value)]
    raise InvalidContentError(
        f"{where} is a {type(value).__name__}; metadata holds JSON values only "
        "(object, array, string, number, boolean, null)"
    )


def check_kind(kind: str) -> str:
    if not isinstance(kind, str) or kind not in MEMORY_KINDS:
        raise InvalidContentError(f"unknown memory kind {kind!r}; use one of {', '.join(MEMORY_KINDS)}")
    return kind


def check_role(role: str) -> str:
    if not isinstance(role, str) or role not in ROLES:
        raise InvalidContentError(f"unknown role {role!r}; use one of {', '.join(ROLES)}")
    return role


def check_session(session: object) -> str:
    """A session id: 1-200 characters of one-line printable text."""
    return check_text(session, label="session id", max_chars=200)


def check_vector(vector: Sequence[float] | np.ndarray, dim: int) -> np.ndarray:
    """A caller-supplied vector: right dimension, finite, non-zero; returned L2-normalised."""
    import numpy as np

    array = np.asarray(vector, dtype=np.float32)
    if array.ndim != 1 or array.shape[0] != dim:
        raise DimensionMismatchError(
            f"vector has shape {array.shape}, but the active vector space has {dim} dimensions"
        )
    if not np.all(np.isfinite(array)):
        raise InvalidContentError("vector contains NaN or infinite values")
    norm = float(np.linalg.norm(array))
    if norm == 0.0:
        raise InvalidContentError("vector is all zeros; cosine similarity is undefined for it")
    return array / norm


def to_utc(value: Any, *, label: str = "time") -> datetime:
    """Accept an aware datetime or ISO-8601 text; naive values are taken as UTC."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError as exc:
            raise InvalidContentError(f"{label} {value!r} is not an ISO-8601 date-time") from exc
    if not isinstance(value, datetime):
        raise InvalidContentError(f"{label} must be a datetime or ISO-8601 text")
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value


def check_event_time(value: Any, *, label: str, skew_hours: float) -> datetime:
    """An event time (:func:`to_utc`) no more than ``skew_hours`` ahead of this machine's clock
    (``Settings.clock_skew_hours``): a time later than that is a mistake (a typo, a wrong unit, a
    bad export), and stored it would rank as the newest thing there is."""
    when = to_utc(value, label=label)
    now = datetime.now(UTC)
    if when > now + timedelta(hours=skew_hours):
        hours = f"{skew_hours:g} hour{'' if skew_hours == 1 else 's'}"
        raise InvalidContentError(
            f"{label} {when.isoformat()} is more than {hours} ahead of this machine's clock "
            f"({now:%Y-%m-%d %H:%M} UTC); fix the time, or allow more clock skew with MNEMO_CLOCK_SKEW_HOURS "
            f"(Settings.clock_skew_hours, now {skew_hours:g})"
        )
    return when


def time_or_now(value: object, *, skew_hours: float, label: str = "as_of") -> datetime:
    """Now, or ``value`` under the clock-skew rule of every write (:func:`check_event_time`): what a
    night, a reflection or an inner-life write is dated (a night dated years ahead would age a scope
    silently)."""
    return datetime.now(UTC) if value is None else check_event_time(value, label=label, skew_hours=skew_hours)


def check_id(value: object, *, label: str = "id") -> uuid.UUID:
    """A UUID, or a string that parses as one."""
    if isinstance(value, uuid.UUID):
        return value
    if isinstance(value, str):
        try:
            return uuid.UUID(value.strip())
        except ValueError:
            pass
    raise InvalidContentError(f"{label} must be a UUID, not {value!r}")


_PROCESS_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:@+-]{0,63}")


def check_process(process: object) -> str:
    """A process id (archive-adr §4: the subsystem that writes, e.g. ``core``, ``simulation:7``)."""
    if not isinstance(process, str) or not _PROCESS_RE.fullmatch(process):
        raise InvalidContentError(
            f"process must be 1-64 characters of letters, digits and _.:@+- starting with a letter or digit, "
            f"got {process!r}"
        )
    return process
