"""What the write and read paths need from an open archive.

A holder, wired by :func:`mnemo.admin.startup.start`: it imports nothing above the store at run
time (DESIGN §5), so every layer may use it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mnemo.cognition.scoring.ranker import Ranker
from mnemo.config import Settings
from mnemo.embed import Embeddings
from mnemo.store import Store
from mnemo.store import search as search_rows
from mnemo.store import token_vectors as token_rows

if TYPE_CHECKING:
    from mnemo.cortex.lance_tables import Cortex
    from mnemo.recall.scope_index import ReadIndexes
    from mnemo.write.backfill import TokenBackfill

__all__ = ["Runtime", "WriteTally"]


@dataclass(slots=True)
class WriteTally:
    """Rows written by this process since the planner statistics were last refreshed."""

    pending: int = 0
    refreshed: int = 0  # how many refreshes so far

    def due(self) -> bool:
        """The first refresh after 100 writes (a new database has no statistics at all), then every 1,000."""
        return self.pending >= (100 if self.refreshed == 0 else 1000)


@dataclass(frozen=True, slots=True)
class Runtime:
    settings: Settings
    store: Store
    embeddings: Embeddings
    table: str  # the active vector space table, e.g. "universal_384"
    backfill: TokenBackfill  # token embeddings read in the background (mnemo.write.backfill)
    indexes: ReadIndexes  # scope read indexes (DESIGN §3; mnemo.recall.scope_index)
    rng: random.Random = field(default_factory=random.Random)  # seeded from settings.seed by the archive
    llm: Any = None  # a Pydantic AI model (or model name) for the optional LLM steps
    tally: WriteTally = field(default_factory=WriteTally)
    extra_embeddings: dict[str, Embeddings] = field(default_factory=dict)  # second vector spaces, loaded on use
    cortex: Cortex | None = None  # the long-term tier (LanceDB), connected on first use
    token_cache: token_rows.Cache = field(default_factory=token_rows.Cache)  # late interaction's reads
    reranker: Any = None  # a local cross-encoder (mnemo.rerank.Reranker) when settings.reranker is set
    ranker: Ranker = field(default_factory=Ranker.hand_set)  # the head's learned fusion (mnemo.recall.learned)
    # per scope, the claims recall weighs and the endings read from them, at the scope's version
    # (mnemo.recall.current): a write gives the scope a new version, so nothing stale is served
    claims_cache: dict[tuple[str, str], tuple[int, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.token_cache.max_bytes = self.settings.token_cache_mb << 20

    def tokens(self) -> token_rows.Cache:
        """The cache of recently read token embeddings (``token_cache_mb``)."""
        return self.token_cache

    def child_rng(self) -> random.Random:
        """A generator for one operation, drawn from the archive's seeded stream."""
        return random.Random(self.rng.getrandbits(64))

    @property
    def slug(self) -> str:
        return str(self.embeddings.slug)

    @property
    def reads_tokens(self) -> bool:
        """Whether items' token embeddings are kept: late interaction is on and the embedder gives them."""
        return self.settings.late_interaction and self.embeddings.reads_tokens

    def item_text(self, item: search_rows.ItemText) -> str:
        """What the model reads for an item: the text its vector was embedded from."""
        if item.kind is not None:
            return self.embeddings.document_text(item.content, item.kind)
        return self.embeddings.turn_text(item.content, item.speaker if self.settings.turn_context else None)
