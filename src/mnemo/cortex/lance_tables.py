"""The cortex's LanceDB tables: blocks, their lines, and the RAPTOR tree's nodes.

Seeds: memory-architecture §5.1-5.2 (a disk-based, columnar long-term store),
§5.4 (cluster nodes), §6.3-6.4 (vectors persist at full precision: float32);
DESIGN §7 (every cortex row carries the scope columns and every cortex query
filters by them, inside the query) and §9 (tables are versioned; forgetting
cleans the old versions, or deleted text survives on disk).

One table per family and vector width (``blocks_384``, ``lines_384``,
``nodes_384``), so a change of embedder never mixes widths; rows carry the
model ``slug`` and searches filter by it, as the hippocampus does. Writes are
idempotent upserts keyed by id, so a migration interrupted anywhere and run
again converges. LanceDB errors leave as :class:`~mnemo.errors.CortexError`.
"""

from __future__ import annotations

import asyncio
import json
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import numpy as np

from mnemo.errors import CortexError
from mnemo.models import Scope

__all__ = ["CACHE_MAX_ROWS", "FAMILIES", "Cortex", "ScopeVectors", "scope_filter"]

FAMILIES = ("blocks", "lines", "nodes")


def scope_filter(scope: Scope, extra: str = "") -> str:
    """The SQL predicate every cortex read and delete carries. Scope names are validated
    (``[A-Za-z0-9_.:@+-]``), quotes are doubled all the same."""
    e, ns = (s.replace("'", "''") for s in (scope.entity_id, scope.namespace))
    where = f"entity_id = '{e}' AND namespace = '{ns}'"
    return f"{where} AND ({extra})" if extra else where


def quoted(values: Iterable[object]) -> str:
    """``'a', 'b'`` for an ``IN (...)`` list of ids (UUIDs and slugs: no quotes in them)."""
    return ", ".join("'" + str(v).replace("'", "''") + "'" for v in values)


def _schema(family: str, dim: int) -> Any:
    import pyarrow as pa  # deferred with lancedb: opening an archive never pays for them

    vector = pa.field("vector", pa.list_(pa.float32(), dim))
    scope = [pa.field("entity_id", pa.string()), pa.field("namespace", pa.string()), pa.field("id", pa.string())]
    if family == "blocks":
        return pa.schema([
            *scope,
            pa.field("memory_id", pa.string()),
            pa.field("slug", pa.string()),
            vector,
            pa.field("session_id", pa.string()),
            pa.field("kind", pa.string()),
            pa.field("first_turn", pa.int32()),
            pa.field("last_turn", pa.int32()),
            pa.field("turn_ids", pa.list_(pa.string())),
            pa.field("content", pa.string()),
            pa.field("gist", pa.string()),
            pa.field("prose", pa.string()),  # JSON: live zones verbatim, dead-zone summaries condensed
            pa.field("flux_metrics", pa.string()),  # JSON
            pa.field("salience_scores", pa.string()),  # JSON
            pa.field("coherence_gain", pa.float64()),
            pa.field("ties_weight", pa.float64()),
            pa.field("references", pa.string()),  # JSON: citations, derived_from, continues_from, ...
            pa.field("arc_start_time", pa.timestamp("us", tz="UTC")),
            pa.field("arc_end_time", pa.timestamp("us", tz="UTC")),
            pa.field("migrated_at", pa.timestamp("us", tz="UTC")),
            pa.field("extra_vectors", pa.string()),  # JSON: {space: {"slug", "dim", "data": base64 float32}}
        ])  # fmt: skip
    if family == "lines":
        return pa.schema([
            *scope,  # id: the turn's id
            pa.field("block_id", pa.string()),
            pa.field("memory_id", pa.string()),
            pa.field("slug", pa.string()),
            vector,
            pa.field("turn_number", pa.int32()),
            pa.field("role", pa.string()),
            pa.field("speaker", pa.string()),
            pa.field("content", pa.string()),
            pa.field("created_at", pa.timestamp("us", tz="UTC")),
        ])  # fmt: skip
    return pa.schema([
        *scope,
        pa.field("level", pa.int32()),
        pa.field("parent_id", pa.string()),
        pa.field("slug", pa.string()),
        vector,  # the summary's embedding
        pa.field("centroid", pa.list_(pa.float32(), dim)),
        pa.field("summary", pa.string()),
        pa.field("member_ids", pa.list_(pa.string())),  # block ids (level 1) or node ids (level > 1)
        pa.field("block_ids", pa.list_(pa.string())),  # every block under the node
        pa.field("member_count", pa.int32()),
        pa.field("created_at", pa.timestamp("us", tz="UTC")),
    ])  # fmt: skip


