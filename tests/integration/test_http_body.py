"""Request bodies meet the door before the service reads them (issue 39 item 5): a body-sending
request is authenticated from its headers alone, and a body is counted as it arrives and cut off at
its route's limit, so an unauthenticated or oversized stream never sits in the service's memory.

Driven as ASGI with a ``receive`` that hands the body out chunk by chunk and counts what the service
pulled: the measure is what the service read, not what a socket buffered."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mnemo import AsyncArchive, Settings
from mnemo.embed import Embeddings
from mnemo.interfaces.http import MAX_BODY_BYTES, MAX_IMPORT_BYTES, create_app

CHUNK = 64 * 1024


class Stream:
    """A chunked request body of ``total`` bytes that counts what the application pulled."""

    def __init__(self, total: int) -> None:
        self.left, self.pulled = total, 0

    async def receive(self) -> dict[str, Any]:
        size = min(CHUNK, self.left)
        self.left -= size
        self.pulled += size
        return {"type": "http.request", "body": b"x" * size, "more_body": self.left > 0}


async def _post(app: Any, path: str, stream: Stream, headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],  # no content-length
        "client": ("127.0.0.1", 5000),
        "server": ("127.0.0.1", 8000),
        "state": {},
    }
    await app(scope, stream.receive, send)
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], json.loads(body)


@pytest.fixture
async def app(settings: Settings, embeddings: Embeddings) -> Any:
    made = create_app(settings, embeddings=embeddings)
    made.state.archive = archive = await AsyncArchive.open(settings, embeddings=embeddings)
    token, _ = await archive.access.create_token("alice")
    made.state.token = token
    yield made
    await archive.close()


@pytest.mark.parametrize(("path", "limit"), [("/v1/memories", MAX_BODY_BYTES), ("/v1/import", MAX_IMPORT_BYTES)])
async def test_an_unauthenticated_stream_is_refused_before_its_body_is_read(app: Any, path: str, limit: int) -> None:
    for headers in ({}, {"Authorization": "Bearer mn1.YWxpY2U.not-a-token"}):
        stream = Stream(4 * limit)
        status, body = await _post(app, path, stream, headers)
        assert (status, body["error"]["code"]) == (401, "unauthenticated")
        assert stream.pulled <= CHUNK  # nothing of the body was read (at most what the server had in hand)


@pytest.mark.parametrize(("path", "limit"), [("/v1/memories", MAX_BODY_BYTES), ("/v1/import", MAX_IMPORT_BYTES)])
async def test_an_oversized_stream_is_cut_off_at_the_limit(app: Any, path: str, limit: int) -> None:
    stream = Stream(4 * limit)
    status, body = await _post(app, path, stream, {"Authorization": f"Bearer {app.state.token}"})
    assert (status, body["error"]["code"]) == (413, "too_large"), body
    assert str(limit) in body["error"]["message"]
    assert stream.pulled <= limit + CHUNK  # read up to the limit, never the whole stream
