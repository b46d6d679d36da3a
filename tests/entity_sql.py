"""The static half of the single-entity check (DESIGN §7): which tables a statement reads or
writes, and what binds each one to an entity.

The statement is parsed by PostgreSQL's own parser (pglast wraps libpg_query), so quoting,
comments, CTEs, sub-selects, joins and ``INSERT ... SELECT`` are read as the server reads them.
Each query level (a SELECT, an INSERT, UPDATE or DELETE, a sub-select, a CTE) names its FROM
entries; an entry's ``entity_id`` is *bound* when an AND-ed condition of its level equates it to
an anchor (a ``$n`` parameter or a literal; ``= ANY($n)`` or ``IN (...)`` make an anchor whose
values are all entities) or to the ``entity_id`` of a bound entry: the join equalities of a level
propagate bindings as the planner's equivalence classes do (and as Citus' router planner uses
them to send a query to one shard). A LEFT JOIN's condition binds only its nullable side; a
correlated sub-select may be bound by an outer entry but never binds one; a derived table (a
sub-select or a CTE) carries the bindings of the ``entity_id`` it returns; an INSERT's target is
bound by the value it inserts as ``entity_id``. The run-time half (tests/single_entity.py)
then checks that every anchor's value names one and the same entity.

Why not EXPLAIN: a plan shows the conditions a scan applies, but not which came from the
statement and which the planner proved, nothing for an INSERT's rows, and it needs the
statement's transaction (temporary tables, locks); parsing needs nothing but the text.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from pglast import ast, parse_sql
from pglast.enums import A_Expr_Kind, JoinType, SetOperation

__all__ = ["REFERENCE_TABLES", "SCHEMAS", "Anchor", "Plan", "analyse"]

SCHEMAS = ("mnemo", "vectors")
# The tables of the two chambers without an entity_id: one row or a few per database (the
# catalogue of what is installed). On Citus they are reference tables, copied to every node, so a
# statement may read or write them beside one entity's rows.
REFERENCE_TABLES = frozenset(
    {
        "mnemo.meta",  # active embedder slug and other per-database facts
        "mnemo.cortex",  # the id of the LanceDB directory this database owns (one row)
        "mnemo.extensions",  # installed extensions
        "mnemo.extension_migrations",  # their applied migrations
        "mnemo.schema_migrations",  # mnemo's applied migrations
        "vectors.spaces",  # the vector spaces (one table each)
    }
)
_LEVELS = (ast.SelectStmt, ast.InsertStmt, ast.UpdateStmt, ast.DeleteStmt)
_STRUCTURE = frozenset({"fromClause", "withClause", "larg", "rarg", "relation", "usingClause", "selectStmt", "cols"})


@dataclass(frozen=True)
class Anchor:
    """What a bound ``entity_id`` equals: parameter ``$param``, ``literal``, or a column of the rows a
    COPY sends; ``many`` when the value is an array of entities (``= ANY(...)``)."""

    param: int = 0
    literal: str | None = None
    many: bool = False
    copied: int = -1  # COPY FROM STDIN: the position of entity_id in each row sent


@dataclass(frozen=True)
class Plan:
    """What one statement text touches and what must hold of its parameters."""

    touched: frozenset[str]  # every mnemo/vectors table named
    anchors: frozenset[Anchor]  # their values must name one entity
    problems: tuple[str, ...]  # reasons it is not single-entity whatever the parameters


@dataclass(eq=False)
class _Item:
    """One FROM entry (or an INSERT/UPDATE/DELETE target) of a query level."""

    alias: str
    level: _Level
    kind: str  # "table" (has entity_id), "derived" (returns entity_id), "other"
    table: str = ""
    anchors: set[Anchor] = field(default_factory=set)


@dataclass(eq=False)
class _Level:
    parent: _Level | None
    items: list[_Item] = field(default_factory=list)
    ctes: dict[str, list[_Term]] = field(default_factory=dict)


_Term = Anchor | _Item


def analyse(sql: str) -> Plan:
    """The plan of ``sql`` (``$n`` placeholders; several statements allowed)."""
    try:
        statements = parse_sql(sql)
    except Exception as exc:  # pglast's ParseError, or a grammar it cannot build nodes for
        return Plan(frozenset({"(a statement that cannot be parsed)"}), frozenset(), (f"cannot be parsed: {exc}",))
    walker = _Walker()
    for raw in statements:
        walker.statement(raw.stmt)
    return walker.plan()


class _Walker:
    def __init__(self) -> None:
        self.items: list[_Item] = []
        self.edges: list[tuple[_Term, _Item]] = []
        self.touched: set[str] = set()
        self.problems: list[str] = []

    # -- statements ----------------------------------------------------------------------------
    def statement(self, node: Any) -> None:
        if isinstance(node, _LEVELS):
            self.level(node, None, "entity_id")
            return
        if isinstance(node, ast.CopyStmt):
            self.copy(node)
            return
        if isinstance(node, ast.CreateTableAsStmt) and node.into.rel.schemaname not in SCHEMAS:
            self.level(node.query, None, "entity_id")  # a temporary table filled from a query
            return
        names = sorted(_relations(node))
        self.touched.update(names)
        if names:
            self.problems.append(f"{type(node).__name__} on {', '.join(names)} (a utility statement)")

    def level(self, node: Any, parent: _Level | None, want: str | int) -> list[_Term]:
        """Walk one query level; the terms of the column ``want`` (a name or a position) it returns."""
        if isinstance(node, ast.SelectStmt) and node.op != SetOperation.SETOP_NONE:
            outer = self.with_(node.withClause, parent)
            return self.level(node.larg, outer, want) + self.level(node.rarg, outer, want)
        level = self.with_(getattr(node, "withClause", None), parent)
        if isinstance(node, ast.InsertStmt):
            return self.insert(node, level, want)
        if isinstance(node, ast.UpdateStmt | ast.DeleteStmt):
            target = self.relation(node.relation, level)
            self.from_(node.fromClause if isinstance(node, ast.UpdateStmt) else node.usingClause, level)
            self.conditions(node.whereClause, level, None)
            self.sublinks(node, level)
            returning = node.returningClause.exprs if node.returningClause else ()
            return self.returned(returning, level, want, [target])
        self.from_(node.fromClause, level)
        self.conditions(node.whereClause, level, None)
        self.sublinks(node, level)
        return self.returned(node.targetList or (), level, want, level.items)

    def copy(self, node: ast.CopyStmt) -> None:
        """``COPY (query) TO``: the query's; ``COPY table (columns) FROM STDIN``: the rows' entity_id."""
        if node.query is not None:
            self.level(node.query, None, "entity_id")
            return
        target = self.relation(node.relation, _Level(None))
        names = [n.sval for n in node.attlist or ()]
        if target.kind != "table":
            return
        if not node.is_from:
            self.problems.append(f"COPY {target.table} TO copies every entity's rows")
        elif "entity_id" not in names:
            self.problems.append(f"COPY {target.table} names no entity_id column")
        else:
            target.anchors.add(Anchor(copied=names.index("entity_id")))

    def with_(self, clause: ast.WithClause | None, parent: _Level | None) -> _Level:
        level = _Level(parent)
        for cte in clause.ctes if clause else ():
            level.ctes[cte.ctename] = self.level(cte.ctequery, level, "entity_id")
        return level

    def insert(self, node: ast.InsertStmt, level: _Level, want: str | int) -> list[_Term]:
        target = self.relation(node.relation, level)
        names = [c.name for c in node.cols or ()]
        select = node.selectStmt
        if target.kind == "table" and "entity_id" not in names:
            self.problems.append(f"INSERT INTO {target.table} names no entity_id column")
        elif target.kind == "table":
            if select is not None and select.valuesLists:
                position = names.index("entity_id")
                for row in select.valuesLists:
                    self.edge(_term(row[position], level), target)
            elif select is not None:
                for term in self.level(select, level, names.index("entity_id")):
                    self.edge(term, target)
        if select is not None and select.valuesLists:
            self.sublinks(select, level)
        elif select is not None and (target.kind != "table" or "entity_id" not in names):
            self.level(select, level, "entity_id")
        self.sublinks(node, level)
        returning = node.returningClause.exprs if node.returningClause else ()
        return self.returned(returning, level, want, [target])

    def returned(self, targets: Iterable[Any], level: _Level, want: str | int, star: list[_Item]) -> list[_Term]:
        """The terms of the output column ``want`` among ``targets`` (``*`` stands for ``star``)."""
        found: list[_Term | None] = []
        for position, target in enumerate(targets):
            value = target.val
            fields = value.fields if isinstance(value, ast.ColumnRef) else ()
            if fields and isinstance(fields[-1], ast.A_Star):
                items = star if len(fields) == 1 else [i for i in level.items if i.alias == fields[0].sval]
                found += [i for i in items if i.kind != "other"] if want == "entity_id" else []
                continue
            name = target.name or (fields[-1].sval if fields else None)
            if want in (name, position):
                found.append(_term(value, level))
        return [t for t in found if t is not None]

    # -- FROM lists and conditions ---------------------------------------------------------------
    def from_(self, entries: Iterable[Any] | None, level: _Level) -> list[_Item]:
        added: list[_Item] = []
        for entry in entries or ():
            if isinstance(entry, ast.RangeVar):
                added.append(self.relation(entry, level))
            elif isinstance(entry, ast.RangeSubselect):
                alias = entry.alias.aliasname if entry.alias else ""
                added.append(self.derived(alias, self.level(entry.subquery, level, "entity_id"), level))
            elif isinstance(entry, ast.JoinExpr):
                added += self.join(entry, level)
            else:  # a function in FROM (unnest, generate_series, ...)
                alias = entry.alias.aliasname if getattr(entry, "alias", None) else ""
                added.append(self.add(_Item(alias, level, "other")))
                self.sublinks(entry, level)
        return added

    def join(self, node: ast.JoinExpr, level: _Level) -> list[_Item]:
        left, right = self.from_([node.larg], level), self.from_([node.rarg], level)
        bindable = {JoinType.JOIN_INNER: None, JoinType.JOIN_LEFT: right, JoinType.JOIN_RIGHT: left}
        if node.jointype not in bindable:  # a FULL join binds neither side
            return left + right
        only = bindable[node.jointype]
        self.conditions(node.quals, level, only)
        if node.quals is not None:
            self.sublinks(node.quals, level)
        if any(name.sval == "entity_id" for name in node.usingClause or ()):
            for a in (i for i in left if i.kind != "other"):
                for b in (i for i in right if i.kind != "other"):
                    self.equal(a, b, level, only)
        return left + right

    def relation(self, node: ast.RangeVar, level: _Level) -> _Item:
        alias = node.alias.aliasname if node.alias else node.relname
        if node.schemaname in SCHEMAS:
            table = f"{node.schemaname}.{node.relname}"
            self.touched.add(table)
            kind = "other" if table in REFERENCE_TABLES else "table"
            return self.add(_Item(alias, level, kind, table))
        scope: _Level | None = level
        while node.schemaname is None and scope is not None:
            if node.relname in scope.ctes:
                return self.derived(alias, scope.ctes[node.relname], level)
            scope = scope.parent
        return self.add(_Item(alias, level, "other"))

    def derived(self, alias: str, terms: list[_Term], level: _Level) -> _Item:
        item = self.add(_Item(alias, level, "derived" if terms else "other"))
        for term in terms:
            self.edge(term, item)
        return item

    def conditions(self, expr: Any, level: _Level, only: list[_Item] | None) -> None:
        """Record the equalities among the AND-ed conditions of ``expr``."""
        for cond in _conjuncts(expr):
            if not isinstance(cond, ast.A_Expr) or [n.sval for n in cond.name] != ["="]:
                continue
            if cond.kind == A_Expr_Kind.AEXPR_OP:
                pairs = _pairs(cond.lexpr, cond.rexpr)
                for left, right in pairs:
                    self.equal(_term(left, level), _term(right, level), level, only)
            elif cond.kind == A_Expr_Kind.AEXPR_OP_ANY:
                self.equal(_term(cond.lexpr, level), _many(cond.rexpr), level, only)
            elif cond.kind == A_Expr_Kind.AEXPR_IN:
                for value in cond.rexpr if isinstance(cond.rexpr, tuple | list) else ():
                    self.equal(_term(cond.lexpr, level), _term(value, level), level, only)

    def equal(self, a: _Term | None, b: _Term | None, level: _Level, only: list[_Item] | None) -> None:
        """``a = b`` holds for the rows of ``level``: each side binds the other when it is an entry of
        this level (an outer one is bound by its own level) that the join lets the condition bind."""
        for src, dst in ((a, b), (b, a)):
            if src is not None and isinstance(dst, _Item) and dst.level is level and (only is None or dst in only):
                self.edge(src, dst)

    def edge(self, src: _Term | None, dst: _Item) -> None:
        if src is not None:
            self.edges.append((src, dst))

    def add(self, item: _Item) -> _Item:
        item.level.items.append(item)
        self.items.append(item)
        return item

    def sublinks(self, node: Any, level: _Level) -> None:
        """Walk the sub-selects inside ``node``'s expressions as levels nested in ``level``."""
        for child in _children(node):
            if isinstance(child, _LEVELS):
                self.level(child, level, "entity_id")
            else:
                self.sublinks(child, level)

    # -- the result ----------------------------------------------------------------------------
    def plan(self) -> Plan:
        changed = True
        while changed:  # propagate bindings to a fixpoint
            changed = False
            for src, dst in self.edges:
                found = {src} if isinstance(src, Anchor) else src.anchors
                if not found <= dst.anchors:
                    dst.anchors |= found
                    changed = True
        tables = [i for i in self.items if i.kind == "table"]
        problems = [f"{i.table} (as {i.alias}) is not restricted to one entity" for i in tables if not i.anchors]
        anchors = frozenset(a for i in tables for a in i.anchors)
        return Plan(frozenset(self.touched), anchors, (*self.problems, *problems))


