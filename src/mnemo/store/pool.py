"""The connection pool and start-up sequence.

Start-up: resolve the database (embedded or ``MNEMO_DATABASE_URL``), check
pgvector >= 0.7, apply migrations, then open a psycopg 3 async pool whose
connections have pgvector's types registered and ``hnsw.iterative_scan =
relaxed_order`` set, so scope filters are applied inside the HNSW scan and a
filtered search still returns k rows.

Driver errors are converted here, in the one place the store hands out
connections and transactions (as procrastinate's ``wrap_exceptions`` does on
every connector method): a lost connection, a server shutting down or a pool
time-out becomes :class:`~mnemo.errors.DatabaseUnavailableError`, any other
``psycopg`` error a :class:`~mnemo.errors.DatabaseError`, both raised ``from``
the driver's exception. The pool checks each connection before lending it, so
after a server restart the next call gets a fresh connection and succeeds.

A second, small pool (``reserve`` connections, opened empty) is kept for background work that no
caller waits on: a scope's read index build, the token backfill (:meth:`Store.background`). The
two never lend each other's connections, so a build never takes the connection a request needs,
and requests that hold every connection of the main pool never starve a build.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from typing import Any, ClassVar, TypeVar

import psycopg
from pgvector.psycopg import register_vector_async
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from mnemo.errors import DatabaseError, DatabaseUnavailableError
from mnemo.store.extensions import apply_extensions
from mnemo.store.extensions import discover as installed_extensions
from mnemo.store.migrate import apply_migrations
from mnemo.store.server import check_pgvector, embedded_url

__all__ = ["PROCESS", "Store", "convert_error", "redact", "retry_conflicts", "wrap_exceptions"]

T = TypeVar("T")

PROCESS: ContextVar[str] = ContextVar("mnemo_process", default="core")
"""The subsystem writing in this context (archive-adr §4): the rows' ``process_id`` column
defaults to the connection's ``mnemo.process`` setting, which the store sets from this."""


@asynccontextmanager
async def _attributed(conn: psycopg.AsyncConnection) -> AsyncIterator[None]:
    """Name the context's process on ``conn`` while it is lent (nothing to do for the core's)."""
    process = PROCESS.get()
    if process == "core":
        yield
        return
    await conn.execute("SELECT set_config('mnemo.process', %s, false)", (process,))
    try:
        yield
    finally:
        if not conn.closed and conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE:
            await conn.execute("SELECT set_config('mnemo.process', '', false)")


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


# SQLSTATEs that mean "the server is not there for us": connection exceptions (class 08), an
# administrator or crash shutdown, a server still starting, too many connections.
_UNAVAILABLE_STATES = frozenset({"57P01", "57P02", "57P03", "53300"})


def convert_error(exc: psycopg.Error, url: str) -> DatabaseError:
    """The mnemo error for a driver error (the caller raises it ``from exc``)."""
    state = exc.sqlstate
    detail = str(exc).strip() or type(exc).__name__
    if isinstance(exc, PoolTimeout):
        return DatabaseUnavailableError(
            f"the database at {redact(url)} is not reachable: no connection could be had in time ({detail}); "
            "check that the server is running, or raise MNEMO_POOL_MAX_SIZE if many clients share it"
        )
    if (state is None and isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError)) or (
        state is not None and (state.startswith("08") or state in _UNAVAILABLE_STATES)
    ):
        return DatabaseUnavailableError(
            f"the database at {redact(url)} is not reachable: {detail}. Nothing of the interrupted call "
            "was kept; retry it once the server is back (mnemo reconnects by itself)"
        )
    code = f" [SQLSTATE {state}]" if state else ""
    return DatabaseError(f"the database at {redact(url)} failed{code}: {detail}")


# SQLSTATEs of a transaction that PostgreSQL aborted to let a concurrent one go on: a deadlock
# victim (40P01) and a serialization failure (40001). Nothing of it was kept, so it may run again.
_CONFLICT_STATES = frozenset({"40P01", "40001"})


async def retry_conflicts(work: Callable[[], Awaitable[T]], *, attempts: int = 5) -> T:
    """Run ``work`` (one whole transaction, opened inside it) again when PostgreSQL aborted it as a
    deadlock victim or a serialization failure, after a short pause that grows with each attempt.

    The aborted transaction rolled back whole, so each run applies its effects once. The writers of
    memories lock rows in one order (id order, in one statement), so this is a safety net for
    writers that meet across features (a recall beside a night, a curation or a forget), not the
    way concurrent recalls get along. The last attempt's error goes up unchanged."""
    for attempt in range(1, attempts + 1):
        try:
            return await work()
        except Exception as exc:  # the driver's error, or the mnemo error it was converted to
            if _conflict(exc) is None or attempt == attempts:
                raise
        await asyncio.sleep(0.005 * 2**attempt)
    raise AssertionError("unreachable")  # pragma: no cover


def _conflict(exc: BaseException | None) -> psycopg.Error | None:
    """The driver error behind ``exc`` (itself, or the cause of a converted one) when it is a conflict."""
    while exc is not None:
        if isinstance(exc, psycopg.Error) and exc.sqlstate in _CONFLICT_STATES:
            return exc
        exc = exc.__cause__
    return None


