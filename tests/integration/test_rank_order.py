"""Scores a person can read, and the recency of what was never used (issue 40 items 7 and 5).

A recall's hits are ordered by relevance tier first and the blend within a tier, so a hit of a worse
tier can have the higher blend: the score shown is the blend capped by every score above it
(:func:`~mnemo.cognition.scoring.rank_order.rank_scores`), never rising down the hits, with the tier beside
it, on the command line, in the JSON (HTTP, MCP, ``--json``: one record) and in the inspector. A
never-used item is as old as what it tells: a turn said ten months ago, and the fact a night made of
it, have recency about 0; a recall that uses a memory makes it recent.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from typing import Any

import httpx
import pytest

from mnemo import Archive, AsyncArchive, RecallResult, Scope, Settings
from mnemo.cognition.scoring.rank_order import rank_scores
from mnemo.embed import Embeddings
from mnemo.interfaces.cli._common import print_recall
from mnemo.interfaces.http import create_app
from mnemo.models import Hit, to_jsonable
from tests.integration.test_http import auth, serve
from tests.integration.test_inspector import browser  # noqa: F401  (fixture)

ME = Scope("nora", "life")
THEN = datetime.now(UTC) - timedelta(days=300)
OLD = [  # said ten months ago: recency about 0
    "I work as a nurse at the Royal Infirmary in Edinburgh.",
    "My cat Pepper likes to sleep on the radiator.",
    "I go climbing at the bouldering gym on Tuesdays.",
    "My brother Tom lives in Glasgow with his wife.",
    "I'm learning to play the cello with a teacher called Ines.",
    "We had dinner at an Italian place near the castle.",
]
FRESH = [  # written now, more loosely about the same things: recency 1
    "Nora's job involves night shifts at a hospital.",
    "Nora has a pet who sleeps somewhere warm.",
    "Nora enjoys indoor sports during the week.",
    "Nora's family lives in Scotland.",
    "Nora plays a string instrument.",
    "Nora ate out recently.",
]
QUESTIONS = [
    "Where does Nora work?", "What is the name of Nora's cat?", "What sport does Nora do?",
    "Where does Nora's brother live?", "What instrument does Nora play?", "Where did Nora have dinner?",
    "Who teaches Nora music?", "Does Nora have pets?", "What does Nora do on Tuesdays?",
    "Tell me about Nora's family.", "Is Nora a nurse?", "What does Nora do at night?",
]  # fmt: skip
TUESDAY = "What does Nora do on Tuesdays?"  # the ten-month-old turn first, a fresh memory of a higher blend below


async def _life(archive: AsyncArchive) -> None:
    for n, text in enumerate(OLD):
        await archive.record_turn(ME, "s1", "user", text, speaker="Nora", created_at=THEN + timedelta(minutes=n))
    for text in FRESH:
        await archive.remember(ME, text)


def _fill(archive: Archive) -> None:
    for n, text in enumerate(OLD):
        archive.record_turn(ME, "s1", "user", text, speaker="Nora", created_at=THEN + timedelta(minutes=n))
    for text in FRESH:
        archive.remember(ME, text)


def _rises(values: list[float]) -> bool:
    return any(b > a for a, b in pairwise(values))


def _in_rank_order(hits: list[dict[str, Any]] | tuple[Hit, ...]) -> None:
    """Scores never rise, tiers never fall, each score is its blend capped by the ones above."""
    rows = [to_jsonable(h) if isinstance(h, Hit) else h for h in hits]
    scores = [h["score"] for h in rows]
    assert not _rises(scores), scores
    tiers = [h["relevance_tier"] for h in rows]
    assert all(t is not None for t in tiers) and tiers == sorted(tiers), tiers
    assert scores == pytest.approx(rank_scores([h["blend"] for h in rows]))


async def test_the_score_shown_never_rises_down_the_hits(archive: AsyncArchive) -> None:
    await _life(archive)
    overruled = 0
    for question in QUESTIONS:
        result = await archive.recall(ME, question, k=10, read_only=True)
        assert isinstance(result, RecallResult) and len(result.hits) == 10
        _in_rank_order(result.hits)
        for hit in result.hits:  # the blend's own number is still there, as the components make it
            parts = hit.components()
            assert hit.blend == pytest.approx(sum(w * float(parts[c] or 0.0) for c, w in result.weights.items()))
            assert hit.score <= hit.blend + 1e-12  # type: ignore[operator]
        overruled += _rises([h.blend for h in result.hits])  # type: ignore[misc]
    assert overruled >= 2  # the tiers did overrule the blend: the cap was needed, not idle


def test_the_command_line_shows_scores_and_tiers_in_rank_order(
    sync_archive: Archive, capsys: pytest.CaptureFixture[str]
) -> None:
    _fill(sync_archive)
    result = sync_archive.recall(ME, TUESDAY, k=10, read_only=True)
    assert isinstance(result, RecallResult) and _rises([h.blend for h in result.hits])  # type: ignore[misc]
    print_recall(result, as_json=False)
    table = capsys.readouterr().out
    rows = [re.split(r"\s*│\s*", line.strip("│ ")) for line in table.splitlines() if re.match(r"│\s*\d+\s*│", line)]
    assert [int(r[0]) for r in rows] == list(range(1, 11))
    assert not _rises([float(r[1]) for r in rows]) and [int(r[2]) for r in rows] == sorted(int(r[2]) for r in rows)
    print_recall(result, as_json=True)  # `mnemo recall --json`
    shown = json.loads(capsys.readouterr().out)
    _in_rank_order(shown["hits"])
    assert [h["id"] for h in shown["hits"]] == [str(h.id) for h in result.hits]


@pytest.fixture
def site(settings: Settings, embeddings: Embeddings) -> Any:
    with Archive(settings, embeddings=embeddings) as archive:
        _fill(archive)
        token, _ = archive.access.create_token(ME.entity_id)
    with serve(create_app(settings, embeddings=embeddings)) as base:
        yield {"base": base, "token": token}


def test_the_http_answer_lists_scores_in_rank_order(site: dict[str, Any]) -> None:
    with httpx.Client(base_url=site["base"], headers=auth(site["token"]), timeout=60) as c:
        body = {"query": TUESDAY, "k": 10, "namespace": ME.namespace}
        found = c.post("/v1/recall", json=body).json()
    assert found["refused"] is False and len(found["hits"]) == 10
    _in_rank_order(found["hits"])
    assert _rises([h["blend"] for h in found["hits"]])  # the order overruled the blend, the scores follow the order


async def test_a_never_used_memory_is_as_old_as_its_event_time(archive: AsyncArchive) -> None:
    note = await archive.remember(ME, "Nora sold her old blue Vespa scooter to a neighbour.", event_time=THEN)
    asked = "What happened to Nora's scooter?"
    hit = next(h for h in (await archive.recall(ME, asked, k=5, read_only=True)).hits if h.id == note.id)
    assert hit.created_at > datetime.now(UTC) - timedelta(hours=1)  # written just now ...
    assert hit.recency < 1e-6  # ... about something said ten months ago: 0.5 ** (300 / 7)
    await archive.recall(ME, asked, k=5)  # the owner's recall uses it
    used = next(h for h in (await archive.recall(ME, asked, k=5, read_only=True)).hits if h.id == note.id)
    assert used.recency > 0.99  # a used memory ages from its last use


async def test_what_a_night_makes_of_old_turns_is_as_old_as_they_are(archive: AsyncArchive) -> None:
    for n, text in enumerate(OLD):
        await archive.record_turn(ME, "s1", "user", text, speaker="Nora", created_at=THEN + timedelta(minutes=2 * n))
        reply = "That sounds lovely, tell me more."
        await archive.record_turn(ME, "s1", "assistant", reply, created_at=THEN + timedelta(minutes=2 * n + 1))
    report = await archive.night_cycle(ME)
    assert report.facts_new >= 1 and report.blocks >= 1
    seen: set[str] = set()
    for question in QUESTIONS:
        result = await archive.recall(ME, question, k=10, read_only=True)
        assert isinstance(result, RecallResult)
        for hit in result.hits:
            kind = "fact" if "fact_id" in hit.metadata else hit.item_kind
            seen.add(kind)
            assert hit.recency < 1e-6, (kind, hit.content, hit.recency, hit.event_time)
    assert "fact" in seen and seen & {"turn", "line"}, seen  # the night's facts and what was said both came up


# last: the browser's module-wide event loop stays in this thread until the module ends
@pytest.mark.browser
def test_the_inspector_explains_a_recall_with_scores_in_rank_order(browser: Any, site: dict[str, Any]) -> None:  # noqa: F811
    page = browser.new_context().new_page()
    page.goto(site["base"] + "/ui/login")
    page.fill("#token", site["token"])
    page.click("button[type=submit]")
    page.wait_for_url(site["base"] + "/ui/")
    page.goto(site["base"] + f"/ui/s/{ME.entity_id}/{ME.namespace}/recall")
    page.fill("#query", TUESDAY)
    page.click("#ask")
    page.wait_for_selector("tr.hit")
    cells = page.locator("tr.hit td.score").all_inner_texts()
    scores = [float(c.split()[0]) for c in cells]
    tiers = [int(t) for t in page.locator("tr.hit td.tier").all_inner_texts()]
    assert len(scores) == len(tiers) >= 10  # the hits, then the candidates that lost
    assert not _rises(scores) and tiers == sorted(tiers)
    assert any("blend" in c for c in cells)  # where the order overruled the blend, its own number is beside
