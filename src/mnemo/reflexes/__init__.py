"""Reflexes (cognitive-plan §2.6, issue 18 item 8): procedural memory and its outcomes, in one home.

:class:`Reflexes` is ``archive.reflexes`` (issue 41 item 1; memory-architecture §10).

Inside: :mod:`.procedures` (counting outcomes, matching a context, the causal edges). The rows are
in ``store/reflexes.py``; the night's self-pruning is the stage ``night/reflex_pruning.py``.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from mnemo._runtime import Runtime
from mnemo.inner import inner_writes
from mnemo.models import Reflex, Scope
from mnemo.reflexes import procedures

__all__ = ["Reflexes"]


class Reflexes:
    """Procedural memory of an open archive: ``archive.reflexes``."""

    def __init__(self, runtime: Runtime) -> None:
        self._rt = runtime

    async def record_outcome(
        self,
        scope: Scope,
        context: object,
        action: object,
        *,
        success: bool,
        action_type: str = "tool_call",
        follows: uuid.UUID | str | None = None,
        at: datetime | str | None = None,
    ) -> Reflex:
        """Count one outcome of ``action`` (a ``tool_call``, ``response_pattern`` or ``delegation``)
        taken in ``context``; ``follows``: the reflex that came just before (their causal edge grows).
        Returns the reflex with its counts."""
        return await procedures.record_outcome(
            self._rt, scope, context, action, success=success, action_type=action_type, follows=follows, at=at
        )

    async def matching(self, scope: Scope, context: object, k: int = 5, *, read_only: bool = False) -> list[Reflex]:
        """The reflexes that fit ``context`` best (similarity times smoothed success rate), with what
        tended to follow each; consulting them keeps them from pruning unless ``read_only``."""
        return await procedures.reflexes_for(self._rt, scope, context, k, read_only=read_only)

    async def outcome_scope(self, entity_id: str, outcome_id: uuid.UUID | str) -> Scope | None:
        """Which of ``entity_id``'s scopes holds ``outcome_id`` (a recall's ``outcome_id``, a gate
        decision's, a gut delta's): an outcome id is unique, so :meth:`feedback` needs no namespace
        named twice. None when none of them does."""
        return await inner_writes.outcome_scope(self._rt, entity_id, outcome_id)
