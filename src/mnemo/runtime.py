"""What the write and read paths need from an open archive."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from mnemo.config import Settings
from mnemo.embed import Embeddings
from mnemo.store import Store

__all__ = ["Runtime"]


@dataclass(frozen=True, slots=True)
class Runtime:
    settings: Settings
    store: Store
    embeddings: Embeddings
    table: str  # the active vector space table, e.g. "universal_384"
    rng: random.Random = field(default_factory=random.Random)  # seeded from settings.seed by the archive
    llm: Any = None  # a Pydantic AI model (or model name) for the optional LLM steps

    def child_rng(self) -> random.Random:
        """A generator for one operation, drawn from the archive's seeded stream."""
        return random.Random(self.rng.getrandbits(64))

    @property
    def slug(self) -> str:
        return str(self.embeddings.slug)
