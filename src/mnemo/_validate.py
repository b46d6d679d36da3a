"""Input checks shared by every write: run before anything touches the database.

Seed: archive-adr §4 (attributed, validated ingestion). Each failure is a
specific :class:`~mnemo.errors.InvalidInputError` subclass with a message that
says what to change.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np

from mnemo.errors import (
    ContentTooLargeError,
    DimensionMismatchError,
    EmptyContentError,
    InvalidContentError,
)
from mnemo.models import MEMORY_KINDS, ROLES

__all__ = ["check_content", "check_id", "check_kind", "check_role", "check_session", "check_vector", "to_utc"]


def check_content(content: object, *, max_chars: int, label: str = "content") -> str:
    """Return ``content`` as a clean ``str`` or raise a specific error."""
    if isinstance(content, bytes | bytearray | memoryview):
        try:
            content = bytes(content).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidContentError(f"{label} is not valid UTF-8 (byte {exc.start}); send UTF-8 text") from exc
    if not isinstance(content, str):
        raise InvalidContentError(f"{label} must be text, not {type(content).__name__}")
    if "\x00" in content:
        raise InvalidContentError(f"{label} contains a NUL byte (\\x00); remove it before storing")
    try:
        content.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidContentError(
            f"{label} is not valid UTF-8 (lone surrogate at position {exc.start}); send UTF-8 text"
        ) from exc
    if not content.strip():
        raise EmptyContentError(f"{label} is empty or whitespace only; there is nothing to remember")
    if len(content) > max_chars:
        raise ContentTooLargeError(
            f"{label} has {len(content):,} characters, over the limit of {max_chars:,} "
            "(MNEMO_MAX_CONTENT_CHARS); split it or raise the limit"
        )
    return content


def check_kind(kind: str) -> str:
    if kind not in MEMORY_KINDS:
        raise InvalidContentError(f"unknown memory kind {kind!r}; use one of {', '.join(MEMORY_KINDS)}")
    return kind


def check_role(role: str) -> str:
    if role not in ROLES:
        raise InvalidContentError(f"unknown role {role!r}; use one of {', '.join(ROLES)}")
    return role


def check_session(session: object) -> str:
    if not isinstance(session, str) or not session.strip() or len(session) > 200 or "\x00" in session:
        raise InvalidContentError(f"invalid session id {session!r}: use 1-200 characters of text")
    return session


def check_vector(vector: Sequence[float] | np.ndarray, dim: int) -> np.ndarray:
    """A caller-supplied vector: right dimension, finite, non-zero; returned L2-normalised."""
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
