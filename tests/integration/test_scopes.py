"""Scopes and grants: nothing crosses between identities without an explicit grant."""

from __future__ import annotations

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mnemo import (
    AccessDeniedError,
    Archive,
    AsyncArchive,
    InvalidContentError,
    RecallResult,
    Refusal,
    Scope,
    UnknownScopeError,
)
from tests.conftest import snapshot

ALICE = Scope("alice", "private")
BOB = Scope("bob", "private")


async def test_scopes_do_not_leak(archive: AsyncArchive) -> None:
    secret = await archive.remember(ALICE, "Alice's bank PIN hint is her first dog's name")
    await archive.remember(BOB, "Bob keeps bees on his roof")
    await archive.remember(Scope("alice", "work"), "Alice's team ships on Thursdays")
    result = await archive.recall(BOB, "bank PIN hint first dog", k=10, threshold=-1.0)
    assert secret.id not in {h.id for h in result}
    assert all(h.scope == BOB for h in result)
    work = await archive.recall(Scope("alice", "work"), "bank PIN hint first dog", k=10, threshold=-1.0)
    assert secret.id not in {h.id for h in work}


async def test_cross_entity_read_needs_a_grant(archive: AsyncArchive, database_url: str) -> None:
    secret = await archive.remember(ALICE, "Alice is planning a surprise party for Bob on Saturday")
    before = snapshot(database_url)
    with pytest.raises(AccessDeniedError, match="'bob' may not read scope alice/private"):
        await archive.recall(ALICE, "surprise party", as_entity="bob")
    assert snapshot(database_url) == before  # refused reads leave no trace rows behind either

    assert await archive.access.grant(ALICE, "bob") is True
    assert await archive.access.grant(ALICE, "bob") is False
    granted = await archive.recall(ALICE, "surprise party", as_entity="bob")
    assert isinstance(granted, RecallResult) and granted[0].id == secret.id
    await archive.flush()  # the recall's use is written behind it (issue 42)
    with psycopg.connect(database_url) as conn:
        reader = conn.execute("SELECT reader FROM traces.retrievals ORDER BY at DESC LIMIT 1").fetchone()
    assert reader == ("bob",)

    # the grant covers exactly that namespace and grantee
    await archive.remember(Scope("alice", "work"), "Alice's salary negotiation notes")
    with pytest.raises(AccessDeniedError):
        await archive.recall(Scope("alice", "work"), "salary", as_entity="bob")
    with pytest.raises(AccessDeniedError):
        await archive.recall(ALICE, "surprise party", as_entity="carol")

    assert await archive.access.revoke(ALICE, "bob") is True
    with pytest.raises(AccessDeniedError):
        await archive.recall(ALICE, "surprise party", as_entity="bob")


async def test_grant_on_unknown_scope_is_refused(archive: AsyncArchive) -> None:
    with pytest.raises(UnknownScopeError):  # the caller's own scope: nothing leaks by saying so
        await archive.access.grant(Scope("nobody"), "bob")


async def test_self_grants_are_refused(archive: AsyncArchive, database_url: str) -> None:
    await archive.remember(ALICE, "Alice's own note")
    before = snapshot(database_url)
    with pytest.raises(InvalidContentError, match="own scope"):
        await archive.access.grant(ALICE, "alice")
    assert snapshot(database_url) == before


async def test_foreign_reads_never_reveal_whether_the_scope_exists(archive: AsyncArchive, database_url: str) -> None:
    await archive.remember(ALICE, "Alice's private note")
    before = snapshot(database_url)
    messages = {}
    for scope in (ALICE, Scope("alice", "ghost"), Scope("nobody", "private")):
        with pytest.raises(AccessDeniedError) as recalled:
            await archive.recall(scope, "note", as_entity="bob")
        with pytest.raises(AccessDeniedError) as context:
            await archive.context(scope, "note", 100, as_entity="bob")
        assert str(recalled.value) == str(context.value)
        messages[scope] = str(recalled.value)
    assert messages[ALICE].replace("private", "ghost") == messages[Scope("alice", "ghost")]
    assert messages[ALICE].replace("alice", "nobody") == messages[Scope("nobody", "private")]
    assert snapshot(database_url) == before


async def test_an_empty_own_scope_is_a_refusal_not_an_error(archive: AsyncArchive) -> None:
    fresh = Scope("newcomer", "chat")  # nothing was ever stored there
    result = await archive.recall(fresh, "what do I like?")
    assert isinstance(result, Refusal) and result.best_similarity is None and result.candidates == ()
    assert result.scope == fresh
    assert isinstance(await archive.recall(fresh, "anything", as_entity="newcomer", read_only=True), Refusal)
    block = await archive.context(fresh, "what do I like?", 200)
    assert block.refused is True and block.text == "" and block.items == () and block.tokens == 0
    await archive.access.create_scope(Scope("newcomer", "empty"))  # exists, but holds nothing
    assert isinstance(await archive.recall(Scope("newcomer", "empty"), "anything"), Refusal)


ops = st.lists(
    st.one_of(
        st.tuples(
            st.just("write"),
            st.integers(0, 3),
            st.integers(0, 1),
            st.sampled_from(["turn", "memory"]),
            st.integers(0, 5),
        ),
        st.tuples(st.just("recall"), st.integers(0, 3), st.integers(0, 1), st.just(""), st.integers(0, 5)),
    ),
    min_size=1,
    max_size=12,
)
TOPICS = [
    "hiking in the alps",
    "baking sourdough bread",
    "learning the violin",
    "fixing a bicycle",
    "planting tomatoes",
    "a trip to Kyoto",
]


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=ops)
def test_random_interleavings_never_cross_scopes(
    sync_archive: Archive, ops: list[tuple[str, int, int, str, int]]
) -> None:
    owner: dict[object, Scope] = {}
    for op, entity, namespace, kind, topic in ops:
        scope = Scope(f"entity{entity}", f"ns{namespace}")
        text = f"[{scope}] talked about {TOPICS[topic]}"
        if op == "write":
            if kind == "turn":
                owner[sync_archive.record_turn(scope, "s", "user", text).id] = scope
            else:
                owner[sync_archive.remember(scope, text).id] = scope
        else:
            # a scope never written to is a refusal, not an error (nothing to find there)
            result = sync_archive.recall(scope, TOPICS[topic], k=50, threshold=-1.0, read_only=True)
            assert isinstance(result, RecallResult | Refusal)
            hits = result.hits if isinstance(result, RecallResult) else result.candidates
            for hit in hits:
                # the stored text names its true scope; items of earlier examples share the database
                assert hit.content.startswith(f"[{scope}]")
                assert owner.get(hit.id, scope) == scope
