"""What the write and read paths need from an open archive."""

from __future__ import annotations

from dataclasses import dataclass

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

    @property
    def slug(self) -> str:
        return str(self.embeddings.slug)
