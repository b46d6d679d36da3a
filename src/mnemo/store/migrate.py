"""Versioned SQL migrations, applied in order and recorded in the database.

Files in ``migrations/`` are named ``NNNN_name.sql``. Each pending file runs in
one transaction together with its row in ``mnemo.schema_migrations`` under an
advisory lock, so concurrent starts cannot apply a migration twice and a failed
migration leaves nothing behind. An applied file whose text changed is refused, except the
comment-only edits made after a release, whose earlier checksums are listed in :data:`EARLIER`
(a database that applied the earlier text opens as before).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from importlib import resources

import psycopg

from mnemo.errors import MigrationError

__all__ = ["Migration", "apply_migrations", "load_migrations", "pending"]

_LOCK_KEY = 0x6D6E656D6F  # "mnemo"
_NAME_RE = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")

EARLIER: dict[int, frozenset[str]] = {
    # 0020: a comment renamed mnemo.cognition.identity after databases had applied it (4e710e5)
    20: frozenset({"4c44b36b8ad82e021125c72690c3f4026e587a0450e0a18d3a69cfe5d1c42a8f"}),
}
"""Checksums of earlier texts of mnemo's own migrations that differ only in comments: still accepted."""


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str
    earlier: frozenset[str] = frozenset()
    """Checksums of earlier texts of this migration that differ from it only in comments."""

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode()).hexdigest()


def load_migrations() -> list[Migration]:
    """All bundled migrations, in version order."""
    found = []
    for entry in resources.files("mnemo.store").joinpath("migrations").iterdir():
        match = _NAME_RE.match(entry.name)
        if match:
            version = int(match.group(1))
            text = entry.read_text(encoding="utf-8")
            found.append(Migration(version, match.group(2), text, EARLIER.get(version, frozenset())))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise MigrationError(f"duplicate migration versions in {versions}")
    return found


def pending(migrations: list[Migration], recorded: dict[int, str], owner: str, remedy: str) -> list[Migration]:
    """The ``migrations`` not applied yet, given the ``recorded`` versions and checksums; refuses a
    database with migrations ``owner`` does not know, and an applied migration whose text changed.
    Shared by mnemo's own migrations and the extensions' (:mod:`mnemo.store.extensions`)."""
    unknown = sorted(set(recorded) - {m.version for m in migrations})
    if unknown:
        raise MigrationError(f"the database has migrations {unknown} that {owner} does not know; {remedy}")
    for migration in migrations:
        accepted = {migration.checksum, *migration.earlier}
        if migration.version in recorded and recorded[migration.version] not in accepted:
            raise MigrationError(
                f"migration {migration.version:04d}_{migration.name} of {owner} changed after it was applied; "
                "add a new migration instead of editing an applied one"
            )
    return [m for m in migrations if m.version not in recorded]


async def apply_migrations(conn: psycopg.AsyncConnection) -> list[int]:
    """Apply pending migrations; return the versions applied now."""
    migrations = load_migrations()
    applied_now: list[int] = []
    try:
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
            await conn.execute("CREATE SCHEMA IF NOT EXISTS mnemo")
            await conn.execute(
                """CREATE TABLE IF NOT EXISTS mnemo.schema_migrations (
                       version    integer PRIMARY KEY,
                       name       text NOT NULL,
                       checksum   text NOT NULL,
                       applied_at timestamptz NOT NULL DEFAULT now())"""
            )
            cur = await conn.execute("SELECT version, checksum FROM mnemo.schema_migrations")
            recorded = {int(v): str(c) for v, c in await cur.fetchall()}
            for migration in pending(migrations, recorded, "this mnemo", "upgrade mnemo before opening this database"):
                await conn.execute(migration.sql.encode())
                await conn.execute(
                    "INSERT INTO mnemo.schema_migrations (version, name, checksum) VALUES (%s, %s, %s)",
                    (migration.version, migration.name, migration.checksum),
                )
                applied_now.append(migration.version)
    except psycopg.Error as exc:
        raise MigrationError(f"could not apply schema migrations: {exc}") from exc
    return applied_now
