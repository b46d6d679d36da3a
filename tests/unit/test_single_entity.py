"""The single-entity checker (DESIGN §7; tests/single_entity.py, tests/entity_sql.py): statements
that bind one entity pass, statements that could touch several fail, whatever their shape."""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import Any

import pytest

from tests.single_entity import ALLOWED, check, check_trigger, placeholders

E, F = "entity-a", "entity-b"

SINGLE: list[tuple[str, list[Any]]] = [
    ("SELECT content FROM mnemo.memories WHERE entity_id = $1 AND namespace = $2", [E, "ns"]),
    ("SELECT 1 FROM mnemo.memories m WHERE (m.entity_id, m.namespace) = ($1, $2)", [E, "ns"]),
    ("SELECT 1 FROM mnemo.memories WHERE entity_id = 'entity-a'", []),
    ("SELECT 1 FROM mnemo.memories WHERE entity_id IN ($1)", [E]),
    ("SELECT 1 FROM mnemo.memories WHERE entity_id = ANY($1::text[])", [[E]]),
    ("SELECT 1 FROM mnemo.memories WHERE entity_id = ANY($1::text[])", [[E, E]]),
    # a grant read: the owner is named, so it is the owner's shard
    ("SELECT grantee FROM mnemo.grants WHERE entity_id = $1 AND namespace = $2 AND grantee = $3", [E, "ns", F]),
    # joins carry the binding through entity_id equalities (ON, USING, WHERE)
    (
        """SELECT m.id FROM mnemo.memories m JOIN mnemo.blocks b ON b.entity_id = m.entity_id AND b.memory_id = m.id
           JOIN vectors.universal_384 v USING (entity_id) WHERE m.entity_id = $1""",
        [E],
    ),
    ("SELECT 1 FROM mnemo.memories m, mnemo.links l WHERE l.entity_id = m.entity_id AND m.entity_id = $1", [E]),
    ("SELECT 1 FROM mnemo.memories m LEFT JOIN mnemo.links l ON l.entity_id = m.entity_id WHERE m.entity_id = $1", [E]),
    # two anchors with one value
    ("SELECT 1 FROM mnemo.memories a, mnemo.turns b WHERE a.entity_id = $1 AND b.entity_id = $2", [E, E]),
    # sub-selects: derived tables, CTEs, correlated EXISTS
    (
        """WITH hit AS (SELECT entity_id, id FROM mnemo.memories WHERE entity_id = $1 AND id = ANY($2))
           UPDATE mnemo.memories m SET access_count = access_count + 1 FROM hit
           WHERE m.entity_id = hit.entity_id AND m.id = hit.id""",
        [E, ["x"]],
    ),
    (
        "SELECT d.id FROM (SELECT * FROM mnemo.turns WHERE entity_id = $1) d JOIN mnemo.memories m USING (entity_id)",
        [E],
    ),
    (
        """SELECT m.id FROM mnemo.memories m WHERE m.entity_id = $1
           AND NOT EXISTS (SELECT 1 FROM mnemo.links l WHERE l.entity_id = m.entity_id AND l.src = m.id)""",
        [E],
    ),
    # writes: the value inserted as entity_id binds the row
    ("INSERT INTO mnemo.turns (entity_id, id, content) VALUES ($1, $2, $3), ($1, $4, $5)", [E, 1, "a", 2, "b"]),
    ("INSERT INTO mnemo.turns (entity_id, id) VALUES ($1, $2), ($3, $4)", [E, 1, E, 2]),
    (
        """INSERT INTO mnemo.co_access (entity_id, a, b) SELECT $1, p.a, p.b FROM unnest($2::uuid[], $3::uuid[]) p(a, b)
           ON CONFLICT (entity_id, a, b) DO UPDATE SET n = co_access.n + 1""",
        [E, [], []],
    ),
    (
        """INSERT INTO mnemo.links (entity_id, src)
           SELECT m.entity_id, m.id FROM mnemo.memories m WHERE m.entity_id = $1""",
        [E],
    ),
    ("DELETE FROM mnemo.scratch WHERE entity_id = $1 AND id = ANY($2) RETURNING *", [E, []]),
    # an entity that is NULL, or an empty array of them, touches no row at all
    ("SELECT 1 FROM mnemo.memories WHERE entity_id = $1", [None]),
    ("SELECT 1 FROM mnemo.memories WHERE entity_id = ANY($1)", [[]]),
    # the reference tables (no entity_id) go beside anything
    ("SELECT value FROM mnemo.meta WHERE key = $1", ["slug"]),
    ("SELECT t.table_name FROM vectors.spaces t", []),
]

