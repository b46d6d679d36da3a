"""Offline knowledge extraction (cognition/extraction.py) and summaries (cognition/summaries.py)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from mnemo.cognition.consolidation.extraction import (
    Extraction,
    FactCandidate,
    TripleCandidate,
    TurnText,
    extract,
    fact_hash,
    fact_key,
    find_times,
    normalise,
    resolve_time,
    single_valued,
    triple_hash,
)
from mnemo.cognition.consolidation.summaries import (
    centrality,
    extractive_summary,
    offline_insight,
    offline_narrative,
    select_sentences,
    split_sentences,
    word_count,
)

MONDAY = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)  # a LoCoMo-style session time ("1:56 pm on 8 May, 2023")


def facts_of(
    text: str, *, speaker: str | None = "Caroline", role: str = "user", at: datetime | None = MONDAY
) -> tuple[FactCandidate, ...]:
    return extract([TurnText(speaker, role, text, at)]).facts


def has(facts: Sequence[FactCandidate], attribute: str, value: str, *, negated: bool = False) -> FactCandidate | None:
    for f in facts:
        same = normalise(f.attribute) == normalise(attribute) and normalise(f.value) == normalise(value)
        if same and f.negated == negated:
            return f
    return None


# ---------------------------------------------------------------- LoCoMo-style chat


def test_locomo_style_turns_give_facts_about_the_right_speaker() -> None:
    turns = [
        TurnText("Caroline", "user", "Hey Mel! Good to see you! How have you been?", MONDAY),
        TurnText(
            "Melanie", "assistant", "Hey Caroline! I'm swamped with the kids & work. What's new with you?", MONDAY
        ),
        TurnText("Caroline", "user", "I went to a trans support group yesterday and it was so moving.", MONDAY),
        TurnText("Melanie", "assistant", "Yeah, I painted that lake at sunrise last year! It's special to me.", MONDAY),
        TurnText("Melanie", "assistant", "I ran a charity 5K for mental health last Saturday - so rewarding.", MONDAY),
        TurnText("Caroline", "user", "This bracelet is from my grandma in my home country, Sweden.", MONDAY),
        TurnText("Melanie", "assistant", "I'm lucky to have my husband and kids; they keep me going.", MONDAY),
        TurnText("Caroline", "user", "I'm a big fan of pottery - it's so calming.", MONDAY),
        TurnText("Melanie", "assistant", "We're thinking about going camping next month!", MONDAY),
    ]
    ex = extract(turns)
    assert isinstance(ex, Extraction)
    by_source = {i: [f for f in ex.facts if f.source == i] for i in range(len(turns))}
    assert by_source[0] == [] and by_source[1] == []  # greetings and questions assert nothing

    group = has(by_source[2], "went to", "trans support group")
    assert group is not None and group.entity == "Caroline" and group.kind == "event"
    assert group.valid_from == datetime(2023, 5, 7, tzinfo=UTC) and group.precision == "day"

    painting = has(by_source[3], "painted", "lake at sunrise")
    assert painting is not None and painting.entity == "Melanie"
    assert painting.valid_from == datetime(2022, 1, 1, tzinfo=UTC) and painting.precision == "year"

    race = has(by_source[4], "ran", "charity 5K for mental health")
    assert race is not None and race.valid_from == datetime(2023, 5, 6, tzinfo=UTC)  # the Saturday before Monday

    home = has(by_source[5], "from", "Sweden")
    assert home is not None and home.entity == "Caroline" and home.kind == "fact"
    assert any((t.subject, t.predicate, t.object, t.source) == ("Caroline", "from", "Sweden", 5) for t in ex.triples)

    assert has(by_source[6], "has", "husband") is not None and has(by_source[6], "has", "child") is not None
    assert all(f.entity == "Melanie" for f in by_source[6])

    pottery = has(by_source[7], "likes", "pottery")
    assert pottery is not None and pottery.kind == "preference" and pottery.entity == "Caroline"

    camping = has(by_source[8], "thinking about", "going camping")
    assert camping is not None and camping.valid_from == datetime(2023, 6, 1, tzinfo=UTC)
    assert camping.precision == "month" and camping.confidence < group.confidence  # "we", and only a plan


@pytest.mark.parametrize(
    ("text", "attribute", "value", "kind"),
    [
        ("I am a nurse.", "is", "nurse", "fact"),
        ("I'm 32 years old.", "age", "32", "fact"),
        ("My name is Ada Lovelace.", "name", "Ada Lovelace", "fact"),
        ("I live in Lyon.", "lives in", "Lyon", "fact"),
        ("I moved to Berlin last year.", "lives in", "Berlin", "fact"),
        ("I work at Google as an engineer.", "works at", "Google", "fact"),
        ("I work at Google as an engineer.", "works as", "engineer", "fact"),
        ("I study biology at MIT.", "studies", "biology", "fact"),
        ("I'm vegan.", "is", "vegan", "fact"),
        ("I'm allergic to peanuts.", "allergic to", "peanuts", "fact"),
        ("I really enjoy long walks on the beach.", "likes", "long walks on the beach", "preference"),
        ("I love to paint.", "likes", "paint", "preference"),
        ("I prefer tea to coffee.", "prefers", "tea", "preference"),
        ("I hate mornings.", "dislikes", "mornings", "preference"),
        ("I can't stand loud music.", "dislikes", "loud music", "preference"),
        ("My favourite colour is blue.", "favourite colour", "blue", "preference"),
        ("My favorite band is Queen.", "favourite band", "Queen", "preference"),
        ("My sister Anna is visiting.", "sister", "Anna", "relation"),
        ("My husband is John.", "husband", "John", "relation"),
        ("Anna is my best friend.", "friend", "Anna", "relation"),
        ("I have two kids.", "number of children", "2", "relation"),
        ("I have a dog named Max.", "dog", "Max", "relation"),
        ("Oscar, my guinea pig, is great.", "guinea pig", "Oscar", "relation"),
        ("I'm married to Tom.", "spouse", "Tom", "relation"),
        ("I started a pottery class last year.", "started", "pottery class", "event"),
        ("Just got back from a family road trip yesterday, it was fun!", "got back from", "family road trip", "event"),
        ("I graduated in 2019.", "graduated", "graduated", "event"),
    ],
)
def test_patterns(text: str, attribute: str, value: str, kind: str) -> None:
    found = has(facts_of(text), attribute, value)
    assert found is not None, facts_of(text)
    assert found.kind == kind and found.entity == "Caroline" and 0 < found.confidence <= 1


def test_relations_and_places_become_triples() -> None:
    ex = extract([TurnText("Ana", "user", "My sister Beth lives nearby. I work at Acme Corp.", MONDAY)])
    triples = {(t.subject, t.predicate, t.object) for t in ex.triples}
    assert ("Ana", "sister", "Beth") in triples and ("Ana", "works at", "Acme Corp") in triples
    # a common noun is a fact, not an entity to link
    ex = extract([TurnText("Ana", "user", "I work at a small bakery.", MONDAY)])
    assert has(ex.facts, "works at", "small bakery") is not None and ex.triples == ()


def test_speaker_fallback_by_role_and_sources_index_the_turns() -> None:
    turns = [
        TurnText(None, "user", "I live in Porto.", None),
        TurnText(None, "assistant", "I am a language model.", None),
        TurnText("  ", "user", "Nothing here.", None),
        TurnText(None, "user", "My dog Rex is asleep.", None),
    ]
    ex = extract(turns)
    porto = has(ex.facts, "lives in", "Porto")
    assert porto is not None and porto.entity == "user" and porto.source == 0
    model = has(ex.facts, "is", "language model")
    assert model is not None and model.entity == "assistant" and model.source == 1
    rex = has(ex.facts, "dog", "Rex")
    assert rex is not None and rex.source == 3
    assert {f.source for f in ex.facts} == {0, 1, 3}


@pytest.mark.parametrize(
    "text",
    [
        "Do you like jazz?",
        "I'd love to visit Japan someday.",
        "If I lived in Paris I would be happy.",
        "I love it!",
        "I love you!",
        "I love how you paint.",
        "I'm a bit tired.",
        "I'm 5 minutes away.",
        "These figurines I bought yesterday remind me of home.",
        "I don't think I like jazz.",
        "She told me I am a genius.",
    ],
)
def test_precision_no_fact_from_questions_hypotheticals_or_context(text: str) -> None:
    assert facts_of(text) == ()


# ---------------------------------------------------------------- negation


@pytest.mark.parametrize(
    ("text", "attribute", "value"),
    [
        ("I don't like spicy food.", "likes", "spicy food"),
        ("I do not enjoy running.", "likes", "running"),
        ("I never liked horror movies.", "likes", "horror movies"),
        ("I can't stand loud music.", "likes", "loud music"),
        ("I'm not a fan of horror movies.", "likes", "horror movies"),
        ("I wouldn't say I love cooking.", "likes", "cooking"),
        ("I no longer work at Acme.", "works at", "Acme"),
        ("I quit my job at Initech last month.", "works at", "Initech"),
        ("I don't live in Berlin anymore.", "lives in", "Berlin"),
        ("I used to live in Oslo.", "lives in", "Oslo"),
        ("I stopped playing chess.", "plays", "chess"),
        ("I'm not a nurse anymore.", "is", "nurse"),
        ("I'm not married.", "relationship status", "married"),
    ],
)
def test_negations_never_produce_the_positive_fact(text: str, attribute: str, value: str) -> None:
    facts = facts_of(text)
    assert has(facts, attribute, value, negated=False) is None, facts


def test_dislikes_and_ended_facts() -> None:
    assert has(facts_of("I don't like spicy food."), "dislikes", "spicy food") is not None
    acme = has(facts_of("I no longer work at Acme."), "works at", "Acme", negated=True)
    assert acme is not None and acme.kind == "fact"
    initech = has(facts_of("I quit my job at Initech last month."), "works at", "Initech", negated=True)
    assert initech is not None and initech.valid_from == datetime(2023, 4, 1, tzinfo=UTC)  # when it ended
    assert initech.precision == "month"
    job = has(facts_of("I quit my job."), "works at", "", negated=True)  # closes whatever employer is open
    assert job is not None
    assert has(facts_of("I used to live in Oslo."), "lives in", "Oslo", negated=True) is not None
    banker = has(facts_of("Lost my job as a banker yesterday."), "works as", "banker", negated=True)  # chat ellipsis
    assert banker is not None and banker.valid_from == datetime(2023, 5, 7, tzinfo=UTC)
    assert has(facts_of("I stopped playing chess."), "plays", "chess", negated=True) is not None
    ex = extract([TurnText("Bo", "user", "I moved from Sweden to the US.", MONDAY)])
    assert has(ex.facts, "lives in", "US") is not None
    assert has(ex.facts, "lives in", "Sweden", negated=True) is not None
    assert [t.negated for t in ex.triples if t.object == "Sweden"] == [True]
    later = extract([TurnText("Maya", "user", "I just moved to Lisbon from Toronto for a new job.", MONDAY)])
    assert has(later.facts, "lives in", "Lisbon") is not None  # not "Lisbon from Toronto"
    assert has(later.facts, "lives in", "Toronto", negated=True) is not None


# ---------------------------------------------------------------- dates


@pytest.mark.parametrize(
    ("phrase", "day", "precision"),
    [
        ("yesterday", (2023, 5, 7), "day"),
        ("the day before yesterday", (2023, 5, 6), "day"),
        ("last week", (2023, 5, 1), "week"),
        ("three days ago", (2023, 5, 5), "day"),
        ("two weeks ago", (2023, 4, 24), "week"),
        ("about five years ago", (2018, 1, 1), "year"),
        ("last month", (2023, 4, 1), "month"),
        ("last year", (2022, 1, 1), "year"),
        ("last Saturday", (2023, 5, 6), "day"),
        ("last Fri", (2023, 5, 5), "day"),
        ("last weekend", (2023, 5, 6), "week"),
        ("on 5 May 2023", (2023, 5, 5), "day"),
        ("on May 2", (2023, 5, 2), "day"),
        ("on 20 May", (2022, 5, 20), "day"),  # no year, after the turn: last year's
        ("in 2022", (2022, 1, 1), "year"),
        ("in March", (2023, 3, 1), "month"),
        ("in June", (2022, 6, 1), "month"),
    ],
)
def test_past_dates_resolve_against_the_turn_time(phrase: str, day: tuple[int, int, int], precision: str) -> None:
    (event,) = [f for f in facts_of(f"I went to the museum {phrase}.") if f.kind == "event"]
    assert event.value == "museum"  # the date is not part of the value
    assert event.valid_from == datetime(*day, tzinfo=UTC) and event.precision == precision


@pytest.mark.parametrize(
    ("phrase", "day", "precision"),
    [
        ("tomorrow", (2023, 5, 9), "day"),
        ("next week", (2023, 5, 15), "week"),
        ("next month", (2023, 6, 1), "month"),
        ("next year", (2024, 1, 1), "year"),
        ("in two weeks", (2023, 5, 22), "week"),
        ("next Saturday", (2023, 5, 13), "day"),
        ("on 2 May", (2024, 5, 2), "day"),  # no year, before the turn: next year's
    ],
)
def test_future_dates(phrase: str, day: tuple[int, int, int], precision: str) -> None:
    (event,) = [f for f in facts_of(f"I'm going to the museum {phrase}.") if f.kind == "event"]
    assert (event.attribute, event.value) == ("going to", "museum")
    assert event.valid_from == datetime(*day, tzinfo=UTC) and event.precision == precision


def test_a_time_on_the_wrong_side_never_dates_an_event() -> None:
    assert facts_of("I'm going to the museum yesterday.") == ()  # a plan needs a date ahead
    (event,) = facts_of("I went to the museum next week.")  # still an event (strong verb), but undated
    assert event.valid_from is None and event.confidence < 0.7
    assert all(f.attribute != "going to" for f in facts_of("Lost my job yesterday, so I'm gonna start a business."))


def test_dates_across_year_boundaries_and_without_a_turn_time() -> None:
    january = datetime(2024, 1, 15, 9, 0, tzinfo=UTC)
    (event,) = facts_of("I went to the museum last month.", at=january)
    assert event.valid_from == datetime(2023, 12, 1, tzinfo=UTC)
    (event,) = facts_of("I'm going to the museum next month.", at=datetime(2023, 12, 20, tzinfo=UTC))
    assert event.valid_from == datetime(2024, 1, 1, tzinfo=UTC)
    (event,) = facts_of("I went to the museum yesterday.", at=None)
    assert event.valid_from is None and event.precision is None  # relative, nothing to resolve against
    (event,) = facts_of("I went to the museum on 5 May 2023.", at=None)
    assert event.valid_from == datetime(2023, 5, 5)  # absolute dates need no anchor
    (event,) = facts_of("I went to the museum yesterday.", at=datetime(2023, 5, 8, 23, 59))
    assert event.valid_from == datetime(2023, 5, 7) and event.valid_from.tzinfo is None  # naive stays naive


def test_resolve_time_outside_the_calendar_is_none() -> None:
    (_, _, kind, match), *_ = find_times("last year")
    assert resolve_time(kind, match, datetime(1, 3, 1)) is None
    (_, _, kind, match), *_ = find_times("next week")
    assert resolve_time(kind, match, datetime(9999, 12, 30), "future") is None
    (_, _, kind, match), *_ = find_times("on 31 February 2023")
    assert resolve_time(kind, match, MONDAY) is None


# ---------------------------------------------------------------- normalisation and hashes


def test_normalise() -> None:
    assert normalise("  The   Big Apple!! ") == "big apple"
    assert normalise("an Orange.") == "orange"
    assert normalise('"A"') == "a"  # a lone article is a value, not an article
    assert normalise("Rock-and-roll") == "rock-and-roll"


def test_hashes_are_equal_for_the_same_fact_written_differently() -> None:
    assert fact_hash("Caroline", "Lives in", "The  Big Apple!") == fact_hash("caroline", "lives in", "big apple")
    assert fact_hash("Caroline", "lives in", "Paris") != fact_hash("Caroline", "lives in", "Lyon")
    assert fact_key("Caroline", "LIVES IN") == fact_key("caroline", "lives in")
    assert fact_key("Caroline", "lives in") != fact_hash("Caroline", "lives in", "")
    assert triple_hash("Ana", "Sister", "Beth.") == triple_hash("ana", "sister", "beth")
    assert len(fact_hash("a", "b", "c")) == 64 and int(fact_hash("a", "b", "c"), 16) >= 0
    # the same statement said twice, differently: the caller's dedup sees one fact
    a = facts_of("I live in Paris.")
    b = facts_of("i LIVE in paris!!", speaker="CAROLINE")
    assert len(a) == len(b) == 1 and a[0].digest == b[0].digest and a[0].key == b[0].key
    a = facts_of("My favourite band is The Beatles.")
    b = facts_of("my favourite band is the beatles")
    assert a[0].digest == b[0].digest


def test_records_validate_themselves() -> None:
    with pytest.raises(ValueError, match="confidence"):
        FactCandidate("a", "b", "c", 0.0, 0, "fact")
    with pytest.raises(ValueError, match="confidence"):
        TripleCandidate("a", "b", "c", 1.5, 0)
    with pytest.raises(ValueError, match="source"):
        FactCandidate("a", "b", "c", 0.5, -1, "fact")
    with pytest.raises(ValueError, match="kind"):
        FactCandidate("a", "b", "c", 0.5, 0, "opinion")  # type: ignore[arg-type]
    assert single_valued("Lives in") and single_valued("favourite colour") and single_valued("number of dogs")
    assert not single_valued("likes") and not single_valued("sister") and not single_valued("went to")


# ---------------------------------------------------------------- robustness

_VOCABULARY = (  # noqa: SIM905
    "I we my am not no longer love like work at live in sister Anna went to yesterday last week May 5 2023 ago "
    "three years next month quit job favourite is , . ? ! - a the dog named Max have two kids don't anymore used "
    "stopped playing Saturday moved from Sweden I'm married fan of going tomorrow on 31 February Fri it you "
    "nurse as study graduated got a new puppy had picnic and but because if would"
).split()
_texts = st.one_of(
    st.text(max_size=300),
    st.lists(st.sampled_from(_VOCABULARY), max_size=40).map(" ".join),
)
_turns = st.lists(
    st.builds(
        TurnText,
        speaker=st.one_of(st.none(), st.text(max_size=12)),
        role=st.sampled_from(["user", "assistant", "system", ""]),
        text=_texts,
        at=st.one_of(st.none(), st.datetimes(), st.datetimes(timezones=st.just(UTC))),
    ),
    max_size=5,
)


@settings(max_examples=300, deadline=None)
@given(_turns)
def test_random_text_never_crashes_and_candidates_are_well_formed(turns: list[TurnText]) -> None:
    ex = extract(turns)
    for f in ex.facts:
        assert 0 <= f.source < len(turns) and 0 < f.confidence <= 1
        assert f.entity and f.attribute and (f.value or f.negated)
        assert f.kind in ("fact", "preference", "relation", "event")
    for t in ex.triples:
        assert 0 <= t.source < len(turns) and 0 < t.confidence <= 1 and t.subject and t.predicate and t.object


@pytest.mark.timing
def test_long_unpunctuated_text_stays_linear() -> None:
    words = [
        "I",
        "love",
        "my",
        "sister",
        "Anna",
        "and",
        "went",
        "to",
        "the",
        "park",
        "last",
        "week",
        "we",
        "have",
        "two",
        "kids",
    ]
    text = " ".join(words[(i * 7) % len(words)] for i in range(3000))  # one 15,000-character "sentence"
    start = time.perf_counter()
    extract([TurnText("A", "user", text, MONDAY)])
    assert time.perf_counter() - start < 5.0  # about 0.4 s; unbounded clauses took minutes


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_split_sentences_keeps_the_words(text: str) -> None:
    sentences = split_sentences(text)
    assert all(s == s.strip() and s for s in sentences)
    assert " ".join(sentences).split() == text.split()


# ---------------------------------------------------------------- summaries


def test_split_sentences() -> None:
    text = "Dr. Smith arrived at 3.30 p.m. today. He said hi! Did you see J. K. Rowling? Yes…\nNew line here"
    assert split_sentences(text) == [
        "Dr. Smith arrived at 3.30 p.m. today.",
        "He said hi!",
        "Did you see J. K. Rowling?",
        "Yes…",
        "New line here",
    ]
    assert split_sentences("") == [] and split_sentences("  \n ") == []


def _vectors() -> tuple[list[str], np.ndarray]:
    sentences = [
        "The team shipped the release on Friday.",
        "Quarterly numbers looked solid.",
        "Release notes went out with the launch.",
        "My cat likes the windowsill.",
        "The launch went smoothly for the team.",
    ]
    vectors = np.array(
        [[1.0, 0.2, 0.0], [0.6, 0.8, 0.0], [0.9, 0.3, 0.1], [0.0, 0.0, 1.0], [1.0, 0.25, 0.05]]
    )  # sentence 3 is the outlier
    return sentences, vectors


def test_summary_picks_the_central_sentence_over_the_outlier() -> None:
    sentences, vectors = _vectors()
    scores = centrality(vectors)
    assert int(np.argmin(scores)) == 3
    one = extractive_summary(sentences, vectors, max_tokens=8)
    assert one in {sentences[0], sentences[2], sentences[4]} and "cat" not in one
    everything = extractive_summary(sentences, vectors, max_tokens=100)
    assert everything == " ".join(sentences)  # the whole text, in order, when it fits
    two = select_sentences(sentences, vectors, max_tokens=14)
    assert 3 not in two and two == sorted(two)


def test_redundancy_penalty_prefers_a_new_sentence_over_a_near_duplicate() -> None:
    sentences = ["alpha one", "alpha two", "beta three", "gamma four", "delta five"]
    vectors = np.array([[1.0, 0.0, 0.0], [1.0, 0.01, 0.0], [0.8, 0.6, 0.0], [0.6, 0.8, 0.0], [0.9, 0.0, 0.44]])
    assert list(np.argsort(-centrality(vectors))[:3]) == [1, 0, 2]
    without = select_sentences(sentences, vectors, max_tokens=4, redundancy=0.0)
    assert without == [0, 1]  # the two near-duplicates are the most central …
    assert select_sentences(sentences, vectors, max_tokens=4) == [1, 2]  # … but the second adds nothing new
    duplicate = ["same words", "same words", "other words"]
    assert select_sentences(duplicate, np.eye(3), max_tokens=4) == [0, 2]  # an exact duplicate is never repeated


def test_a_sentence_too_long_for_the_budget_is_cut_at_a_word() -> None:
    sentences = ["one two three four five six seven eight nine ten", "eleven twelve thirteen fourteen fifteen sixteen"]
    vectors = np.array([[1.0, 0.0], [1.0, 0.1]])
    out = extractive_summary(sentences, vectors, max_tokens=3)
    assert out == "one two three…" and word_count(out) == 3
    chars = extractive_summary(sentences, vectors, max_tokens=12, count_tokens=len)
    assert chars.endswith("…") and len(chars) <= 12 and "one two" in chars
    assert extractive_summary(sentences, vectors, max_tokens=0) == ""
    assert extractive_summary([], np.zeros((0, 2)), max_tokens=10) == ""
    with pytest.raises(ValueError, match="vectors"):
        extractive_summary(sentences, np.zeros((3, 2)), max_tokens=10)


_sentence = st.lists(
    st.sampled_from(["lorem", "ipsum", "dolor", "sit", "amet", "consectetur", "adipiscing", "elit"]),
    min_size=1,
    max_size=12,
)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(_sentence.map(" ".join), min_size=1, max_size=10).flatmap(
        lambda s: st.tuples(
            st.just(s),
            arrays(np.float64, (len(s), 4), elements=st.floats(-1, 1, allow_nan=False)),
            st.integers(0, 40),
        )
    )
)
def test_summary_properties(case: tuple[list[str], np.ndarray, int]) -> None:
    sentences, vectors, budget = case
    out = extractive_summary(sentences, vectors, budget)
    assert word_count(out) <= budget
    assert out == extractive_summary(sentences, vectors, budget)  # deterministic
    chosen = select_sentences(sentences, vectors, budget)
    if chosen:
        assert chosen == sorted(set(chosen)) and out == " ".join(sentences[i] for i in chosen)
    elif out:  # nothing fits: the most central sentence, cut at a word boundary
        assert out.endswith("…") and any(s.startswith(out[:-1].rstrip(",;:")) for s in sentences)
        assert min(word_count(s) for s in sentences) > budget


def test_offline_insight_and_narrative() -> None:
    sentences, vectors = _vectors()
    insight = offline_insight(sentences, vectors)
    assert insight == "Insight: " + sentences[int(np.argmax(centrality(vectors)))] and "cat" not in insight
    assert offline_insight(["Insight: already prefixed"], np.ones((1, 3))) == "Insight: already prefixed"
    with pytest.raises(ValueError):
        offline_insight([], np.zeros((0, 3)))
    narrative = offline_narrative("Insight: Value simple tools.", ["Complex infra ate the budget.", "Shipped faster."])
    assert narrative == (
        "Identity narrative: I came to value simple tools because of: Complex infra ate the budget; Shipped faster"
    )
    assert offline_narrative("value rest", []) == "Identity narrative: I came to value rest."
    assert offline_narrative("AI safety matters", ["a", "b", "c", "d"]).endswith("because of: a; b; c")


def test_a_narrative_of_a_whole_statement_reads_as_english() -> None:
    """Issue 39 item 13: "I came to maya prefers watering ...". A statement with its own subject
    follows "I came to see that", a name keeps its capital; a verb phrase still follows "I came to"."""
    said = offline_narrative("Insight: Maya prefers watering the garden early in the morning.", ["Maya said so."])
    assert said == (
        "Identity narrative: I came to see that Maya prefers watering the garden early in the morning "
        "because of: Maya said so"
    )
    assert (
        offline_narrative("The beans need water.", []) == "Identity narrative: I came to see that the beans need water."
    )
    assert offline_narrative("I am honest.", []) == "Identity narrative: I came to see that I am honest."
    assert offline_narrative("AI safety matters", []) == "Identity narrative: I came to see that AI safety matters."
    assert offline_narrative("Prefer plain words.", []) == "Identity narrative: I came to prefer plain words."


def test_time_expressions_are_found_in_text_order() -> None:
    found = [(text, kind) for text, kind in ((m[3].group(0), m[2]) for m in find_times("yesterday and last week"))]
    assert found == [("yesterday", "word"), ("last week", "rel")]
    assert find_times("I may go") == []  # "may" the verb is not May the month
    assert MONDAY - timedelta(days=1) > datetime(2023, 5, 7, tzinfo=UTC)  # midnight truncation is meaningful