CACHE_MAX_ROWS = 200_000  # per scope and table: beyond this recall searches LanceDB instead of memory


@dataclass(frozen=True, slots=True)
class ScopeVectors:
    """One scope's rows of one cortex table, in memory: ``rows`` (without vectors), their unit
    vectors as ``matrix``, and where each id sits."""

    version: int
    rows: list[dict[str, Any]]
    matrix: np.ndarray
    position: dict[str, int]
    _groups: dict[str, dict[str, list[int]]] = field(default_factory=dict)

    def where(self, column: str, values: Iterable[object]) -> list[int]:
        """Row indices whose ``column`` is one of ``values``, in row order (the grouping is built once)."""
        groups = self._groups.get(column)
        if groups is None:
            groups = {}
            for i, row in enumerate(self.rows):
                groups.setdefault(str(row[column]), []).append(i)
            self._groups[column] = groups
        return sorted(i for v in {str(v) for v in values} for i in groups.get(v, ()))

    @classmethod
    def from_arrow(cls, version: int, data: Any, columns: Sequence[str], dim: int) -> ScopeVectors:
        n = data.num_rows
        flat = data.column("vector").combine_chunks().flatten().to_numpy(zero_copy_only=False)
        raw = np.asarray(flat, dtype=np.float32).reshape(n, dim) if n else np.zeros((0, dim), np.float32)
        norms = np.linalg.norm(raw, axis=1, keepdims=True)
        matrix = (raw / np.where(norms > 0, norms, 1.0)).astype(np.float32)
        rows = (
            [
                dict(zip(columns, values, strict=True))
                for values in zip(*(data.column(c).to_pylist() for c in columns), strict=True)
            ]
            if n
            else []
        )
        return cls(version, rows, matrix, {str(r["id"]): i for i, r in enumerate(rows)})

    def nearest(self, vector: np.ndarray, limit: int) -> list[tuple[int, float]]:
        """``(row index, cosine similarity)`` of the ``limit`` rows nearest to ``vector``, best first."""
        if not len(self.rows) or limit <= 0:
            return []
        q = np.asarray(vector, dtype=np.float32)
        q = q / max(float(np.linalg.norm(q)), 1e-12)
        sims = self.matrix @ q
        k = min(limit, len(sims))
        top = np.argpartition(-sims, k - 1)[:k]
        order = top[np.lexsort((top, -sims[top]))]
        return [(int(i), float(sims[i])) for i in order]


