"""Issue 42 decisions 3 and 4 against the real database: the use a recall or a context records is
written behind it, in one serial queue per scope (a barrier before the scope's next recall,
context or write; drained by ``flush()`` and ``close()``; failures counted, never raised into a
later call), and a context links only its best five placed memories."""

from __future__ import annotations

import asyncio
import itertools
import uuid

import psycopg

from mnemo import Archive, AsyncArchive, Scope, Settings
from mnemo.embed import Embeddings
from mnemo.models import RecallResult
from mnemo.recall.context import LINKED_PLACED
from tests.statement_log import LOG

ME = Scope("uses", "test")
OTHER = Scope("uses-other", "test")
TOPICS = [
    "The dentist appointment is on Tuesday at 9am",
    "My bike needs a new rear tyre",
    "Grandma's lasagne recipe uses three cheeses",
    "The Wi-Fi password is printed under the router",
    "Our team retro happens every second Friday",
    "The cat gets her worming tablet monthly",
]


def rows(url: str, sql: str, *args: object) -> list[tuple[object, ...]]:
    with psycopg.connect(url) as conn:
        return conn.execute(sql, args).fetchall()  # type: ignore[arg-type]


def accesses(url: str, scope: Scope) -> dict[object, object]:
    return dict(
        rows(
            url,
            "SELECT id, access_count FROM mnemo.memories WHERE entity_id = %s AND namespace = %s",
            scope.entity_id,
            scope.namespace,
        )
    )


async def _fill(archive: AsyncArchive, scope: Scope, texts: list[str]) -> list[uuid.UUID]:
    return [(await archive.remember(scope, t)).id for t in texts]


async def test_recall_returns_before_its_use_and_the_next_recall_waits_for_it(
    archive: AsyncArchive, database_url: str
) -> None:
    await _fill(archive, ME, TOPICS)
    first = await archive.recall(ME, "dentist appointment time", k=3)
    assert isinstance(first, RecallResult)
    hits = [h.id for h in first if h.item_kind == "memory"]
    assert hits
    # Nothing has yielded to the loop since the recall returned: its use is queued, not written.
    assert all(c == 0 for c in accesses(database_url, ME).values())
    assert rows(database_url, "SELECT count(*) FROM traces.retrievals") == [(0,)]
    assert archive._rt.uses.pending == 1
    # The next recall of the scope passes the barrier first: it reads the reinforced weights.
    second = await archive.recall(ME, "dentist appointment time", k=3, read_only=True)
    assert isinstance(second, RecallResult)
    assert accesses(database_url, ME)[hits[0]] == 1
    assert next(h for h in second if h.id == hits[0]).weight > next(h for h in first if h.id == hits[0]).weight
    await archive.flush()
    assert rows(database_url, "SELECT count(*) FROM traces.retrievals") == [(2,)]
    status = await archive.status()
    assert status.uses["failed"] == 0 and status.uses["written"] == status.uses["queued"] == 2
    assert status.uses["pending"] == 0


async def test_a_slow_queue_blocks_only_its_own_scope(archive: AsyncArchive, database_url: str) -> None:
    mine = await _fill(archive, ME, TOPICS)
    await _fill(archive, OTHER, TOPICS)
    with psycopg.connect(database_url) as holder:  # another client holds ME's rows: ME's use waits on it
        holder.execute("SELECT 1 FROM mnemo.memories WHERE id = ANY(%s) FOR UPDATE", (mine,))
        assert isinstance(await archive.recall(ME, "dentist appointment time", k=3), RecallResult)

        async def other_scope() -> None:
            await archive.recall(OTHER, "dentist appointment time", k=3)
            await archive.remember(OTHER, "The dentist moved the appointment to Wednesday")
            await archive.recall(OTHER, "dentist appointment", k=3, read_only=True)

        await asyncio.wait_for(other_scope(), timeout=120)  # a guard against a hang, not a timing
        assert any(c == 1 for c in accesses(database_url, OTHER).values())  # written behind the barrier
        assert all(c == 0 for c in accesses(database_url, ME).values())  # still queued behind the lock
        assert (await archive.status()).uses["pending"] == 1
        holder.rollback()
    await archive.flush()
    assert any(c == 1 for c in accesses(database_url, ME).values())
    assert (await archive.status()).uses == {"queued": 3, "written": 3, "failed": 0, "pending": 0}


async def test_flush_and_close_drain_the_queue(settings: Settings, embeddings: Embeddings, database_url: str) -> None:
    archive = await AsyncArchive.open(settings, embeddings=embeddings)
    await _fill(archive, ME, TOPICS)
    await archive.recall(ME, "dentist appointment time", k=3)
    await archive.flush()
    assert sum(c for c in accesses(database_url, ME).values()) > 0  # type: ignore[misc]
    drained = dict(accesses(database_url, ME))
    await archive.recall(ME, "bike tyre", k=2)
    await archive.close()  # nothing yielded to the loop in between: close writes the queued use
    assert accesses(database_url, ME) != drained
    assert rows(database_url, "SELECT count(*) FROM traces.retrievals") == [(2,)]


