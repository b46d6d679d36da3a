"""mnemo: a sovereign, local-first long-term memory engine for LLM agents.

One PostgreSQL database with pgvector (embedded by default) holds an agent's
whole memory; recall is hybrid (vector + BM25 full-text) with cognitive
scoring (ACT-R activation, Beta weights, recency, co-access spreading), scoped
to an entity and namespace, and refuses rather than guesses.

``Archive`` and ``AsyncArchive`` (and everything behind them: the store, the
night cycle, recall) are imported on first use, so ``import mnemo`` and the
command line's quick paths (``--help``, ``--version``, input errors) stay fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mnemo.cognition.scoring.weights import StochasticWeight
from mnemo.config import Settings
from mnemo.errors import (
    AccessDeniedError,
    AuthenticationError,
    BackupError,
    ConfigurationError,
    ContentTooLargeError,
    CortexError,
    DatabaseError,
    DatabaseUnavailableError,
    DimensionMismatchError,
    EmbedderError,
    EmptyContentError,
    EndpointError,
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
    WorkerError,
)
from mnemo.models import (
    BackupManifest,
    Belief,
    ContextBlock,
    ContextItem,
    Curation,
    EntityFacts,
    ExcerptLine,
    Fact,
    FlushReport,
    GateOutcome,
    Hit,
    ImportReport,
    Maturity,
    Memory,
    MemoryHistory,
    NightReport,
    Observation,
    RecallResult,
    Reflex,
    Refusal,
    Scope,
    ScopeSummary,
    Status,
    TokenInfo,
    TreeNode,
    Turn,
    Verdict,
    WeightChange,
    to_jsonable,
)

if TYPE_CHECKING:
    from mnemo._sync import Archive
    from mnemo.archive import AsyncArchive, as_process
    from mnemo.store.extensions import Extension

__version__ = "0.1.0"

__all__ = [
    "AccessDeniedError",
    "Archive",
    "AsyncArchive",
    "AuthenticationError",
    "BackupError",
    "BackupManifest",
    "Belief",
    "ConfigurationError",
    "ContentTooLargeError",
    "ContextBlock",
    "ContextItem",
    "CortexError",
    "Curation",
    "DatabaseError",
    "DatabaseUnavailableError",
    "DimensionMismatchError",
    "EmbedderError",
    "EmptyContentError",
    "EndpointError",
    "EntityFacts",
    "ExcerptLine",
    "Extension",
    "ExtensionMissingError",
    "Fact",
    "FlushReport",
    "GateOutcome",
    "Hit",
    "ImportReport",
    "InvalidContentError",
    "InvalidInputError",
    "InvalidScopeError",
    "MalformedImportError",
    "Maturity",
    "Memory",
    "MemoryHistory",
    "MigrationError",
    "MnemoError",
    "NightReport",
    "NotFoundError",
    "Observation",
    "RecallResult",
    "Reflex",
    "Refusal",
    "Scope",
    "ScopeSummary",
    "Settings",
    "Status",
    "StochasticWeight",
    "TokenInfo",
    "TreeNode",
    "Turn",
    "UnknownItemError",
    "UnknownScopeError",
    "Verdict",
    "WeightChange",
    "WorkerError",
    "as_process",
    "to_jsonable",
]


def __getattr__(name: str) -> Any:
    """``Archive``, ``AsyncArchive``, ``as_process`` and ``Extension``, imported on first use (PEP 562)."""
    if name == "Archive":
        from mnemo._sync import Archive

        return Archive
    if name == "AsyncArchive":
        from mnemo.archive import AsyncArchive

        return AsyncArchive
    if name == "as_process":
        from mnemo.archive import as_process

        return as_process
    if name == "Extension":
        from mnemo.store.extensions import Extension

        return Extension
    raise AttributeError(f"module 'mnemo' has no attribute {name!r}")
