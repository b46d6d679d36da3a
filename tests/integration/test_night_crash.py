"""Crash safety of the night cycle (issue 5 item 9): a real ``mnemo night`` process killed with
SIGKILL mid-run, twice, then re-run, ends in the same state as an uninterrupted run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest

from mnemo import AsyncArchive, Scope, Settings
from mnemo.embed import Embeddings
from tests.conftest import new_database
from tests.night_data import ROUTINE, SPIKE, START, record

ME = Scope("alice", "night")
AS_OF = START + timedelta(days=30)
FACTS = ["I live in Lisbon.", "I love hiking in the mountains.", "My sister Anna is a nurse.", "I moved to Porto."]


async def _fill(url: str, embeddings: Embeddings) -> None:
    archive = await AsyncArchive.open(Settings(database_url=url), embeddings=embeddings)
    try:
        for day in range(12):
            texts = [*ROUTINE[: 4 + day % 4], *SPIKE[: 3 + day % 3], FACTS[day % 4], *ROUTINE[:3]]
            await record(archive, ME, f"day{day:02d}", texts, START + timedelta(days=day))
    finally:
        await archive.close()


def _state(url: str) -> dict[str, Any]:
    """Everything the night cycle decides, without ids and wall-clock times."""
    queries = {
        "turns": "SELECT session_id, turn_number, round(surprisal::numeric, 9), flux_state FROM mnemo.turns",
        "blocks": """SELECT kind, session_id, first_turn, last_turn, content, round(coherence_gain::numeric, 9),
                            round(ties_weight::numeric, 9), session_continuity, continues_from IS NOT NULL,
                            regexp_replace(prose::text, '[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}', 'ID', 'g')
                     FROM mnemo.blocks""",
        "facts": """SELECT attribute, value, fact_kind, mention_count, valid_to IS NULL, round(confidence::numeric, 6),
                           cardinality(provenance) FROM mnemo.facts""",
        "triples": "SELECT predicate, object, mention_count, valid_to IS NULL FROM mnemo.triples",
        "entities": "SELECT norm, mention_count FROM mnemo.entities",
        "memories": """SELECT kind, content, status, round(alpha::numeric, 6), round(beta::numeric, 6), source_tag
                       FROM mnemo.memories""",
        "links": "SELECT link_type, count(*) FROM mnemo.links GROUP BY 1",
        "weights": """SELECT reason, operation, round(gain::numeric, 6), count(*) FROM traces.weight_changes
                      GROUP BY 1, 2, 3""",
        "curation": "SELECT version, status, counts::text FROM mnemo.curation_versions",
        "runs": "SELECT count(*), count(finished_at), array_agg(stages_done::text) FROM mnemo.night_runs",
        "vectors": "SELECT count(*) FROM vectors.universal_384",
    }
    with psycopg.connect(url) as conn:
        return {name: sorted(map(repr, conn.execute(q).fetchall())) for name, q in queries.items()}  # type: ignore[arg-type]


def _count(url: str, query: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute(query).fetchone()  # type: ignore[arg-type]
        return int(row[0]) if row else 0


def _kill_when(url: str, query: str, env: dict[str, str]) -> None:
    """Start ``mnemo night`` and SIGKILL it as soon as ``query`` counts at least one row."""
    mnemo = str(Path(sys.executable).parent / "mnemo")
    proc = subprocess.Popen(
        [mnemo, "night", "-e", ME.entity_id, "-n", ME.namespace, "--as-of", AS_OF.isoformat()],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 120
        while _count(url, query) < 1:
            assert proc.poll() is None, (
                f"mnemo night ended before the kill: {proc.stderr.read() if proc.stderr else ''}"
            )
            assert time.monotonic() < deadline, "mnemo night made no progress in 120 s"
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
        if proc.stderr is not None:
            proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL


@pytest.mark.slow
async def test_killed_night_runs_resume_to_the_same_state(
    pg_admin_url: str, template_url: str, embeddings: Embeddings
) -> None:
    reference, crashed = new_database(pg_admin_url), new_database(pg_admin_url)
    await _fill(reference, embeddings)
    await _fill(crashed, embeddings)

    archive = await AsyncArchive.open(Settings(database_url=reference), embeddings=embeddings)
    try:
        await archive.night_cycle(ME, as_of=AS_OF)
    finally:
        await archive.close()

    env = {**os.environ, "MNEMO_DATABASE_URL": crashed, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    # Killed once in the middle of the block stage, once in the middle of the knowledge stage.
    _kill_when(crashed, "SELECT count(*) FROM mnemo.night_sessions WHERE blocks_through >= 0", env)
    _kill_when(crashed, "SELECT count(*) FROM mnemo.night_sessions WHERE facts_through >= 0", env)
    assert _count(crashed, "SELECT count(*) FROM mnemo.night_runs WHERE finished_at IS NULL") == 1
    assert _count(crashed, "SELECT count(*) FROM mnemo.night_sessions WHERE facts_through < 0") > 0  # truly mid-run

    done = subprocess.run(  # noqa: ASYNC221  # the test waits for the real process on purpose
        [str(Path(sys.executable).parent / "mnemo"), "night", "-e", ME.entity_id, "-n", ME.namespace, "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert '"resumed": true' in done.stdout  # the unfinished run was resumed, with its own as_of

    expected, got = _state(reference), _state(crashed)
    for part in expected:
        assert got[part] == expected[part], part
