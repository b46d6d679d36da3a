"""The HTTP contract: one error shape for every status, an OpenAPI spec that says what the service
accepts and answers, strict request bodies, and scope reads that never reveal whether a foreign
scope exists (issue 12, defects 10-13)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from starlette.exceptions import HTTPException

from mnemo import Archive, DatabaseUnavailableError, Scope, Settings
from mnemo.embed import Embeddings
from mnemo.interfaces.http import MAX_BODY_BYTES, MAX_IMPORT_TURNS, create_app
from mnemo.models import _NAME_RE, MEMORY_KINDS, ROLES
from tests.conftest import snapshot
from tests.integration.test_http import auth, serve, server, tokens  # noqa: F401  (fixtures)

NAME_PATTERN = _NAME_RE.pattern  # models.Scope's entity id / namespace rule


def _is_error(response: httpx.Response, status: int, code: str | None = None) -> dict[str, Any]:
    """Assert ``response`` is ``status`` with the one error body ``{"error": {"code", "message"}}``."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json"), response.text
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}, body
    assert isinstance(body["error"]["code"], str) and isinstance(body["error"]["message"], str)
    assert body["error"]["message"], body
    if code is not None:
        assert body["error"]["code"] == code, body
    return dict(body["error"])


@pytest.fixture
def rigged(settings: Settings, embeddings: Embeddings) -> Iterator[str]:
    """The real app plus routes that fail the ways a bug, a lost database or a framework error would."""
    app = create_app(settings, embeddings=embeddings)

    async def bug() -> None:
        raise RuntimeError("secret internal detail")

    async def database_gone() -> None:
        raise DatabaseUnavailableError("the database is restarting; retry in a moment")

    async def framework_400() -> None:
        raise HTTPException(400, "the framework refused this request")

    app.add_api_route("/test/bug", bug)
    app.add_api_route("/test/database", database_gone)
    app.add_api_route("/test/framework", framework_400)
    with serve(app) as url:
        yield url


def test_every_error_has_the_one_shape(rigged: str, settings: Settings, embeddings: Embeddings) -> None:
    with Archive(settings, embeddings=embeddings) as archive:
        token, _ = archive.access.create_token("alice")
    with httpx.Client(base_url=rigged, timeout=30) as c:
        _is_error(c.get("/no/such/route"), 404, "not_found")
        _is_error(c.get("/v1/recall"), 405, "method_not_allowed")
        _is_error(c.put("/v1/memories", json={"content": "x"}), 405, "method_not_allowed")
        _is_error(c.get("/test/framework"), 400, "bad_request")
        missing = c.post("/v1/memories", json={"content": "x"})
        _is_error(missing, 401, "unauthenticated")
        assert missing.headers["www-authenticate"] == "Bearer"
        _is_error(c.post("/v1/memories", json={"content": "x"}, headers={"Authorization": "Basic abc"}), 401)
        bug = _is_error(c.get("/test/bug"), 500, "internal")  # JSON, not plain text, and no connection reset
        assert "secret" not in bug["message"]  # internals stay in the server log
        away = c.get("/test/database")
        _is_error(away, 503, "unavailable")
        assert away.headers["retry-after"].isdigit()  # a client knows when to try again
        headers = auth(token)
        _is_error(c.post("/v1/recall", json={"query": "x", "k": 0}, headers=headers), 422, "invalid_request")
        _is_error(c.post("/v1/memories", json={"content": "  "}, headers=headers), 422, "invalid_input")
        _is_error(c.delete("/v1/items/not-a-uuid", headers=headers), 422, "invalid_request")
        _is_error(c.post("/v1/grants", json={"grantee": "no spaces"}, headers=headers), 422, "invalid_scope")
        _is_error(c.delete("/v1/grants/bob", params={"namespace": "-x"}, headers=headers), 422, "invalid_scope")
        oversized = b'{"content": "' + b"a" * (MAX_BODY_BYTES + 10) + b'"}'
        _is_error(c.post("/v1/memories", content=oversized, headers=headers), 413, "too_large")
        chunked = c.post("/v1/memories", content=iter([oversized[:1000], oversized[1000:]]), headers=headers)
        _is_error(chunked, 413, "too_large")


