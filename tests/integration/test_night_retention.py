"""Retention counts night cycles from when turns arrived, not from their event dates (issue 12,
defect 3); ``mnemo night --dry-run`` shows the plan and writes nothing; context shows event
times and no insight next to the memory it repeats (defect 4)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest

from mnemo import AsyncArchive, NightReport, Scope, Settings
from mnemo.embed import Embeddings
from tests.conftest import FUTURE_NIGHTS_HOURS
from tests.integration.test_cli import env, run  # noqa: F401  # the env fixture
from tests.night_data import arc_conversation, record

pytestmark = pytest.mark.future_nights  # nights run days or weeks ahead of the clock

ME = Scope("alice", "history")
LONG_AGO = datetime(2023, 5, 1, 9, 0, tzinfo=UTC)  # imported history: event dates years in the past


def count(url: str, query: str, *args: object) -> int:
    with psycopg.connect(url) as conn:
        return int(conn.execute(query, args).fetchone()[0])  # type: ignore[arg-type, index]


def contents(url: str) -> dict[str, str]:
    """A digest of every row of every table in mnemo's chambers: the 'nothing written' check."""
    with psycopg.connect(url) as conn:
        tables = conn.execute(
            """SELECT schemaname, tablename FROM pg_tables
               WHERE schemaname IN ('mnemo', 'vectors', 'traces', 'queue') ORDER BY 1, 2"""
        ).fetchall()
        return {
            f"{s}.{t}": str(
                conn.execute(
                    f"SELECT count(*) || md5(coalesce(string_agg(r::text, '|' ORDER BY r::text), '')) FROM \"{s}\".\"{t}\" r"  # noqa: E501, S608
                ).fetchone()[0]  # type: ignore[index]
            )
            for s, t in tables
        }


async def test_first_night_keeps_imported_turns_and_says_what_retention_will_remove(
    archive: AsyncArchive, database_url: str
) -> None:
    texts = arc_conversation()
    await record(archive, ME, "s1", texts, LONG_AGO)
    turns = "SELECT count(*) FROM mnemo.turns WHERE entity_id = %s"

    first = await archive.night_cycle(ME)  # as of now: the turns arrived seconds ago
    assert first.blocks >= 1 and first.turns_scored == len(texts)
    assert first.turns_removed == 0 and count(database_url, turns, ME.entity_id) == len(texts)
    # ... and the report says what a later night will remove, and from when.
    assert first.turns_kept == len(texts) and first.retention_next is not None
    assert first.retention_next > first.as_of

    again = await archive.night_cycle(ME)  # a second night the same day: still within the cycle
    assert again.turns_removed == 0 and count(database_url, turns, ME.entity_id) == len(texts)

    later = await archive.night_cycle(ME, as_of=datetime.now(UTC) + timedelta(days=2))
    assert later.turns_removed == len(texts) and later.turns_kept == 0
    assert count(database_url, turns, ME.entity_id) == 0


async def test_a_turn_outlives_the_night_that_first_cuts_it_into_a_block(
    archive: AsyncArchive, database_url: str
) -> None:
    texts = arc_conversation()
    await record(archive, ME, "s1", texts, LONG_AGO)
    # No night ran for days after the turns arrived: the night that makes their blocks keeps them.
    first = await archive.night_cycle(ME, as_of=datetime.now(UTC) + timedelta(days=3))
    assert first.blocks >= 1 and first.turns_removed == 0 and first.turns_kept == len(texts)
    second = await archive.night_cycle(ME, as_of=datetime.now(UTC) + timedelta(days=4))
    assert second.turns_removed == len(texts)


async def test_context_after_the_night_shows_event_dates(archive: AsyncArchive) -> None:
    await record(archive, ME, "s1", arc_conversation(), LONG_AGO)
    await archive.night_cycle(ME)
    block = await archive.context(ME, "why was the Postgres replica evicted?", 600, seed=0, read_only=True)
    memories = [i.text for i in block.items if i.track == "situational" and "· said" not in i.text]
    assert memories, block.text  # blocks (episodic memories) were placed
    today = f"[{datetime.now(UTC):%Y-%m-%d}"
    assert all(t.startswith("- [2023-05-01") for t in memories), memories
    assert today not in block.text


async def test_context_does_not_list_an_insight_next_to_the_memory_it_repeats(archive: AsyncArchive) -> None:
    scope = Scope("dana", "insights")
    await archive.remember(scope, "Dana loves sailing on weekends", event_time=LONG_AGO)
    await archive.remember(scope, "Dana loves sailing at weekends", event_time=LONG_AGO + timedelta(days=30))
    report = await archive.night_cycle(scope, stages=("insights",))
    assert report.insights == 1
    block = await archive.context(scope, "what does Dana love doing on weekends?", 400, seed=0, read_only=True)
    lines = [i.text for i in block.items if i.track == "situational"]
    assert not any("· insight]" in t for t in lines), lines  # it only repeats a source placed beside it
    assert len(lines) == 2 and all("sailing" in t for t in lines)


