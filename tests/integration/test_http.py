"""``mnemo serve``: a real uvicorn server on 127.0.0.1 driven with httpx, tokens from the real store."""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import psycopg
import pytest
import uvicorn
from fastapi import FastAPI

from mnemo import Archive, Settings
from mnemo.embed import Embeddings
from mnemo.interfaces.http import MAX_BODY_BYTES, create_app
from tests.conftest import snapshot


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serve(app: FastAPI) -> Iterator[str]:
    """Run ``app`` under a real uvicorn server on a free local port; yields its base URL."""
    port = _free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error")
    srv = uvicorn.Server(config)
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not srv.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        srv.should_exit = True
        thread.join(timeout=30)


@pytest.fixture
def server(settings: Settings, embeddings: Embeddings) -> Iterator[str]:
    with serve(create_app(settings, embeddings=embeddings)) as url:
        yield url


@pytest.fixture
def tokens(settings: Settings, embeddings: Embeddings) -> dict[str, Any]:
    with Archive(settings, embeddings=embeddings) as archive:
        alice, alice_id = archive.access.create_token("alice")
        bob, _ = archive.access.create_token("bob")
        alice_work, _ = archive.access.create_token("alice", namespace="work")
        revoked, revoked_id = archive.access.create_token("alice", label="old laptop")
        assert archive.access.revoke_token("alice", revoked_id) and not archive.access.revoke_token("alice", revoked_id)
    return {"alice": alice, "bob": bob, "alice_work": alice_work, "revoked": revoked, "alice_id": alice_id}


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_remember_recall_context_forget_over_http(server: str, tokens: dict[str, Any]) -> None:
    with httpx.Client(base_url=server, headers=auth(tokens["alice"]), timeout=30) as c:
        assert c.get("/health").json()["status"] == "ok"
        assert c.get("/v1/status").json()["entity"] == "alice"
        made = c.post("/v1/memories", json={"content": "Alice's favourite tea is oolong", "kind": "preference"})
        assert made.status_code == 201 and made.json()["scope"] == "alice/default"
        turn = c.post("/v1/turns", json={"session": "s1", "role": "user", "content": "I brewed oolong today"})
        assert turn.status_code == 201 and turn.json()["turn_number"] == 0 and turn.json()["session_id"] == "s1"
        found = c.post("/v1/recall", json={"query": "which tea does Alice like?", "k": 2}).json()
        assert found["refused"] is False and found["hits"][0]["content"] == "Alice's favourite tea is oolong"
        assert found["hits"][0]["memory_kind"] == "preference" and found["hits"][0]["item_kind"] == "memory"
        assert {"search", "activation", "weight"} <= set(found["hits"][0])  # a Hit's scores, as in the record
        refused = c.post("/v1/recall", json={"query": "orbital mechanics of Saturn's rings"}).json()
        assert refused["refused"] is True and refused["unknown"] == ["Saturn"]  # a name it never heard of
        assert refused["message"] == "The archive holds nothing that mentions Saturn."
        assert refused["query"] == "orbital mechanics of Saturn's rings" and refused["scope"] == "alice/default"
        block = c.post("/v1/context", json={"text": "make Alice a tea", "budget": 80}).json()
        assert "oolong" in block["text"] and block["tokens"] <= 80
        gone = c.delete(f"/v1/items/{made.json()['id']}")
        assert gone.status_code == 200 and gone.json()["removed"]["memories"] == 1
        missing = c.delete(f"/v1/items/{made.json()['id']}")
        assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
        spec = c.get("/openapi.json").json()
        assert {"/v1/recall", "/v1/memories", "/v1/turns", "/v1/context", "/v1/grants"} <= set(spec["paths"])


