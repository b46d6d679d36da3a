"""Fuzz the HTTP service's OpenAPI spec with schemathesis: no request, however odd, gets a 5xx;
every answer is one the spec documents, in the shape it documents (errors: one shape); and the
spec is precise enough that generated writes are valid and accepted."""

from __future__ import annotations

from typing import Any

import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from tests.integration.test_http import auth, server, tokens  # noqa: F401  (fixtures)


def one_error_shape(_ctx: Any, response: Any, _case: Any) -> None:
    """Every error answers ``{"error": {"code": str, "message": str}}`` and nothing else."""
    if response.status_code < 400:
        return
    body = response.json()
    assert set(body) == {"error"}, body
    assert set(body["error"]) == {"code", "message"}, body
    assert isinstance(body["error"]["code"], str) and isinstance(body["error"]["message"], str), body


CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    one_error_shape,
]


def _fuzz(operation: Any, mode: GenerationMode, headers: dict[str, str]) -> list[tuple[str, int]]:
    """Send up to 20 generated requests to ``operation``; ``(operation, status)`` of each."""
    seen: list[tuple[str, int]] = []

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(max_examples=20, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
    def conforms(case: Any) -> None:
        # generous time-out: the first request waits for the embedding model on a busy machine
        response = case.call_and_validate(headers=headers, checks=CHECKS, timeout=120)
        seen.append((f"{case.method} {case.path}", response.status_code))

    conforms()
    return seen


def test_no_server_errors_anywhere_in_the_spec(server: str, tokens: dict[str, Any]) -> None:  # noqa: F811
    schema = schemathesis.openapi.from_url(f"{server}/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]  # type: ignore[union-attr]  # Err: fails here
    assert len(operations) >= 9
    positive = [seen for op in operations for seen in _fuzz(op, GenerationMode.POSITIVE, auth(tokens["alice"]))]
    negative = [  # requests the spec forbids, where there is something to get wrong (not /health, /v1/status)
        seen
        for op in operations
        if op.body or op.query or op.path_parameters
        for seen in _fuzz(op, GenerationMode.NEGATIVE, auth(tokens["alice"]))
    ]
    assert len(positive) + len(negative) >= 150  # the fuzzer really sent requests
    assert max(status for _, status in positive + negative) < 500
    assert {200, 201} <= {status for _, status in positive}
    for write in ("POST /v1/memories", "POST /v1/turns"):  # the spec is precise enough to write for real
        accepted = sum(1 for op, status in positive if op == write and status == 201)
        assert accepted >= 5, f"only {accepted} generated {write} requests were accepted"
    assert 422 in {status for _, status in negative}  # invalid requests reached the app and were refused
