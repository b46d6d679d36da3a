"""The blocking ``Archive`` exposes every public coroutine method of ``AsyncArchive`` with the same
signature and docstring (DESIGN §6.1), so a typo in a keyword fails on both APIs alike; and so does
each of its features (``archive.access``, ``archive.portability`` ...; issue 41 item 1): every public
method of an async feature class has a twin of the same signature on the blocking feature."""

from __future__ import annotations

import inspect

import pytest

from mnemo import Archive, AsyncArchive
from mnemo._sync import TWINS
from mnemo.archive import FeatureAttribute

# Not twins on purpose: opening (Archive() opens in its constructor) and closing (close() also stops
# the loop thread; both close).
CONSTRUCTION = {"open", "close"}
ASYNC_ONLY = {("portability", "packets"), ("inspect", "inspector"), ("inspect", "probes")}
"""Async on purpose: an async iterator, and objects whose own methods are coroutines (``Archive().aio``)."""


def public_coroutines() -> list[str]:
    return sorted(
        name
        for name, member in inspect.getmembers(AsyncArchive)
        if not name.startswith("_") and inspect.iscoroutinefunction(member) and name not in CONSTRUCTION
    )


def features() -> list[str]:
    return sorted(name for name, member in vars(AsyncArchive).items() if isinstance(member, FeatureAttribute))


def feature_methods() -> list[tuple[str, str]]:
    """Every public method (static ones included) of every async feature class."""
    return sorted(
        (feature, name)
        for feature in features()
        for name, member in vars(getattr(AsyncArchive, feature)).items()
        if not name.startswith("_") and (inspect.isfunction(member) or isinstance(member, staticmethod))
    )


def test_there_are_coroutine_methods_to_compare() -> None:
    assert {"recall", "remember", "night_cycle", "context", "forget"} <= set(public_coroutines())
    assert {("access", "grant"), ("portability", "restore"), ("inner", "life")} <= set(feature_methods())


@pytest.mark.parametrize("name", public_coroutines())
def test_every_async_method_has_a_blocking_twin_with_the_same_signature(name: str) -> None:
    blocking = getattr(Archive, name, None)

    assert blocking is not None, f"Archive lacks {name}()"
    assert not inspect.iscoroutinefunction(blocking)
    original = getattr(AsyncArchive, name)
    assert inspect.signature(blocking) == inspect.signature(original)
    assert blocking.__doc__ == original.__doc__ and original.__doc__, f"{name} needs a docstring"


def test_every_feature_has_a_blocking_twin_on_both_archives() -> None:
    assert (
        set(TWINS) == set(features()) == {name for name, m in vars(Archive).items() if isinstance(m, FeatureAttribute)}
    )
    for name, (aio, blocking) in TWINS.items():
        assert getattr(AsyncArchive, name) is aio and getattr(Archive, name) is blocking


@pytest.mark.parametrize(("feature", "name"), [m for m in feature_methods() if m not in ASYNC_ONLY])
def test_every_feature_method_has_a_blocking_twin_with_the_same_signature(feature: str, name: str) -> None:
    original = getattr(getattr(AsyncArchive, feature), name)
    blocking = getattr(getattr(Archive, feature), name, None)

    assert blocking is not None, f"Archive.{feature} lacks {name}()"
    assert not inspect.iscoroutinefunction(blocking)
    assert inspect.signature(blocking) == inspect.signature(original)
    assert blocking.__doc__ == original.__doc__ and original.__doc__, f"{feature}.{name} needs a docstring"


def test_a_misspelt_keyword_is_rejected_by_the_blocking_signature() -> None:
    signature = inspect.signature(Archive.recall)

    assert "threshold" in signature.parameters
    with pytest.raises(TypeError, match="thresold"):
        signature.bind(object(), object(), "query", thresold=0.5)
    with pytest.raises(TypeError, match="exprot"):
        inspect.signature(Archive.access.grant).bind(object(), object(), "bob", exprot=True)


def test_blocking_and_async_archives_share_their_properties() -> None:
    for name in ("settings", "embeddings"):
        assert isinstance(getattr(Archive, name), property)
        assert isinstance(getattr(AsyncArchive, name), property)


def test_a_feature_attribute_is_read_only() -> None:
    archive = object.__new__(AsyncArchive)
    with pytest.raises(AttributeError, match="access is read-only"):
        archive.access = None  # type: ignore[misc,assignment]
