"""What is current comes first (issue 40 items 2 and 5), on the real store: the write path reads
each turn's claims, a question about the present gets a stale statement's successor right above
it, a question about the past does not, and use never reinforces what is stale."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from mnemo import AsyncArchive, RecallResult, Scope

ME = Scope("maya", "life")
SAID = [
    ("s1", "2025-01-10T18:00:00+00:00", "I work at Globex as a software tester, the team is lovely."),
    ("s1", "2025-01-10T18:04:00+00:00", "I live in Madrid, close to the Retiro park."),
    ("s2", "2025-03-02T19:00:00+00:00", "The weather was awful so I stayed home and baked bread."),
    ("s3", "2025-06-20T20:00:00+00:00", "Big news: I started a new job at Initech last week!"),
    ("s4", "2025-09-05T17:00:00+00:00", "I moved from Madrid to Dublin in August, the flat is tiny."),
]


async def _life(archive: AsyncArchive) -> dict[str, str]:
    ids = {}
    for session, at, text in SAID:
        turn = await archive.record_turn(ME, session, "user", text, speaker="Maya", created_at=at)
        ids[text] = str(turn.id)
    return ids


def _contents(result: object) -> list[str]:
    assert isinstance(result, RecallResult)
    return [h.content for h in result.hits]


def _at(contents: list[str], word: str) -> int:
    return next(n for n, c in enumerate(contents) if word in c)


async def test_a_question_about_now_puts_the_current_statement_above_the_stale_one(archive: AsyncArchive) -> None:
    await _life(archive)
    work = _contents(await archive.recall(ME, "Where does Maya work?", k=5, read_only=True))
    assert _at(work, "Initech") < _at(work, "Globex")
    home = _contents(await archive.recall(ME, "Where does Maya live now?", k=5, read_only=True))
    assert _at(home, "Dublin") < _at(home, "Retiro")


async def test_without_the_stage_the_stale_statement_leads(archive: AsyncArchive) -> None:
    """The control: the same scope, the same question, the stage off (what the test above changes)."""
    await _life(archive)
    plain = await AsyncArchive.open(archive.settings.model_copy(update={"current_first": False}))
    try:
        work = _contents(await plain.recall(ME, "Where does Maya work?", k=5, read_only=True))
    finally:
        await plain.close()
    assert _at(work, "Globex") < _at(work, "Initech")


async def test_a_question_about_the_past_moves_nothing(archive: AsyncArchive) -> None:
    await _life(archive)
    before = _contents(await archive.recall(ME, "Where did Maya work before?", k=5, read_only=True))
    plain = await AsyncArchive.open(archive.settings.model_copy(update={"current_first": False}))
    try:
        unchanged = _contents(await plain.recall(ME, "Where did Maya work before?", k=5, read_only=True))
    finally:
        await plain.close()
    assert before == unchanged


@pytest.mark.parametrize("stage", [True, False])
async def test_use_never_reinforces_a_stale_fact(archive: AsyncArchive, stage: bool) -> None:
    """A fact memory read from a stale turn keeps its weight however often the owner recalls it;
    the control (the stage off) reinforces it."""
    ids = await _life(archive)
    stale = await archive.remember(
        ME, "Maya works at Globex", kind="semantic",
        metadata={"fact_id": "00000000-0000-0000-0000-000000000001", "entity": "Maya", "attribute": "works at"},
        provenance=[ids[SAID[0][2]]], event_time=datetime(2025, 1, 10, 18, tzinfo=UTC),
    )  # fmt: skip
    owner = archive if stage else await AsyncArchive.open(archive.settings.model_copy(update={"current_first": False}))
    try:
        for n in range(5):
            await owner.recall(ME, "Where does Maya work?", k=5, seed=n)
    finally:
        if owner is not archive:
            await owner.close()
    alpha = {m.id: m.alpha for m in (await archive.inspect.memories(ME)).items}
    assert (alpha[stale.id] == stale.alpha) is stage


@pytest.mark.parametrize("text", ["I quit my job at Globex.", "I no longer work at Globex."])
async def test_an_ending_is_the_successor_when_nothing_new_was_said(archive: AsyncArchive, text: str) -> None:
    await archive.record_turn(ME, "s1", "user", SAID[0][2], speaker="Maya", created_at=SAID[0][1])
    await archive.record_turn(ME, "s2", "user", text, speaker="Maya", created_at="2025-04-01T10:00:00+00:00")
    work = _contents(await archive.recall(ME, "Where does Maya work now?", k=5, read_only=True))
    assert work[0] == text


async def test_a_recall_made_as_of_a_time_knows_only_what_was_said_by_then(archive: AsyncArchive) -> None:
    await _life(archive)
    spring = _contents(
        await archive.recall(ME, "Where does Maya work?", k=5, read_only=True, as_of=datetime(2025, 5, 1, tzinfo=UTC))
    )
    assert not any("Initech" in c for c in spring)  # not said yet
    later = _contents(
        await archive.recall(ME, "Where does Maya work?", k=5, read_only=True, as_of=datetime(2025, 12, 1, tzinfo=UTC))
    )
    assert _at(later, "Initech") < _at(later, "Globex")  # asked later about the present: what holds then
