"""State changes close the open value of their slot; fact text stays whole (issue 40 item 3)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemo.cognition.consolidation.extraction import FactCandidate, TurnText, extract
from mnemo.cognition.consolidation.facts import is_fragment, sentence
from mnemo.cognition.consolidation.slots import ANY, ONE_VALUE, slot_of, value_matches
from mnemo.cognition.text.phrases import fold_accents

AT = datetime(2025, 3, 1, 12, tzinfo=UTC)
NAMES = st.sampled_from(["Luna", "Miso", "Biscuit", "Pepper", "Nala", "Rocky", "Oskar", "Coco"])
PLACES = st.sampled_from(["Lisbon", "Valencia", "Seville", "Porto", "Kraków", "Rotterdam", "Nagoya", "Cork"])
ORGS = st.sampled_from(["Typeform", "Booking.com", "monday.com", "Acme Logistics", "Spotify", "Deloitte", "IKEA"])


def facts(text: str, speaker: str = "José") -> tuple[FactCandidate, ...]:
    return extract([TurnText(speaker, "user", text, AT)]).facts


def ends(old_attribute: str, old_value: str, text: str) -> bool:
    """Whether some ending ``text`` states would close the open fact ``old_attribute`` = ``old_value``
    (the night's rule, :func:`mnemo.night.fact_extraction._ends`, on the same subject)."""
    for f in facts(text):
        if not f.negated:
            continue
        if f.attribute == ANY and value_matches(f.value, old_value):
            return True
        if f.attribute == old_attribute and (not f.value or value_matches(f.value, old_value)):
            return True
        slot = slot_of(f.attribute, f.value)
        same_slot = slot is not None and slot == slot_of(old_attribute, old_value)
        if same_slot and (not f.value or value_matches(f.value, old_value)):
            return True
    return False


@pytest.mark.parametrize(
    ("attribute", "value", "text"),
    [
        ("works at", "Acme", "I resigned last Friday."),
        ("works at", "Acme", "I handed in my notice at Acme yesterday."),
        ("works at", "Acme", "Honestly I quit Acme in March."),
        ("works at", "Acme", "I left Acme after six years."),
        ("works at", "Acme", "I retired in January."),
        ("works at", "Acme", "I was made redundant."),
        ("works at", "Acme", "Friday was my last day at Acme."),
        ("works as", "accountant", "I resigned from the firm."),
        ("lives in", "Berlin", "I moved away from Berlin."),
        ("lives in", "Berlin", "I used to live in Berlin."),
        ("lives in", "Berlin", "I no longer live in Berlin."),
        ("lives in", "Berlin", "We moved from Berlin to Leipzig."),
        ("dog", "Luna", "Luna passed away last month."),
        ("dog", "Luna", "Our dog Luna died in her sleep."),
        ("dog", "Luna", "We lost our dog in March."),
        ("dog", "Luna", "We had to put Luna down."),
        ("dog", "Luna", "My old dog, she passed away."),
        ("boyfriend", "Tom", "Tom and I broke up."),
        ("boyfriend", "Tom", "We split up in June."),
        ("boyfriend", "Tom", "I'm no longer with Tom."),
        ("girlfriend", "Ana", "I broke up with Ana."),
        ("hobby", "climbing", "I gave up climbing."),
        ("hobby", "climbing", "I don't climb anymore."),
        ("goes to", "gym called Pulse", "I don't go to Pulse anymore."),
        ("plays", "chess", "I stopped playing chess."),
        ("drives", "Honda Civic", "I sold my Honda Civic."),
        ("uses", "Jira", "We switched from Jira to Linear."),
        ("is", "vegan", "I'm not vegan anymore."),
    ],
)
def test_each_state_change_phrasing_closes_its_fact(attribute: str, value: str, text: str) -> None:
    assert ends(attribute, value, text), [f for f in facts(text)]


@pytest.mark.parametrize(
    ("text", "attribute", "value"),
    [
        ("I accepted the offer from Typeform.", "works at", "Typeform"),
        ("The offer came through from Booking.com, I start in May.", "works at", "Booking.com"),
        ("It's my first week at monday.com and I love it.", "works at", "monday.com"),
        ("These days I work at Spotify.", "works at", "Spotify"),
        ("I joined Deloitte as an analyst.", "works at", "Deloitte"),
        ("I got promoted to senior designer.", "works as", "senior designer"),
        ("We've relocated to Valencia.", "lives in", "Valencia"),
        ("I drive a Tesla now.", "drives", "Tesla"),
        ("We adopted a cat named Miso.", "cat", "Miso"),
    ],
)
def test_a_new_value_is_recognised_beyond_fixed_phrasings(text: str, attribute: str, value: str) -> None:
    assert (attribute, value) in {(f.attribute, f.value) for f in facts(text) if not f.negated}


def test_joining_a_club_is_not_a_job() -> None:
    assert not any(f.attribute == "works at" for f in facts("I joined the Sierra Club."))


def test_an_ending_takes_back_what_its_own_sentence_names() -> None:
    found = facts("Our dog Luna passed away.")
    assert not [f for f in found if not f.negated]  # no "José's dog is Luna" from the same sentence
    assert ("dog", "Luna") in {(f.attribute, f.value) for f in found if f.negated}


@given(relation=st.sampled_from(["mom", "dad", "sister", "brother"]), old=PLACES, new=PLACES)
def test_a_relatives_move_is_about_the_relative(relation: str, old: str, new: str) -> None:
    if old == new:
        return
    for text in (f"My {relation} moved from {old} to {new}.", f"My {relation} called. She moved from {old} to {new}."):
        found = {(f.entity, f.attribute, f.value, f.negated) for f in facts(text)}
        who = {"mom": "mother", "dad": "father"}.get(relation, relation)
        assert (f"José's {who}", "lives in", new, False) in found
        assert (f"José's {who}", "lives in", old, True) in found
        assert not any(e == "José" and a == "lives in" for e, a, _, _ in found)


@given(org=ORGS)
def test_the_job_of_an_accepted_offer_is_the_job_and_keeps_its_whole_name(org: str) -> None:
    for text in (f"I accepted the offer from {org}.", f"Good news, the offer came through from {org}!"):
        assert ("works at", org) in {(f.attribute, f.value) for f in facts(text) if not f.negated}


@given(pet=NAMES, kind=st.sampled_from(["dog", "cat", "rabbit"]))
def test_a_pet_that_died_closes_the_pet_by_its_name(pet: str, kind: str) -> None:
    for text in (f"{pet} passed away.", f"Sadly our {kind} {pet} died.", f"We lost {pet} last spring."):
        assert ends(kind, pet, text)
        assert not ends(kind, "Someone Else", text)


@given(
    name=NAMES,
    day=st.sampled_from(["Monday", "Tuesday", "Saturday"]),
    lead=st.sampled_from(["I go to", "I train at", "I work out at"]),
)
def test_fact_text_is_never_cut_after_a_function_word(name: str, day: str, lead: str) -> None:
    for f in facts(f"{lead} a gym called {name} every {day}."):
        assert not is_fragment(f.attribute, f.value)
        assert f.value.split()[-1] not in ("every", "each", "on", "at", "a", "the")
        assert name in sentence(f.entity, f.attribute, f.value)


def test_an_adoption_names_the_pet() -> None:
    texts = {sentence(f.entity, f.attribute, f.value) for f in facts("I adopted a cat named Miso.") if not f.negated}
    assert texts and all("Miso" in t for t in texts)


@given(st.text(max_size=20))
def test_folding_accents_is_idempotent_and_caseless(text: str) -> None:
    folded = fold_accents(text)
    assert fold_accents(folded) == folded == fold_accents(text.casefold())
    assert fold_accents(text + "\u0301") == folded  # a combining accent folds away


def test_jose_folds_as_jose() -> None:
    assert fold_accents("José") == fold_accents("jose") == fold_accents("JOSÉ") == "jose"


def test_slots_read_the_value_where_the_attribute_says_too_little() -> None:
    assert slot_of("is", "vegan") == slot_of("is", "vegetarian") == "diet" in ONE_VALUE
    assert slot_of("boyfriend", "Tom") == slot_of("husband", "Sam") == "partner"
    assert slot_of("likes", "hiking") is None and slot_of("is", "nurse") is None
    assert value_matches("climb", "goes climbing every Saturday") and not value_matches("Luna", "Lunar module")
