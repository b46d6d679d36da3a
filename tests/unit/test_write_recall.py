"""Scope validation on the write and recall paths (no database; the paths end to end:
tests/integration/test_write_recall.py)."""

from __future__ import annotations

import pytest

from mnemo import InvalidScopeError, Scope


@pytest.mark.parametrize(
    "entity", ["", " bob", "bob/ns", "x" * 129, "bob;drop table", "-bob", "bö b", "alice\n", "alice\r\n"]
)
def test_invalid_scopes_are_rejected(entity: str) -> None:
    with pytest.raises(InvalidScopeError):
        Scope(entity)