def _children(node: Any) -> Iterator[Any]:
    for name in getattr(node, "__slots__", ()):
        if name in _STRUCTURE and isinstance(node, _LEVELS):
            continue
        value = getattr(node, name, None)
        for child in value if isinstance(value, tuple | list) else (value,):
            if isinstance(child, ast.Node):
                yield child


def _relations(node: Any) -> Iterator[str]:
    if isinstance(node, ast.RangeVar) and node.schemaname in SCHEMAS:
        yield f"{node.schemaname}.{node.relname}"
    for name in getattr(node, "__slots__", ()):
        value = getattr(node, name, None)
        for child in value if isinstance(value, tuple | list) else (value,):
            if isinstance(child, ast.Node):
                yield from _relations(child)


def _conjuncts(expr: Any) -> Iterator[Any]:
    if isinstance(expr, ast.BoolExpr) and expr.boolop == 0:  # AND
        for arg in expr.args:
            yield from _conjuncts(arg)
    elif expr is not None:
        yield expr


def _pairs(left: Any, right: Any) -> list[tuple[Any, Any]]:
    if isinstance(left, ast.RowExpr) and isinstance(right, ast.RowExpr) and len(left.args) == len(right.args):
        return list(zip(left.args, right.args, strict=True))
    return [(left, right)]


