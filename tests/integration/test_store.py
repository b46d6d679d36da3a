"""Migrations, the canonical schema, and the pgvector start-up check (real PostgreSQL)."""

from __future__ import annotations

import psycopg
import pytest

from mnemo import AsyncArchive, ExtensionMissingError, MigrationError, Settings
from mnemo.embed import Embeddings
from mnemo.store import Store
from mnemo.store.migrate import apply_migrations, load_migrations
from tests.conftest import db_url
from tests.schema_snapshot import describe


async def test_migrating_from_empty_yields_the_canonical_schema(empty_database_url: str, data_dir) -> None:
    store = await Store.open(empty_database_url)
    await store.close()
    assert describe(empty_database_url) == (data_dir / "canonical_schema.txt").read_text()


async def test_migrations_are_recorded_and_idempotent(empty_database_url: str) -> None:
    store = await Store.open(empty_database_url)
    async with store.connection() as conn:
        assert await apply_migrations(conn) == []  # nothing left to apply
        cur = await conn.execute("SELECT version, name FROM mnemo.schema_migrations ORDER BY version")
        recorded = await cur.fetchall()
    await store.close()
    assert recorded == [(m.version, m.name) for m in load_migrations()]
    with psycopg.connect(empty_database_url) as conn2:
        schemas = {r[0] for r in conn2.execute("SELECT nspname FROM pg_namespace")}
    assert {"mnemo", "vectors", "traces", "queue"} <= schemas


async def test_an_edited_migration_is_refused(empty_database_url: str) -> None:
    store = await Store.open(empty_database_url)
    async with store.connection() as conn:
        await conn.execute("UPDATE mnemo.schema_migrations SET checksum = 'tampered' WHERE version = 1")
        with pytest.raises(MigrationError, match="changed after it was applied"):
            await apply_migrations(conn)
    await store.close()


async def test_unknown_future_migration_is_refused(empty_database_url: str) -> None:
    store = await Store.open(empty_database_url)
    async with store.connection() as conn:
        await conn.execute("INSERT INTO mnemo.schema_migrations VALUES (9999, 'future', 'x')")
        with pytest.raises(MigrationError, match="upgrade mnemo"):
            await apply_migrations(conn)
    await store.close()


async def test_database_without_pgvector_is_a_clear_error_and_changes_nothing(
    pg_admin_url: str, embeddings: Embeddings
) -> None:
    # A role that may not install extensions, owning a database without pgvector:
    # what a managed PostgreSQL without the extension looks like to mnemo.
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute("CREATE ROLE nopgvector LOGIN")
        conn.execute('CREATE DATABASE "no_vector" OWNER nopgvector')
    url = db_url(pg_admin_url, "no_vector").replace("postgres:@", "nopgvector:@", 1)
    with pytest.raises(ExtensionMissingError, match=r"pgvector is not installed.*CREATE EXTENSION vector"):
        await AsyncArchive.open(Settings(database_url=url), embeddings=embeddings)
    with psycopg.connect(url) as conn:
        schemas = {r[0] for r in conn.execute("SELECT nspname FROM pg_namespace")}
        extensions = {r[0] for r in conn.execute("SELECT extname FROM pg_extension")}
    assert "mnemo" not in schemas and "vectors" not in schemas
    assert "vector" not in extensions


async def test_unreachable_database_is_a_clear_error(embeddings: Embeddings) -> None:
    from mnemo import DatabaseUnavailableError

    bad = "postgresql://nobody@127.0.0.1:1/nothing?connect_timeout=2"
    with pytest.raises(DatabaseUnavailableError, match=r"cannot connect to postgresql://nobody@127\.0\.0\.1:1/nothing"):
        await AsyncArchive.open(Settings(database_url=bad), embeddings=embeddings)


async def test_pool_sets_iterative_scan(archive: AsyncArchive) -> None:
    async with archive._rt.store.connection() as conn:
        cur = await conn.execute("SHOW hnsw.iterative_scan")
        assert (await cur.fetchone())[0] == "relaxed_order"  # type: ignore[index]
        cur = await conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE schemaname = 'vectors' AND indexname = 'universal_384_hnsw'"
        )
        assert "hnsw (embedding halfvec_cosine_ops)" in (await cur.fetchone())[0]  # type: ignore[index]


def test_the_throwaway_test_cluster_runs_without_durability(pg_admin_url: str, database_url: str) -> None:
    # conftest starts the session's cluster with fsync, synchronous commit and full-page writes off
    # (nothing in it outlives the run); every database cloned for a test inherits that.
    names = ("fsync", "synchronous_commit", "full_page_writes")
    for url in (pg_admin_url, database_url):
        with psycopg.connect(url) as conn:
            shown = {name: conn.execute(f"SHOW {name}").fetchone()[0] for name in names}  # type: ignore[index]
        assert shown == {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}
