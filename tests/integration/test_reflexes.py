"""Reflexes, procedural memory (issue 18 item 8; memory-architecture §10.3-10.5): outcomes are
counted per action and context, the best-fitting reflexes come back ranked by similarity and
success with their causal edges, the night prunes stale failures and weakens old edges, scopes stay
apart, bad input changes nothing; over HTTP and MCP too."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import psycopg
import pytest

from mnemo import AsyncArchive, InvalidInputError, Scope, UnknownItemError
from tests.conftest import snapshot
from tests.integration.test_http import auth, server, tokens  # noqa: F401  (fixtures)

ME = Scope("agent", "ops")
DEPLOY = "The user asks to deploy the web service to production after tests pass."
FAILED_TESTS = "The CI run failed with flaky integration tests on the database container."


async def test_outcomes_are_counted_per_action_and_context(archive: AsyncArchive) -> None:
    first = await archive.reflexes.record_outcome(ME, DEPLOY, "run `make deploy`", success=True)
    again = await archive.reflexes.record_outcome(ME, DEPLOY, "run `make deploy`", success=False)
    other = await archive.reflexes.record_outcome(
        ME, DEPLOY, "ask for a change freeze", success=True, action_type="delegation"
    )
    assert again.id == first.id and (again.success_count, again.failure_count) == (1, 1)
    assert again.success_rate == pytest.approx(0.5) and again.last_success == first.last_success
    assert other.id != first.id and other.action_type == "delegation"


async def test_the_best_fitting_reflexes_come_first_with_what_followed(archive: AsyncArchive) -> None:
    base = datetime(2026, 11, 1, 9, tzinfo=UTC)
    for day in range(4):
        at = base + timedelta(days=day)
        deploy = await archive.reflexes.record_outcome(ME, DEPLOY, "run `make deploy`", success=True, at=at)
        await archive.reflexes.record_outcome(
            ME, DEPLOY, "post in #releases", success=True, follows=deploy.id, at=at + timedelta(minutes=5)
        )
    for _ in range(3):
        await archive.reflexes.record_outcome(ME, DEPLOY, "deploy by hand over ssh", success=False)
    await archive.reflexes.record_outcome(ME, FAILED_TESTS, "re-run the failed job", success=True)

    found = await archive.reflexes.matching(ME, "Please ship the web service to production now.", k=3)
    assert found[0].action == "run `make deploy`" and found[0].score is not None
    assert [r.score for r in found] == sorted((r.score for r in found), reverse=True)
    ssh = next(r for r in found if r.action == "deploy by hand over ssh")
    assert ssh.similarity == pytest.approx(found[0].similarity, abs=1e-6) and ssh.score < found[0].score  # type: ignore[operator]
    (edge,) = found[0].next
    assert edge.action == "post in #releases" and edge.observations == 4
    assert edge.strength == pytest.approx(1.0) and edge.gap_seconds == pytest.approx(300, abs=1)
    flaky = await archive.reflexes.matching(ME, "Integration tests are flaky in CI again.", k=1)
    assert flaky[0].action == "re-run the failed job"
    assert await archive.reflexes.matching(Scope("someone", "else"), "Please ship the web service.", k=3) == []


async def test_the_night_prunes_stale_failures_and_weakens_old_edges(archive: AsyncArchive, database_url: str) -> None:
    long_ago = datetime.now(UTC) - timedelta(days=40)
    stale = await archive.reflexes.record_outcome(ME, DEPLOY, "deploy by hand over ssh", success=False, at=long_ago)
    proven = await archive.reflexes.record_outcome(ME, DEPLOY, "run `make deploy`", success=True, at=long_ago)
    await archive.reflexes.record_outcome(ME, DEPLOY, "run `make deploy`", success=True, at=long_ago)
    fresh = await archive.reflexes.record_outcome(ME, FAILED_TESTS, "re-run the failed job", success=False)
    await archive.reflexes.record_outcome(ME, DEPLOY, "post in #releases", success=True, at=long_ago)
    follower = await archive.reflexes.record_outcome(
        ME, DEPLOY, "post in #releases", success=True, follows=proven.id, at=long_ago + timedelta(minutes=1)
    )
    plan = await archive.night_cycle(ME, dry_run=True)
    assert plan.plan["reflexes_to_prune"] == 1
    report = await archive.night_cycle(ME)
    assert (report.reflexes_pruned, report.edges_weakened) == (1, 1)
    with psycopg.connect(database_url) as conn:
        left = {r[0] for r in conn.execute("SELECT id FROM mnemo.reflexes").fetchall()}
        (strength,) = conn.execute("SELECT strength FROM mnemo.causal_edges").fetchone()  # type: ignore[misc]
    assert stale.id not in left and {proven.id, fresh.id, follower.id} <= left  # two successes, or recent
    assert strength == pytest.approx(0.5 * 0.9)  # 1 observation of 2 outcomes, weakened once


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({"context": " ", "action": "x", "success": True}, "context"),
        ({"context": DEPLOY, "action": "x\ny", "success": True}, "action"),
        ({"context": DEPLOY, "action": "x", "success": "yes"}, "success"),
        ({"context": DEPLOY, "action": "x", "success": True, "action_type": "dance"}, "action_type"),
        ({"context": DEPLOY, "action": "x", "success": True, "follows": "not-an-id"}, "follows"),
    ],
)
async def test_bad_outcomes_are_refused_and_nothing_is_written(
    archive: AsyncArchive, database_url: str, kwargs: dict[str, Any], says: str
) -> None:
    before = snapshot(database_url)
    with pytest.raises(InvalidInputError, match=says):
        await archive.reflexes.record_outcome(ME, **kwargs)
    assert snapshot(database_url) == before


async def test_following_an_unknown_reflex_is_refused_whole(archive: AsyncArchive, database_url: str) -> None:
    other = await archive.reflexes.record_outcome(Scope("someone", "else"), DEPLOY, "x", success=True)
    before = snapshot(database_url)
    with pytest.raises(UnknownItemError):  # another scope's reflex is no reflex here
        await archive.reflexes.record_outcome(ME, DEPLOY, "run `make deploy`", success=True, follows=other.id)
    assert snapshot(database_url) == before


def test_reflexes_over_http(server: str, tokens: dict[str, Any]) -> None:  # noqa: F811
    with httpx.Client(base_url=server, headers=auth(tokens["alice"]), timeout=60) as c:
        made = c.post("/v1/reflexes/outcomes", json={"context": DEPLOY, "action": "run `make deploy`", "success": True})
        assert made.status_code == 201 and made.json()["success_count"] == 1
        bad = c.post("/v1/reflexes/outcomes", json={"context": DEPLOY, "action": "x", "success": True, "kind": "?"})
        assert bad.status_code == 422
        found = c.post("/v1/reflexes/search", json={"context": "ship the web service", "k": 2}).json()["reflexes"]
        assert [r["action"] for r in found] == ["run `make deploy`"] and found[0]["scope"] == "alice/default"
    with httpx.Client(base_url=server, headers=auth(tokens["bob"]), timeout=60) as c:
        assert c.post("/v1/reflexes/search", json={"context": "ship the web service"}).json() == {"reflexes": []}
