"""A night over a small life closes what changed: the old job, home, pet and partner (issue 40 item 3)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from mnemo import AsyncArchive, Scope
from tests.night_data import START, record

pytestmark = pytest.mark.future_nights  # nights run days or weeks ahead of the clock

ME = Scope("jose", "life")
SPEAKERS = ("José", "Assistant")

LIFE = [  # (days after START, what José says); the assistant answers "I see." to each
    (0, "I live in Seville and I work at Acme Logistics as an accountant."),
    (0, "We have a dog named Luna. My boyfriend Tom works at IKEA."),
    (0, "I go to a gym called Pulse every Tuesday. My mom lives in Seville too."),
    (40, "Big news: I accepted the offer from Booking.com, I start next month."),
    (40, "My mom called. She moved from Seville to Valencia."),
    (90, "Luna passed away last week, we are heartbroken."),
    (150, "We have relocated to Lisbon, the flat is lovely."),
    (150, "We adopted a cat named Miso."),
    (200, "Tom and I broke up in the spring."),
    (200, "I don't go to Pulse anymore, I gave up the gym."),
    (230, "I had dinner at Nobu with Ana last night."),
]


async def _live(archive: AsyncArchive) -> None:
    for n, (days, text) in enumerate(LIFE):
        await record(archive, ME, f"s{n}", [text, "I see."], START + timedelta(days=days), speakers=SPEAKERS)
    end = START + timedelta(days=LIFE[-1][0], hours=1)
    await archive.night_cycle(ME, as_of=end, stages=("surprisal", "knowledge"))


async def test_a_night_over_a_life_lists_only_current_values_as_current(archive: AsyncArchive) -> None:
    await _live(archive)
    jose = await archive.knowledge.facts(ME, "jose")  # case and accents folded
    assert jose.name == "José"
    now = {(f.attribute, f.value) for f in jose.current}
    past = {(f.attribute, f.value) for f in jose.past}
    assert ("lives in", "Lisbon") in now and ("lives in", "Seville") in past
    assert ("works at", "Booking.com") in now and ("works at", "Acme Logistics") in past
    assert ("cat", "Miso") in now and ("dog", "Luna") in past
    assert not any(a in ("boyfriend", "partner") for a, _ in now) and ("boyfriend", "Tom") in past
    assert not any("Pulse" in v for _, v in now) and any("Pulse" in v for _, v in past)
    assert {v for a, v in now if a == "works at"} == {"Booking.com"}
    assert {v for a, v in now if a == "lives in"} == {"Lisbon"}
    assert not [f for f in jose.facts if f.kind == "event" and f.current]  # a dinner out is dated, not "→ now"
    assert ("dog", "Luna") not in {(p, o) for p, o, _ in jose.triples}  # the relation ended with the fact

    mother = await archive.knowledge.facts(ME, "José's mother")
    assert {(f.attribute, f.value) for f in mother.current} == {("lives in", "Valencia")}
    assert ("lives in", "Seville") in {(f.attribute, f.value) for f in mother.past}