@contextmanager
def wrap_exceptions(url: str) -> Iterator[None]:
    """Convert driver errors raised inside the block (see :func:`convert_error`)."""
    try:
        yield
    except psycopg.Error as exc:
        raise convert_error(exc, url) from exc


def _pool(
    url: str, cursor_factory: type[psycopg.AsyncCursor[Any]], ef_search: int, min_size: int, max_size: int, name: str
) -> AsyncConnectionPool:
    """A pool (not opened yet) whose connections have pgvector's types and mnemo's session settings."""

    async def configure(c: psycopg.AsyncConnection) -> None:
        await register_vector_async(c)
        await c.execute("SET hnsw.iterative_scan = relaxed_order")
        # psycopg prepares statements used 5+ times; PostgreSQL then may switch to a generic plan,
        # which for scope- and term-dependent queries (BM25 postings, HNSW with filters) is 10x slower.
        await c.execute("SET plan_cache_mode = force_custom_plan")
        await c.execute(f"SET hnsw.ef_search = {int(ef_search)}")

    return AsyncConnectionPool(
        url,
        min_size=min_size,
        max_size=max_size,
        kwargs={"autocommit": True, "cursor_factory": cursor_factory},
        configure=configure,
        check=AsyncConnectionPool.check_connection,  # a restarted server heals by itself
        open=False,
        name=name,
    )


class Store:
    """An open database: pool plus the facts learnt at start-up."""

    cursor_factory: ClassVar[type[psycopg.AsyncCursor[Any]]] = psycopg.AsyncCursor
    """The cursor class of every connection a store opens (its pool's and its start-up one): the
    seam through which the tests see every statement mnemo sends, to check that each one binds a
    single entity (DESIGN §7; tests/statement_log.py). Set it before :meth:`open`."""

    def __init__(
        self,
        pool: AsyncConnectionPool,
        url: str,
        *,
        embedded: bool,
        pgvector_version: str,
        reserved: AsyncConnectionPool | None = None,
    ) -> None:
        self.pool = pool
        self.url = url
        self.embedded = embedded
        self.pgvector_version = pgvector_version
        self.reserved = reserved
        """The background pool (:meth:`background`); None: background work shares :attr:`pool`."""

    @classmethod
    async def open(
        cls,
        database_url: str | None,
        *,
        home: Any = None,
        min_size: int = 1,
        max_size: int = 4,
        ef_search: int = 100,
        reserve: int = 0,
    ) -> Store:
        """Start up (see the module docstring): ``max_size`` connections for callers, and ``reserve``
        more in a pool of their own for background work (0: none, it shares the main pool)."""
        embedded = database_url is None
        if database_url is None:
            url = await asyncio.to_thread(embedded_url, home)
        else:
            url = database_url
        try:
            conn = await psycopg.AsyncConnection.connect(
                url, autocommit=True, connect_timeout=10, cursor_factory=cls.cursor_factory
            )
        except psycopg.Error as exc:
            raise DatabaseUnavailableError(
                f"cannot connect to {redact(url)}: {str(exc).strip()}. Check MNEMO_DATABASE_URL "
                "(or unset it to use the embedded server)."
            ) from exc
        async with conn:
            version = await check_pgvector(conn)
            await apply_migrations(conn)
            await apply_extensions(conn, installed_extensions())

        pool = _pool(url, cls.cursor_factory, ef_search, min_size, max_size, "mnemo")
        try:
            await pool.open(wait=True, timeout=30)
        except PoolTimeout as exc:
            await pool.close()
            raise DatabaseUnavailableError(f"cannot open a connection pool to {redact(url)}") from exc
        # opened empty: a connection is made when background work first asks for one
        reserved = _pool(url, cls.cursor_factory, ef_search, 0, reserve, "mnemo-background") if reserve else None
        if reserved is not None:
            await reserved.open(wait=False)
        return cls(pool, url, embedded=embedded, pgvector_version=version, reserved=reserved)

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[psycopg.AsyncConnection]:
        """A pooled connection in autocommit mode; driver errors inside come out as mnemo errors.
        Rows it writes are attributed to the :data:`PROCESS` of the caller's context."""
        with wrap_exceptions(self.url):
            async with self.pool.connection() as conn, _attributed(conn):
                yield conn

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[psycopg.AsyncConnection]:
        """A pooled connection inside one transaction: all of the block's writes or none of them."""
        with wrap_exceptions(self.url):
            async with self.pool.connection() as conn, _attributed(conn), conn.transaction():
                yield conn

    @asynccontextmanager
    async def background(self) -> AsyncIterator[psycopg.AsyncConnection]:
        """A connection of the background pool (as :meth:`connection` lends one): for work nobody
        waits on, which must neither take a caller's connection nor wait behind callers for one."""
        pool = self.reserved or self.pool
        with wrap_exceptions(self.url):
            async with pool.connection() as conn, _attributed(conn):
                yield conn

    async def close(self) -> None:
        if self.reserved is not None:
            await self.reserved.close()
        await self.pool.close()
