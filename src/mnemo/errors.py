"""mnemo's errors: one root, a class per failure a user can act on.

Every message says what went wrong and what to do about it. Driver errors are
converted at the boundary (``raise ... from exc``). Bad input is rejected
before anything is written, so a failed call leaves the archive unchanged.

::

    MnemoError
    ├── ConfigurationError          bad setting or environment variable
    ├── DatabaseError               the database cannot be used
    │   ├── DatabaseUnavailableError    cannot connect / start the embedded server
    │   ├── ExtensionMissingError       pgvector missing, too old or not installable
    │   └── MigrationError              schema migrations cannot be applied
    ├── CortexError                 the long-term tier (LanceDB) cannot be opened, read or written
    ├── BackupError                 a backup file that is damaged, or a restore target that is not empty
    ├── EmbedderError               the embedding model cannot be loaded or used
    ├── EndpointError               an optional model endpoint (surprisal log-probabilities) failed
    ├── WorkerError                 a background task cannot run (outside ``mnemo worker``)
    ├── InvalidInputError (ValueError)
    │   ├── EmptyContentError           empty or whitespace-only text
    │   ├── ContentTooLargeError        text over ``max_content_chars``
    │   ├── InvalidContentError         NUL bytes, invalid UTF-8, bad field values
    │   ├── InvalidScopeError           malformed entity id or namespace
    │   ├── DimensionMismatchError      a vector of the wrong dimension
    │   └── MalformedImportError        an import file that cannot be parsed
    ├── NotFoundError (LookupError)
    │   ├── UnknownScopeError           a scope that holds nothing yet
    │   └── UnknownItemError            an id that does not exist in the scope
    ├── AuthenticationError         a missing, malformed, unknown or revoked bearer token
    └── AccessDeniedError           a cross-entity read without a grant

An error a user can fix with one call carries that call as data, a :class:`Remedy` (``exc.remedy``):
``str(exc)`` says it in Python (the library's words: ``access.grant(Scope('alice', 'default'), 'bob')``),
and each interface says it in its own (:mod:`mnemo.interfaces._remedies`: ``mnemo grant bob -e alice
-n default`` on the command line, ``POST /v1/grants ...`` over HTTP). ``exc.problem`` is the message
without it. For example::

    raise AccessDeniedError(f"{reader!r} may not read scope {scope}",
                            remedy=Remedy("its owner can grant access with", "access.grant", (scope, reader)))

``DatabaseError`` is also what any unexpected driver error becomes: the store
converts every ``psycopg`` error in the one place it hands out connections
(``store.pool.Store.connection``/``transaction``), so a lost connection or a
pool time-out reaches the caller as ``DatabaseUnavailableError`` and anything
else as ``DatabaseError``, both raised ``from`` the driver's exception.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "AccessDeniedError",
    "AuthenticationError",
    "BackupError",
    "ConfigurationError",
    "ContentTooLargeError",
    "CortexError",
    "DatabaseError",
    "DatabaseUnavailableError",
    "DimensionMismatchError",
    "EmbedderError",
    "EmptyContentError",
    "EndpointError",
    "ExtensionMissingError",
    "InvalidContentError",
    "InvalidInputError",
    "InvalidScopeError",
    "MalformedImportError",
    "MigrationError",
    "MnemoError",
    "NotFoundError",
    "Remedy",
    "UnknownItemError",
    "UnknownScopeError",
    "WorkerError",
]


@dataclass(frozen=True, slots=True)
class Remedy:
    """What a user can do about an error, as data: ``lead`` (the words before the call: "its owner
    can grant access with"), then ``action``, a method of :class:`~mnemo.AsyncArchive` or of one of its
    features (``access.grant``), called with
    ``args`` and ``options`` (keyword arguments). ``str()`` is the lead and the call in Python."""

    lead: str
    action: str
    args: tuple[Any, ...] = ()
    options: Mapping[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        shown = [_python(a) for a in self.args] + [f"{k}={_python(v)}" for k, v in self.options.items()]
        return f"{self.lead} {self.action}({', '.join(shown)})"


def _python(value: Any) -> str:
    """A value as Python source: a scope as ``Scope('alice', 'default')``, anything else its repr."""
    from mnemo.models import Scope  # here: mnemo.models imports this module

    if isinstance(value, Scope):
        return f"Scope({value.entity_id!r}, {value.namespace!r})"
    return repr(value)


class MnemoError(Exception):
    """Root of every error mnemo raises on purpose; ``remedy``: the call that fixes it, if one does."""

    def __init__(self, *args: object, remedy: Remedy | None = None) -> None:
        super().__init__(*args)
        self.remedy = remedy

    @property
    def problem(self) -> str:
        """What went wrong, without the remedy."""
        return super().__str__()

    def __str__(self) -> str:
        return self.problem if self.remedy is None else f"{self.problem}; {self.remedy}"


class ConfigurationError(MnemoError):
    """A setting is invalid."""


class DatabaseError(MnemoError):
    """The database cannot be used."""


class DatabaseUnavailableError(DatabaseError):
    """The database cannot be reached or the embedded server cannot start."""


class ExtensionMissingError(DatabaseError):
    """pgvector is missing, too old, or cannot be installed in the database."""


class MigrationError(DatabaseError):
    """The schema migrations cannot be applied."""


class EmbedderError(MnemoError):
    """The embedding model cannot be loaded or failed."""


class EndpointError(MnemoError):
    """An optional model endpoint failed or answered something unusable (the caller falls back offline)."""


class WorkerError(MnemoError):
    """A background task cannot run: mnemo's tasks run inside ``mnemo worker``, which opens the archive."""


class InvalidInputError(MnemoError, ValueError):
    """Input was rejected before anything was written."""


class EmptyContentError(InvalidInputError):
    """Text is empty or whitespace only."""


class ContentTooLargeError(InvalidInputError):
    """Text is longer than the configured maximum."""


class InvalidContentError(InvalidInputError):
    """Text contains NUL bytes or invalid UTF-8, or a field has a bad value."""


class InvalidScopeError(InvalidInputError):
    """An entity id or namespace is malformed."""


class DimensionMismatchError(InvalidInputError):
    """A vector does not have the active embedding space's dimension."""


class MalformedImportError(InvalidInputError):
    """An import file cannot be parsed; nothing from it was imported."""

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None) -> None:
        where = ""
        if path is not None:
            where = f"{path}:{line}: " if line is not None else f"{path}: "
        super().__init__(f"{where}{message} (nothing from this file was imported)")
        self.path = path
        self.line = line


class NotFoundError(MnemoError, LookupError):
    """Something named by the caller does not exist."""


class UnknownScopeError(NotFoundError):
    """The scope has never been written to."""


class UnknownItemError(NotFoundError):
    """No item with that id exists in the scope."""


class AuthenticationError(MnemoError):
    """A missing, malformed, unknown or revoked bearer token."""


class AccessDeniedError(MnemoError):
    """A read crossed into another entity's scope without a grant."""


class BackupError(MnemoError):
    """A backup cannot be read or trusted (missing members, a checksum that does not match, a newer
    schema than this mnemo knows), or a restore target already holds data (``force`` replaces it)."""


class CortexError(MnemoError):
    """The long-term tier (a LanceDB directory or object store) cannot be opened, read or written:
    check ``MNEMO_CORTEX_URI`` and the disk. A night run that stopped on it resumes where it stopped."""
