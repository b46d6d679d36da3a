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

from mnemo.cognition.consolidation.curation import Classification
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
    CausalEdge,
    ContextBlock,
    ContextItem,
    Curation,
    Database,
    EntityFacts,
    ExcerptLine,
    Fact,
    FailurePatternRecord,
    FlushReport,
    GateOutcome,
    GutAxis,
    HeldInput,
    Hit,
    ImportReport,
    InnerLife,
    Item,
    ListedMemory,
    Maturity,
    Memory,
    MemoryHistory,
    MemoryPage,
    Milestone,
    NightReport,
    Observation,
    PacketImport,
    Principal,
    Readiness,
    RecallResult,
    Reflex,
    Refusal,
    SafetyRecord,
    Scope,
    ScopeSummary,
    Status,
    TaskAttempt,
    Tension,
    TokenInfo,
    TreeNode,
    TuningStep,
    Turn,
    TurnInput,
    Verdict,
    Wandering,
    WeightChange,
    to_jsonable,
)

if TYPE_CHECKING:
    from mnemo._sync import Archive
    from mnemo.admin.inspector import Inspector
    from mnemo.admin.probes import Probes
    from mnemo.archive import AsyncArchive, as_process
    from mnemo.embed import Embeddings
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
    "CausalEdge",
    "Classification",
    "ConfigurationError",
    "ContentTooLargeError",
    "ContextBlock",
    "ContextItem",
    "CortexError",
    "Curation",
    "Database",
    "DatabaseError",
    "DatabaseUnavailableError",
    "DimensionMismatchError",
    "EmbedderError",
    "Embeddings",
    "EmptyContentError",
    "EndpointError",
    "EntityFacts",
    "ExcerptLine",
    "Extension",
    "ExtensionMissingError",
    "Fact",
    "FailurePatternRecord",
    "FlushReport",
    "GateOutcome",
    "GutAxis",
    "HeldInput",
    "Hit",
    "ImportReport",
    "InnerLife",
    "Inspector",
    "InvalidContentError",
    "InvalidInputError",
    "InvalidScopeError",
    "Item",
    "ListedMemory",
    "MalformedImportError",
    "Maturity",
    "Memory",
    "MemoryHistory",
    "MemoryPage",
    "MigrationError",
    "Milestone",
    "MnemoError",
    "NightReport",
    "NotFoundError",
    "Observation",
    "PacketImport",
    "Principal",
    "Probes",
    "Readiness",
    "RecallResult",
    "Reflex",
    "Refusal",
    "SafetyRecord",
    "Scope",
    "ScopeSummary",
    "Settings",
    "Status",
    "StochasticWeight",
    "TaskAttempt",
    "Tension",
    "TokenInfo",
    "TreeNode",
    "TuningStep",
    "Turn",
    "TurnInput",
    "UnknownItemError",
    "UnknownScopeError",
    "Verdict",
    "Wandering",
    "WeightChange",
    "WorkerError",
    "as_process",
    "to_jsonable",
]


def __getattr__(name: str) -> Any:
    """``Archive``, ``AsyncArchive``, ``as_process``, ``Extension``, ``Embeddings``, ``Inspector`` and
    ``Probes``, imported on first use (PEP 562): they bring the store, the models and the web stack."""
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
    if name == "Embeddings":
        from mnemo.embed import Embeddings

        return Embeddings
    if name == "Inspector":
        from mnemo.admin.inspector import Inspector

        return Inspector
    if name == "Probes":
        from mnemo.admin.probes import Probes

        return Probes
    raise AttributeError(f"module 'mnemo' has no attribute {name!r}")
