"""The connection pool and start-up sequence.

Start-up: resolve the database (embedded or ``MNEMO_DATABASE_URL``), check
pgvector >= 0.7, apply migrations, then open a psycopg 3 async pool whose
connections have pgvector's types registered and ``hnsw.iterative_scan =
relaxed_order`` set, so scope filters are applied inside the HNSW scan and a
filtered search still returns k rows.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import psycopg
from pgvector.psycopg import register_vector_async
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from mnemo.errors import DatabaseUnavailableError
from mnemo.store.migrate import apply_migrations
from mnemo.store.server import check_pgvector, embedded_url

__all__ = ["Store", "redact"]


def redact(url: str) -> str:
    """Hide the password in a connection URL for display."""
    try:
        info = psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "<unparseable database url>"
    host = info.get("host") or "localhost"
    port = f":{info['port']}" if info.get("port") else ""
    user = f"{info['user']}@" if info.get("user") else ""
    return f"postgresql://{user}{host}{port}/{info.get('dbname', '')}"


class Store:
    """An open database: pool plus the facts learnt at start-up."""

    def __init__(self, pool: AsyncConnectionPool, url: str, *, embedded: bool, pgvector_version: str) -> None:
        self.pool = pool
        self.url = url
        self.embedded = embedded
        self.pgvector_version = pgvector_version

    @classmethod
    async def open(
        cls,
        database_url: str | None,
        *,
        home: Any = None,
        min_size: int = 1,
        max_size: int = 4,
        ef_search: int = 100,
    ) -> Store:
        embedded = database_url is None
        if database_url is None:
            url = await asyncio.to_thread(embedded_url, home)
        else:
            url = database_url
        try:
            conn = await psycopg.AsyncConnection.connect(url, autocommit=True, connect_timeout=10)
        except psycopg.Error as exc:
            raise DatabaseUnavailableError(
                f"cannot connect to {redact(url)}: {str(exc).strip()}. Check MNEMO_DATABASE_URL "
                "(or unset it to use the embedded server)."
            ) from exc
        async with conn:
            version = await check_pgvector(conn)
            await apply_migrations(conn)

        async def configure(c: psycopg.AsyncConnection) -> None:
            await register_vector_async(c)
            await c.execute("SET hnsw.iterative_scan = relaxed_order")
            # psycopg prepares statements used 5+ times; PostgreSQL then may switch to a generic plan,
            # which for scope- and term-dependent queries (BM25 postings, HNSW with filters) is 10x slower.
            await c.execute("SET plan_cache_mode = force_custom_plan")
            await c.execute(f"SET hnsw.ef_search = {int(ef_search)}")

        pool = AsyncConnectionPool(
            url,
            min_size=min_size,
            max_size=max_size,
            kwargs={"autocommit": True},
            configure=configure,
            open=False,
            name="mnemo",
        )
        try:
            await pool.open(wait=True, timeout=30)
        except PoolTimeout as exc:
            await pool.close()
            raise DatabaseUnavailableError(f"cannot open a connection pool to {redact(url)}") from exc
        return cls(pool, url, embedded=embedded, pgvector_version=version)

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[psycopg.AsyncConnection]:
        async with self.pool.connection() as conn:
            yield conn

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[psycopg.AsyncConnection]:
        async with self.pool.connection() as conn, conn.transaction():
            yield conn

    async def close(self) -> None:
        await self.pool.close()