class Cortex:
    """A LanceDB database, located and connected on first use; one per archive. ``uri`` is a
    LanceDB URI, or a coroutine function that finds it (the default location needs the
    database's cortex id, which only the first use should create)."""

    def __init__(self, uri: str | Callable[[], Awaitable[str]]) -> None:
        self._locate = uri
        self.uri = uri if isinstance(uri, str) else "(not opened yet)"
        self._db: Any = None
        self._tables: dict[str, Any] = {}
        self._vectors: dict[tuple[str, int, str, str, str], ScopeVectors] = {}
        self._lock = asyncio.Lock()

    @asynccontextmanager
    async def _errors(self, action: str) -> AsyncIterator[None]:
        try:
            yield
        except CortexError:
            raise
        except (OSError, RuntimeError, ValueError) as exc:
            raise CortexError(f"the cortex at {self.uri} failed to {action}: {exc}") from exc

    async def _connect(self) -> Any:
        if self._db is None:
            import lancedb  # deferred: only archives that use the long-term tier pay for the import

            if not isinstance(self._locate, str):
                self.uri = await self._locate()
            async with self._errors("open"):
                # strong consistency: every read sees what another process (a worker's night) committed
                self._db = await lancedb.connect_async(self.uri, read_consistency_interval=timedelta(0))
        return self._db

    async def table(self, family: str, dim: int, *, create: bool = False) -> Any | None:
        """The ``family`` table for vectors of width ``dim``; None when it does not exist and ``create`` is off."""
        name = f"{family}_{dim}"
        async with self._lock:
            if name in self._tables:
                return self._tables[name]
            db = await self._connect()
            async with self._errors(f"open table {name}"):
                names = await _list_tables(db)
                if name in names:
                    table = await db.open_table(name)
                elif create:
                    table = await db.create_table(name, schema=_schema(family, dim), exist_ok=True)
                else:
                    return None
            self._tables[name] = table
            return table

    async def upsert(self, family: str, dim: int, rows: Sequence[Mapping[str, Any]]) -> int:
        """Insert or replace ``rows`` by id (idempotent); returns the table's new version."""
        table = await self.table(family, dim, create=True)
        assert table is not None
        async with self._errors(f"write {family}"):
            if rows:
                await (
                    table.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(list(rows))
                )
            return int(await table.version())

    async def replace_scope(self, family: str, dim: int, scope: Scope, rows: Sequence[Mapping[str, Any]]) -> int:
        """Replace every row of ``scope`` in ``family`` with ``rows`` (the tree is rebuilt whole)."""
        table = await self.table(family, dim, create=True)
        assert table is not None
        async with self._errors(f"rewrite {family}"):
            await table.delete(scope_filter(scope))
            if rows:
                await table.add(list(rows))
            return int(await table.version())

    async def search(
        self, family: str, dim: int, scope: Scope, vector: np.ndarray, limit: int, where: str = ""
    ) -> list[dict[str, Any]]:
        """The ``limit`` rows of ``scope`` nearest to ``vector`` (cosine), each with ``_distance``."""
        table = await self.table(family, dim)
        if table is None or limit <= 0:
            return []
        async with self._errors(f"search {family}"):
            query = (
                table.vector_search(np.asarray(vector, dtype=np.float32))
                .column("vector")
                .distance_type("cosine")
                .where(scope_filter(scope, where))  # a pre-filter: the scope is applied inside the search
                .limit(limit)
            )
            return list(await query.to_list())

    async def rows(
        self, family: str, dim: int, scope: Scope, where: str = "", columns: Sequence[str] | None = None
    ) -> list[dict[str, Any]]:
        """Every row of ``scope`` in ``family`` matching ``where``."""
        table = await self.table(family, dim)
        if table is None:
            return []
        async with self._errors(f"read {family}"):
            query = table.query().where(scope_filter(scope, where))
            if columns is not None:
                query = query.select(list(columns))
            return list(await query.to_list())

    async def count(self, family: str, dim: int, scope: Scope | None = None) -> int:
        table = await self.table(family, dim)
        if table is None:
            return 0
        async with self._errors(f"count {family}"):
            return int(await table.count_rows(scope_filter(scope) if scope is not None else None))

    async def delete(self, scope: Scope, where: str = "") -> None:
        """Delete ``scope``'s rows matching ``where`` from every table, then drop the old versions
        so nothing deleted survives in the directory's files (DESIGN §9)."""
        for name, table in await self._all_tables():
            async with self._errors(f"remove rows of {name}"):
                await table.delete(scope_filter(scope, where if not name.startswith("nodes") else ""))
        await self.cleanup()

    async def delete_rows(self, family: str, dim: int, scope: Scope, ids: Sequence[str]) -> None:
        """Delete ``scope``'s rows ``ids`` from one table (the rows of an import that did not commit)."""
        table = await self.table(family, dim)
        if table is None or not ids:
            return
        async with self._errors(f"remove rows of {family}"):
            await table.delete(scope_filter(scope, f"id IN ({quoted(ids)})"))  # ids are UUIDs, quoted

    async def delete_ids(self, scope: Scope, block_ids: Sequence[str]) -> None:
        """Forget blocks: their block rows, their lines, and every tree node (the tree is rebuilt next night)."""
        if not block_ids:
            return
        ids = quoted(block_ids)
        for name, table in await self._all_tables():
            column = "block_id" if name.startswith("lines") else "id"
            match = f"{column} IN ({ids})"  # ids are UUIDs, quoted: no user text
            where = scope_filter(scope) if name.startswith("nodes") else scope_filter(scope, match)
            async with self._errors(f"remove rows of {name}"):
                await table.delete(where)
        await self.cleanup()

    async def cleanup(self) -> None:
        """Compact every table and remove every version but the latest (deleted rows leave the disk)."""
        for name, table in await self._all_tables():
            async with self._errors(f"clean up {name}"):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # "removes every version except the latest": intended
                    await table.optimize(cleanup_older_than=timedelta(0), delete_unverified=True)

    async def versions(self) -> dict[str, int]:
        """Every table's current version (recorded by each night run, DESIGN §9)."""
        out: dict[str, int] = {}
        for name, table in await self._all_tables():
            async with self._errors(f"read the version of {name}"):
                out[name] = int(await table.version())
        return out

    async def scope_vectors(
        self, family: str, dim: int, scope: Scope, slug: str, columns: Sequence[str]
    ) -> ScopeVectors | None:
        """The scope's rows of ``family`` (model ``slug``) with their unit vectors as one matrix, kept
        in memory until the table's version changes: recall scores them with one matrix product
        instead of a LanceDB round trip per question. None when the table is missing or the scope
        holds more than ``CACHE_MAX_ROWS`` rows (the caller searches LanceDB instead)."""
        table = await self.table(family, dim)
        if table is None:
            return None
        async with self._errors(f"read {family}"):
            version = int(await table.version())
            key = (family, dim, scope.entity_id, scope.namespace, slug)
            cached = self._vectors.get(key)
            if cached is not None and cached.version == version:
                return cached
            where = scope_filter(scope, f"slug = '{slug.replace(chr(39), chr(39) * 2)}'")
            if await table.count_rows(where) > CACHE_MAX_ROWS:
                return None
            data = await table.query().where(where).select([*columns, "vector"]).to_arrow()
        loaded = ScopeVectors.from_arrow(version, data, columns, dim)
        self._vectors[key] = loaded
        return loaded

    async def tables(self, family: str) -> list[tuple[str, Any]]:
        """The tables of ``family`` in every vector width there is (``lines_384``, ``lines_128``, ...)."""
        return [(name, table) for name, table in await self._all_tables() if name.rpartition("_")[0] == family]

    async def _all_tables(self) -> list[tuple[str, Any]]:
        db = await self._connect()
        async with self._errors("list tables"):
            names = await _list_tables(db)
        found = []
        for name in names:
            family, _, dim = name.rpartition("_")
            if family in FAMILIES and dim.isdigit():
                table = await self.table(family, int(dim))
                if table is not None:
                    found.append((name, table))
        return found


async def _list_tables(db: Any) -> list[str]:
    listed = await db.list_tables() if hasattr(db, "list_tables") else await db.table_names()
    names = getattr(listed, "tables", listed)
    return [str(n) for n in names]


def dumps(value: Any) -> str:
    return json.dumps(value, default=str, sort_keys=True)