def test_cli_dry_run_shows_the_plan_and_writes_nothing(
    env: dict[str, str],  # noqa: F811
    tmp_path: Path,
    database_url: str,
) -> None:
    path = tmp_path / "history.jsonl"
    start = LONG_AGO
    path.write_text(
        "\n".join(
            json.dumps(
                {
                    "session": "s1",
                    "role": "user" if i % 2 == 0 else "assistant",
                    "speaker": "Alice" if i % 2 == 0 else "Bob",
                    "content": text,
                    "created_at": (start + timedelta(minutes=i)).isoformat(),
                }
            )
            for i, text in enumerate(arc_conversation())
        )
        + "\n"
    )
    n = len(arc_conversation())
    env = env | {"COLUMNS": "400", "MNEMO_CLOCK_SKEW_HOURS": str(FUTURE_NIGHTS_HOURS)}  # rows on one line; nights ahead
    assert run(env, "import", str(path))[0] == 0
    assert run(env, "status")[0] == 0  # opening the archive once, before the snapshot

    before = contents(database_url)
    code, out, _ = run(env, "night", "--dry-run")
    assert code == 0, out
    assert contents(database_url) == before  # nothing written
    assert "dry run" in out and "nothing written" in out
    for line in (f"{n} turns to score", "1 session to cut", "to mine for facts", "to judge", "decay", "retention"):
        assert line in out, (line, out)
    code, out, _ = run(env, "night", "--dry-run", "--json")
    plan = json.loads(out)
    assert code == 0 and plan["dry_run"] is True and plan["turns_scored"] == n and plan["turns_removed"] == 0
    assert contents(database_url) == before

    code, out, _ = run(env, "night")  # the real first night: removes nothing and says what it will remove
    assert code == 0 and "0 raw turns removed" in out and f"{n} covered raw turns kept" in out, out
    assert count(database_url, "SELECT count(*) FROM mnemo.turns") == n

    later = (datetime.now(UTC) + timedelta(days=2)).isoformat()
    before = contents(database_url)
    code, out, _ = run(env, "night", "--dry-run", "--as-of", later, "--json")
    assert code == 0 and json.loads(out)["turns_removed"] == n  # the plan of the next night's retention
    code, out, _ = run(env, "night", "--dry-run", "--as-of", later)
    assert code == 0 and f"{n} raw turns would be removed" in out, out
    assert contents(database_url) == before
    code, out, _ = run(env, "night", "--as-of", later, "--json")
    assert code == 0 and json.loads(out)["turns_removed"] == n
    assert count(database_url, "SELECT count(*) FROM mnemo.turns") == 0


def planned_and_done(plan: NightReport, run: NightReport) -> tuple[dict[str, object], dict[str, object]]:
    """Every count a plan reports, beside what the run did for it."""
    same = ("turns", "turns_scored", "insights", "narratives", "verdicts", "decayed_light", "decayed_deep",
            "turns_removed", "blocks_archived", "turns_kept", "retention_next")  # fmt: skip
    planned = {name: getattr(plan, name) for name in same} | {
        "sessions cut": plan.plan["sessions_to_cut"],
        "judged": plan.plan["memories_to_judge"],
        "migrated": plan.plan.get("blocks_to_migrate", 0),  # not planned with the cortex off
        "reflexes pruned": plan.plan["reflexes_to_prune"],
    }
    done = {name: getattr(run, name) for name in same} | {
        "sessions cut": run.sessions,
        "judged": sum(run.verdicts.values()),
        "migrated": run.blocks_migrated,
        "reflexes pruned": run.reflexes_pruned,
    }
    return planned, done


@pytest.mark.parametrize(("days", "cortex"), [(2, True), (60, True), (2, False)])
async def test_the_plan_is_what_the_run_then_does(
    settings: Settings, embeddings: Embeddings, database_url: str, days: int, cortex: bool
) -> None:
    """Issue 27: ``night --dry-run`` planned "5 blocks would be archived" and the run archived none:
    the plan counted each stage over the database before the night, while the run's stages follow
    one another (curation archives memories, migration takes the blocks past their hot retention to
    the cortex, and only then does retention archive what is left)."""
    async with await AsyncArchive.open(settings.model_copy(update={"cortex": cortex}), embeddings=embeddings) as arch:
        await record(arch, ME, "s1", arc_conversation(), LONG_AGO)
        # a first night makes blocks and facts: its plan counts the turn stages and retention exactly
        plan = await arch.night_cycle(ME, dry_run=True)
        first = await arch.night_cycle(ME, as_of=plan.as_of)
        assert first.blocks >= 2
        exact = ("turns", "turns_scored", "turns_removed", "blocks_archived")
        assert [getattr(plan, name) for name in exact] == [getattr(first, name) for name in exact]
        assert plan.plan["sessions_to_cut"] == first.sessions == 1
        later = first.as_of + timedelta(days=days)
        before = contents(database_url)
        plan = await arch.night_cycle(ME, as_of=later, dry_run=True)
        assert contents(database_url) == before  # the plan wrote nothing
        run = await arch.night_cycle(ME, as_of=later)
    planned, done = planned_and_done(plan, run)
    assert planned == done
    # the scenarios are the ones that can differ: blocks leave the hippocampus (curation archives
    # them, migration moves them, or retention archives them) and raw turns go
    assert run.verdicts.get("archive", 0) + run.blocks_migrated + run.blocks_archived > 0
    assert run.turns_removed > 0 and sum(run.verdicts.values()) > 0