MANY: list[tuple[str, list[Any], str]] = [
    ("SELECT count(*) FROM mnemo.memories", [], "mnemo.memories (as memories) is not restricted"),
    ("SELECT 1 FROM mnemo.memories WHERE namespace = $1", ["ns"], "not restricted"),
    ("SELECT 1 FROM mnemo.memories WHERE entity_id = $1 OR namespace = $2", [E, "ns"], "not restricted"),
    ("SELECT 1 FROM mnemo.memories WHERE entity_id <> $1", [E], "not restricted"),
    ("SELECT 1 FROM mnemo.memories WHERE entity_id = ANY($1)", [[E, F]], "binds 2 entities"),
    ("SELECT 1 FROM mnemo.memories WHERE entity_id IN ($1, $2)", [E, F], "binds 2 entities"),
    ("SELECT 1 FROM mnemo.memories a, mnemo.turns b WHERE a.entity_id = $1 AND b.entity_id = $2", [E, F], "binds 2"),
    # a cross-entity join: the grant's grantee is not an entity_id
    (
        """SELECT m.id FROM mnemo.grants g JOIN mnemo.memories m ON m.entity_id = g.entity_id
           AND m.namespace = g.namespace WHERE g.grantee = $1""",
        [F],
        "mnemo.grants (as g) is not restricted",
    ),
    # a LEFT JOIN's condition does not restrict its preserved side
    ("SELECT 1 FROM mnemo.memories m LEFT JOIN mnemo.links l ON m.entity_id = $1", [E], "mnemo.memories (as m)"),
    # a correlated sub-select does not restrict the outer rows
    (
        "SELECT 1 FROM mnemo.memories m WHERE EXISTS (SELECT 1 FROM mnemo.links l WHERE l.entity_id = $1)",
        [E],
        "mnemo.memories (as m)",
    ),
    ("DELETE FROM mnemo.turns WHERE created_at < now()", [], "mnemo.turns (as turns) is not restricted"),
    ("UPDATE mnemo.memories SET alpha = 1 WHERE id = $1", ["x"], "mnemo.memories (as memories)"),
    ("INSERT INTO mnemo.turns (entity_id, id) VALUES ($1, $2), ($3, $4)", [E, 1, F, 2], "binds 2 entities"),
    ("INSERT INTO mnemo.turns (id) VALUES ($1)", [1], "names no entity_id column"),
    ("INSERT INTO mnemo.links (entity_id, src) SELECT entity_id, id FROM mnemo.memories", [], "not restricted"),
    ("ANALYZE mnemo.memories", [], "a utility statement"),
    ("COPY mnemo.turns TO STDOUT", [], "copies every entity's rows"),
    ("SELECT 1 FROM mnemo.memories WHERE", [], "cannot be parsed"),
]


@pytest.mark.parametrize(("statement", "values"), SINGLE)
def test_a_statement_bound_to_one_entity_passes(statement: str, values: list[Any]) -> None:
    verdict = check(statement, values)
    assert verdict.touches
    assert verdict.problem is None


@pytest.mark.parametrize(("statement", "values", "problem"), MANY)
def test_a_statement_that_may_touch_several_entities_fails(statement: str, values: list[Any], problem: str) -> None:
    verdict = check(statement, values)
    assert verdict.touches
    assert verdict.problem is not None
    assert problem in verdict.problem


def test_a_copy_is_judged_by_the_rows_it_sends() -> None:
    copy = "COPY vectors.universal_384 (namespace, entity_id, item_id) FROM STDIN WITH (FORMAT BINARY)"
    assert check(copy, rows=[("ns", E, 1), ("ns", E, 2)]).problem is None
    assert "binds 2 entities" in (check(copy, rows=[("ns", E, 1), ("other", F, 2)]).problem or "")
    assert "names no entity_id" in (check("COPY mnemo.turns (id) FROM STDIN").problem or "")


