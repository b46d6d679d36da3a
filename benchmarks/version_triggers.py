"""What the scope-version triggers cost a write, store only (issue 42, decision 5).

    .venv/bin/python benchmarks/version_triggers.py [--items 1000] [--terms 20] [--repeat 5] [--json out.json]

The write path's rows fire the triggers that bump a scope's version and log the items it touched
(migration 0018's statement-level ones before, 0023's row-level ones after). This times, on an
embedded PostgreSQL with mnemo's schema, the rows an import writes most of, postings, with nothing
else around them: one transaction inserting ``--items`` items x ``--terms`` terms (a bulk import),
the same rows as one transaction per item (remember, a turn at a time), and their delete (forget);
each the median of ``--repeat`` runs, each run into a fresh scope. The same statements with the
triggers disabled (``session_replication_role = replica``, which fires no ordinary trigger) give the
rows' own cost in the same run. Run it with the tree to compare on PYTHONPATH (a worktree's src).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psycopg

from mnemo import AsyncArchive, Settings
from mnemo.embed import load_embedder

_INSERT = """INSERT INTO mnemo.postings (entity_id, namespace, term, item_id, item_kind, tf, doc_len)
             SELECT %(e)s, %(ns)s, 't' || t, i, 'turn', 1, %(terms)s
             FROM unnest(%(items)s::uuid[]) AS i CROSS JOIN generate_series(1, %(terms)s) AS t"""
_DELETE = "DELETE FROM mnemo.postings WHERE entity_id = %(e)s AND namespace = %(ns)s"


async def _time(archive: AsyncArchive, name: str, items: int, terms: int, triggers: bool) -> dict[str, float]:
    ids = [f"00000000-0000-7000-8000-{n:012x}" for n in range(items)]
    p: dict[str, Any] = {"e": "bench", "ns": name, "terms": terms}
    role = "SET LOCAL session_replication_role = " + ("origin" if triggers else "replica")
    out: dict[str, float] = {}
    async with await psycopg.AsyncConnection.connect(archive.inspect.database.url, autocommit=True) as conn:
        started = time.perf_counter()
        async with conn.transaction():
            await conn.execute(role)
            await conn.execute(_INSERT, p | {"items": ids})
        out["bulk_insert_s"] = time.perf_counter() - started
        started = time.perf_counter()
        async with conn.transaction():
            await conn.execute(role)
            await conn.execute(_DELETE, p)
        out["delete_s"] = time.perf_counter() - started
        started = time.perf_counter()
        for item in ids:
            async with conn.transaction():
                await conn.execute(role)
                await conn.execute(_INSERT, p | {"items": [item]})
        out["per_item_insert_s"] = time.perf_counter() - started
        async with conn.transaction():
            await conn.execute(role)
            await conn.execute(_DELETE, p)
    return out


async def run(items: int, terms: int, repeat: int) -> dict[str, Any]:
    out: dict[str, Any] = {"items": items, "terms": terms, "rows": items * terms, "repeat": repeat}
    with tempfile.TemporaryDirectory(prefix="mnemo-triggers-") as home:
        archive = await AsyncArchive.open(Settings(home=Path(home)), embeddings=load_embedder("bundled"))
        try:
            runs: dict[bool, list[dict[str, float]]] = {True: [], False: []}
            for n in range(repeat):  # interleaved: the machine's load drifts
                for triggers in (True, False):
                    runs[triggers].append(await _time(archive, f"r{n}-{triggers}", items, terms, triggers))
            for triggers, label in ((True, "triggers"), (False, "no triggers")):
                out[label] = {k: round(statistics.median(r[k] for r in runs[triggers]), 4) for k in runs[triggers][0]}
        finally:
            await archive.close()
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--terms", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    result = asyncio.run(run(args.items, args.terms, args.repeat))
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
