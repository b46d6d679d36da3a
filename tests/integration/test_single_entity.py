"""DESIGN §7, checked on a real workload: every statement of the write, read, grant, night and
forget paths binds one entity (tests/single_entity.py), so the ``mnemo`` and ``vectors`` chambers
can be distributed by ``entity_id``. tests/conftest.py checks every statement of every test the
same way and fails the run on a violation; this test holds the rule even when it runs alone."""

from __future__ import annotations

import psycopg

from mnemo import AsyncArchive, RecallResult, Scope
from tests.entity_sql import REFERENCE_TABLES, analyse
from tests.single_entity import check_trigger
from tests.statement_log import LOG, normalise

ALICE = Scope("alice", "private")
BOB = Scope("bob", "private")


async def _workload(archive: AsyncArchive) -> None:
    """Two entities write, read, share, consolidate and forget."""
    for scope, who in ((ALICE, "Alice"), (BOB, "Bob")):
        for n, line in enumerate(
            [
                f"{who} moved to Lisbon last spring and loves the trams.",
                f"{who}'s sister Maria is a marine biologist in Porto.",
                f"{who} is training for a half marathon in October.",
            ]
        ):
            await archive.record_turn(scope, "s1", "user", line, speaker=who)
            await archive.record_turn(scope, "s1", "assistant", f"Noted, thanks ({n}).")
        await archive.remember(scope, f"{who} is allergic to peanuts", kind="preference")
    pin = await archive.remember(ALICE, "Alice's locker code is 4471")
    assert isinstance(await archive.recall(ALICE, "where does Alice live?", k=5), RecallResult)
    await archive.recall(BOB, "Bob's sister", k=5, read_only=True)
    assert await archive.access.grant(ALICE, "bob") is True
    shared = await archive.recall(ALICE, "allergic to peanuts", k=5, as_entity="bob")
    assert isinstance(shared, RecallResult) and all(h.scope == ALICE for h in shared)
    await archive.context(ALICE, "what is Alice training for?")
    await archive.night_cycle(ALICE)
    await archive.recall(ALICE, "half marathon", k=5)
    await archive.forget(ALICE, pin.id)
    await archive.access.revoke(ALICE, "bob")
    await archive.access.grants(ALICE)
    await archive.purge(BOB)


async def test_the_workload_sends_only_single_entity_statements(archive: AsyncArchive) -> None:
    with LOG.listen() as sent:
        await _workload(archive)
    checked = [s for s in sent if s.verdict.touches]
    violations = sorted(
        {f"{s.verdict.problem}: {normalise(s.sql, 300)} <- {s.site}" for s in sent if s.verdict.problem}
    )
    assert violations == []
    # the check saw the workload: hundreds of statements, a hundred distinct ones, the main tables
    assert len(checked) >= 300
    assert len({s.sql for s in checked}) >= 100
    touched = {table for s in checked for table in analyse(s.sql).touched}
    assert touched >= {"mnemo.turns", "mnemo.memories", "mnemo.grants", "mnemo.blocks", "mnemo.postings"}
    assert touched >= {"mnemo.facts", "mnemo.links", "mnemo.scope_versions", "vectors.universal_384"}


def test_the_reference_tables_are_the_chambers_tables_without_an_entity(database_url: str) -> None:
    """The checker lets the tables without entity_id go beside any entity (reference tables on
    Citus): exactly the tables of the two chambers that have no entity_id column."""
    with psycopg.connect(database_url) as conn:
        rows = conn.execute(
            """SELECT t.table_schema || '.' || t.table_name FROM information_schema.tables t
               WHERE t.table_schema IN ('mnemo', 'vectors') AND t.table_type = 'BASE TABLE'
                 AND NOT EXISTS (SELECT 1 FROM information_schema.columns c WHERE c.table_schema = t.table_schema
                                 AND c.table_name = t.table_name AND c.column_name = 'entity_id')"""
        ).fetchall()
    assert {r[0] for r in rows} == REFERENCE_TABLES


def test_every_trigger_function_touches_only_its_rows_entity(database_url: str) -> None:
    """Triggers send statements no client sends (issue 42, decision 5): each PL/pgSQL trigger
    function of the two chambers is read from the catalogue and its statements checked, bound to the
    firing row's entity (Citus runs a row trigger on that row's shard)."""
    with psycopg.connect(database_url) as conn:
        functions = conn.execute(
            """SELECT p.oid::regprocedure::text, pg_get_functiondef(p.oid) FROM pg_proc p
               JOIN pg_namespace n ON n.oid = p.pronamespace JOIN pg_language l ON l.oid = p.prolang
               WHERE n.nspname IN ('mnemo', 'vectors') AND p.prorettype = 'trigger'::regtype
                 AND l.lanname = 'plpgsql'"""
        ).fetchall()
        triggers = conn.execute(
            """SELECT DISTINCT t.tgfoid::regproc::text FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
               JOIN pg_namespace n ON n.oid = c.relnamespace
               WHERE n.nspname IN ('mnemo', 'vectors') AND NOT t.tgisinternal"""
        ).fetchall()
    assert {name for name, _ in functions} >= {"mnemo.note_scope_change()"}
    assert {r[0] for r in triggers} <= {name.removesuffix("()") for name, _ in functions}  # none unread
    assert {name: check_trigger(definition) for name, definition in functions} == {name: [] for name, _ in functions}
