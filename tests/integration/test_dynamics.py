"""Memory dynamics against the real database: blend components, retrieval-induced mutation,
co-access links and their pruning, audited weight changes with ceilings, supersession, ``why``."""

from __future__ import annotations

import itertools
import uuid
from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from mnemo import AsyncArchive, InvalidContentError, Scope, Settings
from mnemo._dynamics import WeightRequest, change_weights
from mnemo.cognition.scoring.blend_components import COLD_START_ALPHAS
from mnemo.embed import Embeddings
from mnemo.models import RecallResult
from mnemo.recall.pipeline import recall

ME = Scope("dyn", "test")

TOPICS = [
    "The dentist appointment is on Tuesday at 9am",
    "My bike needs a new rear tyre",
    "Grandma's lasagne recipe uses three cheeses",
    "The Wi-Fi password is printed under the router",
    "Our team retro happens every second Friday",
    "The cat gets her worming tablet monthly",
    "I parked the car on level 3 of the garage",
    "The passport expires in August next year",
    "Tomatoes need watering twice a day in July",
    "The library book is due back on the 14th",
    "Sam prefers tea without sugar",
    "The boiler service is booked for October",
]


def rows(url: str, sql: str, *args: object) -> list[tuple[object, ...]]:
    with psycopg.connect(url) as conn:
        return conn.execute(sql, args).fetchall()  # type: ignore[arg-type]


async def test_every_hit_shows_its_blend_components(archive: AsyncArchive) -> None:
    for text in TOPICS[:5]:
        await archive.remember(ME, text)
    result = await archive.recall(ME, "when is the dentist?", k=3, read_only=True)
    assert isinstance(result, RecallResult)
    total = sum(COLD_START_ALPHAS.values())
    assert result.weights == pytest.approx({c: a / total for c, a in COLD_START_ALPHAS.items()})
    top = result.hits[0]
    assert top.content.startswith("The dentist")
    for hit in result.hits:
        parts = hit.components()
        for name in ("search", "activation", "weight", "recency", "coaccess", "noise"):
            assert 0.0 <= parts[name] <= 1.0  # type: ignore[operator]
        assert hit.weight == pytest.approx(0.2)  # Beta(1, 4)
        assert hit.recency > 0.99  # just written
        assert hit.noise == 0.5  # deterministic mode
        assert hit.blend == pytest.approx(sum(result.weights[c] * parts[c] for c in result.weights))  # type: ignore[operator]
    assert top.search == 1.0


async def test_stochastic_mode_is_seeded(settings: Settings, embeddings: Embeddings) -> None:
    archive = await AsyncArchive.open(settings, embeddings=embeddings, scoring="stochastic", seed=7)
    try:
        for text in TOPICS[:6]:
            await archive.remember(ME, text)
        a = await archive.recall(ME, "appointments", k=4, read_only=True, seed=11)
        b = await archive.recall(ME, "appointments", k=4, read_only=True, seed=11)
        c = await archive.recall(ME, "appointments", k=4, read_only=True, seed=12)
    finally:
        await archive.close()
    assert isinstance(a, RecallResult) and isinstance(b, RecallResult) and isinstance(c, RecallResult)
    assert a.weights == b.weights
    assert [(h.id, h.weight, h.noise) for h in a] == [(h.id, h.weight, h.noise) for h in b]
    assert a.weights != c.weights
    assert sum(a.weights.values()) == pytest.approx(1.0)
    assert any(h.noise != 0.5 for h in a)