def _resolve(spec: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        node: Any = spec
        for part in schema["$ref"].removeprefix("#/").split("/"):
            node = node[part]
        schema = node
    return schema


def _strings(spec: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """The string variant of a (possibly optional) property's schema."""
    schema = _resolve(spec, schema)
    for option in schema.get("anyOf", [schema]):
        option = _resolve(spec, option)
        if option.get("type") == "string":
            return option
    raise AssertionError(f"no string in {schema}")


def _body(spec: dict[str, Any], path: str, method: str = "post") -> dict[str, Any]:
    body = spec["paths"][path][method]["requestBody"]["content"]["application/json"]["schema"]
    return _resolve(spec, body)


def _parameter(spec: dict[str, Any], path: str, method: str, name: str) -> dict[str, Any]:
    for parameter in spec["paths"][path][method].get("parameters", []):
        if parameter["name"] == name:
            return _strings(spec, parameter["schema"])
    raise AssertionError(f"{method.upper()} {path} has no parameter {name}")


def test_the_openapi_spec_states_the_contract(server: str) -> None:  # noqa: F811
    spec = httpx.get(f"{server}/openapi.json", timeout=30).json()
    schemes = spec["components"]["securitySchemes"]
    bearer = [name for name, s in schemes.items() if s["type"] == "http" and s["scheme"].lower() == "bearer"]
    assert len(bearer) == 1

    error = _resolve(spec, {"$ref": "#/components/schemas/ErrorBody"})
    detail = _resolve(spec, error["properties"]["error"])
    assert error["required"] == ["error"] and set(detail["required"]) == {"code", "message"}

    documented = {  # the errors each operation can answer, besides 500 (a bug) which all document
        ("get", "/health"): {"503"},
        ("get", "/v1/status"): {"401", "503"},
        ("post", "/v1/memories"): {"400", "401", "403", "404", "413", "422", "503"},
        ("post", "/v1/turns"): {"400", "401", "403", "404", "413", "422", "503"},
        ("post", "/v1/import"): {"400", "401", "403", "404", "413", "422", "503"},
        ("post", "/v1/recall"): {"400", "401", "403", "413", "422", "503"},
        ("post", "/v1/context"): {"400", "401", "403", "413", "422", "503"},
        ("delete", "/v1/items/{item_id}"): {"401", "403", "404", "422", "503"},
        ("delete", "/v1/processes/{process}"): {"401", "403", "422", "503"},
        ("get", "/v1/export"): {"401", "403", "404", "422", "503"},
        ("post", "/v1/reflexes/outcomes"): {"400", "401", "403", "404", "413", "422", "503"},
        ("post", "/v1/reflexes/search"): {"400", "401", "403", "413", "422", "503"},
        ("post", "/v1/feedback"): {"400", "401", "403", "404", "413", "422", "503"},
        ("get", "/v1/readiness"): {"401", "403", "422", "503"},
        ("get", "/v1/inner"): {"401", "403", "422", "503"},
        ("post", "/v1/grants"): {"400", "401", "403", "404", "413", "422", "503"},
        ("delete", "/v1/grants/{grantee}"): {"401", "403", "422", "503"},
        ("get", "/v1/memories"): {"401", "403", "422", "503"},
        ("get", "/v1/items/{item_id}"): {"401", "403", "404", "422", "503"},
        ("get", "/v1/grants"): {"401", "403", "422", "503"},
        ("get", "/v1/facts/{entity}"): {"401", "403", "404", "422", "503"},
        ("get", "/v1/memories/{memory_id}/why"): {"401", "403", "404", "422", "503"},
        ("get", "/v1/memories/{memory_id}/believe"): {"401", "403", "404", "422", "503"},
    }
    operations = {(m, p): op for p, item in spec["paths"].items() for m, op in item.items()}
    assert set(operations) == set(documented)
    for (method, path), op in operations.items():
        where = f"{method.upper()} {path}"
        responses = op["responses"]
        ok = [s for s in responses if s.startswith("2")]
        assert len(ok) == 1, where
        (body,) = responses[ok[0]]["content"].values()  # JSON, or JSON lines (the export)
        ok_schema = body["schema"]
        assert "$ref" in ok_schema or "anyOf" in ok_schema, f"{where} answers an undocumented body"
        assert set(responses) - set(ok) == documented[method, path] | {"500"}, where
        for status in set(responses) - set(ok):
            ref = responses[status]["content"]["application/json"]["schema"]["$ref"]
            assert ref == "#/components/schemas/ErrorBody", f"{where} {status} documents another error shape"
        if path.startswith("/v1/"):
            assert op["security"] == [{bearer[0]: []}], where
    assert "HTTPValidationError" not in spec["components"]["schemas"]  # FastAPI's own 422 shape is gone

    remember, turn = _body(spec, "/v1/memories"), _body(spec, "/v1/turns")
    assert _resolve(spec, remember["properties"]["kind"])["enum"] == list(MEMORY_KINDS)
    assert _resolve(spec, turn["properties"]["role"])["enum"] == list(ROLES)
    for path, names in (
        ("/v1/memories", ["namespace"]),
        ("/v1/turns", ["namespace"]),
        ("/v1/recall", ["namespace", "owner"]),
        ("/v1/context", ["namespace", "owner"]),
        ("/v1/grants", ["namespace", "grantee"]),
        ("/v1/import", ["namespace"]),
    ):
        body = _body(spec, path)
        assert body["additionalProperties"] is False, f"{path} accepts unknown fields"
        for name in names:
            assert _strings(spec, body["properties"][name])["pattern"] == NAME_PATTERN, (path, name)
    assert _parameter(spec, "/v1/items/{item_id}", "delete", "namespace")["pattern"] == NAME_PATTERN
    assert _parameter(spec, "/v1/grants/{grantee}", "delete", "namespace")["pattern"] == NAME_PATTERN
    assert _parameter(spec, "/v1/grants/{grantee}", "delete", "grantee")["pattern"] == NAME_PATTERN
    for path in (
        "/v1/memories",
        "/v1/items/{item_id}",
        "/v1/grants",
        "/v1/facts/{entity}",
        "/v1/memories/{memory_id}/why",
        "/v1/memories/{memory_id}/believe",
    ):
        assert _parameter(spec, path, "get", "namespace")["pattern"] == NAME_PATTERN, path
    imported = _body(spec, "/v1/import")
    assert _resolve(spec, imported["properties"]["turns"])["maxItems"] == MAX_IMPORT_TURNS
    assert _resolve(spec, imported["properties"]["turns"]["items"])["additionalProperties"] is False
    assert _resolve(spec, _body(spec, "/v1/recall")["properties"]["k"])["maximum"] == Settings().max_k
    for path, name in (("/v1/memories", "content"), ("/v1/turns", "content"), ("/v1/turns", "session")):
        assert "maxLength" in _strings(spec, _body(spec, path)["properties"][name]), (path, name)
    for path, name in (("/v1/recall", "query"), ("/v1/context", "text"), ("/v1/turns", "speaker")):
        assert "maxLength" in _strings(spec, _body(spec, path)["properties"][name]), (path, name)


def test_unknown_fields_and_self_grants_are_rejected(
    server: str,  # noqa: F811
    tokens: dict[str, Any],  # noqa: F811
    database_url: str,
) -> None:
    with httpx.Client(base_url=server, timeout=30) as c:
        for who in ("alice", "bob"):
            made = c.post("/v1/memories", json={"content": f"{who}'s first note"}, headers=auth(tokens[who]))
            assert made.status_code == 201
        before = snapshot(database_url)
        bob = auth(tokens["bob"])
        smuggled = _is_error(
            c.post("/v1/memories", json={"content": "x", "owner": "alice"}, headers=bob), 422, "invalid_request"
        )
        assert "owner" in smuggled["message"]
        _is_error(c.post("/v1/grants", json={"grantee": "bob", "owner": "alice"}, headers=bob), 422, "invalid_request")
        turn = {"session": "s", "role": "user", "content": "x", "entity": "alice"}
        _is_error(c.post("/v1/turns", json=turn, headers=bob), 422, "invalid_request")
        _is_error(c.post("/v1/recall", json={"query": "x", "limit": 3}, headers=bob), 422, "invalid_request")
        _is_error(c.post("/v1/context", json={"text": "x", "scope": "alice"}, headers=bob), 422, "invalid_request")
        self_grant = _is_error(c.post("/v1/grants", json={"grantee": "bob"}, headers=bob), 422, "invalid_input")
        assert "own" in self_grant["message"]
        assert snapshot(database_url) == before  # none of it was written


def test_foreign_scopes_look_the_same_whether_or_not_they_exist(
    server: str,  # noqa: F811
    tokens: dict[str, Any],  # noqa: F811
    database_url: str,
) -> None:
    with httpx.Client(base_url=server, timeout=30) as c:
        made = c.post(
            "/v1/memories", json={"content": "Alice's diary", "namespace": "diary"}, headers=auth(tokens["alice"])
        )
        assert made.status_code == 201
        before = snapshot(database_url)
        bob = auth(tokens["bob"])
        for path, body in (("/v1/recall", {"query": "diary"}), ("/v1/context", {"text": "diary"})):
            real = _is_error(c.post(path, json={**body, "owner": "alice", "namespace": "diary"}, headers=bob), 403)
            ghost = _is_error(c.post(path, json={**body, "owner": "alice", "namespace": "ghost"}, headers=bob), 403)
            nobody = _is_error(c.post(path, json={**body, "owner": "nobody", "namespace": "diary"}, headers=bob), 403)
            assert real["code"] == ghost["code"] == nobody["code"] == "forbidden"
            assert real["message"].replace("diary", "ghost") == ghost["message"]
            assert real["message"].replace("alice", "nobody") == nobody["message"]
        assert snapshot(database_url) == before


def test_a_new_tokens_first_reads_are_refusals(server: str, settings: Settings, embeddings: Embeddings) -> None:  # noqa: F811
    with Archive(settings, embeddings=embeddings) as archive:
        token, _ = archive.access.create_token("newcomer")
    with httpx.Client(base_url=server, headers=auth(token), timeout=30) as c:
        recalled = c.post("/v1/recall", json={"query": "what do you know about me?"})
        assert recalled.status_code == 200, recalled.text
        refusal = recalled.json()  # a Refusal record: nothing stored, so no near misses either
        assert refusal["refused"] is True and refusal["message"] == "The archive contains nothing reliable about this."
        assert refusal["scope"] == "newcomer/default" and refusal["candidates"] == []
        assert refusal["best_similarity"] is None and refusal["query"] == "what do you know about me?"
        block = c.post("/v1/context", json={"text": "what do you know about me?", "budget": 100})
        assert block.status_code == 200, block.text
        assert block.json()["refused"] is True and block.json()["text"] == "" and block.json()["items"] == []
        assert block.json()["scope"] == "newcomer/default"


def test_k_is_limited_by_the_servers_max_k(settings: Settings, embeddings: Embeddings) -> None:
    """One k limit everywhere: the HTTP service follows ``settings.max_k`` like the CLI, MCP and tools."""
    with Archive(settings, embeddings=embeddings) as archive:
        archive.remember(Scope("alice"), "Alice's favourite tea is oolong")
        token, _ = archive.access.create_token("alice")
    narrow = settings.model_copy(update={"max_k": 7})
    with serve(create_app(narrow, embeddings=embeddings)) as url, httpx.Client(base_url=url, timeout=60) as c:
        k = _resolve(c.get("/openapi.json").json(), {"$ref": "#/components/schemas/RecallIn"})["properties"]["k"]
        assert k["maximum"] == 7 and k["default"] <= 7
        over = _is_error(c.post("/v1/recall", json={"query": "tea", "k": 8}, headers=auth(token)), 422)
        assert over["code"] == "invalid_request" and "7" in over["message"], over
        for body in ({"query": "tea", "k": 7}, {"query": "tea"}):  # the default fits under the limit too
            found = c.post("/v1/recall", json=body, headers=auth(token))
            assert found.status_code == 200 and found.json()["hits"][0]["content"] == "Alice's favourite tea is oolong"
