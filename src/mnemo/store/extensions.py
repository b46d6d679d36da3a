"""Extension schemas: packages that keep their own tables in the archive's database.

Seed: archive-adr §8 ("Schema Extensions: extensions can define their own
relational tables and migrations within the user's namespace, allowing the
mind to structure its own specialized memories"), and "Sovereign
Extensibility" (no new infrastructure: the same database, the same snapshot).

A package declares an :class:`Extension` under the entry-point group
``mnemo.extensions``::

    # pyproject.toml of the extension
    [project.entry-points."mnemo.extensions"]
    diary = "mnemo_diary:EXTENSION"

    # mnemo_diary/__init__.py
    EXTENSION = Extension(name="diary", schema="diary", migrations="mnemo_diary.migrations")

Its ``NNNN_name.sql`` files are applied in order when an archive opens, each in
one transaction with its record in ``mnemo.extension_migrations`` and with
``search_path`` set to the extension's own schema (unqualified names land
there), under the same advisory lock as mnemo's own migrations. A changed
applied file, or a schema another extension (or mnemo) owns, is refused.
``mnemo backup`` covers every registered schema.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from importlib import metadata, resources

import psycopg
from psycopg import sql

from mnemo.errors import MigrationError
from mnemo.store.migrate import _LOCK_KEY, _NAME_RE, Migration, pending
from mnemo.store.snapshots import BASE_SCHEMAS, SCHEMA_NAME

__all__ = ["ENTRY_POINTS", "Extension", "apply_extensions", "discover"]

ENTRY_POINTS = "mnemo.extensions"
_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Extension:
    """A package's own schema and its ordered SQL migrations."""

    name: str
    """Unique among extensions (1-63 lowercase letters, digits, ``_``)."""
    schema: str
    """The PostgreSQL schema its tables live in (not one of mnemo's)."""
    migrations: str
    """The importable package holding its ``NNNN_name.sql`` files."""

    def load(self) -> list[Migration]:
        """Its migrations in version order (:class:`MigrationError` when they cannot be read)."""
        for label, value in (("name", self.name), ("schema", self.schema)):
            if not SCHEMA_NAME.fullmatch(value):
                raise MigrationError(f"extension {self.name!r}: {label} {value!r} is not a lowercase identifier")
        if self.schema in BASE_SCHEMAS or self.schema in ("public", "pg_catalog", "information_schema"):
            raise MigrationError(f"extension {self.name!r} may not use schema {self.schema!r}: it is not its own")
        try:
            entries = list(resources.files(self.migrations).iterdir())
        except (ModuleNotFoundError, TypeError, FileNotFoundError) as exc:
            raise MigrationError(f"extension {self.name!r}: cannot read migrations from {self.migrations!r}") from exc
        found = []
        for entry in entries:
            match = _NAME_RE.match(entry.name)
            if match:
                found.append(Migration(int(match.group(1)), match.group(2), entry.read_text(encoding="utf-8")))
        found.sort(key=lambda m: m.version)
        if len({m.version for m in found}) != len(found):
            raise MigrationError(f"extension {self.name!r} has two migrations with one version")
        return found


def discover() -> list[Extension]:
    """The extensions installed in this environment (entry-point group ``mnemo.extensions``)."""
    found = []
    for point in sorted(metadata.entry_points(group=ENTRY_POINTS), key=lambda p: p.name):
        try:
            extension = point.load()
        except Exception as exc:  # a broken plug-in names itself instead of failing obscurely
            raise MigrationError(
                f"extension entry point {point.name!r} ({point.value}) cannot be loaded: {exc}"
            ) from exc
        if not isinstance(extension, Extension):
            raise MigrationError(f"extension entry point {point.name!r} is not a mnemo.Extension")
        found.append(extension)
    return found


async def apply_extensions(conn: psycopg.AsyncConnection, extensions: list[Extension]) -> dict[str, list[int]]:
    """Register ``extensions`` and apply their pending migrations; the versions applied now, by name."""
    applied: dict[str, list[int]] = {}
    for extension in extensions:
        migrations = extension.load()
        try:
            async with conn.transaction():
                await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
                await _register(conn, extension)
                applied[extension.name] = await _apply(conn, extension, migrations)
        except psycopg.Error as exc:
            raise MigrationError(f"could not apply the migrations of extension {extension.name!r}: {exc}") from exc
        if applied[extension.name]:
            _log.info("extension %s: applied migrations %s", extension.name, applied[extension.name])
    return applied


async def _register(conn: psycopg.AsyncConnection, extension: Extension) -> None:
    cur = await conn.execute(
        """INSERT INTO mnemo.extensions (name, schema_name) VALUES (%s, %s)
           ON CONFLICT (name) DO UPDATE SET schema_name = mnemo.extensions.schema_name
           RETURNING schema_name""",
        (extension.name, extension.schema),
    )
    row = await cur.fetchone()
    if row is None or row[0] != extension.schema:
        raise MigrationError(
            f"extension {extension.name!r} was registered with schema {row[0] if row else None!r}, "
            f"not {extension.schema!r}"
        )
    await conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(extension.schema)))


async def _apply(conn: psycopg.AsyncConnection, extension: Extension, migrations: list[Migration]) -> list[int]:
    cur = await conn.execute(
        "SELECT version, checksum FROM mnemo.extension_migrations WHERE extension = %s", (extension.name,)
    )
    recorded = {int(v): str(c) for v, c in await cur.fetchall()}
    owner, remedy = f"extension {extension.name!r}", "install the extension's version that made them"
    done = []
    for migration in pending(migrations, recorded, owner, remedy):
        await conn.execute(sql.SQL("SET LOCAL search_path = {}, public").format(sql.Identifier(extension.schema)))
        await conn.execute(migration.sql.encode())
        await conn.execute("RESET search_path")
        await conn.execute(
            "INSERT INTO mnemo.extension_migrations (extension, version, name, checksum) VALUES (%s, %s, %s, %s)",
            (extension.name, migration.version, migration.name, migration.checksum),
        )
        done.append(migration.version)
    return done