async def test_recall_reinforces_hits_and_suppresses_near_misses(archive: AsyncArchive, database_url: str) -> None:
    ids = {(await archive.remember(ME, text)).id: text for text in TOPICS}
    before = {r[0]: (r[1], r[2]) for r in rows(database_url, "SELECT id, alpha, beta FROM mnemo.memories")}
    result = await archive.recall(ME, "dentist appointment time", k=3, read_only=True)
    await archive.flush()  # the recall's use is written behind it (issue 42)
    assert rows(database_url, "SELECT count(*) FROM traces.weight_changes") == [(0,)]
    assert {r[0]: (r[1], r[2]) for r in rows(database_url, "SELECT id, alpha, beta FROM mnemo.memories")} == before

    result = await archive.recall(ME, "dentist appointment time", k=3)
    assert isinstance(result, RecallResult)
    await archive.flush()  # the recall's use is written behind it (issue 42)
    hit_ids = [h.id for h in result]
    after = {
        r[0]: r[1:]
        for r in rows(
            database_url,
            "SELECT id, alpha, beta, access_count, cardinality(access_timestamps), last_accessed FROM mnemo.memories",
        )
    }
    for i in hit_ids:
        alpha, beta, count, stamps, last = after[i]
        assert alpha > before[i][0] and beta == before[i][1]
        assert count == 1 and stamps == 1 and last is not None
    # Every other memory is a near miss here (blended ranks 6..20 of 12 candidates).
    audited = dict(rows(database_url, "SELECT memory_id, reason FROM traces.weight_changes"))
    assert {i for i, r in audited.items() if r == "recalled"} == set(hit_ids)
    suppressed = {i for i, r in audited.items() if r == "near miss"}
    assert suppressed and not suppressed & set(hit_ids)
    for i in suppressed:
        assert after[i][1] > before[i][1] and after[i][0] == before[i][0]
    untouched = set(ids) - set(hit_ids) - suppressed
    for i in untouched:
        assert after[i][:2] == before[i]
    links = rows(database_url, "SELECT a, b, count FROM mnemo.co_access")
    assert len(links) == 3 and all(c == 1 for _, _, c in links)
    assert {x for a, b, _ in links for x in (a, b)} == set(hit_ids)


async def test_used_memory_outranks_an_equally_similar_unused_one(archive: AsyncArchive) -> None:
    used = await archive.remember(ME, "The spare house key is in the blue flowerpot by the door")
    unused = await archive.remember(ME, "The spare house key is in the red flowerpot by the gate")
    for _ in range(6):
        await archive.recall(ME, "blue flowerpot by the door", k=1)
    neutral = await archive.recall(ME, "where is the spare house key?", k=2, read_only=True)
    assert [h.id for h in neutral] == [used.id, unused.id]
    first, second = neutral.hits
    assert first.weight > second.weight and first.activation > second.activation


async def test_newer_fact_ranks_above_the_fact_it_supersedes(archive: AsyncArchive, database_url: str) -> None:
    old = await archive.remember(ME, "Maya lives in Berlin")
    for _ in range(3):
        await archive.recall(ME, "Maya Berlin", k=1)  # the old fact was in heavy use
    new = await archive.remember(ME, "Maya lives in Munich now", supersedes=[old.id])
    result = await archive.recall(ME, "where does Maya live?", k=2, read_only=True)
    assert [h.id for h in result] == [new.id, old.id]
    history = await archive.inspect.why(ME, old.id)
    assert [c.reason for c in history.changes] == ["recalled", "recalled", "recalled", "superseded"]
    assert history.changes[-1].evidence["by"] == str(new.id)
    assert history.changes[-1].center < history.changes[-2].center
    assert history.status == "active"  # lowered, never deleted


async def test_coaccess_links_spread_to_associated_memories(settings: Settings, embeddings: Embeddings) -> None:
    # co-access alone: late interaction re-ranks the search score this test holds still
    archive = await AsyncArchive.open(settings, embeddings=embeddings, late_interaction=False)
    try:
        falcon = await archive.remember(ME, "Project Falcon ships on March 3")
        notebook = await archive.remember(ME, "Bring the blue notebook to planning")
        for text in TOPICS:
            await archive.remember(ME, text)
        cold = await archive.recall(ME, "Project Falcon ship date", k=12, read_only=True)
        for _ in range(4):  # the two are used together, again and again
            await archive.recall(ME, "Project Falcon ship date and the blue notebook", k=2)
        warm = await archive.recall(ME, "Project Falcon ship date", k=12, read_only=True)
    finally:
        await archive.close()
    assert cold.hits[0].id == falcon.id and warm.hits[0].id == falcon.id
    rank = {h.id: n for n, h in enumerate(warm.hits)}
    cold_rank = {h.id: n for n, h in enumerate(cold.hits)}
    linked = next(h for h in warm if h.id == notebook.id)
    assert linked.coaccess > 0.5
    assert rank[notebook.id] == 1 and rank[notebook.id] < cold_rank[notebook.id]


async def test_coaccess_pruning_bounds_links_per_memory(
    settings: Settings, embeddings: Embeddings, database_url: str
) -> None:
    archive = await AsyncArchive.open(settings, embeddings=embeddings, coaccess_max_edges=3)
    try:
        for text in TOPICS[:10]:
            await archive.remember(ME, text)
        await archive.recall(ME, "things to remember this month", k=10, threshold=-1.0)
    finally:
        await archive.close()
    degree = rows(
        database_url,
        "SELECT x, count(*) FROM (SELECT a AS x FROM mnemo.co_access UNION ALL SELECT b FROM mnemo.co_access) s "
        "GROUP BY x",
    )
    assert degree and max(int(n) for _, n in degree) <= 3  # type: ignore[call-overload]
    total = rows(database_url, "SELECT count(*) FROM mnemo.co_access")[0][0]
    assert 0 < total < 45  # 10 memories co-retrieved: 45 pairs before pruning


