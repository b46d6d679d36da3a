"""``POST /v1/import`` (issue 12, "also expected": HTTP import): a batch of turns in the JSONL import
format into the caller's own scope, all or nothing unless ``skip_invalid``, each turn checked as a
line of a JSONL file is; and its limits (turns per request, body size)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx

from mnemo import Settings
from mnemo.embed import Embeddings
from mnemo.interfaces.http import MAX_BODY_BYTES, MAX_IMPORT_BYTES, MAX_IMPORT_TURNS
from tests.conftest import snapshot
from tests.integration.test_http import auth, server, tokens  # noqa: F401  (fixtures)
from tests.integration.test_http_contract import _is_error

TRIP = [
    {"session": "trip", "role": "user", "speaker": "Alice", "content": "I moved to Lisbon in May for a new job"},
    {"session": "trip", "role": "assistant", "content": "Congratulations! How is the city treating you?"},
    {"session": 7, "role": "user", "speaker": "Alice", "text": "My sister Ines visits every other weekend"},
]


def _turns(database_url: str) -> int:
    return snapshot(database_url)["mnemo.turns"]


def _recalled(c: httpx.Client, headers: dict[str, str], query: str, **body: Any) -> list[str]:
    answer = c.post("/v1/recall", json={"query": query, "k": 5, **body}, headers=headers)
    assert answer.status_code == 200, answer.text
    found = answer.json()  # a RecallResult, or a Refusal (which has no hits)
    return [] if found["refused"] else [hit["content"] for hit in found["hits"]]


def test_an_imported_batch_is_written_to_the_own_scope_and_recalled(
    server: str,  # noqa: F811
    tokens: dict[str, Any],  # noqa: F811
    database_url: str,
) -> None:
    with httpx.Client(base_url=server, timeout=120) as c:
        alice = auth(tokens["alice"])
        done = c.post("/v1/import", json={"turns": TRIP}, headers=alice)
        assert done.status_code == 201, done.text
        report = done.json()
        assert report["scope"] == "alice/default" and report["turns"] == 3 and report["sessions"] == 2
        assert report["skipped"] == [] and report["seconds"] >= 0
        assert _turns(database_url) == 3
        assert "I moved to Lisbon in May for a new job" in _recalled(c, alice, "Where did Alice move to?")
        assert "My sister Ines visits every other weekend" in _recalled(c, alice, "Who visits Alice?")
        # appended after the turns already there; another namespace is another scope
        more = c.post(
            "/v1/import", json={"turns": [{"session": "trip", "content": "Lisbon has steep hills"}]}, headers=alice
        )
        assert more.status_code == 201 and more.json()["turns"] == 1
        work = c.post("/v1/import", json={"turns": TRIP[:1], "namespace": "work"}, headers=alice)
        assert work.status_code == 201 and work.json()["scope"] == "alice/work"
        assert _turns(database_url) == 5
        bob = auth(tokens["bob"])
        assert _recalled(c, bob, "Where did Alice move to?") == []  # bob's own scope holds none of it


def test_an_invalid_batch_changes_nothing(server: str, tokens: dict[str, Any], database_url: str) -> None:  # noqa: F811
    with httpx.Client(base_url=server, timeout=120) as c:
        alice = auth(tokens["alice"])
        assert c.post("/v1/import", json={"turns": TRIP}, headers=alice).status_code == 201
        before = snapshot(database_url)
        bad_batches = {
            "empty": [TRIP[0], {"session": "s", "content": "   "}],
            "NUL": [TRIP[0], {"content": "hello", "speaker": "Al\u0000ice"}],
            "role": [TRIP[0], TRIP[1], {"content": "hello", "role": "wizard"}],
            "created_at": [{"content": "hello", "created_at": "last tuesday"}, TRIP[0]],
            "missing 'content'": [TRIP[0], {"session": "s", "speaker": "Alice"}],
            "turn 1 of session": [{"content": "a", "turn": 1}, {"content": "b", "turn": 1}],
        }
        for needle, turns in bad_batches.items():
            refused = _is_error(c.post("/v1/import", json={"turns": turns}, headers=alice), 422, "invalid_input")
            assert needle in refused["message"] and "nothing was imported" in refused["message"], refused
        where = _is_error(c.post("/v1/import", json={"turns": bad_batches["role"]}, headers=alice), 422)
        assert where["message"].startswith("turns[2]: "), where
        # an explicit turn number already used in the scope fails at the write, after embedding
        taken = [{"session": "fresh", "content": "new turn"}, {"session": "trip", "content": "clash", "turn": 0}]
        clash = _is_error(c.post("/v1/import", json={"turns": taken}, headers=alice), 422, "invalid_input")
        assert "already used" in clash["message"]
        assert snapshot(database_url) == before
        assert "new turn" not in _recalled(c, alice, "new turn")


def test_skip_invalid_imports_the_valid_turns_and_reports_the_others(
    server: str,  # noqa: F811
    tokens: dict[str, Any],  # noqa: F811
    database_url: str,
) -> None:
    batch = [
        TRIP[0],
        {"session": "trip", "content": ""},
        {"session": "trip", "role": "user", "content": "I adopted a grey cat called Miso"},
        {"content": "hello", "role": "wizard"},
        {"content": "x" * 40_000},  # over max_content_chars (32,000): a messy export's giant turn
    ]
    with httpx.Client(base_url=server, timeout=120) as c:
        alice = auth(tokens["alice"])
        done = c.post("/v1/import", json={"turns": batch, "skip_invalid": True}, headers=alice)
        assert done.status_code == 201, done.text
        report = done.json()
        assert report["turns"] == 2 and report["sessions"] == 1
        assert [s["index"] for s in report["skipped"]] == [1, 3, 4]
        reasons = [s["reason"] for s in report["skipped"]]
        assert "empty" in reasons[0] and "wizard" in reasons[1] and "40,000" in reasons[2], reasons
        assert _turns(database_url) == 2
        assert "I adopted a grey cat called Miso" in _recalled(c, alice, "What is the name of Alice's cat?")
        before = snapshot(database_url)
        nothing = [{"content": ""}, {"content": "hi", "role": "robot"}]
        none = _is_error(
            c.post("/v1/import", json={"turns": nothing, "skip_invalid": True}, headers=alice), 422, "invalid_input"
        )
        assert "all 2 were skipped" in none["message"]
        assert snapshot(database_url) == before


def test_precomputed_vectors_are_used_when_they_are_the_active_embedders(
    server: str,  # noqa: F811
    tokens: dict[str, Any],  # noqa: F811
    embeddings: Embeddings,
    database_url: str,
) -> None:
    cat = asyncio.run(embeddings.embed_documents(["Alice: I adopted a grey cat called Miso"]))[0].tolist()
    with httpx.Client(base_url=server, timeout=120) as c:
        alice = auth(tokens["alice"])
        slug = c.get("/v1/status", headers=alice).json()["embedder"]
        placeholder = {"content": "qqq zzz placeholder", "speaker": "Alice", "embedding": cat}
        wrong = [{**placeholder, "embedding_model": "someone-else/model"}, TRIP[0]]
        skipped = c.post("/v1/import", json={"turns": wrong, "skip_invalid": True}, headers=alice).json()
        assert skipped["turns"] == 1 and "not the active embedder" in skipped["skipped"][0]["reason"]
        short = [{**placeholder, "embedding": cat[:10], "embedding_model": slug}]
        _is_error(c.post("/v1/import", json={"turns": short}, headers=alice), 422, "invalid_input")
        done = c.post("/v1/import", json={"turns": [{**placeholder, "embedding_model": slug}]}, headers=alice)
        assert done.status_code == 201, done.text
        # the text says nothing about a cat: only the precomputed vector can make it a hit
        assert "qqq zzz placeholder" in _recalled(c, alice, "What is the name of Alice's cat?")
    assert _turns(database_url) == 2


def test_the_request_is_strict_authenticated_and_scoped(
    server: str,  # noqa: F811
    tokens: dict[str, Any],  # noqa: F811
    database_url: str,
) -> None:
    with httpx.Client(base_url=server, timeout=120) as c:
        alice, work = auth(tokens["alice"]), auth(tokens["alice_work"])
        assert c.post("/v1/memories", json={"content": "Alice's note"}, headers=alice).status_code == 201
        before = snapshot(database_url)
        _is_error(c.post("/v1/import", json={"turns": TRIP}), 401, "unauthenticated")
        _is_error(c.post("/v1/import", json={"turns": TRIP}, headers=auth("nope")), 401, "unauthenticated")
        for body in (
            {"turns": TRIP, "owner": "bob"},  # no foreign scope to name: always the caller's own
            {"turns": [{**TRIP[0], "entity": "bob"}]},  # an unknown turn field, even with skip_invalid
            {"turns": [{**TRIP[0], "entity": "bob"}], "skip_invalid": True},
            {"turns": [{"content": "x", "turn": "1"}]},  # JSON types as sent: no "1" for 1
            {"turns": [{"content": 5}]},
            {"turns": []},
            {"turns": TRIP, "namespace": "no spaces"},
            {"turn": TRIP},
        ):
            refused = _is_error(c.post("/v1/import", json=body, headers=alice), 422)
            # an unknown turn field is that turn's problem (issue 39 item 12): refused with its hint, or
            # skipped with skip_invalid (and a batch of nothing else is refused)
            turn_problem = "entity" in str(body.get("turns"))
            assert refused["code"] in {"invalid_request", "invalid_scope"} | (
                {"invalid_input"} if turn_problem else set()
            )
            assert not turn_problem or "unknown field 'entity'" in refused["message"], refused
        # a token limited to one namespace imports only there, and another namespace looks the same
        # whether it exists (alice's default) or not
        real = _is_error(c.post("/v1/import", json={"turns": TRIP, "namespace": "default"}, headers=work), 403)
        ghost = _is_error(c.post("/v1/import", json={"turns": TRIP, "namespace": "ghost"}, headers=work), 403)
        assert real == ghost and real["code"] == "forbidden"
        assert snapshot(database_url) == before
        done = c.post("/v1/import", json={"turns": TRIP[:1]}, headers=work)
        assert done.status_code == 201 and done.json()["scope"] == "alice/work"
        assert _turns(database_url) == 1


def test_the_batch_and_body_limits(server: str, tokens: dict[str, Any], database_url: str) -> None:  # noqa: F811
    with httpx.Client(base_url=server, timeout=120) as c:
        alice = auth(tokens["alice"])
        before = snapshot(database_url)
        over = {"turns": [{"content": "x"}] * (MAX_IMPORT_TURNS + 1)}
        refused = _is_error(c.post("/v1/import", json=over, headers=alice), 422, "invalid_request")
        assert str(MAX_IMPORT_TURNS) in refused["message"].replace(",", "")
        huge = json.dumps({"turns": [{"content": "y" * 1000}] * (MAX_IMPORT_BYTES // 1000 + 1)}).encode()
        assert len(huge) > MAX_IMPORT_BYTES
        _is_error(c.post("/v1/import", content=huge, headers=alice), 413, "too_large")
        assert snapshot(database_url) == before
        # an import may be larger than any other request
        long_turns = [{"session": "long", "content": f"chapter {i}: " + "words " * 4000} for i in range(12)]
        body = json.dumps({"turns": long_turns}).encode()
        assert MAX_BODY_BYTES < len(body) < MAX_IMPORT_BYTES
        done = c.post("/v1/import", content=body, headers={**alice, "content-type": "application/json"})
        assert done.status_code == 201, done.text
        assert done.json()["turns"] == 12 and _turns(database_url) == 12


def test_ingest_mode_async_defers_the_embedding(
    settings: Settings,
    embeddings: Embeddings,
    tokens: dict[str, Any],  # noqa: F811
    database_url: str,
) -> None:
    from mnemo.interfaces.http import create_app
    from tests.integration.test_http import serve

    deferred = settings.model_copy(update={"ingest_mode": "async"})
    with serve(create_app(deferred, embeddings=embeddings)) as url, httpx.Client(base_url=url, timeout=120) as c:
        done = c.post("/v1/import", json={"turns": TRIP}, headers=auth(tokens["alice"]))
        assert done.status_code == 201 and done.json()["turns"] == 3
    counts = snapshot(database_url)
    assert counts["mnemo.turns"] == 3 and counts["queue.procrastinate_jobs"] >= 1


def test_a_retried_import_or_turn_stores_once_and_says_so(
    server: str,  # noqa: F811
    tokens: dict[str, Any],  # noqa: F811
    database_url: str,
) -> None:
    """A client that retries a committed but unacknowledged request (issue 39 item 3): repeats are
    skipped and counted, the turn numbers have no gap."""
    alice = auth(tokens["alice"])
    dated = [{**t, "created_at": f"2024-05-0{i + 1}T10:00:00Z"} for i, t in enumerate(TRIP)]
    with httpx.Client(base_url=server, timeout=120) as c:
        first = c.post("/v1/import", json={"turns": dated}, headers=alice)
        assert first.status_code == 201, first.text
        assert (first.json()["turns"], first.json()["skipped_repeats"]) == (3, 0)
        again = c.post("/v1/import", json={"turns": dated}, headers=alice)
        assert again.status_code == 201, again.text
        assert (again.json()["turns"], again.json()["sessions"], again.json()["skipped_repeats"]) == (0, 0, 3)
        assert _turns(database_url) == 3

        turn = {"session": "trip", "role": "user", "content": "Book a table for two"}
        made = c.post("/v1/turns", json=turn, headers={**alice, "Idempotency-Key": "req-1"})
        retry = c.post("/v1/turns", json=turn, headers={**alice, "Idempotency-Key": "req-1"})
        assert made.status_code == retry.status_code == 201, retry.text
        assert made.json()["repeat"] is False and retry.json()["repeat"] is True
        assert retry.json()["id"] == made.json()["id"] and made.json()["turn_number"] == 2
        in_body = c.post("/v1/turns", json={**turn, "idempotency_key": "req-1"}, headers=alice)
        assert in_body.json()["repeat"] is True
        assert _turns(database_url) == 4

        before = snapshot(database_url)
        reused = c.post(
            "/v1/turns", json={**turn, "content": "Cancel it"}, headers={**alice, "Idempotency-Key": "req-1"}
        )
        assert "already names turn 2" in _is_error(reused, 422)["message"]
        clash = c.post("/v1/turns", json={**turn, "idempotency_key": "b"}, headers={**alice, "Idempotency-Key": "a"})
        assert "differ" in _is_error(clash, 422)["message"]
        _is_error(c.post("/v1/turns", json={**turn, "idempotency_key": "x\ny"}, headers=alice), 422)
        keyed = [{"content": "a", "idempotency_key": "k"}, {"content": "b", "idempotency_key": "k"}]
        assert (
            "already on line 1" in _is_error(c.post("/v1/import", json={"turns": keyed}, headers=alice), 422)["message"]
        )
        assert snapshot(database_url) == before
        nxt = c.post("/v1/turns", json={**turn, "content": "Thanks"}, headers=alice)
        assert nxt.json()["turn_number"] == 3  # the repeats took no number