def test_the_blocking_archive_writes_behind_and_drains_on_close(settings: Settings, embeddings: Embeddings) -> None:
    url = settings.database_url
    assert url is not None
    with Archive(settings, embeddings=embeddings) as archive:
        for text in TOPICS:
            archive.remember(ME, text)
        first = archive.recall(ME, "dentist appointment time", k=3)
        second = archive.recall(ME, "dentist appointment time", k=3, read_only=True)
        assert isinstance(first, RecallResult) and isinstance(second, RecallResult)
        top = first.hits[0].id
        assert next(h for h in second if h.id == top).weight > first.hits[0].weight
        archive.flush()
        assert accesses(url, ME)[top] == 1
        archive.recall(ME, "bike tyre", k=2)
    assert rows(url, "SELECT count(*) FROM traces.retrievals") == [(3,)]


async def test_the_queue_keeps_each_scopes_order(archive: AsyncArchive, database_url: str) -> None:
    await _fill(archive, ME, TOPICS)
    returned: list[uuid.UUID] = []

    async def one(query: str) -> None:
        result = await archive.recall(ME, query, k=3)
        assert isinstance(result, RecallResult) and result.outcome_id is not None
        returned.append(result.outcome_id)  # no await since it was queued: the queue's order

    await asyncio.gather(*(one(q) for q in ["dentist", "bike tyre", "lasagne", "wifi password", "team retro"] * 2))
    await archive.flush()
    committed = [r[0] for r in rows(database_url, "SELECT id FROM traces.retrievals ORDER BY xmin::text::bigint")]
    assert len(returned) == 10 and committed == returned
    # Each audited change starts from the weight the one queued before it left.
    for (memory,) in rows(database_url, "SELECT DISTINCT memory_id FROM traces.weight_changes"):
        chain = rows(
            database_url,
            "SELECT old_alpha, old_beta, new_alpha, new_beta FROM traces.weight_changes WHERE memory_id = %s "
            "ORDER BY xmin::text::bigint, at, id",
            memory,
        )
        for before, after in itertools.pairwise(chain):
            assert after[:2] == before[2:]


async def test_a_failed_use_is_counted_not_raised(archive: AsyncArchive, database_url: str) -> None:
    await _fill(archive, ME, TOPICS)
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("ALTER TABLE traces.retrievals ADD CONSTRAINT refuse_all CHECK (false) NOT VALID")
    await archive.recall(ME, "dentist appointment time", k=3)
    await archive.flush()  # the failure is not raised here ...
    assert (await archive.status()).uses["failed"] == 1
    assert "refuse_all" in (archive._rt.uses.last_error or "")
    assert all(c == 0 for c in accesses(database_url, ME).values())  # the trace and its mutation: none
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("ALTER TABLE traces.retrievals DROP CONSTRAINT refuse_all")
    # ... nor into the next call on the scope, whose own use is written
    assert isinstance(await archive.recall(ME, "dentist appointment time", k=3), RecallResult)
    await archive.remember(ME, "The dentist moved the appointment to Wednesday")
    assert (await archive.status()).uses == {"queued": 2, "written": 1, "failed": 1, "pending": 0}
    assert any(c == 1 for c in accesses(database_url, ME).values())


async def test_a_context_links_its_best_five_and_reinforces_every_placed_memory(
    archive: AsyncArchive, database_url: str
) -> None:
    small = Scope("uses-small", "test")
    for scope, n in ((small, 6), (ME, 14)):
        await _fill(
            archive, scope, [f"Deploy note {i}: run the migrations, warm the caches, flip the flag" for i in range(n)]
        )
    sent: dict[Scope, int] = {}
    placed: dict[Scope, list[uuid.UUID]] = {}
    for scope in (small, ME):
        block = await archive.context(scope, "deploy checklist", 4000, seed=1)
        placed[scope] = [i.id for i in block.items if i.track == "situational"]
        with LOG.listen() as statements:
            await archive.flush()
        sent[scope] = sum(1 for s in statements if s.site.startswith("mnemo.store.dynamics."))
    assert len(placed[small]) == 6 and len(placed[ME]) >= 12
    # The statements of a context's use do not grow with the memories it placed.
    assert sent[ME] == sent[small] > 0
    counts = accesses(database_url, ME)
    assert {i for i, c in counts.items() if c == 1} == set(placed[ME])
    assert all(c == 0 for i, c in counts.items() if i not in placed[ME])
    links = rows(database_url, "SELECT a, b, count FROM mnemo.co_access WHERE entity_id = %s", ME.entity_id)
    assert len(links) == LINKED_PLACED * (LINKED_PLACED - 1) // 2 == 10
    linked = {x for a, b, _ in links for x in (a, b)}
    assert len(linked) == LINKED_PLACED and linked <= set(placed[ME])


async def test_the_inspector_and_the_inner_life_read_the_scope_after_its_queued_use(archive: AsyncArchive) -> None:
    await _fill(archive, ME, TOPICS)
    first = await archive.recall(ME, "dentist appointment time", k=3)
    assert isinstance(first, RecallResult)
    hit = next(h.id for h in first if h.item_kind == "memory")
    assert archive._rt.uses.pending == 1  # queued, not written
    # No flush: the inspector's page waits for what the scope queued, so it shows the recall's use.
    history = await archive.inspect.why(ME, hit)
    assert any(change.reason == "recalled" for change in history.changes)
    assert archive._rt.uses.pending == 0
    await archive.recall(ME, "bike tyre", k=3)
    assert archive._rt.uses.pending == 1
    await archive.inner.readiness(ME)
    assert archive._rt.uses.pending == 0
