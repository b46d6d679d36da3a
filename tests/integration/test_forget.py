"""Forgetting an item and purging a scope remove them from every chamber (issue 6 item 5)."""

from __future__ import annotations

import uuid

import psycopg
import pytest
from psycopg import sql

from mnemo import AsyncArchive, InvalidContentError, Scope, Settings, UnknownItemError, UnknownScopeError
from mnemo.embed import Embeddings
from tests.conftest import snapshot

ME = Scope("forgetful", "notes")
OTHER = Scope("bystander", "notes")


def _count(url: str, tables_sql: str, where: str, args: tuple[object, ...]) -> dict[str, int]:
    """Rows matching ``where`` in each table ``tables_sql`` lists (non-zero counts only)."""
    found: dict[str, int] = {}
    with psycopg.connect(url) as conn:
        for schema, table in conn.execute(tables_sql).fetchall():  # type: ignore[arg-type]
            query = sql.SQL("SELECT count(*) FROM {} AS t WHERE {}").format(
                sql.Identifier(schema, table),
                sql.SQL(where),  # type: ignore[arg-type]  # test-only fixed clauses
            )
            row = conn.execute(query, args).fetchone()
            if row and row[0]:
                found[f"{schema}.{table}"] = int(row[0])
    return found


CHAMBER_TABLES = (
    "SELECT table_schema, table_name FROM information_schema.tables "
    "WHERE table_schema IN ('mnemo', 'vectors', 'traces') AND table_type = 'BASE TABLE'"
)


def find_anywhere(url: str, needle: str) -> dict[str, int]:
    """Rows of every table in the mnemo, vectors and traces chambers whose text form contains ``needle``."""
    return _count(url, CHAMBER_TABLES, "t::text LIKE %s", (f"%{needle}%",))


def scope_rows(url: str, scope: Scope) -> dict[str, int]:
    """Rows of one scope in every chamber table that has scope columns."""
    tables = (
        "SELECT c.table_schema, c.table_name FROM information_schema.columns c "
        "JOIN information_schema.tables t USING (table_schema, table_name) "
        "WHERE c.table_schema IN ('mnemo', 'vectors', 'traces') AND c.column_name = 'namespace' "
        "AND t.table_type = 'BASE TABLE'"
    )
    return _count(url, tables, "entity_id = %s AND namespace = %s", (scope.entity_id, scope.namespace))


async def test_forget_a_memory_leaves_no_trace(settings: Settings, embeddings: Embeddings, database_url: str) -> None:
    archive = await AsyncArchive.open(settings, embeddings=embeddings, gate_noise=0.0)
    try:
        secret = await archive.remember(ME, "The vault code is 7731-ZEBRA")
        keep = await archive.remember(ME, "The vault is in the basement behind the boiler")
        await archive.record_turn(ME, "s1", "user", "Did you write down the vault code?")
        for _ in range(2):
            await archive.recall(ME, "what is the vault code?", k=3)  # weights, links, hit ids
        update = await archive.remember(ME, "The vault code changed in June", supersedes=[secret.id])
        await archive.observe(ME, "The vault code is 7731-ZEBRA")  # the gate confirms it: a trace with a copy
        report = await archive.flush(ME)
        assert report.outcomes[0].memory_id == secret.id
        assert find_anywhere(database_url, "7731-ZEBRA").keys() >= {"mnemo.memories", "traces.gate_decisions"}
        assert "traces.retrievals" in find_anywhere(database_url, str(secret.id))
        assert "mnemo.co_access" in find_anywhere(database_url, str(secret.id))
        before = snapshot(database_url)

        removed = await archive.forget(ME, secret.id)

        assert find_anywhere(database_url, "7731-ZEBRA") == {}
        assert find_anywhere(database_url, str(secret.id)) == {}
        assert removed["memories"] == 1 and removed["vectors"] == 1 and removed["postings"] > 0
        after = snapshot(database_url)
        assert after["mnemo.memories"] == before["mnemo.memories"] - 1
        result = await archive.recall(ME, "where is the vault?", k=5, read_only=True)
        assert keep.id in [h.id for h in result] and secret.id not in [h.id for h in result]
        meta = (await archive.inspect.why(ME, update.id)).id == update.id
        assert meta
        with psycopg.connect(database_url) as conn:
            row = conn.execute("SELECT metadata FROM mnemo.memories WHERE id = %s", (update.id,)).fetchone()
        assert row is not None and row[0]["supersedes"] == []
        with pytest.raises(UnknownItemError):
            await archive.forget(ME, secret.id)  # already gone
    finally:
        await archive.close()


async def test_forget_a_turn_and_bm25_statistics_follow(archive: AsyncArchive, database_url: str) -> None:
    turn = await archive.record_turn(ME, "s1", "user", "My locker combination is 19-44-2 quokka")
    await archive.record_turn(ME, "s1", "assistant", "Noted, I will keep the locker combination safe")
    with psycopg.connect(database_url) as conn:
        docs_before = conn.execute("SELECT docs FROM mnemo.lexical_stats").fetchone()
    await archive.forget(ME, str(turn.id))
    assert find_anywhere(database_url, "quokka") == {}
    assert find_anywhere(database_url, str(turn.id)) == {}
    with psycopg.connect(database_url) as conn:
        docs_after = conn.execute("SELECT docs FROM mnemo.lexical_stats").fetchone()
    assert docs_before is not None and docs_after is not None and docs_after[0] == docs_before[0] - 1
    result = await archive.recall(ME, "locker combination", k=5, read_only=True)
    assert [h.content for h in result] == ["Noted, I will keep the locker combination safe"]


async def test_purge_removes_a_scope_everywhere_and_nothing_else(archive: AsyncArchive, database_url: str) -> None:
    for scope in (ME, OTHER):
        await archive.remember(scope, f"{scope.entity_id} keeps a diary in the attic")
        await archive.record_turn(scope, "s1", "user", f"{scope.entity_id} says hello")
        await archive.recall(scope, "diary", k=2)
        await archive.observe(scope, f"{scope.entity_id} mentioned the attic again")
    await archive.access.grant(ME, "helper")
    bystander = scope_rows(database_url, OTHER)
    assert len(scope_rows(database_url, ME)) >= 6
    removed = await archive.purge(ME)
    assert removed["scopes"] == 1 and removed["memories"] == 1 and removed["turns"] == 1
    assert scope_rows(database_url, ME) == {}
    assert scope_rows(database_url, OTHER) == bystander
    assert find_anywhere(database_url, "forgetful") == {}
    gone = await archive.recall(ME, "diary")  # an own scope with nothing in it: a refusal, not an error
    assert gone.refused and gone.best_similarity is None and not gone.hits
    with pytest.raises(UnknownScopeError):
        await archive.purge(ME)


async def test_forget_rejects_bad_and_unknown_ids_and_changes_nothing(archive: AsyncArchive, database_url: str) -> None:
    await archive.remember(ME, "something to keep")
    other = await archive.remember(OTHER, "someone else's memory")
    before = snapshot(database_url)
    with pytest.raises(InvalidContentError):
        await archive.forget(ME, "not-a-uuid")
    with pytest.raises(UnknownItemError):
        await archive.forget(ME, uuid.uuid4())
    with pytest.raises(UnknownItemError):
        await archive.forget(ME, other.id)  # an id from another scope is unknown here
    with pytest.raises(UnknownScopeError):
        await archive.purge(Scope("nobody"))
    assert snapshot(database_url) == before
