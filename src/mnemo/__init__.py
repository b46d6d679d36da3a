"""mnemo: a sovereign, local-first long-term memory engine for LLM agents.

One PostgreSQL database with pgvector (embedded by default) holds an agent's
whole memory; recall is hybrid (vector + full-text, fused with RRF), scoped to
an entity and namespace, and refuses rather than guesses.
"""

from mnemo.archive import Archive, AsyncArchive, Status
from mnemo.config import Settings
from mnemo.errors import (
    AccessDeniedError,
    ConfigurationError,
    ContentTooLargeError,
    DatabaseError,
    DatabaseUnavailableError,
    DimensionMismatchError,
    EmbedderError,
    EmptyContentError,
    ExtensionMissingError,
    InvalidContentError,
    InvalidInputError,
    InvalidScopeError,
    MalformedImportError,
    MigrationError,
    MnemoError,
    NotFoundError,
    UnknownItemError,
    UnknownScopeError,
)
from mnemo.models import Hit, ImportReport, Memory, RecallResult, Refusal, Scope, Turn

__version__ = "0.1.0"

__all__ = [
    "AccessDeniedError",
    "Archive",
    "AsyncArchive",
    "ConfigurationError",
    "ContentTooLargeError",
    "DatabaseError",
    "DatabaseUnavailableError",
    "DimensionMismatchError",
    "EmbedderError",
    "EmptyContentError",
    "ExtensionMissingError",
    "Hit",
    "ImportReport",
    "InvalidContentError",
    "InvalidInputError",
    "InvalidScopeError",
    "MalformedImportError",
    "Memory",
    "MigrationError",
    "MnemoError",
    "NotFoundError",
    "RecallResult",
    "Refusal",
    "Scope",
    "Settings",
    "Status",
    "Turn",
    "UnknownItemError",
    "UnknownScopeError",
]
