"""Fuzz the HTTP service's OpenAPI spec with schemathesis: no request, however odd, gets a 5xx."""

from __future__ import annotations

from typing import Any

import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error

from tests.integration.test_http import auth, server, tokens  # noqa: F401  (fixtures)


def test_no_server_errors_anywhere_in_the_spec(server: str, tokens: dict[str, Any]) -> None:  # noqa: F811
    schema = schemathesis.openapi.from_url(f"{server}/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 9
    statuses: list[int] = []
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=25, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck)
        )
        def no_5xx(case: Any) -> None:
            response = case.call_and_validate(headers=auth(tokens["alice"]), checks=[not_a_server_error])
            statuses.append(response.status_code)

        no_5xx()
    assert len(statuses) >= 100  # the fuzzer really sent requests
    assert {200, 201, 422} <= set(statuses)  # valid and invalid ones both reached the app
