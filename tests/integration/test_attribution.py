"""Process attribution (issue 16 item 4, archive-adr §4): every write records the subsystem that
made it next to the entity; recall and forget filter by it ("purge what the simulation wrote")."""

from __future__ import annotations

from typing import Any

import httpx
import psycopg
import pytest

from mnemo import AsyncArchive, InvalidInputError, RecallResult, Scope, as_process
from tests.conftest import snapshot
from tests.integration.test_http import auth, server, tokens  # noqa: F401  (fixtures)
from tests.night_data import START, arc_conversation, record

ME = Scope("alice", "sim")
SIM = "simulation:7"


def process_of(url: str, table: str) -> dict[str, str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(f"SELECT content, process_id FROM mnemo.{table}").fetchall()  # noqa: S608
        return {r[0]: r[1] for r in rows}


async def test_every_write_path_records_its_process(archive: AsyncArchive, database_url: str) -> None:
    await archive.remember(ME, "The real Maya is allergic to peanuts.")
    await archive.remember(ME, "In the simulation Maya is allergic to shellfish.", process=SIM)
    await archive.record_turn(ME, "s1", "user", "A turn the core wrote.")
    await archive.record_turn(ME, "s1", "assistant", "A turn the simulation wrote.", process=SIM)
    with as_process("extension:diary"):
        await archive.remember(ME, "A diary entry the extension wrote.")
        await archive.remember(ME, "The call's own process wins.", process=SIM)
    await archive.remember(ME, "Back to the core after the block.")
    assert process_of(database_url, "memories") == {
        "The real Maya is allergic to peanuts.": "core",
        "In the simulation Maya is allergic to shellfish.": SIM,
        "A diary entry the extension wrote.": "extension:diary",
        "The call's own process wins.": SIM,
        "Back to the core after the block.": "core",
    }
    assert process_of(database_url, "turns") == {"A turn the core wrote.": "core", "A turn the simulation wrote.": SIM}


async def test_recall_keeps_only_the_processes_asked_for(archive: AsyncArchive) -> None:
    real = await archive.remember(ME, "The real Maya is allergic to peanuts.")
    imagined = await archive.remember(ME, "In the simulation Maya is allergic to shellfish.", process=SIM)
    question = "What is Maya allergic to?"
    everything = await archive.recall(ME, question, read_only=True, threshold=-1.0)
    assert isinstance(everything, RecallResult)
    assert {real.id, imagined.id} <= {h.id for h in everything.hits}
    only_sim = await archive.recall(ME, question, read_only=True, threshold=-1.0, processes=[SIM])
    only_core = await archive.recall(ME, question, read_only=True, threshold=-1.0, processes=["core"])
    assert isinstance(only_sim, RecallResult) and isinstance(only_core, RecallResult)
    assert [h.id for h in only_sim.hits] == [imagined.id]
    assert imagined.id not in {h.id for h in only_core.hits} and real.id in {h.id for h in only_core.hits}


async def test_forgetting_a_process_removes_what_it_wrote_and_what_the_night_made_of_it(
    archive: AsyncArchive, database_url: str
) -> None:
    kept = await archive.remember(ME, "The real Maya is allergic to peanuts.")
    with as_process(SIM):
        await record(archive, ME, "dream", arc_conversation(), START)
        await archive.remember(ME, "In the simulation Maya is allergic to shellfish.")
    report = await archive.night_cycle(ME)
    assert report.blocks > 0
    removed = await archive.forget_process(ME, SIM)
    assert removed["turns"] == len(arc_conversation()) and removed["memories"] > report.blocks
    with psycopg.connect(database_url) as conn:
        assert conn.execute("SELECT count(*) FROM mnemo.blocks").fetchone() == (0,)
        left = conn.execute("SELECT id, process_id FROM mnemo.memories").fetchall()
    assert left == [(kept.id, "core")]
    assert await archive.forget_process(ME, SIM) == {}  # nothing left to remove


@pytest.mark.parametrize("bad", ["", " sim", "a" * 65, "sim/7", 7])
async def test_a_bad_process_id_is_refused_and_nothing_is_written(
    archive: AsyncArchive, database_url: str, bad: object
) -> None:
    before = snapshot(database_url)
    with pytest.raises(InvalidInputError, match="process"):
        await archive.remember(ME, "never stored", process=bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="process"):
        await archive.recall(ME, "anything", processes=[bad])  # type: ignore[list-item]
    with pytest.raises(InvalidInputError, match="process"):
        await archive.forget_process(ME, bad)  # type: ignore[arg-type]
    assert snapshot(database_url) == before


def test_http_writes_recalls_and_forgets_by_process(server: str, tokens: dict[str, Any]) -> None:  # noqa: F811
    with httpx.Client(base_url=server, headers=auth(tokens["alice"]), timeout=60) as c:
        real = c.post("/v1/memories", json={"content": "The real Maya is allergic to peanuts."}).json()["id"]
        made = c.post("/v1/memories", json={"content": "Simulated Maya is allergic to shellfish.", "process": SIM})
        assert made.status_code == 201
        bad = c.post("/v1/memories", json={"content": "never stored", "process": "sim/7"})
        assert bad.status_code == 422
        query = {"query": "What is Maya allergic to?", "threshold": -1.0, "read_only": True}
        only = c.post("/v1/recall", json=query | {"processes": [SIM]}).json()
        assert [h["id"] for h in only["hits"]] == [made.json()["id"]]
        gone = c.delete(f"/v1/processes/{SIM}")
        assert gone.status_code == 200 and gone.json()["removed"]["memories"] == 1
        left = c.post("/v1/recall", json=query).json()
        assert [h["id"] for h in left["hits"]] == [real]
