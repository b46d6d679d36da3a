"""Extension schemas (issue 16 item 5, archive-adr §8): an installed package's entry point in
``mnemo.extensions`` gets its own schema and ordered migrations, applied and recorded like
mnemo's own when an archive opens, refused when an applied one changes, and carried by backups."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import psycopg
import pytest

from mnemo import AsyncArchive, MigrationError, Settings
from mnemo.embed import Embeddings

MIGRATIONS = {
    "0001_entries.sql": "CREATE TABLE entries (id serial PRIMARY KEY, day date NOT NULL, mood text NOT NULL);",
    "0002_weather.sql": "ALTER TABLE entries ADD COLUMN weather text;",
}


def install(root: Path, name: str = "diary", schema: str = "diary", files: dict[str, str] = MIGRATIONS) -> None:
    """A package with its dist-info, as pip would leave it, under ``root`` (then put on sys.path)."""
    package = root / f"mnemo_{name}"
    (package / "migrations").mkdir(parents=True)
    (package / "__init__.py").write_text(
        f"from mnemo import Extension\nEXTENSION = Extension(name={name!r}, schema={schema!r}, "
        f"migrations='mnemo_{name}.migrations')\n"
    )
    (package / "migrations" / "__init__.py").write_text("")
    for file, text in files.items():
        (package / "migrations" / file).write_text(text)
    info = root / f"mnemo_{name}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: mnemo-{name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        textwrap.dedent(f"""\
            [mnemo.extensions]
            {name} = mnemo_{name}:EXTENSION
        """)
    )


def rows(url: str, query: str) -> list[tuple[object, ...]]:
    with psycopg.connect(url) as conn:
        return conn.execute(query).fetchall()  # type: ignore[arg-type]


async def test_an_installed_extension_gets_its_schema_and_migrations_once(
    database_url: str, embeddings: Embeddings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    for _ in range(2):  # the second open applies nothing
        archive = await AsyncArchive.open(Settings(database_url=database_url), embeddings=embeddings)
        await archive.close()
    assert rows(database_url, "SELECT name, schema_name FROM mnemo.extensions") == [("diary", "diary")]
    assert rows(database_url, "SELECT version, name FROM mnemo.extension_migrations ORDER BY 1") == [
        (1, "entries"),
        (2, "weather"),
    ]
    columns = rows(
        database_url,
        "SELECT column_name FROM information_schema.columns WHERE table_schema = 'diary' ORDER BY ordinal_position",
    )
    assert columns == [("id",), ("day",), ("mood",), ("weather",)]


async def test_a_changed_migration_or_a_foreign_schema_is_refused(
    database_url: str, embeddings: Embeddings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install(tmp_path / "a")
    monkeypatch.syspath_prepend(str(tmp_path / "a"))
    await (await AsyncArchive.open(Settings(database_url=database_url), embeddings=embeddings)).close()
    install(tmp_path / "b", name="thief", schema="mnemo")
    install(tmp_path / "c", name="twin", files={"0001_x.sql": "CREATE TABLE twin_rows (x int);"}, schema="diary")
    install(tmp_path / "d", files={**MIGRATIONS, "0001_entries.sql": "CREATE TABLE entries (id int);"})
    for where, says in [("b", "may not use schema 'mnemo'"), ("c", "twin"), ("d", "changed after it was applied")]:
        with monkeypatch.context() as patch:
            if where == "d":  # the same extension, one of its applied files edited
                patch.setattr("sys.path", [p for p in sys.path if p != str(tmp_path / "a")])
                for module in [m for m in sys.modules if m.startswith("mnemo_diary")]:
                    patch.delitem(sys.modules, module)
            patch.syspath_prepend(str(tmp_path / where))
            with pytest.raises(MigrationError, match=says):
                await AsyncArchive.open(Settings(database_url=database_url), embeddings=embeddings)


async def test_a_broken_migration_leaves_nothing_behind(
    database_url: str, embeddings: Embeddings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install(tmp_path, name="broken", schema="broken", files={"0001_bad.sql": "CREATE TABLE t (x int); SELEC 1;"})
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(MigrationError, match="broken"):
        await AsyncArchive.open(Settings(database_url=database_url), embeddings=embeddings)
    assert rows(database_url, "SELECT count(*) FROM mnemo.extensions") == [(0,)]
    assert rows(database_url, "SELECT count(*) FROM pg_namespace WHERE nspname = 'broken'") == [(0,)]


async def test_backups_carry_the_extensions_schema(
    database_url: str, empty_database_url: str, embeddings: Embeddings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install(tmp_path / "pkg")
    monkeypatch.syspath_prepend(str(tmp_path / "pkg"))
    archive = await AsyncArchive.open(Settings(database_url=database_url), embeddings=embeddings)
    try:
        with psycopg.connect(database_url) as conn:
            conn.execute("INSERT INTO diary.entries (day, mood) VALUES ('2026-11-25', 'curious')")
        manifest = await archive.portability.backup(tmp_path / "with-diary.backup")
    finally:
        await archive.close()
    assert "diary" in manifest.schemas and manifest.counts["diary.entries"] == 1
    await AsyncArchive.portability.restore(tmp_path / "with-diary.backup", Settings(database_url=empty_database_url))
    assert rows(empty_database_url, "SELECT day::text, mood FROM diary.entries") == [("2026-11-25", "curious")]
    assert rows(empty_database_url, "SELECT count(*) FROM mnemo.extension_migrations") == [(2,)]
