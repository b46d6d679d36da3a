"""Opening an archive: settings, embedder, database, vector space, crash recovery.

Seed: archive-adr §1 (one PostgreSQL with pgvector, embedded by default), §8
("Dimension Lock": the active model's slug is noted; vectors of another model wait
for a re-embed); cognitive-plan §2.6 (scratch-buffer items left by a crash are
re-evaluated by the exit gate on the next start).
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from typing import Any

from mnemo._runtime import Runtime
from mnemo.config import Settings, load_settings
from mnemo.cortex.lance_tables import Cortex
from mnemo.embed import Embeddings, load_embedder
from mnemo.recall.learned import load_ranker
from mnemo.recall.scope_index import ReadIndexes
from mnemo.rerank import load_reranker
from mnemo.store import Store, tiers
from mnemo.store import vectors as vector_rows
from mnemo.write import gates, reembed
from mnemo.write.backfill import TokenBackfill

__all__ = ["settings_of", "start"]

_log = logging.getLogger("mnemo")


async def start(
    settings: Settings | None, *, embeddings: Embeddings | None, llm: Any, **overrides: Any
) -> tuple[Runtime, int]:
    """An open runtime and how many stored items lack a vector from the active model."""
    settings = settings_of(settings, overrides)
    if embeddings is None:
        embeddings = await asyncio.to_thread(load_embedder, settings.embedder, **settings.embedder_options())
    ranker = load_ranker(settings.ranker_file)  # a bad model file fails before anything opens
    store = await Store.open(
        settings.database_url,
        home=settings.home,
        min_size=settings.pool_min_size,
        max_size=settings.pool_max_size,
        ef_search=settings.hnsw_ef_search,
        reserve=settings.pool_reserve,
    )
    try:
        async with store.connection() as conn:
            table = await vector_rows.ensure_space(conn, settings.vector_space, embeddings.dim)
        runtime = Runtime(
            settings,
            store,
            embeddings,
            table,
            TokenBackfill(),
            ReadIndexes(),
            random.Random(settings.seed),
            llm or settings.llm,
            cortex=Cortex(settings.cortex_uri or _cortex_locator(settings, store)),
            reranker=load_reranker(settings.reranker),
            ranker=ranker,
        )
        pending = await reembed.note_active_slug(runtime)
        recovered = await gates.recover(runtime)
    except BaseException:
        await store.close()
        raise
    if recovered:
        _log.info("re-evaluated %d buffered items left by an earlier run", sum(len(r.outcomes) for r in recovered))
    if pending:
        _log.warning(
            "%d stored items were embedded with another model than %s; recall cannot see their vectors "
            "until you run `mnemo reembed`",
            pending,
            embeddings.slug,
        )
    return runtime, pending


def _cortex_locator(settings: Settings, store: Store) -> Callable[[], Awaitable[str]]:
    """The default cortex: ``home/cortex/<the database's cortex id>``, the id made on first use, so
    two databases (or a database and its restored copy elsewhere) never share one directory."""

    async def locate() -> str:
        async with store.transaction() as conn:
            cortex_id = await tiers.cortex_id(conn)
        path = settings.home / "cortex" / str(cortex_id)
        path.mkdir(parents=True, exist_ok=True)
        return str(path)

    return locate


def settings_of(settings: Settings | None, overrides: dict[str, Any]) -> Settings:
    """Keyword overrides win over ``settings`` (or over ``MNEMO_*`` variables and defaults)."""
    if settings is None:
        return load_settings(**overrides)
    if overrides:
        return load_settings(**(settings.model_dump() | overrides))
    return settings
