"""The inspector in a real browser (issue 17): Debian's chromium driven by Playwright signs in,
browses, searches and pages memories, explains a recall, opens an episode, forgets a memory and
sees it gone; one entity's session never shows another's scope; stored ``<script>`` text stays
text; an action without its CSRF token is refused; the inner-life page (issue 31) shows milestones,
gut axes, tensions, the blend's alphas over time, safety events, promotions awaiting approval and
persistent failures to the owner and a grantee, and to no one else. Every page is saved as a screenshot under
``MNEMO_SCREENSHOTS`` (default: a ``inspector-screenshots`` folder in the test run's temp dir)."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest
from playwright.sync_api import expect, sync_playwright

from mnemo import AsyncArchive, RecallResult, Scope, Settings
from mnemo.cognition.mind.readiness import MILESTONES
from mnemo.embed import Embeddings
from mnemo.interfaces.http import create_app
from mnemo.night.stage_registry import STAGE_NAMES as STAGES
from tests.conftest import FUTURE_NIGHTS_HOURS
from tests.integration.test_http import serve
from tests.night_data import START, arc_conversation, record

pytestmark = pytest.mark.browser

ME = Scope("alice", "history")
BOB = Scope("bob", "diary")
SCRIPT = "Maya wrote <script>window.__pwned = 1</script> on the fridge <b>in bold</b>"
FACTS_BEFORE = ["My sister Lena lives in Porto.", "Nice.", "My favourite colour is green.", "Green is calm."]
FACTS_AFTER = ["My favourite colour is blue now.", "Blue it is."]
INNER = Scope("alice", "inner")  # the inner-life page's scope (issue 31), read by carol through a grant
VALUE = "I always tell users the truth about delays."
BROKE = "I did not tell the user the truth about the delay."
HABIT = "Maya waters the tomato seedlings every morning before work."
TASK = "Book the <b>cheapest</b> train to Lyon"
PLANTED = [f"Maya planted crop number {n} in bed {n} of the garden." for n in range(8)]


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def shots() -> Path:
    folder = Path(os.environ.get("MNEMO_SCREENSHOTS") or Path(tempfile.gettempdir()) / "inspector-screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


NO_BROWSER = (
    "the browser tests need Debian's chromium: apt-get install -y --no-install-recommends chromium "
    "(make test does it as root)"
)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    path = chromium()
    if path is None:  # a real browser is part of the test bed: its absence fails, never skips
        pytest.fail(NO_BROWSER)
    with sync_playwright() as p:
        flags = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]  # root in a container
        launched = p.chromium.launch(executable_path=path, args=flags)
        yield launched
        launched.close()


async def _fill(settings: Settings, embeddings: Embeddings) -> dict[str, Any]:
    archive = await AsyncArchive.open(settings, embeddings=embeddings)
    try:
        await record(archive, ME, "s1", arc_conversation(), START)
        first = await archive.night_cycle(ME)
        await archive.night_cycle(ME, as_of=first.as_of + timedelta(days=8))
        await record(archive, ME, "s2", arc_conversation(), START + timedelta(days=20))
        await archive.night_cycle(ME, as_of=first.as_of + timedelta(days=21))
        for day, texts in ((30, FACTS_BEFORE), (33, FACTS_AFTER)):  # a fact that changed: a closed interval
            at = START + timedelta(days=day)
            for i, text in enumerate(texts):
                role, speaker = ("user", "Alice") if i % 2 == 0 else ("assistant", "Bot")
                await archive.record_turn(
                    ME, f"f{day}", role, text, speaker=speaker, created_at=at + timedelta(minutes=i)
                )
            await archive.night_cycle(ME, as_of=at + timedelta(days=1))
        for n in range(60):
            await archive.remember(ME, f"Garden note {n}: the tomatoes in bed {n % 7} need water on day {n}.")
        peanut = await archive.remember(ME, "Maya is allergic to peanuts and carries an epipen.", kind="preference")
        script = await archive.remember(ME, SCRIPT)
        await archive.recall(ME, "What is Maya allergic to?")
        await archive.knowledge.curate(ME, apply=False)  # a staged version for the Apply button
        await archive.remember(BOB, "Bob's secret: the safe code is 4471.")
        await _inner_life(archive, settings, embeddings)
        await archive.access.grant(INNER, "carol")
        alice, _ = await archive.access.create_token("alice")
        bob, _ = await archive.access.create_token("bob")
        carol, _ = await archive.access.create_token("carol")
        return {"alice": alice, "bob": bob, "carol": carol, "peanut": str(peanut.id), "script": str(script.id)}
    finally:
        await archive.close()


async def _inner_life(archive: AsyncArchive, settings: Settings, embeddings: Embeddings) -> None:
    """An inner life for :data:`INNER`, through the public API: a habit promoted to goal weight and then
    waiting for the operator's approval, a value broken (an open tension), the blend retuned twice
    (the second time by an archive whose Two-Gate guardrail only logs), gut deltas enough for axes, a
    goal reflected upon and a task that keeps failing."""
    first = datetime.now(UTC) - timedelta(days=40)
    for half in range(2):  # seen every day for 33 days: goal weight, then identity (waiting at trust 0)
        for day in range(16):
            at = first + timedelta(days=day + 17 * half)
            await archive.observe(INNER, HABIT, role="user", attention=HABIT, at=at)
            await archive.flush(INNER, attention=HABIT, at=at)
        await archive.inner.reflect(INNER, as_of=at + timedelta(days=1))
    await archive.remember(INNER, VALUE, kind="semantic", anchored=True)
    await archive.remember(INNER, BROKE, kind="episodic")
    for n, text in enumerate(PLANTED):
        await archive.remember(INNER, text, anchored=n in (2, 6))
    shadow = await AsyncArchive.open(settings, embeddings=embeddings, safety_enforced=())
    try:
        for night, (reflecting, heavy) in enumerate(((archive, True), (shadow, False))):
            for n in range(22):  # recalls with outcomes: the heavy hits used, then the last one
                found = await archive.recall(INNER, f"What did Maya plant in the garden? ({night} {n})", k=8,
                                             read_only=True)  # fmt: skip
                assert isinstance(found, RecallResult) and found.outcome_id is not None
                used = [h.id for h in found if h.weight > 0.9] if heavy else [list(found)[-1].id]
                await archive.inner.feedback(INNER, found.outcome_id, 1.0, used=used)
            await reflecting.inner.reflect(INNER)
    finally:
        await shadow.close()
    rng = np.random.default_rng(3)
    for _ in range(12):
        outcome = await archive.inner.log_gut(INNER, "agent", rng.normal(size=384) * 0.1, magnitude=0.2, valence=0.1)
        await archive.inner.feedback(INNER, outcome, float(rng.uniform(-1, 1)))
    await archive.inner.reach_milestone(INNER, "first_goal_reflected", {"goal": "tell users the truth"})
    parent = None
    for generation in range(3):
        attempt = await archive.inner.record_attempt(
            INNER, TASK, lineage="booker", generation=generation, success=False, failure_mode="timeout",
            parent=parent, mutation=f"variant {generation}",
        )  # fmt: skip
        parent = attempt.mutation_id
    await archive.inner.reflect(INNER)


@pytest.fixture(scope="module")
def site(pg_admin_url: str, template_url: str, embeddings: Embeddings) -> Iterator[dict[str, Any]]:
    from tests.conftest import new_database

    url = new_database(pg_admin_url)
    settings = Settings(database_url=url, scoring="deterministic", clock_skew_hours=FUTURE_NIGHTS_HOURS)  # nights ahead
    with ThreadPoolExecutor(1) as pool:  # Playwright's sync API runs an event loop in this thread
        data = pool.submit(asyncio.run, _fill(settings, embeddings)).result()
    with serve(create_app(settings, embeddings=embeddings)) as base:
        yield data | {"base": base, "db": url}


def snap(page: Any, shots: Path, name: str) -> None:
    """A full-page screenshot, JPEG so the set stays small enough to keep beside the docs."""
    page.screenshot(path=str(shots / f"{name}.jpg"), full_page=True, type="jpeg", quality=70)


def sign_in(browser: Any, site: dict[str, Any], who: str = "alice") -> Any:
    page = browser.new_context().new_page()
    page.goto(site["base"] + "/ui/")
    assert page.url.endswith("/ui/login")
    page.fill("#token", site[who])
    page.click("button[type=submit]")
    page.wait_for_url(site["base"] + "/ui/")
    return page


def test_sign_in_refuses_a_wrong_token_and_the_session_cookie_is_strict(
    browser: Any, site: dict[str, Any], shots: Path
) -> None:
    page = browser.new_context().new_page()
    page.goto(site["base"] + "/ui/login")
    snap(page, shots, "01-sign-in")
    page.fill("#token", "mnemo_not-a-real-token")
    page.click("button[type=submit]")
    assert page.locator("#login-error").is_visible()
    page.fill("#token", site["alice"])
    page.click("button[type=submit]")
    page.wait_for_url(site["base"] + "/ui/")
    (cookie,) = [c for c in page.context.cookies() if c["name"] == "mnemo_ui"]
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and site["alice"] not in cookie["value"]
    csp = page.request.get(site["base"] + "/ui/").headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp


def test_the_overview_shows_own_scopes_counts_and_night_runs(browser: Any, site: dict[str, Any], shots: Path) -> None:
    page = sign_in(browser, site)
    section = page.locator("#scope-alice-history")
    assert section.is_visible() and "Night of" in section.inner_text()
    assert page.locator("#scope-bob-diary").count() == 0
    snap(page, shots, "02-overview")


def test_the_overview_counts_each_nights_stages_and_lists_them_in_pipeline_order(
    browser: Any, site: dict[str, Any]
) -> None:
    page = sign_in(browser, site)
    runs = page.locator("#scope-alice-history details")
    assert runs.count() >= 2
    for i in range(runs.count()):
        run = runs.nth(i)
        names = [n.strip() for n in run.locator("table.stages tr td:first-child").all_text_contents()]
        assert names == list(STAGES)  # every stage ran, in the order the night runs them
        assert f"{len(STAGES)} stages" in run.locator("summary").text_content()


def test_memories_search_filter_and_page(browser: Any, site: dict[str, Any], shots: Path) -> None:
    page = sign_in(browser, site)
    page.goto(site["base"] + "/ui/s/alice/history/memories")
    assert page.locator("tr.memory-row").count() == 50
    snap(page, shots, "03-memories")
    page.click("button.more")  # the next page, appended by htmx
    page.locator("tr.memory-row").nth(50).wait_for()  # (no wait_for_function: the CSP forbids eval)
    total = page.locator("tr.memory-row").count()
    assert 50 < total <= 100 and page.locator("button.more").count() <= 1
    page.fill("#q", "epipen")
    expect(page.locator("tr.memory-row")).to_have_count(1)
    assert "allergic to peanuts" in page.locator("tr.memory-row").inner_text()
    assert "q=epipen" in page.url  # the search is in the address, so it can be shared and reloaded
    page.select_option("select[name=kind]", "preference")
    expect(page).to_have_url(re.compile(r".*kind=preference.*"))
    expect(page.locator("tr.memory-row")).to_have_count(1)
    page.select_option("select[name=kind]", "insight")
    page.wait_for_selector("#empty")
    snap(page, shots, "04-memories-filtered")


def test_a_memory_page_shows_its_weight_history_and_provenance(browser: Any, site: dict[str, Any], shots: Path) -> None:
    page = sign_in(browser, site)
    page.goto(f"{site['base']}/ui/s/alice/history/memory/{site['peanut']}")
    assert page.locator("#density polyline").get_attribute("points")
    assert page.locator("#history tr").count() >= 2  # its creation and the reinforcing recall
    assert page.locator("#activation polyline").count() == 1  # it was recalled once
    snap(page, shots, "05-memory")


def test_stored_script_renders_as_inert_text(browser: Any, site: dict[str, Any], shots: Path) -> None:
    page = sign_in(browser, site)
    page.goto(f"{site['base']}/ui/s/alice/history/memory/{site['script']}")
    assert page.locator("#memory-content").inner_text() == SCRIPT
    assert page.evaluate("window.__pwned") is None
    assert page.locator("#memory-content b").count() == 0  # markup stays text too
    snap(page, shots, "06-memory-with-markup")


def test_recall_is_explained_with_components_and_the_losers(browser: Any, site: dict[str, Any], shots: Path) -> None:
    page = sign_in(browser, site)
    page.goto(site["base"] + "/ui/s/alice/history/recall")
    page.fill("#query", "What is Maya allergic to?")
    page.click("#ask")
    page.wait_for_selector("tr.hit")
    first = page.locator("tr.hit").first.inner_text()
    assert "peanuts" in first and "activation" in first and "weight" in first
    assert page.get_by_text("Candidates that lost").is_visible()
    assert page.get_by_text("Blend weights").is_visible()
    snap(page, shots, "07-recall")
    page.fill("#query", "What is the capital of Mongolia?")
    page.click("#ask")
    page.wait_for_selector("#refusal")
    assert "threshold" in page.locator("#refusal").inner_text()
    snap(page, shots, "08-recall-refused")


def test_an_episode_shows_its_curve_zones_and_the_tree(browser: Any, site: dict[str, Any], shots: Path) -> None:
    page = sign_in(browser, site)
    page.goto(site["base"] + "/ui/s/alice/history/episodes")
    assert page.locator("tr.episode-row").count() >= 2
    if page.locator("#tree details").count():
        page.locator("#tree summary").first.click()
    snap(page, shots, "09-episodes")
    hrefs = [a.get_attribute("href") for a in page.locator("tr.episode-row a").all()]
    curves = []
    for href in hrefs:  # the newer session's episodes still have their raw turns and their surprisal
        page.goto(site["base"] + str(href))
        page.wait_for_selector("#live")
        if page.locator("#surprisal").count():
            curves.append((page.locator("#surprisal circle").count(), str(href)))
    assert curves, "no episode with its surprisal curve"
    page.goto(site["base"] + max(curves)[1])  # the one with its spike and resolution marked
    assert page.locator("#surprisal rect.band").count() == 1 and page.locator("#surprisal polyline").count() == 1
    assert page.locator("#turns tr").count() > 2
    snap(page, shots, "10-episode")


def test_facts_audit_and_curation_pages(browser: Any, site: dict[str, Any], shots: Path) -> None:
    page = sign_in(browser, site)
    page.goto(site["base"] + "/ui/s/alice/history/facts?name=Alice")
    assert page.locator("#timeline rect.closed").count() >= 1 and page.locator("#timeline rect.current").count() >= 1
    closed = page.locator("#facts tr.closed").all_inner_texts()  # events end on their day (issue 40 item 3)
    assert any("green" in row for row in closed) and "blue" in page.locator("#facts").inner_text()
    snap(page, shots, "11-facts")
    page.goto(site["base"] + "/ui/s/alice/history/facts?name=Nobody")
    assert "Nothing known about Nobody" in page.content()
    page.goto(site["base"] + "/ui/s/alice/history/audit")
    assert page.locator("tr.audit-row").count() > 0
    page.select_option("select[name=what]", "safety")
    page.wait_for_timeout(400)
    snap(page, shots, "12-audit")
    page.goto(site["base"] + "/ui/s/alice/history/curation")
    assert page.locator("section.version").count() >= 1
    snap(page, shots, "13-curation")


UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def test_audit_rows_say_what_their_items_say_and_keep_the_id(browser: Any, site: dict[str, Any], shots: Path) -> None:
    """Issue 39 item 14: audit rows linked bare UUIDs. Each names its item by what it says; the id
    stays in the link (and its title)."""
    page = sign_in(browser, site)
    page.goto(site["base"] + "/ui/s/alice/history/audit")
    links = page.locator("tr.audit-row td.subject a")
    assert links.count() > 0
    with psycopg.connect(site["db"]) as conn:
        for link in links.all()[:25]:
            item = str(link.get_attribute("title"))
            assert UUID.match(item) and str(link.get_attribute("href")).endswith("/memory/" + item)
            row = conn.execute(
                "SELECT coalesce(nullif(compressed, ''), content) FROM mnemo.memories WHERE id = %s", (item,)
            ).fetchone()
            text = " ".join(link.inner_text().rstrip("…").split())
            assert not UUID.match(text) and row is not None and " ".join(row[0].split()).startswith(text)
    assert page.locator("tr.audit-row", has_text="allergic to peanuts").count() >= 1  # the recall reinforced it


def test_memories_show_when_said_and_when_recorded(browser: Any, site: dict[str, Any], shots: Path) -> None:
    """Issue 39 item 14: the Memories page showed only the record time (a night's memory: the night's
    time). Each row shows both clocks: when it was said, and when the archive wrote it."""
    page = sign_in(browser, site)
    page.goto(site["base"] + "/ui/s/alice/history/memories?kind=episodic")
    rows = page.locator("tr.memory-row")
    assert rows.count() > 0
    with psycopg.connect(site["db"]) as conn:
        told = conn.execute(
            "SELECT id::text, to_char(event_time AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI'), "
            "to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI') FROM mnemo.memories "
            "WHERE entity_id = 'alice' AND namespace = 'history' AND kind = 'episodic' AND event_time IS NOT NULL"
        ).fetchall()
    clocks = {i: (said, recorded) for i, said, recorded in told}
    apart = 0
    for row in rows.all():
        memory_id = str(row.locator("a").first.get_attribute("href")).rsplit("/", 1)[1]
        said, recorded = row.locator("span.said").inner_text(), row.locator("span.recorded").inner_text()
        if memory_id in clocks:
            assert (said, recorded) == (clocks[memory_id][0], "recorded " + clocks[memory_id][1])
            apart += clocks[memory_id][0] != clocks[memory_id][1]
    assert apart > 0  # an episode said weeks before the night that wrote it shows both


def test_episode_gists_come_from_what_the_user_said(browser: Any, site: dict[str, Any], shots: Path) -> None:
    """Issue 39 item 14: episode gists were mostly the assistant's chit-chat. A gist is drawn from
    the user's informative lines (Alice's here; Bob is the assistant)."""
    page = sign_in(browser, site)
    page.goto(site["base"] + "/ui/s/alice/history/episodes")
    hrefs = [str(a.get_attribute("href")) for a in page.locator("tr.episode-row a").all()]
    gists = []
    for href in hrefs:
        page.goto(site["base"] + href)
        if page.locator("#gist").count():
            gists.append(page.locator("#gist").inner_text())
    assert gists and all("Alice:" in g and "Bob:" not in g and "Bot:" not in g for g in gists), gists


def test_the_facts_page_lists_the_scopes_entities_most_mentioned_first(
    browser: Any, site: dict[str, Any], shots: Path
) -> None:
    page = sign_in(browser, site)
    page.goto(site["base"] + "/ui/s/alice/history/facts")  # no name guessed yet
    with psycopg.connect(site["db"]) as conn:
        known = conn.execute(
            "SELECT name, mention_count FROM mnemo.entities WHERE entity_id = 'alice' AND namespace = 'history'"
        ).fetchall()
    names = page.locator("#entities tr.entity-row a").all_text_contents()
    counts = [int(n) for n in page.locator("#entities tr.entity-row td.mentions").all_text_contents()]
    assert len(known) >= 2 and sorted(names) == sorted(n for n, _ in known)
    assert counts == sorted((c for _, c in known), reverse=True)  # most mentioned first
    snap(page, shots, "11-facts-entities")
    page.locator("#entities tr.entity-row a", has_text=re.compile("^Alice$")).click()
    page.wait_for_selector("#timeline")
    assert page.url.endswith("/facts?name=Alice")


def test_the_facts_timeline_has_a_time_axis_and_a_label_per_fact(
    browser: Any, site: dict[str, Any], shots: Path
) -> None:
    page = sign_in(browser, site)
    page.goto(site["base"] + "/ui/s/alice/history/facts?name=Alice")
    bars = page.locator("#timeline rect.current, #timeline rect.closed")
    labels = page.locator("#timeline text.label").all_text_contents()
    assert bars.count() == len(labels) == page.locator("#facts tr.current, #facts tr.closed").count()
    assert any("green" in label for label in labels) and any("blue" in label for label in labels)
    assert page.locator("#timeline line.axis").count() == 1
    ticks = page.locator("#timeline text.tick").all_text_contents()
    assert len(ticks) >= 2 and all(re.search(r"\d", t) for t in ticks)  # dates along the axis
    assert "now" in page.locator("#timeline text.now").text_content()
    snap(page, shots, "11-facts-timeline")


def test_forgetting_from_the_page_removes_the_memory_and_audits_it(
    browser: Any, site: dict[str, Any], shots: Path
) -> None:
    page = sign_in(browser, site)
    page.goto(site["base"] + "/ui/s/alice/history/memories?q=garden+note+13")
    row = page.locator("tr.memory-row", has_text="Garden note 13:")
    href = row.locator("a").get_attribute("href")
    assert href is not None
    memory_id = href.rsplit("/", 1)[1]
    page.goto(site["base"] + href)
    page.click("#toggle-anchor")
    page.wait_for_selector("#anchored")
    page.click("#forget")
    page.wait_for_url(re.compile(r".*/memories$"))
    page.goto(site["base"] + "/ui/s/alice/history/memories?q=garden+note+13")
    assert page.locator("tr.memory-row", has_text="Garden note 13:").count() == 0
    with psycopg.connect(site["db"]) as conn:
        assert conn.execute("SELECT count(*) FROM mnemo.memories WHERE id = %s", (memory_id,)).fetchone() == (0,)
        actions = conn.execute(
            "SELECT action FROM traces.actions WHERE item_id = %s ORDER BY at", (memory_id,)
        ).fetchall()
    assert actions == [("anchor",), ("forget",)]
    page.goto(site["base"] + "/ui/s/alice/history/audit?what=actions")
    assert page.locator("tr.audit-row", has_text="forget").count() >= 1
    snap(page, shots, "14-audit-actions")


def test_an_action_without_its_csrf_token_is_refused(browser: Any, site: dict[str, Any], shots: Path) -> None:
    page = sign_in(browser, site)
    target = f"{site['base']}/ui/s/alice/history/memory/{site['peanut']}/anchor"
    refused = page.request.post(target, form={"csrf": "forged"})
    assert refused.status == 403
    bare = page.request.post(target)
    assert bare.status == 403
    for answer in (refused, bare):  # a page, like every other answer under /ui, not the API's JSON
        assert answer.headers["content-type"].startswith("text/html") and "CSRF token" in answer.text()
    page.goto(f"{site['base']}/ui/s/alice/history/memory/{site['peanut']}")
    page.locator("#toggle-anchor").evaluate("button => button.form.querySelector('[name=csrf]').remove()")
    page.click("#toggle-anchor")  # the form, posted by the browser without its token
    page.wait_for_selector("#error")
    assert "CSRF token" in page.locator("#error").inner_text()
    snap(page, shots, "17-csrf-refused")
    with psycopg.connect(site["db"]) as conn:
        assert conn.execute("SELECT anchored FROM mnemo.memories WHERE id = %s", (site["peanut"],)).fetchone() == (
            False,
        )


def test_one_entity_never_sees_another_entitys_scope(browser: Any, site: dict[str, Any], shots: Path) -> None:
    page = sign_in(browser, site, "bob")
    assert page.locator("#scope-bob-diary").is_visible() and page.locator("#scope-alice-history").count() == 0
    assert "safe code" not in page.content() or page.locator("#scope-bob-diary").count() == 1
    foreign = page.goto(site["base"] + "/ui/s/alice/history/memories")
    assert foreign is not None and foreign.status == 404
    text = page.locator("#error").inner_text()
    absent = page.goto(site["base"] + "/ui/s/alice/nowhere/memories")
    assert absent is not None and absent.status == 404
    assert page.locator("#error").inner_text().replace("nowhere", "history") == text  # no existence leak
    assert "peanuts" not in page.content()
    for path in (f"/ui/s/alice/history/memory/{site['peanut']}", "/ui/s/alice/history/recall?q=Maya"):
        shown = page.goto(site["base"] + path)
        assert shown is not None and shown.status == 404 and "peanuts" not in page.content()
    snap(page, shots, "15-foreign-scope")


def test_superseding_and_applying_a_curation_from_the_pages(browser: Any, site: dict[str, Any], shots: Path) -> None:
    page = sign_in(browser, site)
    page.goto(site["base"] + "/ui/s/alice/history/memories?q=garden+note+21")
    page.locator("tr.memory-row", has_text="Garden note 21:").locator("a").click()
    old = page.url.rsplit("/", 1)[1]
    page.fill("input[name=content]", "Garden note 21, corrected: bed 0 is watered by the rain.")
    page.click("#supersede")
    page.wait_for_selector("#memory-content")
    assert "corrected" in page.locator("#memory-content").inner_text() and not page.url.endswith(old)
    page.goto(f"{site['base']}/ui/s/alice/history/memory/{old}")
    assert "superseded" in page.locator("#history").inner_text()  # the old one's weight fell, audited
    page.goto(site["base"] + "/ui/s/alice/history/curation")
    staged = page.locator("button.apply")
    assert staged.count() == 1
    staged.click()
    page.wait_for_url(re.compile(r".*/curation$"))
    with psycopg.connect(site["db"]) as conn:
        applied = conn.execute("SELECT count(*) FROM traces.actions WHERE action = 'apply_curation'").fetchone()
    assert applied == (1,)
    with psycopg.connect(site["db"]) as conn:
        staged_left = conn.execute(
            "SELECT count(*) FROM mnemo.curation_versions WHERE namespace = 'history' AND status = 'staged'"
        ).fetchone()
    assert staged_left == (0,)
    snap(page, shots, "16-curation-applied")


def test_the_inner_life_page_shows_milestones_tensions_alphas_and_safety(
    browser: Any, site: dict[str, Any], shots: Path
) -> None:
    page = sign_in(browser, site)
    page.goto(site["base"] + "/ui/s/alice/inner/memories")
    page.click("header nav a:text('Inner life')")  # linked from the scope's navigation like the others
    page.wait_for_url(re.compile(r".*/ui/s/alice/inner/inner$"))
    assert page.locator("header nav a.here").inner_text() == "Inner life"
    milestones = page.locator("#readiness tr.milestone")
    reached = page.locator("#readiness tr.milestone.reached")
    assert milestones.count() == len(MILESTONES) == 10
    names = [n.strip() for n in page.locator("#readiness tr.milestone td:nth-child(2)").all_text_contents()]
    assert names == [n.replace("_", " ") for n in MILESTONES]  # in the seed's order
    assert page.locator("#reached").inner_text() == f"{reached.count()} of 10 reached" and reached.count() >= 3
    assert reached.filter(has_text="first goal reflected").count() == 1
    assert "not yet" in page.locator("#readiness tr.milestone.pending").first.inner_text()
    (tension,) = page.locator("#tensions tr.tension-row").all()
    assert tension.locator("a").inner_text().startswith("Internal contradiction") and VALUE[:-1] in tension.inner_text()
    assert tension.locator("td.status").inner_text() == "open"
    axes = page.locator("#axes tr.axis-row")
    assert axes.count() >= 2 and axes.first.locator("td").nth(0).inner_text() == "1"
    assert all(t.endswith("%") for t in page.locator("#axes tr.axis-row td:nth-child(3)").all_text_contents())
    assert page.locator("#alphas-source").inner_text() == "self-tuned"
    components = [c.strip() for c in page.locator("#alphas tr.alpha-row td:first-child").all_text_contents()]
    assert components == ["search", "activation", "weight", "recency", "coaccess", "noise"]
    lines = page.locator("#alphas-chart polyline.alpha-line")  # one line per component, a point per retuning
    assert lines.count() == len(components)
    assert all(len(str(line.get_attribute("points")).split()) == 2 for line in lines.all())
    assert page.locator("#alphas-chart text.tick").count() >= 2
    assert page.locator("#alphas tr.alpha-row .swatch").count() == len(components)  # the chart's key
    assert "2 applied retunings" in page.locator("#alphas-legend").inner_text()
    steps = page.locator("#tuning tr.tuning-row")
    assert steps.count() >= 3 and steps.filter(has_text="yes").count() == 2 and steps.filter(has_text="no").count()
    safety = page.locator("#safety tr.safety-row")
    shadow_gate = safety.filter(has_text="two gate").filter(has_text="shadow")
    assert shadow_gate.count() == 1 and "blend alphas" in shadow_gate.inner_text()
    enforced = [r for r in safety.all() if r.locator("td").nth(2).inner_text() == "yes"]
    assert enforced and all("two gate" in r.inner_text() for r in enforced)
    (failure,) = page.locator("#failures tr.failure-row").all()
    assert failure.locator("td.task").inner_text() == TASK and failure.locator("td.task b").count() == 0
    assert "0–2" in failure.inner_text() and "3 of 3" in failure.inner_text() and "timeout ×3" in failure.inner_text()
    snap(page, shots, "18-inner-life")
    (waiting,) = page.locator("#awaiting a").all()
    assert waiting.inner_text() == HABIT and UUID.match(str(waiting.get_attribute("title")))  # what, not an id
    waiting.click()
    page.wait_for_selector("#memory-content")
    assert page.locator("#memory-content").inner_text() == HABIT


def test_an_empty_inner_life_says_so_and_another_entity_cannot_see_one(
    browser: Any, site: dict[str, Any], shots: Path
) -> None:
    page = sign_in(browser, site, "bob")
    shown = page.goto(site["base"] + "/ui/s/bob/diary/inner")
    assert shown is not None and shown.status == 200
    assert page.locator("#no-axes").inner_text() == "No gut axes yet: the night needs 10 logged gut deltas."
    for empty in ("#no-tensions", "#no-tuning", "#no-safety", "#no-awaiting", "#no-failures"):
        assert page.locator(empty).is_visible(), empty
    assert page.locator("#readiness tr.milestone").count() == 10 and page.locator("#alphas-chart").count() == 0
    assert page.locator("#alphas-source").inner_text().startswith("the defaults")
    assert page.locator("#alphas tr.alpha-row").count() == 6 and page.locator("#alphas .swatch").count() == 0
    snap(page, shots, "19-inner-life-empty")
    foreign = page.goto(site["base"] + "/ui/s/alice/inner/inner")
    assert foreign is not None and foreign.status == 404
    text = page.locator("#error").inner_text()
    absent = page.goto(site["base"] + "/ui/s/alice/nowhere/inner")
    assert absent is not None and absent.status == 404
    assert page.locator("#error").inner_text().replace("nowhere", "inner") == text  # no existence leak
    for path in ("/ui/s/alice/inner/inner", "/ui/s/alice/history/inner"):
        page.goto(site["base"] + path)
        assert (
            "contradiction" not in page.content() and TASK not in page.content() and "readiness" not in page.content()
        )
    snap(page, shots, "19-inner-life-foreign")


def test_a_grantee_reads_the_inner_life_of_a_granted_scope_only(
    browser: Any, site: dict[str, Any], shots: Path
) -> None:
    page = sign_in(browser, site, "carol")
    assert page.locator("#scope-alice-inner").is_visible() and page.locator("#scope-alice-history").count() == 0
    shown = page.goto(site["base"] + "/ui/s/alice/inner/inner")
    assert shown is not None and shown.status == 200
    assert page.locator("#tensions tr.tension-row").count() == 1 and page.locator("#alphas-chart").count() == 1
    assert page.locator("form[action*='/inner']").count() == 0  # read-only: nothing to act on
    snap(page, shots, "20-inner-life-granted")
    refused = page.goto(site["base"] + "/ui/s/alice/history/inner")
    assert refused is not None and refused.status == 404 and "contradiction" not in page.content()


def _token(site: dict[str, Any], entity: str) -> tuple[str, str]:
    async def made() -> tuple[str, str]:
        archive = await AsyncArchive.open(Settings(database_url=site["db"]), embeddings=None)
        try:
            token, token_id = await archive.access.create_token(entity, label="session test")
            return token, str(token_id)
        finally:
            await archive.close()

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, made()).result()


ENDS = {
    "revoke": "UPDATE mnemo.tokens SET revoked_at = now() WHERE entity_id = 'alice' AND id = %s",
    "expire": "UPDATE mnemo.tokens SET expires_at = now() - interval '1 second' WHERE entity_id = 'alice' AND id = %s",
}


def test_revoking_or_expiring_a_token_ends_the_inspector_sessions_made_from_it(
    browser: Any, site: dict[str, Any]
) -> None:
    """Issue 39 item 4: a session keeps no principal its token no longer grants: neither a page nor
    an action (with the session's own CSRF token) gets through once the token is revoked or expired."""
    memory = f"{site['base']}/ui/s/alice/history/memory/{site['peanut']}"
    for end in ("revoke", "expire"):
        token, token_id = _token(site, "alice")
        page = sign_in(browser, site | {"alice": token})
        shown = page.goto(memory)
        assert shown is not None and shown.status == 200 and page.url == memory
        csrf = page.locator("#toggle-anchor").evaluate("b => b.form.querySelector('[name=csrf]').value")
        with psycopg.connect(site["db"], autocommit=True) as conn:
            conn.execute(ENDS[end], (token_id,))
        forget = page.request.post(f"{memory}/forget", form={"csrf": csrf})
        assert forget.url.endswith("/ui/login"), end  # sent to sign in, nothing done
        page.goto(memory)
        assert page.url.endswith("/ui/login"), end
        with psycopg.connect(site["db"]) as conn:
            held = conn.execute("SELECT count(*) FROM mnemo.memories WHERE id = %s", (site["peanut"],)).fetchone()
        assert held == (1,), end
        page.context.close()
