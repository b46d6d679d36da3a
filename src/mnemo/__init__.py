"""mnemo: a sovereign, local-first long-term memory engine for LLM agents.

One PostgreSQL database with pgvector (embedded by default) holds an agent's
whole memory; recall is hybrid (vector + BM25 full-text) with cognitive
scoring (ACT-R activation, Beta weights, recency, co-access spreading), scoped
to an entity and namespace, and refuses rather than guesses.
"""

from mnemo.archive import Archive, AsyncArchive, Status
from mnemo.assemble import ContextBlock, ContextItem
from mnemo.cognition.weights import StochasticWeight
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
from mnemo.gate import FlushReport, GateOutcome, Observation
from mnemo.models import Hit, ImportReport, Memory, MemoryHistory, RecallResult, Refusal, Scope, Turn, WeightChange

__version__ = "0.1.0"

__all__ = [
    "AccessDeniedError",
    "Archive",
    "AsyncArchive",
    "ConfigurationError",
    "ContentTooLargeError",
    "ContextBlock",
    "ContextItem",
    "DatabaseError",
    "DatabaseUnavailableError",
    "DimensionMismatchError",
    "EmbedderError",
    "EmptyContentError",
    "ExtensionMissingError",
    "FlushReport",
    "GateOutcome",
    "Hit",
    "ImportReport",
    "InvalidContentError",
    "InvalidInputError",
    "InvalidScopeError",
    "MalformedImportError",
    "Memory",
    "MemoryHistory",
    "MigrationError",
    "MnemoError",
    "NotFoundError",
    "Observation",
    "RecallResult",
    "Refusal",
    "Scope",
    "Settings",
    "Status",
    "StochasticWeight",
    "Turn",
    "UnknownItemError",
    "UnknownScopeError",
    "WeightChange",
]
