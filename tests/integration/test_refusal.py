"""The hard refusal knows what it never heard of (issue 14 item 5, issue 40 item 6): a question
naming something the scope never mentions is refused, with the names, on the API and over HTTP."""

from __future__ import annotations

import httpx

from mnemo import Archive, AsyncArchive, RecallResult, Refusal, Scope, Settings
from mnemo.embed import Embeddings
from mnemo.interfaces.http import create_app
from tests.integration.test_http import auth, serve

ME = Scope("ana", "chat")
FACTS = [
    "Ana is training for the Berlin marathon in September",
    "Ben gave Ana a lopsided blue bowl he made at pottery class",
    "Ana's knee hurts after long runs",
]


async def test_a_question_about_names_the_scope_never_mentions_is_refused_with_them(
    archive: AsyncArchive,
) -> None:
    for fact in FACTS:
        await archive.remember(ME, fact)
    foreign = await archive.recall(ME, "When did Melanie paint a sunrise with Gina?", read_only=True)
    assert isinstance(foreign, Refusal)
    assert foreign.unknown == ("Melanie", "Gina")
    assert "Melanie" in foreign.message and "Gina" in foreign.message
    assert foreign.candidates  # the rejected candidates are still there to inspect
    # a known name beside an unknown one is not enough (issue 40 item 6): nothing was said of Melanie
    beside = await archive.recall(ME, "Did Ben run the Berlin marathon with Melanie?", read_only=True)
    assert isinstance(beside, Refusal) and beside.unknown == ("Melanie",)
    # but a hypothetical question may bring something new beside someone known
    own = await archive.recall(ME, "Would Ben like to run the Berlin marathon with Melanie?", read_only=True)
    assert isinstance(own, RecallResult) and own.hits
    assert "Berlin" in own.hits[0].content or "Ben" in own.hits[0].content
    # a possessive, a name inside the sentence
    assert isinstance(await archive.recall(ME, "What did Ben's pottery class make?", read_only=True), RecallResult)
    # threshold -1 turns refusal off altogether
    assert isinstance(await archive.recall(ME, "When did Melanie paint?", read_only=True, threshold=-1.0), RecallResult)


async def test_names_are_looked_up_in_the_readers_scope_only(archive: AsyncArchive) -> None:
    other = Scope("melanie", "chat")
    await archive.remember(other, "Melanie painted a sunrise over the lake in 2022")
    await archive.remember(ME, FACTS[0])
    refused = await archive.recall(ME, "When did Melanie paint a sunrise?", read_only=True)
    assert isinstance(refused, Refusal) and refused.unknown == ("Melanie",)
    answered = await archive.recall(other, "When did Melanie paint a sunrise?", read_only=True)
    assert isinstance(answered, RecallResult) and "sunrise" in answered.hits[0].content


async def test_the_names_rule_can_be_switched_off(database_url: str, embeddings: Embeddings) -> None:
    settings = Settings(database_url=database_url, seed=3, refuse_unknown_names=False, refuse_unsupported=False)
    archive = await AsyncArchive.open(settings, embeddings=embeddings)
    try:
        for fact in FACTS:
            await archive.remember(ME, fact)
        result = await archive.recall(ME, "Is Melanie training for the Berlin marathon?", read_only=True)
    finally:
        await archive.close()
    assert isinstance(result, RecallResult)  # similar enough, and names are not checked


def test_the_refusal_names_the_unknown_over_http(settings: Settings, embeddings: Embeddings) -> None:
    with Archive(settings, embeddings=embeddings) as archive:
        for fact in FACTS:
            archive.remember(ME, fact)
        token, _ = archive.access.create_token(ME.entity_id)
    with serve(create_app(settings, embeddings=embeddings)) as url, httpx.Client(base_url=url, timeout=60) as c:
        body = {"query": "What is Melanie's favourite colour?", "namespace": ME.namespace}
        refused = c.post("/v1/recall", json=body, headers=auth(token))
        assert refused.status_code == 200, refused.text
        assert refused.json()["refused"] is True and refused.json()["unknown"] == ["Melanie"]
        assert "Melanie" in refused.json()["message"]
        body = {"query": "How is Ana's knee?", "namespace": ME.namespace}
        answered = c.post("/v1/recall", json=body, headers=auth(token)).json()
        assert answered["refused"] is False and "knee" in answered["hits"][0]["content"]


SUPPORT = {"refuse_unsupported": True, "support_threshold": 0.3, "support_rarity": 0}


async def test_a_question_about_something_never_said_is_refused_with_its_words(
    database_url: str, embeddings: Embeddings
) -> None:
    archive = await AsyncArchive.open(Settings(database_url=database_url, **SUPPORT), embeddings=embeddings)
    try:
        for fact in FACTS:
            await archive.remember(ME, fact)
        never = await archive.recall(ME, "What is the name of Ana's cat?", read_only=True)
        said = await archive.recall(ME, "What did Ben make at pottery class?", read_only=True)
    finally:
        await archive.close()
    assert isinstance(never, Refusal) and "cat" in never.unsupported and not never.unknown
    assert "cat" in never.message and never.candidates
    assert isinstance(said, RecallResult) and "pottery" in said.hits[0].content


async def test_the_evidence_removed_from_a_fork_is_refused_there_and_answered_in_the_scope(
    database_url: str, embeddings: Embeddings
) -> None:
    archive = await AsyncArchive.open(Settings(database_url=database_url, **SUPPORT), embeddings=embeddings)
    question = "What did Ana get from the pottery class?"
    try:
        for fact in FACTS:
            await archive.remember(ME, fact)
        fork = await archive.portability.fork(ME, "without-pottery")
        evidence = [
            p["packet_id"] async for p in archive.portability.packets(fork) if "pottery" in p["prose"]["content"]
        ]
        assert len(evidence) == 1
        await archive.forget(fork, evidence[0])
        # the fork carries its items' token embeddings: the support rule can judge at once
        removed = await archive.recall(fork, question, read_only=True)
        kept = await archive.recall(ME, question, read_only=True)
    finally:
        await archive.close()
    assert isinstance(removed, Refusal) and "pottery" in removed.unsupported
    assert isinstance(kept, RecallResult) and "pottery" in kept.hits[0].content


async def test_the_support_rule_is_on_by_default_and_leaves_requests_alone(
    database_url: str, embeddings: Embeddings
) -> None:
    """On by default (issue 40 item 6): a question about a relation never said is refused; the same
    words as a request, or with the rule off, are answered with what is relevant."""
    facts = ["I live in Rotterdam.", "My dog is called Pixel.", "My hobby is rock climbing."]
    results = []
    for extra in ({}, {"refuse_unsupported": False}):
        archive = await AsyncArchive.open(Settings(database_url=database_url, **extra), embeddings=embeddings)
        try:
            if not results:
                for fact in facts:
                    await archive.remember(ME, fact)
            results.append(await archive.recall(ME, "Does my brother live in Rotterdam too?", read_only=True))
            results.append(await archive.recall(ME, "Invite my brother to Rotterdam.", read_only=True))
        finally:
            await archive.close()
    question, request, off, _ = results
    assert isinstance(question, Refusal) and question.unsupported == ("brother",)
    assert "brother" in question.message
    assert isinstance(request, RecallResult) and isinstance(off, RecallResult)
