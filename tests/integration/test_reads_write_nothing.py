"""A read writes nothing of the owner's (issue 39 item 7): a grantee's recall is traced read-only
and changes no weight; reading readiness stores no milestone (the night records them); the first
retrieval is the owner's own."""

from __future__ import annotations

import psycopg

from mnemo import AsyncArchive, RecallResult, Scope

ME = Scope("maya", "journal")
QUESTION = "What is Maya allergic to?"


def _rows(url: str) -> dict[str, object]:
    with psycopg.connect(url) as conn:
        return {
            "milestones": conn.execute("SELECT count(*) FROM mnemo.milestones").fetchone(),
            "weights": conn.execute(
                "SELECT array_agg((alpha, beta, access_count) ORDER BY id) FROM mnemo.memories WHERE entity_id = 'maya'"
            ).fetchone(),
            "mutating": conn.execute("SELECT count(*) FROM traces.retrievals WHERE NOT read_only").fetchone(),
        }


async def test_a_grantees_recall_and_readiness_reads_write_nothing_of_the_owners(
    archive: AsyncArchive, database_url: str
) -> None:
    await archive.remember(ME, "Maya is allergic to peanuts and carries an epipen.", kind="preference")
    await archive.remember(ME, "Maya's sister Lena lives in Porto.")
    await archive.access.grant(ME, "doctor")
    before = _rows(database_url)
    found = await archive.recall(ME, QUESTION, as_entity="doctor")  # not read_only: still a read
    assert isinstance(found, RecallResult) and "peanuts" in found.hits[0].content
    await archive.flush()  # the recall's use is written behind it (issue 42)
    readiness = await archive.inner.readiness(ME)
    assert {m.name: m.reached_at for m in readiness.milestones}["first_retrieval"] is None  # not the owner's
    assert _rows(database_url) == before
    with psycopg.connect(database_url) as conn:
        traced = conn.execute("SELECT reader, read_only FROM traces.retrievals").fetchall()
    assert traced == [("doctor", True)]

    owned = await archive.recall(ME, QUESTION)  # the owner's own use: reinforces and is the milestone
    assert isinstance(owned, RecallResult)
    await archive.flush()  # the recall's use is written behind it (issue 42)
    after_use = _rows(database_url)
    assert after_use["weights"] != before["weights"] and after_use["mutating"] == (1,)
    shown = {m.name: m.reached_at for m in (await archive.inner.readiness(ME)).milestones}
    assert shown["first_retrieval"] is not None  # shown as reached at once ...
    assert _rows(database_url)["milestones"] == (0,)  # ... but stored by no read
    await archive.night_cycle(ME)
    assert _rows(database_url)["milestones"] != (0,)  # the night records what the traces show
    kept = {m.name: m.reached_at for m in (await archive.inner.readiness(ME)).milestones}
    assert kept["first_retrieval"] == shown["first_retrieval"]
