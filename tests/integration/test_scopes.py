"""Scopes and grants: nothing crosses between identities without an explicit grant."""

from __future__ import annotations

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mnemo import AccessDeniedError, Archive, AsyncArchive, RecallResult, Refusal, Scope, UnknownScopeError
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

    assert await archive.grant(ALICE, "bob") is True
    assert await archive.grant(ALICE, "bob") is False
    granted = await archive.recall(ALICE, "surprise party", as_entity="bob")
    assert isinstance(granted, RecallResult) and granted[0].id == secret.id
    with psycopg.connect(database_url) as conn:
        reader = conn.execute("SELECT reader FROM traces.retrievals ORDER BY at DESC LIMIT 1").fetchone()
    assert reader == ("bob",)

    # the grant covers exactly that namespace and grantee
    await archive.remember(Scope("alice", "work"), "Alice's salary negotiation notes")
    with pytest.raises(AccessDeniedError):
        await archive.recall(Scope("alice", "work"), "salary", as_entity="bob")
    with pytest.raises(AccessDeniedError):
        await archive.recall(ALICE, "surprise party", as_entity="carol")

    assert await archive.revoke(ALICE, "bob") is True
    with pytest.raises(AccessDeniedError):
        await archive.recall(ALICE, "surprise party", as_entity="bob")


async def test_grant_on_unknown_scope_is_refused(archive: AsyncArchive) -> None:
    with pytest.raises(UnknownScopeError):
        await archive.grant(Scope("nobody"), "bob")


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
def test_random_interleavings_never_cross_scopes(sync_archive: Archive, ops) -> None:
    owner: dict[object, Scope] = {}
    for op, entity, namespace, kind, topic in ops:
        scope = Scope(f"entity{entity}", f"ns{namespace}")
        text = f"[{scope}] talked about {TOPICS[topic]}"
        if op == "write":
            if kind == "turn":
                item = sync_archive.record_turn(scope, "s", "user", text)
            else:
                item = sync_archive.remember(scope, text)
            owner[item.id] = scope
        else:
            try:
                result = sync_archive.recall(scope, TOPICS[topic], k=50, threshold=-1.0, read_only=True)
            except UnknownScopeError:
                assert scope not in owner.values()
                continue
            assert isinstance(result, RecallResult | Refusal)
            hits = result.hits if isinstance(result, RecallResult) else result.candidates
            for hit in hits:
                # the stored text names its true scope; items of earlier examples share the database
                assert hit.content.startswith(f"[{scope}]")
                assert owner.get(hit.id, scope) == scope
