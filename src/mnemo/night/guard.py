"""The safety set's bookkeeping for the night's inner stage: log every event, enforce the chosen.

Seed: cognitive-plan §3.9 (every mechanism built; a disabled one runs in shadow mode: the audit
log records what it would have blocked, so it can be validated before it is enforced). Which
phase B and C checks block is the setting ``safety_enforced``.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import psycopg

from mnemo.config import Settings
from mnemo.models import Scope
from mnemo.store import inner_life as inner_rows

__all__ = ["Guard"]


@dataclass(slots=True)
class Guard:
    """Safety checks of one night in one scope; :attr:`events` counts what fired, by check."""

    conn: psycopg.AsyncConnection
    settings: Settings
    scope: Scope
    at: datetime
    events: dict[str, int] = field(default_factory=dict)

    def enforced(self, check: str) -> bool:
        return check in self.settings.safety_enforced

    async def fired(
        self,
        check: str,
        detail: str,
        *,
        subject: str,
        memory_id: uuid.UUID | None = None,
        evidence: Mapping[str, Any] | None = None,
        enforced: bool | None = None,
    ) -> bool:
        """Log that ``check`` fired; True when it blocks (it is enforced)."""
        blocks = self.enforced(check) if enforced is None else enforced
        await inner_rows.safety_event(
            self.conn, self.scope.entity_id, self.scope.namespace, check=check, enforced=blocks, detail=detail,
            subject=subject, at=self.at, memory_id=memory_id, evidence=evidence,
        )  # fmt: skip
        self.events[check] = self.events.get(check, 0) + 1
        return blocks
