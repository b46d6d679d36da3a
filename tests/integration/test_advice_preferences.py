"""A request for advice about someone finds what they prefer, though it shares no words with it
(issue 43, item 4): real database and embedder."""

from __future__ import annotations

from mnemo import AsyncArchive, RecallResult, Scope, Settings
from mnemo.embed import Embeddings

SCOPE = Scope("agent", "friends")
SAID = [  # what the agent was told over months: much of it closer to the request's words than a preference
    "Maya's birthday is on the 14th of June.",
    "Maya had dinner with Lena at a new restaurant downtown last week.",
    "Maya booked a restaurant table for her team's birthday dinner for Ana.",
    "Maya said the birthday dinner for her mum went well.",
    "Maya told me her new flat in Lisbon has a tiny balcony with tomato plants.",
    "Maya's sister Lena visited in March and they went hiking in Sintra.",
    "Maya is training for a half marathon in October.",
    "Maya mentioned that her laptop keeps crashing when she edits video.",
    "Tom said the football club meets on Thursday evenings.",
    "Tom is learning to play the trumpet with a teacher from Porto.",
]
PREFERENCES = [
    ("Maya can't stand spicy food", "maya-food"),
    ("Maya prefers quiet places with few people", "maya-quiet"),
    ("Tom loves loud bars with live music", "tom-bars"),
    ("Tom likes very spicy curries", "tom-curry"),
]
REQUEST = "Suggest a restaurant for Maya's birthday dinner."


async def _fill(archive: AsyncArchive, scope: Scope) -> dict[str, str]:
    for text in SAID:
        await archive.remember(scope, text)
    tags = {}
    for text, tag in PREFERENCES:
        memory = await archive.remember(scope, text, kind="preference")
        tags[str(memory.id)] = tag
    return tags


def _tags(result: object, tags: dict[str, str], k: int) -> list[str]:
    assert isinstance(result, RecallResult)
    return [tags.get(str(h.id), "other") for h in result.hits[:k]]


async def test_a_request_for_advice_lifts_the_preferences_of_the_person_it_names(
    archive: AsyncArchive, settings: Settings, embeddings: Embeddings
) -> None:
    tags = await _fill(archive, SCOPE)  # through the default archive: the stage is off by default
    on = settings.model_copy(update={"advice_preferences": True})
    async with await AsyncArchive.open(on, embeddings=embeddings) as lifting:
        top = _tags(await lifting.recall(SCOPE, REQUEST, 3, read_only=True, threshold=-1.0), tags, 3)
        asked = _tags(await lifting.recall(SCOPE, "What did Maya say about her flat?", 1, read_only=True), tags, 1)
    assert top[0] in {"maya-food", "maya-quiet"}, top  # Maya's preferences first ...
    assert "tom-bars" not in top and "tom-curry" not in top  # ... never Tom's
    # a question about what was said is not a request for advice: nothing is lifted
    assert asked == ["other"]
    # switched off (the default), the same request does not put a preference of Maya's first
    plain = _tags(await archive.recall(SCOPE, REQUEST, 3, read_only=True, threshold=-1.0), tags, 3)
    assert plain[0] not in {"maya-food", "maya-quiet"}, plain


async def test_another_scopes_preferences_are_never_lifted(settings: Settings, embeddings: Embeddings) -> None:
    on = settings.model_copy(update={"advice_preferences": True})
    async with await AsyncArchive.open(on, embeddings=embeddings) as archive:
        tags = await _fill(archive, Scope("agent", "elsewhere"))
        for text in SAID:
            await archive.remember(SCOPE, text)
        result = await archive.recall(SCOPE, REQUEST, 10, read_only=True, threshold=-1.0)
    assert set(_tags(result, tags, 10)) == {"other"}  # only this scope's memories, none a preference
