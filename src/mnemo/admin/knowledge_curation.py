"""What the night consolidated: curation, facts and the chains of belief (issue 41 item 1).

:class:`Knowledge` is ``archive.knowledge``; memory-architecture §3-§8, archive-adr §9 (staged
curation, applied by a deliberate act).
"""

from __future__ import annotations

import uuid

from mnemo._runtime import Runtime
from mnemo.models import Belief, Curation, EntityFacts, Scope
from mnemo.night import consolidated_reads

__all__ = ["Knowledge"]


class Knowledge:
    """Curation, facts and beliefs of an open archive: ``archive.knowledge``."""

    def __init__(self, runtime: Runtime) -> None:
        self._rt = runtime

    async def curate(self, scope: Scope, *, dry_run: bool = False, apply: bool = True) -> Curation:
        """Stage (and by default apply) a new curation version; ``dry_run`` only shows it."""
        return await consolidated_reads.curate(self._rt, scope, dry_run=dry_run, apply=apply)

    async def apply_curation(self, scope: Scope, version: int) -> int:
        """Apply a staged curation version; returns how many memories changed status."""
        return await consolidated_reads.apply_curation(self._rt, scope, version)

    async def facts(self, scope: Scope, entity: str) -> EntityFacts:
        """Current and past facts, and triples, about one entity (``mnemo facts``)."""
        return await consolidated_reads.facts(self._rt, scope, entity)

    async def why_do_i_believe(self, scope: Scope, memory_id: uuid.UUID | str) -> tuple[Belief, ...]:
        """The chain an insight, narrative or fact was derived from."""
        return await consolidated_reads.why_do_i_believe(self._rt, scope, memory_id)
