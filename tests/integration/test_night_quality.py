"""Issue 12, defect 14 (night output quality) end to end on small hand-made data: insights merge
only statements of one event, facts name the speaker instead of "my", and the curator promotes a
pattern said often over weeks on the first night after it is recorded."""

from __future__ import annotations

from datetime import timedelta

import psycopg

from mnemo import AsyncArchive, Scope
from tests.night_data import START, record

ME = Scope("dana", "quality")


def rows(url: str, query: str, *args: object) -> list[tuple[object, ...]]:
    with psycopg.connect(url) as conn:
        return conn.execute(query, args).fetchall()


async def test_an_insight_merges_one_event_only_and_says_all_of_it(archive: AsyncArchive, database_url: str) -> None:
    lisbon = [
        await archive.remember(ME, "Dana went to the jazz festival in Lisbon on 4 May 2024."),
        await archive.remember(ME, "On 4 May 2024 Dana went to the jazz festival in Lisbon with Sam."),
    ]
    porto = await archive.remember(ME, "Dana went to the jazz festival in Porto on 17 August 2024.")
    report = await archive.night_cycle(ME, stages=("insights",))
    assert report.insights == 1
    ((insight_id, content),) = rows(
        database_url, "SELECT id, content FROM mnemo.memories WHERE entity_id = %s AND kind = 'insight'", ME.entity_id
    )
    chain = await archive.knowledge.why_do_i_believe(ME, insight_id)  # type: ignore[arg-type]
    assert {b.id for b in chain} == {m.id for m in lisbon}  # another date and city: another event
    assert porto.id not in {b.id for b in chain}
    assert "Sam" in str(content) and "Lisbon" in str(content)  # every source is represented


async def test_facts_name_the_speaker_not_my(archive: AsyncArchive, database_url: str) -> None:
    texts = [
        "I am going to show my paintings at the town gallery next week.",
        "That sounds lovely, I will come and see them.",
        "Yesterday I took my kids camping in the hills.",
        "Camping in the hills sounds fun.",
    ]
    await record(archive, ME, "s1", texts, START, speakers=("Dana", "Sam"))
    await archive.night_cycle(ME, as_of=START + timedelta(hours=1), stages=("surprisal", "knowledge"))
    values = [str(v) for (v,) in rows(database_url, "SELECT value FROM mnemo.facts WHERE entity_id = %s", ME.entity_id)]
    assert "show Dana's paintings at the town gallery" in values
    assert "Dana's kids camping in the hills" in values
    contents = rows(
        database_url, "SELECT content FROM mnemo.memories WHERE entity_id = %s AND kind = 'semantic'", ME.entity_id
    )
    assert contents and not any(" my " in f" {c} " for (c,) in contents)


async def test_a_pattern_said_weekly_is_promoted_on_its_first_night(archive: AsyncArchive) -> None:
    for week in range(6):  # the same preference, said once a week for six weeks
        await record(
            archive,
            ME,
            f"week-{week}",
            ["I love hiking in the mountains.", "Hiking in the mountains is great."],
            START + timedelta(days=7 * week),
            speakers=("Dana", "Sam"),
        )
    await archive.remember(ME, "Dana parked the car on level two.")  # said once: kept
    await archive.night_cycle(ME, as_of=START + timedelta(days=43), stages=("surprisal", "knowledge"))
    facts = await archive.knowledge.facts(ME, "Dana")
    (hiking,) = [f for f in facts.facts if "hiking" in f.value]
    assert hiking.mention_count == 6
    plan = await archive.knowledge.curate(ME, dry_run=True)
    promoted = [v for v in plan.changes if v.classification.verdict == "promote"]
    assert [v.content for v in promoted] == [f"Dana {hiking.attribute} {hiking.value}"]
    assert "pattern" in promoted[0].classification.reasons[-1]
    assert plan.counts.get("keep", 0) >= 1
