"""The HTTP read routes (issue 12 extras): list memories page by page, read one item, list grants,
facts about an entity, a memory's weight history and derivation chain; all of the caller's own
scope, with a foreign id answered exactly like a missing one."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import httpx

from mnemo import Archive, Scope, Settings
from mnemo.embed import Embeddings
from tests.conftest import snapshot
from tests.integration.test_http import auth, server, tokens  # noqa: F401  (fixtures)
from tests.integration.test_http_contract import _is_error
from tests.night_data import START

ALICE = Scope("alice", "default")


def test_memories_are_listed_page_by_page(server: str, tokens: dict[str, Any], database_url: str) -> None:  # noqa: F811
    with httpx.Client(base_url=server, timeout=30) as c:
        alice, bob = auth(tokens["alice"]), auth(tokens["bob"])
        empty = c.get("/v1/memories", headers=alice)  # a scope that holds nothing yet: an empty page
        assert empty.status_code == 200 and empty.json() == {"items": [], "next_cursor": None}
        made = [
            c.post("/v1/memories", json={"content": f"Alice's note number {i}"}, headers=alice).json()["id"]
            for i in range(7)
        ]
        c.post("/v1/memories", json={"content": "Bob's own note"}, headers=bob)
        c.post("/v1/memories", json={"content": "Alice at work", "namespace": "work"}, headers=alice)
        before = snapshot(database_url)

        seen: list[str] = []
        cursor: str | None = None
        pages = 0
        while True:
            params: dict[str, Any] = {"limit": 3} | ({"cursor": cursor} if cursor else {})
            page = c.get("/v1/memories", params=params, headers=alice)
            assert page.status_code == 200, page.text
            body = page.json()
            assert len(body["items"]) <= 3
            seen += [item["id"] for item in body["items"]]
            pages += 1
            cursor = body["next_cursor"]
            if cursor is None:
                break
        assert pages == 3 and seen == sorted(made, reverse=True)  # each exactly once, newest id first
        first = c.get("/v1/memories", params={"limit": 1}, headers=alice).json()["items"][0]
        assert set(first) == {
            "id", "kind", "status", "content", "created_at", "event_time", "anchored", "alpha", "beta"
        }  # fmt: skip
        assert first["content"] == "Alice's note number 6" and first["kind"] == "semantic"
        default = c.get("/v1/memories", headers=alice).json()
        assert len(default["items"]) == 7 and default["next_cursor"] is None
        work = c.get("/v1/memories", params={"namespace": "work"}, headers=alice).json()
        assert [m["content"] for m in work["items"]] == ["Alice at work"]
        # bob lists his own scope only, however he names it
        assert [m["content"] for m in c.get("/v1/memories", headers=bob).json()["items"]] == ["Bob's own note"]
        assert c.get("/v1/memories", params={"cursor": made[-1]}, headers=bob).json()["items"] == []
        _is_error(c.get("/v1/memories", params={"namespace": "home"}, headers=auth(tokens["alice_work"])), 403)
        assert snapshot(database_url) == before  # listing reads only


def test_bad_cursor_and_limit_are_refused_in_the_one_shape(server: str, tokens: dict[str, Any]) -> None:  # noqa: F811
    with httpx.Client(base_url=server, headers=auth(tokens["alice"]), timeout=30) as c:
        for params in ({"limit": 0}, {"limit": 201}, {"limit": -1}, {"limit": "ten"}, {"cursor": "not-a-uuid"}):
            _is_error(c.get("/v1/memories", params=params), 422, "invalid_request")
        _is_error(c.get("/v1/memories", params={"namespace": "-x"}), 422, "invalid_scope")
        _is_error(c.get("/v1/items/not-a-uuid"), 422, "invalid_request")
        _is_error(c.get("/v1/memories/not-a-uuid/why"), 422, "invalid_request")
    _is_error(httpx.get(f"{server}/v1/memories", timeout=30), 401, "unauthenticated")


def test_an_item_is_read_only_in_its_own_scope(server: str, tokens: dict[str, Any]) -> None:  # noqa: F811
    with httpx.Client(base_url=server, timeout=30) as c:
        alice, bob = auth(tokens["alice"]), auth(tokens["bob"])
        memory = c.post("/v1/memories", json={"content": "Alice's PIN is 0000", "kind": "semantic"}, headers=alice)
        turn = c.post("/v1/turns", json={"session": "s1", "role": "user", "content": "hello"}, headers=alice)
        got = c.get(f"/v1/items/{memory.json()['id']}", headers=alice).json()
        assert got["type"] == "memory" and got["content"] == "Alice's PIN is 0000" and got["status"] == "active"
        said = c.get(f"/v1/items/{turn.json()['id']}", headers=alice).json()
        assert said["type"] == "turn" and said["session"] == "s1" and said["turn"] == 0 and said["role"] == "user"
        foreign = _is_error(c.get(f"/v1/items/{memory.json()['id']}", headers=bob), 404, "not_found")
        missing = _is_error(c.get(f"/v1/items/{uuid.uuid4()}", headers=bob), 404, "not_found")
        assert "PIN" not in foreign["message"] and foreign["message"].split()[:2] == missing["message"].split()[:2]
        _is_error(c.get(f"/v1/items/{memory.json()['id']}", params={"namespace": "work"}, headers=alice), 404)


def test_grants_facts_why_and_believe(
    server: str,  # noqa: F811
    tokens: dict[str, Any],  # noqa: F811
    settings: Settings,
    embeddings: Embeddings,
) -> None:
    with Archive(settings, embeddings=embeddings) as archive:
        for i, text in enumerate(["I live in Lisbon.", "Nice.", "I work at Acme as an engineer.", "Cool."]):
            archive.record_turn(
                ALICE,
                "s1",
                "user" if i % 2 == 0 else "assistant",
                text,
                speaker=("Alice", "Bob")[i % 2],
                created_at=START + timedelta(minutes=i),
            )
        sources = [
            archive.remember(ALICE, f"Alice prefers simple deployment tools {tail} complex infrastructure.")
            for tail in ("over", "rather than", "to")
        ]
        archive.remember(ALICE, "The office plant needs water on Fridays.")
        archive.night_cycle(ALICE, as_of=START + timedelta(hours=1), stages=("surprisal", "knowledge", "insights"))
    with httpx.Client(base_url=server, timeout=30) as c:
        alice, bob = auth(tokens["alice"]), auth(tokens["bob"])
        assert c.get("/v1/grants", headers=bob).json() == {"scope": "bob/default", "grantees": []}
        assert c.post("/v1/grants", json={"grantee": "bob"}, headers=alice).status_code == 201
        assert c.get("/v1/grants", headers=alice).json() == {"scope": "alice/default", "grantees": ["bob"]}

        facts = c.get("/v1/facts/alice", headers=alice)
        assert facts.status_code == 200, facts.text
        body = facts.json()
        assert set(body) == {"name", "mention_count", "facts", "triples"}
        assert ("lives in", "Lisbon") in {(f["attribute"], f["value"]) for f in body["facts"]}
        assert all(f["valid_to"] is None for f in body["facts"] if f["value"] == "Lisbon")
        _is_error(c.get("/v1/facts/Nobody Atall", headers=alice), 404, "not_found")
        _is_error(c.get("/v1/facts/alice", headers=bob), 404, "not_found")  # bob's scope, not alice's

        history = c.get(f"/v1/memories/{sources[0].id}/why", headers=alice)
        assert history.status_code == 200, history.text
        why = history.json()
        assert why["id"] == str(sources[0].id) and why["scope"] == "alice/default"
        assert why["changes"][-1]["reason"] == "insight" and why["changes"][-1]["operation"] == "contradict"
        assert set(why["changes"][-1]) >= {"at", "gain", "old", "new", "evidence", "blocked", "ceilings"}
        _is_error(c.get(f"/v1/memories/{sources[0].id}/why", headers=bob), 404, "not_found")

        insight = next(
            m for m in c.get("/v1/memories", params={"limit": 200}, headers=alice).json()["items"]
            if m["kind"] == "insight"
        )  # fmt: skip
        believed = c.get(f"/v1/memories/{insight['id']}/believe", headers=alice)
        assert believed.status_code == 200, believed.text
        chain = believed.json()
        assert chain["id"] == insight["id"]
        assert {b["id"] for b in chain["chain"]} == {str(s.id) for s in sources}
        assert set(chain["chain"][0]) == {"depth", "parent", "id", "kind", "content", "status"}
        _is_error(c.get(f"/v1/memories/{insight['id']}/believe", headers=bob), 404, "not_found")
        _is_error(c.get(f"/v1/memories/{uuid.uuid4()}/believe", headers=alice), 404, "not_found")