async def test_ceiling_enforced_blocks_and_shadow_mode_only_logs(
    settings: Settings, embeddings: Embeddings, database_url: str
) -> None:
    for enforced in (True, False):
        scope = Scope("ceil", "on" if enforced else "shadow")
        archive = await AsyncArchive.open(settings, embeddings=embeddings, ceiling_enforced=enforced)
        try:
            memory = await archive.remember(scope, "I value honesty above comfort")
            anchored = await archive.remember(scope, "Never share the user's passwords", anchored=True)
            async with archive._rt.store.transaction() as conn:
                changes = await change_weights(
                    conn,
                    archive.settings,
                    scope,
                    [WeightRequest(memory.id, "reinforce", 40.0, "test push") for _ in range(30)]
                    + [WeightRequest(anchored.id, "reinforce", 40.0, "test push")],
                )
            history = await archive.inspect.why(scope, memory.id)
        finally:
            await archive.close()
        assert len(history.changes) == 30
        fired = [c for c in history.changes if c.ceilings]
        assert fired, "the ceiling never fired"
        if enforced:
            assert history.center <= 0.95 + 1e-9
            assert any("ceiling (enforced)" in c.ceilings for c in fired)
            assert not any("ceiling (shadow)" in c.ceilings for c in fired)
        else:
            assert history.center > 0.95
            assert any("ceiling (shadow)" in c.ceilings for c in fired)
            assert not any("ceiling (enforced)" in c.ceilings for c in fired)
            assert not any(c.blocked for c in history.changes)
        assert changes[-1].new.center > 0.95 and not changes[-1].violations  # anchored: exempt
    events = rows(database_url, "SELECT namespace, enforced FROM traces.safety_events WHERE ceiling = 'ceiling'")
    assert {(ns, e) for ns, e in events} == {("on", True), ("shadow", False)}


async def test_diminishing_returns_in_stored_weights(archive: AsyncArchive) -> None:
    memory = await archive.remember(ME, "I like long walks by the river")
    for _ in range(8):
        await archive.recall(ME, "long walks by the river", k=1)
    await archive.flush()  # the recall's use is written behind it (issue 42)
    history = await archive.inspect.why(ME, memory.id)
    gains = [c.new[0] - c.old[0] for c in history.changes if c.old is not None]
    assert len(gains) == 8 and all(a > b for a, b in itertools.pairwise(gains))
    assert history.access_count == 8


async def test_why_and_weight_changes_reject_unknown_ids(archive: AsyncArchive) -> None:
    from mnemo import UnknownItemError

    await archive.remember(ME, "something")
    with pytest.raises(UnknownItemError):
        await archive.inspect.why(ME, uuid.uuid4())
    with pytest.raises(InvalidContentError):
        await archive.inspect.why(ME, "not-a-uuid")
    with pytest.raises(InvalidContentError):
        await archive.remember(ME, "new", supersedes=["nope"])
    with pytest.raises(UnknownItemError):
        await archive.remember(ME, "new", supersedes=[uuid.uuid4()])
    result = await archive.recall(ME, "new", k=5, read_only=True, threshold=-1.0)
    assert [h.content for h in result] == ["something"]  # the failed writes left nothing


async def test_grant_reads_do_not_mutate_the_owner(archive: AsyncArchive, database_url: str) -> None:
    await archive.remember(ME, "The boiler service is booked for October")
    await archive.access.grant(ME, "helper")
    result = await archive.recall(ME, "boiler service", k=1, as_entity="helper")
    assert isinstance(result, RecallResult) and len(result) == 1
    await archive.flush()  # the recall's use is written behind it (issue 42)
    assert rows(database_url, "SELECT count(*) FROM traces.weight_changes") == [(0,)]


async def test_activation_decays_with_time(archive: AsyncArchive) -> None:
    await archive.remember(ME, "The passport expires in August next year")
    now = datetime.now(UTC)
    fresh = (await recall(archive._rt, ME, "passport", 1, read_only=True, now=now)).hits[0]
    later = (await recall(archive._rt, ME, "passport", 1, read_only=True, now=now + timedelta(days=30))).hits[0]
    assert fresh.activation > later.activation and fresh.recency > later.recency
    assert later.recency == pytest.approx(0.5 ** (30 / 7), rel=1e-3)