def test_tokens_scopes_and_grants(server: str, tokens: dict[str, Any], database_url: str) -> None:
    with httpx.Client(base_url=server, timeout=30) as c:
        assert c.post("/v1/memories", json={"content": "x"}).status_code == 401
        assert (
            c.post("/v1/memories", json={"content": "x"}, headers={"Authorization": "Bearer nope"}).status_code == 401
        )
        revoked = c.post("/v1/memories", json={"content": "x"}, headers=auth(tokens["revoked"]))
        assert revoked.status_code == 401 and revoked.json()["error"]["code"] == "unauthenticated"
        c.post("/v1/memories", json={"content": "Alice's passport number is X1234"}, headers=auth(tokens["alice"]))
        before = snapshot(database_url)
        # bob cannot read alice's scope without a grant: 403 and nothing read (no trace, no mutation)
        denied = c.post("/v1/recall", json={"query": "passport", "owner": "alice"}, headers=auth(tokens["bob"]))
        assert denied.status_code == 403 and denied.json()["error"]["code"] == "forbidden"
        assert snapshot(database_url) == before
        said = denied.json()["error"]["message"]  # the request that fixes it, not the Python call
        assert "grant(" not in said and "Scope(" not in said and "mnemo grant" not in said
        fix = re.search(r"POST /v1/grants (\{.*\}) with alice's token", said)
        assert fix is not None and json.loads(fix[1]) == {"grantee": "bob", "namespace": "default"}
        # a namespace-limited token cannot name another namespace
        wrong = c.post("/v1/memories", json={"content": "x", "namespace": "home"}, headers=auth(tokens["alice_work"]))
        assert wrong.status_code == 403
        # only the owner grants (with the request the refusal named); then bob reads, and still cannot write there
        assert c.post("/v1/grants", json=json.loads(fix[1]), headers=auth(tokens["alice"])).status_code == 201
        allowed = c.post("/v1/recall", json={"query": "passport", "owner": "alice"}, headers=auth(tokens["bob"]))
        assert allowed.status_code == 200 and "X1234" in allowed.json()["hits"][0]["content"]
        own = c.post("/v1/memories", json={"content": "Bob's note"}, headers=auth(tokens["bob"])).json()
        assert own["scope"] == "bob/default"
        assert c.delete("/v1/grants/bob", headers=auth(tokens["alice"])).json()["revoked"] is True
        again = c.post("/v1/recall", json={"query": "passport", "owner": "alice"}, headers=auth(tokens["bob"]))
        assert again.status_code == 403
        exporter = c.post("/v1/grants", json={"grantee": "carol", "export": True}, headers=auth(tokens["alice"]))
        assert exporter.status_code == 201 and exporter.json()["created"] is True
        unknown = c.get("/v1/facts/Nobody", headers=auth(tokens["alice"]))  # no night ran: no command to quote
        said = unknown.json()["error"]["message"]
        assert unknown.status_code == 404 and "night cycle" in said and "mnemo night" not in said and "(" not in said
    with psycopg.connect(database_url) as conn:
        assert conn.execute("SELECT grantee, export FROM mnemo.grants").fetchall() == [("carol", True)]


def test_bad_input_and_abuse(server: str, tokens: dict[str, Any], database_url: str) -> None:
    with httpx.Client(base_url=server, headers=auth(tokens["alice"]), timeout=30) as c:
        c.post("/v1/memories", json={"content": "seed memory so the scope exists"})
        before = snapshot(database_url)
        big = c.post("/v1/memories", content=b'{"content": "' + b"a" * (MAX_BODY_BYTES + 10) + b'"}')
        assert big.status_code == 413 and big.json()["error"]["code"] == "too_large"
        for k in (0, 201, -3):
            bad_k = c.post("/v1/recall", json={"query": "seed", "k": k})
            assert bad_k.status_code == 422 and bad_k.json()["error"]["code"] == "invalid_request"
        bad_time = c.post("/v1/recall", json={"query": "seed", "as_of": "last tuesday"})
        assert bad_time.status_code == 422 and bad_time.json()["error"]["code"] == "invalid_request"
        malformed = c.post("/v1/memories", content=b"{not json", headers={"content-type": "application/json"})
        assert malformed.status_code == 400 and malformed.json()["error"]["code"] == "bad_request"  # as documented
        assert "not valid JSON" in malformed.json()["error"]["message"]
        empty = c.post("/v1/memories", json={"content": "   "})
        assert empty.status_code == 422 and empty.json()["error"]["code"] == "invalid_input"
        nul = c.post("/v1/memories", json={"content": "a\u0000b"})
        assert nul.status_code == 422
        kind = c.post("/v1/memories", json={"content": "ok", "kind": "gossip"})
        assert kind.status_code == 422
        assert c.delete("/v1/items/not-a-uuid").status_code == 422
        assert snapshot(database_url) == before  # nothing of the bad requests was written
        past = c.post("/v1/recall", json={"query": "seed memory", "as_of": "2001-01-01T00:00:00Z"}).json()
        assert past["refused"] is True  # nothing was written by then
        assert c.post("/v1/recall", json={"query": "seed memory", "as_of": "2999-01-01T00:00:00"}).json()["hits"]
        sql = "'; DROP TABLE mnemo.memories; --"
        stored = c.post("/v1/memories", json={"content": f"Robert {sql} Tables", "kind": "semantic"})
        assert stored.status_code == 201
        found = c.post("/v1/recall", json={"query": sql, "k": 3})
        assert found.status_code == 200 and any("DROP TABLE" in h["content"] for h in found.json()["hits"])
        odd_ns = c.post("/v1/recall", json={"query": "x", "namespace": sql})
        assert odd_ns.status_code == 422 and odd_ns.json()["error"]["code"] == "invalid_scope"
    assert snapshot(database_url)["mnemo.memories"] == before["mnemo.memories"] + 1
