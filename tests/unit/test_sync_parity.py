"""The blocking ``Archive`` exposes every public coroutine method of ``AsyncArchive`` with the same
signature and docstring (DESIGN §6.1), so a typo in a keyword fails on both APIs alike."""

from __future__ import annotations

import inspect

import pytest

from mnemo import Archive, AsyncArchive

# Not twins on purpose: opening (Archive() opens in its constructor) and closing (close() also stops
# the loop thread; both close).
CONSTRUCTION = {"open", "close"}


def public_coroutines() -> list[str]:
    return sorted(
        name
        for name, member in inspect.getmembers(AsyncArchive)
        if not name.startswith("_") and inspect.iscoroutinefunction(member) and name not in CONSTRUCTION
    )


def test_there_are_coroutine_methods_to_compare() -> None:
    assert {"recall", "remember", "night_cycle", "context", "forget"} <= set(public_coroutines())


@pytest.mark.parametrize("name", public_coroutines())
def test_every_async_method_has_a_blocking_twin_with_the_same_signature(name: str) -> None:
    blocking = getattr(Archive, name, None)

    assert blocking is not None, f"Archive lacks {name}()"
    assert not inspect.iscoroutinefunction(blocking)
    original = getattr(AsyncArchive, name)
    assert inspect.signature(blocking) == inspect.signature(original)
    assert blocking.__doc__ == original.__doc__ and original.__doc__, f"{name} needs a docstring"


def test_a_misspelt_keyword_is_rejected_by_the_blocking_signature() -> None:
    signature = inspect.signature(Archive.recall)

    assert "threshold" in signature.parameters
    with pytest.raises(TypeError, match="thresold"):
        signature.bind(object(), object(), "query", thresold=0.5)


def test_blocking_and_async_archives_share_their_properties() -> None:
    for name in ("settings", "embeddings"):
        assert isinstance(getattr(Archive, name), property)
        assert isinstance(getattr(AsyncArchive, name), property)