async def test_spreading_reaches_two_links_only_on_request(
    settings: Settings, embeddings: Embeddings, database_url: str
) -> None:
    archive = await AsyncArchive.open(settings, embeddings=embeddings, coaccess_seeds=1)
    try:
        a = await archive.remember(ME, "Project Falcon ships on March 3")
        b = await archive.remember(ME, "Bring the blue notebook to planning")
        c = await archive.remember(ME, "The Zephyr dashboard shows the uptime of the east cluster")
        for text in TOPICS:
            await archive.remember(ME, text)
        for _ in range(3):
            await archive.recall(ME, "Project Falcon ship date and the blue notebook", k=2)
            await archive.recall(ME, "blue notebook and the Zephyr uptime dashboard", k=2)
        edges = {frozenset(r) for r in rows(database_url, "SELECT a, b FROM mnemo.co_access")}
        assert edges == {frozenset((a.id, b.id)), frozenset((b.id, c.id))}
        runs = {
            hops: await archive.recall(ME, "Project Falcon ship date", k=15, read_only=True, hops=hops)
            for hops in (0, 1, 2)
        }
        with pytest.raises(InvalidContentError):
            await archive.recall(ME, "Project Falcon ship date", hops=3)
    finally:
        await archive.close()
    part = {hops: {h.id: h.coaccess for h in result} for hops, result in runs.items()}
    assert part[0][b.id] > 0 and part[0][c.id] == 0  # direct partner only
    # both links were used 3 times: c = 0.3 (hop decay) x b's activation x the b-c strength (= a-b's)
    assert part[1][c.id] == pytest.approx(0.3 * part[0][b.id] ** 2, rel=1e-3)
    assert 0 < part[1][c.id] < part[1][b.id]
    assert part[2][c.id] == pytest.approx(part[1][c.id])  # nothing further away in this graph


async def test_small_writes_refresh_planner_statistics(archive: AsyncArchive, database_url: str) -> None:
    def manual_analyze() -> object:
        return rows(
            database_url, "SELECT last_analyze FROM pg_stat_user_tables WHERE relid = 'mnemo.memories'::regclass"
        )[0][0]

    vector = (await archive.embeddings.embed_documents(["a stored thought"]))[0]
    for n in range(99):
        await archive.remember(ME, f"thought number {n}", embedding=vector)
    assert manual_analyze() is None  # autovacuum may have run (last_autoanalyze), a manual ANALYZE not yet
    await archive.remember(ME, "the hundredth thought", embedding=vector)
    assert manual_analyze() is not None


async def _flowerpots(archive: AsyncArchive) -> tuple[uuid.UUID, uuid.UUID]:
    """Blue: new and in heavy use. Red: three years old, never used."""
    blue = await archive.remember(ME, "The spare house key is in the blue flowerpot by the door")
    red = await archive.remember(
        ME, "The spare house key is in the red flowerpot by the gate", event_time=datetime(2023, 1, 1, tzinfo=UTC)
    )
    for text in TOPICS:
        await archive.remember(ME, text)
    for _ in range(8):
        await archive.recall(ME, "blue flowerpot by the door", k=1)
    return blue.id, red.id


async def test_a_memory_lifted_over_an_equally_relevant_one_is_not_reinforced(
    archive: AsyncArchive, database_url: str
) -> None:
    """Use strengthens, being returned does not: for a question about both flowerpots (the red one a
    hair more similar), use and recency put the blue one first; returned that way it gains nothing,
    and the red one, as relevant as an answer, is never suppressed."""
    blue, red = await _flowerpots(archive)
    lifted = 0
    for n in range(4):
        query = f"where is the spare house key, by the door or the gate? ({n})"
        (hit,) = (await archive.recall(ME, query, k=1)).hits
        audited = rows(
            database_url,
            "SELECT memory_id FROM traces.weight_changes WHERE reason = 'recalled' AND evidence ->> 'query' = %s",
            query,
        )
        if hit.search < 1.0:  # not the most relevant by search alone: the blend lifted it
            lifted += 1
            assert hit.id == blue and audited == []
        else:
            assert audited == [(hit.id,)]
    assert lifted > 0, "the scenario must produce a lift to test the rule"
    suppressed = "SELECT count(*) FROM traces.weight_changes WHERE memory_id = %s AND reason = 'near miss'"
    assert rows(database_url, suppressed, red) == [(0,)]
    used = "SELECT count(*) FROM traces.weight_changes WHERE memory_id = %s AND reason = 'recalled'"
    assert rows(database_url, used, blue) == [(8,)]  # the 8 uses, not the lifts
