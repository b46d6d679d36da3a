"""DESIGN §7's rule, checked: every statement mnemo sends binds one entity.

"Every query is single-entity (a grant read is a second single-entity query, never a
cross-entity join)" is what lets the ``mnemo`` and ``vectors`` chambers be distributed by
``entity_id`` (Citus) when one machine is outgrown: a statement that names one entity is routed to
the one node holding it. :func:`check` judges one statement as sent, its text and its parameters:
tests/entity_sql.py finds what binds each table it names (statically, from PostgreSQL's own parse
tree), then the parameter values must name exactly one entity (a statement bound to an entity that
is ``NULL``, or to an empty array, touches no row: that passes too). The statements that are
many-entity by design are allowed by the function that sends them, in :data:`ALLOWED`, each with
its reason and what it is on Citus. The recording of every statement the integration tests send,
and the failure at the end of a run, are in tests/statement_log.py.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from pglast import parse_plpgsql

from tests.entity_sql import Anchor, Plan, analyse

__all__ = ["ALLOWED", "Allowance", "Verdict", "check", "check_trigger", "placeholders"]


@dataclass(frozen=True)
class Allowance:
    reason: str
    citus: str  # what the statement is on a distributed database


# Keyed by the innermost mnemo function on the stack when the statement is sent (its module and
# qualified name): a statement these send may name many entities or none.
ALLOWED: dict[str, Allowance] = {
    "mnemo.store.migrate.apply_migrations": Allowance(
        "schema migrations: DDL and backfills over every row",
        "run once on the coordinator, which propagates DDL to every shard",
    ),
    "mnemo.store.extensions.apply_extensions": Allowance(
        "extension migrations: DDL", "run on the coordinator, propagated to every shard"
    ),
    "mnemo.store.vectors.ensure_space": Allowance(
        "creates a vector space's table, its indexes and its change triggers (DDL)",
        "a distributed table created on the coordinator (create_distributed_table, colocated by entity)",
    ),
    "mnemo.store.scratch.pending_scopes": Allowance(
        "crash recovery lists the scopes that still hold buffered items; each is then flushed by "
        "single-entity statements",
        "a multi-shard read of the small scratch table, run at start-up or by a worker",
    ),
    "mnemo.store.status.refresh_statistics": Allowance(
        "the planner-statistics refresh: ANALYZE (and VACUUM of the postings) of whole tables",
        "a maintenance command Citus propagates to every shard of the table",
    ),
    "mnemo.store.read_index.prune_changes": Allowance(
        "upkeep trims every scope's change log to its newest versions in one statement",
        "a multi-shard UPDATE/DELETE whose joins are all on entity_id (co-located, pushed down to each shard)",
    ),
    "mnemo.store.queue.night_scopes": Allowance(
        "the night scheduler lists the scopes that have turns or memories; each night then runs "
        "single-entity statements",
        "a multi-shard read (its joins are on entity_id, so each shard answers for its own scopes), "
        "run by the worker that schedules the nights",
    ),
    "mnemo.store.scopes.list_scopes": Allowance(
        "administration lists every scope (status, re-embedding every scope in turn)",
        "a multi-shard read of the scopes table, run by an operator or a worker",
    ),
    "mnemo.store.scopes.every_scope_summary": Allowance(
        "administration (mnemo scopes without an entity) counts each scope's rows, every scope",
        "a multi-shard read whose sub-selects are correlated on entity_id (pushed down to each shard)",
    ),
    "mnemo.store.vectors.count_missing": Allowance(
        "at start-up (and in status) the archive counts the items of every scope that lack a vector "
        "of the active model, to say a re-embed is due",
        "a multi-shard count whose joins are on entity_id (pushed down to each shard)",
    ),
    "mnemo.store.vectors.slug_counts": Allowance(
        "mnemo status counts each vector space's rows per model slug, over the whole archive",
        "a multi-shard aggregate run by an operator",
    ),
    "mnemo.store.bench_reads.vacuum_memories": Allowance(
        "a benchmark's bulk fixture: VACUUM (ANALYZE) of the memories table",
        "a maintenance command Citus propagates to every shard",
    ),
    "mnemo.store.bench_reads.drop_hnsw": Allowance(
        "the perf benchmark drops a vector table's HNSW index before its bulk load (issue 42)",
        "DDL Citus propagates to every shard, run by a benchmark on a throw-away database",
    ),
    "mnemo.store.bench_reads.create_indexes": Allowance(
        "the perf benchmark builds the dropped HNSW index again after its bulk load (issue 42)",
        "DDL Citus propagates to every shard, run by a benchmark on a throw-away database",
    ),
    "mnemo.store.status.chamber_counts": Allowance(
        "mnemo status counts the rows of the whole archive",
        "a multi-shard count run by an operator",
    ),
    "mnemo.store.snapshots.table_counts": Allowance(
        "a backup (and a restore's target check) counts every table's rows to write the manifest",
        "a multi-shard count run by the operator taking the backup",
    ),
    "mnemo.store.snapshots.snapshot_facts": Allowance(
        "a backup's manifest counts each vector space's rows per model slug, over the whole archive",
        "a multi-shard aggregate run by the operator taking the backup",
    ),
    "mnemo.store.inspection.visible_scopes": Allowance(
        "the inspector lists the scopes granted to a reader: grants are keyed by their owner, so "
        "finding them by grantee reads every owner's grants (a decision for Citus, see the report)",
        "a multi-shard read of the small grants table; a grantee-keyed copy of the grants would make it "
        "single-shard if it grows",
    ),
}
_BULK_STATISTICS = Allowance(
    "fresh planner statistics after a bulk import: ANALYZE (VACUUM for the postings) of a whole table",
    "a maintenance command Citus propagates to every shard of the table",
)
ALLOWED |= {
    "mnemo.store.turns.analyze": _BULK_STATISTICS,
    "mnemo.store.lexicon.analyze": _BULK_STATISTICS,
    "mnemo.store.vectors.analyze": _BULK_STATISTICS,
}

_PLACEHOLDER = re.compile(rb"%(?:\((?P<name>[^)]+)\))?(?P<format>[sbt%])")


@dataclass(frozen=True)
class Verdict:
    touches: bool  # names a mnemo/vectors table
    problem: str | None  # why it is not single-entity (None: it is, or it is allowed)
    allowed: str | None = None  # the ALLOWED key that let it through


def placeholders(query: str | bytes, params: Sequence[Any] | Mapping[str, Any] | None) -> tuple[str, list[Any]]:
    """psycopg's ``%s``/``%(name)s`` query as the server gets it (``$n``) and the value of each ``$n``.

    Done as psycopg does it (psycopg/_queries.py): without parameters the text is sent as it is;
    a name used twice is one parameter; ``%%`` is a percent sign."""
    text = query.encode() if isinstance(query, str) else query
    if params is None:
        return text.decode(), []
    values: list[Any] = []
    numbers: dict[str, int] = {}
    positional = iter(params) if not isinstance(params, Mapping) else iter(())

    def convert(match: re.Match[bytes]) -> bytes:
        if match["format"] == b"%":
            return b"%"
        if match["name"] is None:
            values.append(next(positional))
            return b"$%d" % len(values)
        name = match["name"].decode()
        if name not in numbers:
            values.append(params[name])  # type: ignore[index]
            numbers[name] = len(values)
        return b"$%d" % numbers[name]

    return _PLACEHOLDER.sub(convert, text).decode(), values


@lru_cache(maxsize=4096)
def _plan(sql: str) -> Plan:
    return analyse(sql)


def check(sql: str, values: Sequence[Any] = (), site: str | None = None, rows: Sequence[Sequence[Any]] = ()) -> Verdict:
    """Whether the statement ``sql`` (``$n`` placeholders), sent with ``values`` (and, for a COPY
    FROM STDIN, the ``rows`` it sent) from the mnemo function ``site``, reads or writes one entity's
    rows of the mnemo/vectors chambers only."""
    plan = _plan(sql)
    if not plan.touched:
        return Verdict(touches=False, problem=None)
    problem = "; ".join(plan.problems) or _entities_problem(plan, values, rows)
    if problem and site in ALLOWED:
        return Verdict(touches=True, problem=None, allowed=site)
    return Verdict(touches=True, problem=problem or None)


def _entities_problem(plan: Plan, values: Sequence[Any], rows: Sequence[Sequence[Any]]) -> str:
    entities: set[str] = set()
    for anchor in plan.anchors:
        entities |= _entities(anchor, values, rows)
    if len(entities) > 1:
        shown = ", ".join(sorted(entities)[:4])
        return f"binds {len(entities)} entities at run time ({shown}{', ...' if len(entities) > 4 else ''})"
    return ""


def _entities(anchor: Anchor, values: Sequence[Any], rows: Sequence[Sequence[Any]]) -> set[str]:
    if anchor.copied >= 0:
        return {str(row[anchor.copied]) for row in rows if row[anchor.copied] is not None}
    value: Any = anchor.literal if anchor.param == 0 else values[anchor.param - 1]
    if anchor.many and isinstance(value, str):  # an array literal: '{a,b}'
        value = [v.strip().strip('"') for v in value.strip("{}").split(",") if v.strip()]
    items = value if anchor.many and value is not None else [value]
    return {str(v) for v in items if v is not None}


# --- trigger functions ---------------------------------------------------------------------------
_ROW_ASSIGNED = re.compile(r"^\s*(\w+)\s*:=\s*(new|old)\s*$", re.IGNORECASE)


def check_trigger(definition: str) -> list[str]:
    """The problems of a PL/pgSQL trigger function's statements (``definition``: its ``CREATE
    FUNCTION`` text, as ``pg_get_functiondef`` gives it or a migration holds it).

    A row-level trigger runs, on Citus, on the shard of the row that fired it (issue 42, decision 5),
    so each statement of its body must touch that row's entity only: ``NEW.entity_id``,
    ``OLD.entity_id`` and the ``entity_id`` of a record assigned from ``NEW`` or ``OLD`` are that
    entity (an update never moves a row to another entity: ``entity_id`` is the distribution column),
    and each statement is judged as :func:`check` judges one sent with that one entity, which must be
    the only entity it binds (a literal entity is another one). Dynamic SQL
    (``EXECUTE``) cannot be judged, so it is a problem in a trigger function."""
    try:
        tree = parse_plpgsql(definition)
    except Exception as exc:  # pglast's ParseError
        return [f"cannot be parsed: {exc}"]
    exprs: list[tuple[int, str]] = []
    problems: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for kind, value in node.items():
                if kind == "PLpgSQL_stmt_dynexecute":
                    problems.append(f"dynamic SQL (EXECUTE, line {value.get('lineno')}) cannot be checked")
                if kind == "PLpgSQL_expr":
                    exprs.append((int(value.get("parseMode", 0)), str(value["query"])))
                walk(value)
        elif isinstance(node, list):
            for child in node:
                walk(child)

    walk(tree)
    rows = {"new", "old"} | {m[1].lower() for _, q in exprs if (m := _ROW_ASSIGNED.match(q))}
    entity = re.compile(rf"\b(?:{'|'.join(sorted(rows))})\.entity_id\b", re.IGNORECASE)
    for mode, query in exprs:
        if mode == 3:  # an assignment: its expression
            query = query.split(":=", 1)[1]
        statement = entity.sub("$1", query if mode == 0 else f"SELECT {query}")
        verdict = check(statement, ["the row's entity"])
        others = sorted(str(a.literal) for a in _plan(statement).anchors if a.param != 1)
        problem = verdict.problem or (others and f"binds {', '.join(others)} beside the row's entity")
        if problem:
            problems.append(f"{problem}: {' '.join(query.split())}")
    return problems
