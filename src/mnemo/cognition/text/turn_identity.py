"""A turn's content identity: what makes a retried or re-imported turn a repeat (issue 39 item 3).

Seeds: archive-adr §4 (attributed, atomic ingestion: an import is one act, and doing it
again must not store it twice) and memory-architecture §2.2 (the day table holds each
exchange once).

Every stored turn carries an identity, unique in its scope (``mnemo.turns.identity``,
migration 0020); a write whose turn has an identity the scope already holds stores nothing
for it and reports it as a repeat. The identity is

* ``key:<idempotency key>`` when the client sent a key (``record_turn(idempotency_key=...)``,
  the ``Idempotency-Key`` header of ``POST /v1/turns``, ``idempotency_key`` of an imported
  turn): the client says which sends are the same turn;
* else ``sha256:<hex>`` of the turn's session, role, time, content and *ordinal*: how many
  turns of the same write came before it with the same session, role, time and content. Two
  identical lines of one file are two turns; the same file imported twice is one import.

The time is the turn's own ``created_at`` when it has one (microseconds since the epoch). A
turn without one means two things: an **imported** turn (a file, ``POST /v1/import``) is
identified without a time, so a file without times imported again is a repeat; a **live**
turn (``record_turn``, ``POST /v1/turns``) is stamped with the time it is written and
identified by that time, so the same message said twice a minute apart is two turns (a
client that retries a live turn sends a key). The backfill of migration 0020 computes the
same hash in SQL from the stored time.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Protocol

__all__ = ["KEY_PREFIX", "TurnFields", "content_identity", "key_identity", "turn_identities"]

KEY_PREFIX = "key:"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class TurnFields(Protocol):
    """What of a turn its identity reads (a :class:`mnemo.models.TurnInput` has it)."""

    @property
    def idempotency_key(self) -> str | None: ...
    @property
    def created_at(self) -> datetime | None: ...
    @property
    def session_id(self) -> str: ...
    @property
    def role(self) -> str: ...
    @property
    def content(self) -> str: ...


def key_identity(key: str) -> str:
    """The identity of a turn sent with the (checked) idempotency ``key``."""
    return KEY_PREFIX + key


def content_identity(session: str, role: str, at: datetime | None, content: str, ordinal: int) -> str:
    """The identity of a turn without a key: a hash of its fields, each length-prefixed (so no two
    different turns share the hashed text). ``at`` None: an imported turn without a time."""
    if at is not None and at.tzinfo is None:
        at = at.replace(tzinfo=UTC)  # no offset means UTC, as everywhere in mnemo
    micros = "" if at is None else str((at - _EPOCH) // timedelta(microseconds=1))
    parts = ("mnemo.turn/1", session, role, micros, content, str(ordinal))
    text = "".join(f"{len(p)}:{p}" for p in parts)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def turn_identities(turns: Sequence[TurnFields], *, live: bool, now: datetime | None = None) -> list[str | None]:
    """Each turn's identity in one write (see the module docstring). A live turn without a key or a
    time gets None unless ``now`` (the time it is stamped with) is given."""
    seen: Counter[tuple[str, str, datetime | None, str]] = Counter()
    found: list[str | None] = []
    for turn in turns:
        if turn.idempotency_key is not None:
            found.append(key_identity(turn.idempotency_key))
            continue
        at = turn.created_at
        if at is None and live:  # a live turn is identified by the time it is stamped with
            if now is None:
                found.append(None)
                continue
            at = now
        fields = (turn.session_id, turn.role, at, turn.content)
        found.append(content_identity(*fields, seen[fields]))
        seen[fields] += 1
    return found
