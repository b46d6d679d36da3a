"""The offline agent answers with what is current and says when it was said; it says it does not
know what was never said (issue 40 item 8), on the real archive with no model configured."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from mnemo import AsyncArchive, Scope
from mnemo.agent import Agent

ME = Scope("maya", "chat")
LIFE = [  # (days before today, what the user said then)
    (120, "I live in Lisbon, in a small flat near the river."),
    (120, "I work as a nurse at the children's hospital."),
    (90, "My dog is called Pixel."),
    (90, "I am allergic to peanuts."),
    (8, "I moved to Porto last week."),
]


async def _lived(archive: AsyncArchive, now: datetime) -> Agent:
    """Earlier sessions, each turn dated when it was said; then today's agent."""
    for minute, (days, text) in enumerate(LIFE):
        at = now - timedelta(days=days) + timedelta(minutes=minute)
        await archive.record_turn(ME, f"day-{days}", "user", text, created_at=at)
    agent = Agent(archive, ME, session="today")
    assert await agent.start() is None and agent.model is None
    return agent


async def test_offline_the_current_home_is_answered_with_when_it_was_said(archive: AsyncArchive) -> None:
    """Lisbon four months ago, the move to Porto said eight days ago: "where do I live now?" names
    Porto, says it was said last week and tells its own "last week" as of then; an unchanged fact
    is still answered, with its age."""
    agent = await _lived(archive, datetime.now(UTC))
    home = await agent.respond("Where do I live now?")
    assert home.source == "offline" and "Lisbon" not in home.text
    assert home.text == "You said last week that you moved to Porto the week before.", home.text
    job = await agent.respond("What is my job?")
    assert job.text == "You said 4 months ago that you work as a nurse at the children's hospital.", job.text
    dog = await agent.respond("What is my dog's name?")
    assert dog.text == "You said 3 months ago that your dog is called Pixel.", dog.text


async def test_offline_a_never_said_thing_is_not_known_never_a_confident_unrelated_fact(
    archive: AsyncArchive,
) -> None:
    """The dog's name is no answer to the brother's name, nor the hospital to the blood type."""
    agent = await _lived(archive, datetime.now(UTC))
    brother = await agent.respond("What is my brother's name?")
    assert brother.text == "I don't know your brother's name — you haven't told me.", brother.text
    blood = await agent.respond("What is my blood type?")
    assert blood.text == "I don't know your blood type — you haven't told me.", blood.text
    team = await agent.respond("Which football team do I support?")
    assert team.text == "I don't know which football team you support — you haven't told me.", team.text
    assert not any(word in r.text for r in (brother, blood, team) for word in ("Pixel", "nurse", "Porto", "peanuts"))


async def test_offline_told_in_one_conversation_the_move_wins_over_the_old_city(archive: AsyncArchive) -> None:
    """The issue's transcript, all through the agent: told "I live in Lisbon." then "I moved to
    Porto last week.", asked where it lives now, it names Porto (said today: no age)."""
    agent = Agent(archive, ME)
    await agent.start()
    assert (await agent.respond("I live in Lisbon.")).text == "Noted: you live in Lisbon."
    assert (await agent.respond("I moved to Porto last week.")).text == "Noted: you moved to Porto last week."
    now = await agent.respond("Where do I live now?")
    assert now.text == "From memory: you moved to Porto last week.", now.text
    blood = await agent.respond("What is my blood type?")
    assert blood.text == "I don't know your blood type — you haven't told me.", blood.text
