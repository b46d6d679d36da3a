"""Every record a public method of the archive returns is exported from ``mnemo`` (issue 41 item 5).

DESIGN §5: ``__init__.py`` re-exports the public API in a sorted ``__all__``, and every record a
public method returns is exported. The test walks the public methods and properties of
``AsyncArchive``, ``Archive`` and of each feature class they hand out as an attribute
(``archive.access`` …: found from the attributes themselves, so a new feature is covered the day it
lands), resolves their return annotations (:func:`typing.get_type_hints`), unwraps the containers
(``list``, ``tuple``, ``Sequence``, ``X | None``, ``AsyncIterator``, ``Mapping`` …) and asks that every
record — a dataclass, or a class defined in mnemo — be a name of ``mnemo.__all__``. The records of
:mod:`mnemo.models` nest others (``InnerLife.axes`` holds ``GutAxis``); their fields are walked too.
"""

from __future__ import annotations

import dataclasses
import inspect
import types
import typing
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from typing import Any, Literal

import numpy as np
import pytest

import mnemo

ANNOTATION_NAMES = {"np": np}
"""Names the annotations use that their modules import only under ``TYPE_CHECKING``."""

NOT_FEATURES = {"settings", "embeddings"}
"""Attributes that are not features: the configuration and the embedder, public classes of their
own modules (:mod:`mnemo.config`, :mod:`mnemo.embed`) whose methods are theirs, not the archive's
(their classes themselves are exported)."""


def hints(obj: object) -> dict[str, Any]:
    return typing.get_type_hints(obj, localns=ANNOTATION_NAMES)


def _ours(kind: type) -> bool:
    return kind.__module__.split(".")[0] == "mnemo"


def is_record(kind: object) -> bool:
    """A dataclass, or a class defined in mnemo."""
    return isinstance(kind, type) and (dataclasses.is_dataclass(kind) or _ours(kind))


def leaves(hint: object) -> Iterator[type]:
    """The classes inside an annotation: ``list[X]``, ``tuple[X, Y]``, ``X | None``,
    ``AsyncIterator[X]``, ``Mapping[K, V]``, ``Callable[[A], R]`` … unwrapped; ``Literal`` skipped."""
    if typing.get_origin(hint) is typing.Literal:
        return
    args = typing.get_args(hint)
    if args or isinstance(hint, types.UnionType):
        for arg in args:
            yield from (x for a in (arg if isinstance(arg, list) else [arg]) for x in leaves(a))
    elif isinstance(hint, type):
        yield hint


def features(archive: type) -> dict[str, type]:
    """The feature classes ``archive`` hands out as attributes: a property whose return annotation is
    a class of mnemo, or a descriptor that is such a class on the archive's class
    (``AsyncArchive.access`` is :class:`~mnemo.access.Access`)."""
    found = {}
    for name in dir(archive):
        if name.startswith("_") or name in NOT_FEATURES:
            continue
        static = inspect.getattr_static(archive, name)
        if isinstance(static, property):
            kind = hints(static.fget).get("return")
        elif isinstance(static, type | types.FunctionType | classmethod | staticmethod):
            continue
        else:
            kind = getattr(archive, name)
        if isinstance(kind, type) and _ours(kind):
            found[name] = kind
    return found


def public_returns(owner: type) -> Iterator[tuple[str, object]]:
    """``(where, annotation)`` for the return of every public method and property of ``owner``."""
    for name in dir(owner):
        if name.startswith("_"):
            continue
        static = inspect.getattr_static(owner, name)
        function: Callable[..., Any] | None = None
        if isinstance(static, property):
            function = static.fget
        elif isinstance(static, staticmethod | classmethod):
            function = static.__func__
        elif inspect.isfunction(static):
            function = static
        if function is not None:
            yield f"{owner.__name__}.{name}", hints(function).get("return")


def returned_records() -> dict[type, str]:
    """Every record the archives' public methods return, with one place that returns it."""
    owners = [mnemo.AsyncArchive, mnemo.Archive]
    owners += [kind for archive in (mnemo.AsyncArchive, mnemo.Archive) for kind in features(archive).values()]
    found: dict[type, str] = {}
    for owner in dict.fromkeys(owners):
        for where, hint in public_returns(owner):
            for leaf in leaves(hint):
                if is_record(leaf):
                    found.setdefault(leaf, where)
    for record, where in list(found.items()):
        _nested(record, where, found)
    return found


def _nested(record: type, where: str, found: dict[type, str]) -> None:
    """Add the records the fields of a :mod:`mnemo.models` record hold, recursively."""
    if record.__module__ != "mnemo.models" or not dataclasses.is_dataclass(record):
        return
    for name, hint in hints(record).items():
        for leaf in leaves(hint):
            if is_record(leaf) and leaf not in found and not name.startswith("_"):
                found[leaf] = f"{where} → {record.__name__}.{name}"
                _nested(leaf, found[leaf], found)


def test_the_walk_sees_the_features_and_their_records() -> None:
    seen = features(mnemo.AsyncArchive)
    assert {"access", "portability", "inner", "reflexes", "inspect"} <= set(seen)
    records = returned_records()
    assert {mnemo.RecallResult, mnemo.Refusal, mnemo.Hit, mnemo.Memory, mnemo.Status} <= set(records)


def test_every_returned_record_is_exported() -> None:
    missing = {
        f"{record.__module__}.{record.__qualname__} (from {where})"
        for record, where in returned_records().items()
        if getattr(mnemo, record.__name__, None) is not record or record.__name__ not in mnemo.__all__
    }
    assert missing == set()


def test_all_is_sorted() -> None:
    assert mnemo.__all__ == sorted(mnemo.__all__)


@pytest.mark.parametrize(
    ("hint", "expected"),
    [
        (list[mnemo.Memory], [mnemo.Memory]),
        (tuple[mnemo.Scope, int] | None, [mnemo.Scope, int, type(None)]),
        (AsyncIterator[dict[str, mnemo.Fact]], [dict, str, mnemo.Fact][1:]),
        (Mapping[str, Sequence[mnemo.Hit]], [str, mnemo.Hit]),
        (Callable[[mnemo.Scope], mnemo.Belief], [mnemo.Scope, mnemo.Belief]),
        (Literal["a", "b"], []),
    ],
)
def test_the_walk_unwraps_containers(hint: object, expected: list[type]) -> None:
    assert list(leaves(hint)) == expected


def test_a_missing_record_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    """A record a method returns that ``mnemo`` does not export fails the check."""

    @dataclasses.dataclass(frozen=True)
    class Planted:
        x: int

    async def planted(self: object) -> list[Planted]:
        return []

    monkeypatch.setattr(mnemo.AsyncArchive, "planted", planted, raising=False)
    monkeypatch.setitem(planted.__globals__, "Planted", Planted)
    records = returned_records()
    assert records.get(Planted) == "AsyncArchive.planted"
    assert Planted.__name__ not in mnemo.__all__
