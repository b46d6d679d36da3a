"""Each scope numbers its own versions (issue 42, decision 5; migration 0023; DESIGN §3, §7).

No global sequence: a writing transaction gives the scope the next version of its own counter once,
however many rows it changes, and logs every item it touched under it. A scope purged and written
again counts from 1 under a new epoch, so an index another process still holds from before the purge
is rebuilt, never trusted because its version number happens to be high enough. Two archives on one
database stand for two processes.
"""

from __future__ import annotations

import asyncio
import uuid

import psycopg
import pytest

from mnemo import AsyncArchive, Scope
from mnemo.models import Refusal
from mnemo.store import read_index as index_rows

A = Scope("versions", "a")
B = Scope("versions", "b")
BEFORE = [
    "My sister Lena moved to Hamburg last spring.",
    "I adopted a dog called Pixel two years ago.",
    "We went sailing on Lake Constance in July.",
    "The pottery class meets on Thursday evenings.",
]
AFTER = [
    "Our book club is reading Middlemarch this month.",
    "Jonas waters my plants when I travel.",
    "I am allergic to shellfish, so no prawns for me.",
    "My new bike is a green Brompton that folds.",
]


async def version_of(archive: AsyncArchive, scope: Scope) -> index_rows.ScopeVersion:
    async with archive._rt.store.connection() as conn:
        return await index_rows.scope_version(conn, scope.entity_id, scope.namespace)


async def logged(archive: AsyncArchive, scope: Scope, version: int) -> set[uuid.UUID]:
    async with archive._rt.store.connection() as conn:
        cur = await conn.execute(
            "SELECT item_id FROM mnemo.scope_changes WHERE entity_id = %s AND namespace = %s AND version = %s",
            (scope.entity_id, scope.namespace, version),
        )
        return {r[0] for r in await cur.fetchall()}


async def touch(conn: psycopg.AsyncConnection, scope: Scope, item: uuid.UUID) -> None:
    """A change a read index must see: the item's postings' term frequencies."""
    await conn.execute(
        "UPDATE mnemo.postings SET tf = tf + 1 WHERE entity_id = %s AND namespace = %s AND item_id = %s",
        (scope.entity_id, scope.namespace, item),
    )


async def test_a_purge_then_a_rewrite_makes_an_old_index_rebuild(archive: AsyncArchive, other: AsyncArchive) -> None:
    for text in BEFORE:
        await archive.remember(A, text)
    key = (A.entity_id, A.namespace, other._rt.slug)
    old = await other._rt.indexes.ensure(other._rt, key)
    assert old is not None and old.epoch is not None
    await archive.purge(A)  # in the first process: the other one keeps its index
    bike = None
    for text in AFTER:
        memory = await archive.remember(A, text)
        bike = memory if "bike" in text else bike
    assert bike is not None
    while (now := await version_of(archive, A)).version < old.version:  # as far as the old index, or further
        async with archive._rt.store.transaction() as conn:
            await touch(conn, A, bike.id)
    assert now.epoch != old.epoch  # the numbers alone could not tell the old index from a current one
    assert other._rt.indexes.held(key) is old
    result = await other.recall(A, "What bike do I have?", 10, read_only=True, threshold=-1.0)
    assert not isinstance(result, Refusal)
    assert result.hits[0].id == bike.id  # the old index never held it: answered by SQL, not by the old index
    assert {h.content for h in result.hits} <= set(AFTER)
    assert other._rt.indexes.held(key) is not old  # dropped (and rebuilt in the background)
    fresh = await other._rt.indexes.ensure(other._rt, key)
    assert fresh is not None and fresh.epoch == now.epoch and bike.id in fresh.vectors.items.slot


async def test_two_transactions_on_one_scope_get_increasing_versions(archive: AsyncArchive) -> None:
    first, second, third = [await archive.remember(A, text) for text in BEFORE[:3]]
    start = await version_of(archive, A)
    async with archive._rt.store.connection() as one, archive._rt.store.connection() as two:
        async with one.transaction():
            await touch(one, A, first.id)
            await touch(one, A, second.id)  # a second statement of the same transaction: the same version
            mine = await index_rows.scope_version(one, A.entity_id, A.namespace)
            assert mine.version == start.version + 1
            assert (await version_of(archive, A)).version == start.version  # not visible before it commits
        async with two.transaction():
            await touch(two, A, third.id)
    assert await logged(archive, A, start.version + 1) == {first.id, second.id}
    assert await logged(archive, A, start.version + 2) == {third.id}
    async with archive._rt.store.connection() as conn, conn.transaction():
        with pytest.raises(RuntimeError):
            async with conn.transaction():  # a savepoint whose change is rolled back
                await touch(conn, A, first.id)
                raise RuntimeError
        await touch(conn, A, third.id)
    end = await version_of(archive, A)
    assert end.version == start.version + 3 and end.epoch == start.epoch
    assert await logged(archive, A, end.version) == {third.id}


async def test_one_statement_over_many_rows_is_one_version_that_logs_every_item(archive: AsyncArchive) -> None:
    items = {(await archive.remember(A, text)).id for text in BEFORE}
    start = await version_of(archive, A)
    async with archive._rt.store.transaction() as conn:
        await conn.execute(
            "UPDATE mnemo.postings SET tf = tf + 1 WHERE entity_id = %s AND namespace = %s",
            (A.entity_id, A.namespace),
        )
    assert (await version_of(archive, A)).version == start.version + 1
    assert await logged(archive, A, start.version + 1) == items


async def test_the_versions_of_two_scopes_are_independent(archive: AsyncArchive) -> None:
    await archive.remember(B, BEFORE[0])
    b = await version_of(archive, B)
    a = await version_of(archive, A)
    assert (a.version, a.epoch) == (0, None) and b.version >= 1
    for text in BEFORE:
        await archive.remember(A, text)
    assert await version_of(archive, B) == b  # writing A does not bump B
    assert (await version_of(archive, A)).version >= len(BEFORE)
    assert (await version_of(archive, A)).epoch not in (None, b.epoch)


async def test_concurrent_writers_of_one_scope_never_share_a_version(archive: AsyncArchive) -> None:
    memories = [await archive.remember(A, text) for text in BEFORE]
    start = await version_of(archive, A)

    async def write(item: uuid.UUID) -> None:
        async with archive._rt.store.transaction() as conn:
            await touch(conn, A, item)

    await asyncio.gather(*(write(m.id) for m in memories))
    assert (await version_of(archive, A)).version == start.version + len(memories)
    for n in range(1, len(memories) + 1):
        assert len(await logged(archive, A, start.version + n)) == 1
