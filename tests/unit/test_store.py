"""The store's pure helpers (no database; migrations and the schema: tests/integration/test_store.py)."""

from __future__ import annotations

import pytest

from mnemo.store.server import parse_version


def test_parse_version() -> None:
    assert parse_version("0.8.5") == (0, 8, 5)
    assert parse_version("0.7") == (0, 7, 0)
    assert parse_version("0.10.0-dev") == (0, 10, 0)
    assert parse_version("0.6.2") < (0, 7, 0) <= parse_version("0.7.0")
    with pytest.raises(ValueError):
        parse_version("vector")