def test_statements_outside_the_two_chambers_are_not_judged() -> None:
    for statement in [
        "SELECT pg_advisory_xact_lock($1)",
        "INSERT INTO traces.retrievals (id) VALUES ($1)",
        "SELECT queue.mnemo_defer_job($1)",
        "SET plan_cache_mode = force_custom_plan",
    ]:
        assert check(statement, [1]).touches is False


def test_an_allowed_function_may_send_a_many_entity_statement() -> None:
    statement = "SELECT DISTINCT entity_id, namespace FROM mnemo.scratch ORDER BY 1, 2"
    assert check(statement, site="mnemo.write.gates.recover").problem is not None
    verdict = check(statement, site="mnemo.store.scratch.pending_scopes")
    assert (verdict.problem, verdict.allowed) == (None, "mnemo.store.scratch.pending_scopes")


@pytest.mark.parametrize("site", sorted(ALLOWED))
def test_each_allowance_names_a_real_function_and_says_why(site: str) -> None:
    module, _, name = site.rpartition(".")
    while not hasattr(importlib.import_module(module), name.split(".")[0]):
        module, _, outer = module.rpartition(".")
        name = f"{outer}.{name}"
    target: Any = importlib.import_module(module)
    for part in name.split("."):
        target = getattr(target, part)
    assert callable(target)
    assert len(ALLOWED[site].reason) > 20
    assert len(ALLOWED[site].citus) > 20


def test_placeholders_are_numbered_as_psycopg_numbers_them() -> None:
    assert placeholders("SELECT %s, %b, %t", (1, 2, 3)) == ("SELECT $1, $2, $3", [1, 2, 3])
    assert placeholders("SELECT %(a)s, %(b)s, %(a)s", {"a": 1, "b": 2}) == ("SELECT $1, $2, $1", [1, 2])
    assert placeholders("SELECT 'x%%' || %s", ("y",)) == ("SELECT 'x%' || $1", ["y"])
    assert placeholders(b"SELECT '100%'", None) == ("SELECT '100%'", [])


# --- trigger functions (issue 42, decision 5): their statements touch the firing row's entity only
_MIGRATIONS = Path(__file__).resolve().parents[2] / "src" / "mnemo" / "store" / "migrations"


def _trigger_function(migration: str, name: str) -> str:
    text = (_MIGRATIONS / migration).read_text()
    found = re.search(rf"CREATE FUNCTION mnemo\.{name}\(\) RETURNS trigger.*?END \$\$;", text, re.DOTALL)
    assert found is not None
    return found.group(0)


def test_the_scope_version_trigger_touches_only_its_rows_entity() -> None:
    assert check_trigger(_trigger_function("0023_scope_versions_per_scope.sql", "note_scope_change")) == []


@pytest.mark.parametrize(
    ("old", "new", "problem"),
    [
        ("s.entity_id = r.entity_id AND s.namespace", "s.namespace", "scope_versions (as s) is not restricted"),
        ("VALUES (r.entity_id, r.namespace, v, item)", "VALUES ('entity-b', r.namespace, v, item)", "binds entity-b"),
        ("RETURN NULL;", "EXECUTE 'DELETE FROM mnemo.scope_changes'; RETURN NULL;", "dynamic SQL"),
        ("RETURN NULL;", "v := (SELECT max(version) FROM mnemo.scope_versions); RETURN NULL;", "not restricted"),
    ],
)
def test_a_trigger_that_may_touch_another_entitys_rows_fails(old: str, new: str, problem: str) -> None:
    body = _trigger_function("0023_scope_versions_per_scope.sql", "note_scope_change")
    assert old in body
    problems = check_trigger(body.replace(old, new, 1))
    assert any(problem in p for p in problems), problems


def test_the_statement_level_triggers_of_0018_would_fail() -> None:
    """The triggers 0023 replaced: dynamic SQL over transition tables, and a loop over two scopes."""
    assert check_trigger(_trigger_function("0018_scope_versions.sql", "note_scope_changes"))
    assert check_trigger(_trigger_function("0018_scope_versions.sql", "note_scope_row_change"))