def _strip(expr: Any) -> Any:
    while isinstance(expr, ast.TypeCast | ast.CollateClause):
        expr = expr.arg
    return expr


def _term(expr: Any, level: _Level) -> _Term | None:
    """The anchor or the FROM entry whose entity_id ``expr`` is; None for anything else."""
    expr = _strip(expr)
    if isinstance(expr, ast.ParamRef):
        return Anchor(param=expr.number)
    if isinstance(expr, ast.A_Const) and isinstance(expr.val, ast.String):
        return Anchor(literal=expr.val.sval)
    if not isinstance(expr, ast.ColumnRef) or not isinstance(expr.fields[-1], ast.String):
        return None
    if expr.fields[-1].sval != "entity_id" or len(expr.fields) > 2:
        return None
    qualifier = expr.fields[0].sval if len(expr.fields) == 2 else None
    return _resolve(level, qualifier)


def _resolve(level: _Level | None, qualifier: str | None) -> _Item | None:
    while level is not None:
        if qualifier is not None:
            named = [i for i in level.items if i.alias == qualifier]
            if named:
                return named[0]
        else:
            having = [i for i in level.items if i.kind != "other"]
            if len(having) == 1:
                return having[0]
            if having:
                return None  # ambiguous: PostgreSQL would refuse it too
        level = level.parent
    return None


def _many(expr: Any) -> Anchor | None:
    """The anchor of ``= ANY(expr)``: a parameter or literal holding an array of entities."""
    expr = _strip(expr)
    if isinstance(expr, ast.ParamRef):
        return Anchor(param=expr.number, many=True)
    if isinstance(expr, ast.A_Const) and isinstance(expr.val, ast.String):
        return Anchor(literal=expr.val.sval, many=True)
    return None
