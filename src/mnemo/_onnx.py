"""The ONNX Runtime path for local sentence-transformers models: the same model, exported once.

Seeds: memory-architecture §2.1 ("microseconds, zero network round-trip": memory shares the
machine with the model), cognitive-plan §2.2, §2.5 (the query embedding is on every recall's
critical path).

A PyTorch forward pass over one short query costs ~15 ms on two cores, most of it framework
overhead; ONNX Runtime runs the same graph in a few. :func:`onnx_encoder` exports a model's
transformer with ``torch.onnx`` from the files on disk (never a download), checks that the
exported graph gives the PyTorch model's sentence and token embeddings (cosine above
:data:`AGREEMENT`), and keeps it under the cache directory (``home``/models by default) keyed by
the model files' names, sizes and times, so the next process loads it without importing torch;
its tokenizer is the model's ``tokenizer.json`` read by ``tokenizers`` (:class:`FastTokenizer`:
``transformers`` would import torch, seconds on every embedding command), giving the same ids.
Export is atomic (a temporary directory renamed into place, under a file lock): a crash leaves
nothing half-written.

Only the pipelines whose pooling is reproduced here are exported: a Transformer, mean or CLS
pooling, an optional Normalize, no prompts. Anything else stays on PyTorch.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import json
import logging
import os
import shutil
import tempfile
import threading
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mnemo.cognition.scoring.late import TokenVectors
from mnemo.errors import EmbedderError

__all__ = [
    "AGREEMENT",
    "FastTokenizer",
    "OnnxEncoder",
    "Pipeline",
    "int8_product",
    "load_tokenizer",
    "onnx_encoder",
    "pipeline_of",
]

_log = logging.getLogger("mnemo")

EXPORT_VERSION = 1
"""Bumped when the exported graph changes: old exports are then made again."""

AGREEMENT = 0.9999
"""The least cosine between an exported graph's embeddings and PyTorch's on the probe texts."""

PROBES = (
    "Caroline: I went to the LGBTQ support group yesterday and it was so powerful.",
    "What did Melanie paint last week?",
    "Personal experience memory: the user moved to Lisbon in March 2023 and loves the tiles there.",
    "a",
)


@dataclass(frozen=True, slots=True)
class Pipeline:
    """What a sentence-transformers directory does after the transformer."""

    transformer: Path
    """The directory of the Hugging Face model (the Transformer module's path)."""
    pooling: str
    """``"mean"`` or ``"cls"``."""
    max_tokens: int
    """The model's ``max_seq_length`` (longer texts are truncated, as sentence-transformers does)."""


def pipeline_of(path: str | Path) -> Pipeline | None:
    """The exportable pipeline of a sentence-transformers directory, or None when it has anything
    this module does not reproduce (a Dense layer, several pooling modes, prompts)."""
    root = Path(path)
    try:
        modules = json.loads((root / "modules.json").read_text())
        kinds = [str(m["type"]).rsplit(".", 1)[-1] for m in modules]
        if kinds not in (["Transformer", "Pooling", "Normalize"], ["Transformer", "Pooling"]):
            return None
        pooling = json.loads((root / modules[1]["path"] / "config.json").read_text())
        bert = json.loads((root / "sentence_bert_config.json").read_text())
        prompts: dict[str, str] = {}
        with contextlib.suppress(OSError):
            prompts = json.loads((root / "config_sentence_transformers.json").read_text()).get("prompts") or {}
    except (OSError, ValueError, TypeError, KeyError, IndexError):
        return None
    mode = pooling.get("pooling_mode")
    if mode is None:
        on = [
            k
            for k in ("cls_token", "mean_tokens", "max_tokens", "mean_sqrt_len_tokens")
            if pooling.get(f"pooling_mode_{k}")
        ]
        mode = {"mean_tokens": "mean", "cls_token": "cls"}.get(on[0]) if len(on) == 1 else None
    if mode not in ("mean", "cls") or any(prompts.values()) or not isinstance(bert.get("max_seq_length"), int):
        return None
    return Pipeline(root / modules[0]["path"], mode, int(bert["max_seq_length"]))


class _LockedTokenizer:
    """A tokenizer whose every call (``__call__`` and its methods) holds a lock."""

    def __init__(self, tokenizer: Any, lock: threading.RLock) -> None:
        self._tokenizer = tokenizer
        self._lock = lock

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            return self._tokenizer(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._tokenizer, name)
        if not callable(value):
            return value

        @functools.wraps(value)
        def locked(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                return value(*args, **kwargs)

        return locked


class FastTokenizer:
    """A model's ``tokenizer.json`` through the ``tokenizers`` library, called as a Hugging Face
    fast tokenizer is (the calls mnemo makes): the same ids, masks and offsets, without importing
    ``transformers`` (which imports torch: seconds on every embedding command).

    Not thread-safe (padding and truncation are set on each call): use it under a lock, as
    :class:`OnnxEncoder` does.
    """

    def __init__(self, tokenizer: Any, config: dict[str, Any] | None = None) -> None:
        config = config or {}
        self._tokenizer = tokenizer
        limit = config.get("model_max_length")
        self.model_max_length: int | None = limit if isinstance(limit, int) and limit < 10**9 else None
        self.all_special_ids = sorted(i for i, token in tokenizer.get_added_tokens_decoder().items() if token.special)
        padding = dict(tokenizer.padding or {})
        pad = config.get("pad_token")
        if isinstance(pad, str) and tokenizer.token_to_id(pad) is not None:
            padding |= {"pad_token": pad, "pad_id": tokenizer.token_to_id(pad)}
        self._padding = {
            "direction": config.get("padding_side") or padding.get("direction", "right"),
            "pad_id": padding.get("pad_id", 0),
            "pad_type_id": padding.get("pad_type_id", 0),
            "pad_token": padding.get("pad_token", "[PAD]"),
        }

    @classmethod
    def from_directory(cls, directory: Path) -> FastTokenizer | None:
        """The directory's ``tokenizer.json``, or None when it has none or its ``tokenizer_config.json``
        asks for casing or accents other than the file's normaliser (``transformers`` would rebuild it)."""
        from tokenizers import Tokenizer

        file = directory / "tokenizer.json"
        if not file.is_file():
            return None
        config: dict[str, Any] = {}
        with contextlib.suppress(OSError, ValueError):
            config = json.loads((directory / "tokenizer_config.json").read_text())
        normalizer = json.loads(file.read_text()).get("normalizer") or {}
        for key, option in (("do_lower_case", "lowercase"), ("strip_accents", "strip_accents")):
            if key in config and normalizer.get("type") == "BertNormalizer" and config[key] != normalizer.get(option):
                return None
        return cls(Tokenizer.from_file(str(file)), config)

    def __call__(
        self,
        text: str | Sequence[str],
        *,
        add_special_tokens: bool = True,
        padding: bool = False,
        truncation: bool = False,
        max_length: int | None = None,
        return_tensors: str | None = None,
        return_offsets_mapping: bool = False,
    ) -> dict[str, Any]:
        """``input_ids``, ``token_type_ids``, ``attention_mask`` (and ``offset_mapping``) of a text
        (flat lists) or of texts (a list each, or ``(n, tokens)`` arrays with ``return_tensors="np"``)."""
        single = isinstance(text, str)
        tokenizer = self._tokenizer
        limit = max_length if max_length is not None else self.model_max_length
        if truncation and limit is not None:
            tokenizer.enable_truncation(limit, stride=0, strategy="longest_first", direction="right")
        else:
            tokenizer.no_truncation()
        if padding and not single:
            tokenizer.enable_padding(**self._padding)
        else:
            tokenizer.no_padding()
        texts = [text] if single else list(text)
        encodings = tokenizer.encode_batch(texts, add_special_tokens=add_special_tokens) if texts else []
        out: dict[str, Any] = {
            "input_ids": [e.ids for e in encodings],
            "token_type_ids": [e.type_ids for e in encodings],
            "attention_mask": [e.attention_mask for e in encodings],
        }
        if return_offsets_mapping:
            out["offset_mapping"] = [e.offsets for e in encodings]
        if return_tensors == "np":
            return {k: np.array(v, dtype=np.int64) for k, v in out.items()}
        if return_tensors is not None:
            raise ValueError(f"return_tensors={return_tensors!r}: only 'np' is supported")
        return {k: v[0] for k, v in out.items()} if single else out

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = False) -> str:
        """The text of ``ids`` (special tokens kept unless ``skip_special_tokens``)."""
        return str(self._tokenizer.decode(list(ids), skip_special_tokens=skip_special_tokens))


def load_tokenizer(directory: Path) -> Any:
    """The tokenizer of a Hugging Face model directory, from its files (never a download): its
    ``tokenizer.json`` through ``tokenizers`` (:class:`FastTokenizer`), else ``transformers``."""
    fast = FastTokenizer.from_directory(directory)
    if fast is not None:
        return fast
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(directory), local_files_only=True)


class OnnxEncoder:
    """Sentence and token embeddings from an exported transformer under ONNX Runtime.

    Thread-safe: ONNX Runtime sessions run concurrently, and the tokenizer is used under a lock.
    """

    def __init__(self, session: Any, tokenizer: Any, pipeline: Pipeline, truncate_dim: int | None) -> None:
        self.session = session
        self.tokenizer = tokenizer
        self.pipeline = pipeline
        self.truncate_dim = truncate_dim
        self._special = np.array(sorted(set(tokenizer.all_special_ids)), dtype=np.int64)
        self._inputs = {i.name for i in session.get_inputs()}
        self._lock = threading.RLock()

    @property
    def shared_tokenizer(self) -> Any:
        """The tokenizer for everyone else (token counts, passages): each of its calls runs under
        this encoder's lock, since a fast tokenizer's padding and truncation are state that every call
        sets, and a count beside a padded batch would unpad the batch under it."""
        return _LockedTokenizer(self.tokenizer, self._lock)

    def encode(
        self, texts: Sequence[str], batch_size: int, *, tokens: bool = True
    ) -> tuple[np.ndarray, list[TokenVectors]]:
        """Unit-length sentence embeddings ``(n, dim)`` and, with ``tokens``, each text's
        content-token embeddings (else an empty list); batched by length as sentence-transformers does."""
        if len(texts) <= 1:
            return self._batch(list(texts), tokens) if texts else (np.zeros((0, 0), np.float32), [])
        with self._lock:
            lengths = [len(ids) for ids in self.tokenizer(list(texts), add_special_tokens=True)["input_ids"]]
        order = np.argsort([-n for n in lengths], kind="stable")
        vectors: list[np.ndarray] = [np.empty(0, np.float32)] * len(texts)
        found: list[TokenVectors] = []
        slots: dict[int, TokenVectors] = {}
        for start in range(0, len(texts), batch_size):
            chosen = [int(i) for i in order[start : start + batch_size]]
            batch_vectors, batch_tokens = self._batch([texts[i] for i in chosen], tokens)
            for n, i in enumerate(chosen):
                vectors[i] = batch_vectors[n]
                if tokens:
                    slots[i] = batch_tokens[n]
        if tokens:
            found = [slots[i] for i in range(len(texts))]
        return np.stack(vectors), found

    def _batch(self, texts: list[str], tokens: bool) -> tuple[np.ndarray, list[TokenVectors]]:
        with self._lock:
            encoded = self.tokenizer(
                texts, padding=True, truncation=True, max_length=self.pipeline.max_tokens, return_tensors="np"
            )
        feed = {name: np.asarray(encoded[name], dtype=np.int64) for name in self._inputs}
        hidden = self.session.run(["last_hidden_state"], feed)[0].astype(np.float32, copy=False)
        mask = feed["attention_mask"].astype(bool)
        if self.pipeline.pooling == "mean":
            counts = np.maximum(mask.sum(axis=1, keepdims=True), 1)
            pooled = np.einsum("btd,bt->bd", hidden, mask.astype(np.float32)) / counts
        else:
            pooled = hidden[:, 0]
        if self.truncate_dim is not None:
            pooled = pooled[:, : self.truncate_dim]
        if not tokens:
            return _unit(pooled), []
        ids = feed["input_ids"]
        keep = mask & ~np.isin(ids, self._special)  # content tokens: no padding, no [CLS]/[SEP]
        return _unit(pooled), [
            TokenVectors(ids[n][keep[n]].astype(np.int32), _unit(hidden[n][keep[n]])) for n in range(len(texts))
        ]


def _unit(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    norms[norms == 0] = 1.0
    return (matrix / norms).astype(np.float32)


_LOADED_LOCK = threading.Lock()


def onnx_encoder(path: str, pipeline: Pipeline, cache_dir: Path, truncate_dim: int | None) -> OnnxEncoder:
    """The model at ``path`` under ONNX Runtime, exported into ``cache_dir`` first if needed; one
    session per export and truncation in a process (archives share it)."""
    with _LOADED_LOCK:
        return _load(path, pipeline, cache_dir, truncate_dim)


@functools.lru_cache(maxsize=4)
def _load(path: str, pipeline: Pipeline, cache_dir: Path, truncate_dim: int | None) -> OnnxEncoder:
    try:
        import onnxruntime
    except ImportError as exc:
        raise EmbedderError(f"the ONNX backend needs onnxruntime: {exc}") from exc
    target = cache_dir / _key(pipeline)
    if not (target / "model.onnx").is_file():
        _export(path, pipeline, target, truncate_dim)
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = max(1, min(os.cpu_count() or 1, 8))
    options.inter_op_num_threads = 1
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    # Between runs the pool's threads sleep instead of spinning on the cores that the recall's
    # Python and PostgreSQL work needs next (as OMP_WAIT_POLICY=PASSIVE does for PyTorch).
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    try:
        session = onnxruntime.InferenceSession(
            str(target / "model.onnx"), sess_options=options, providers=["CPUExecutionProvider"]
        )
        tokenizer = load_tokenizer(pipeline.transformer)
    except Exception as exc:
        raise EmbedderError(f"cannot load the exported model {target}: {exc}; delete it to export again") from exc
    return OnnxEncoder(session, tokenizer, pipeline, truncate_dim)


def int8_product(rows: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """``rows @ codes.T`` for int8 ``rows`` ``(n, dim)``, held shifted as a token index holds them (uint8
    code + 128, :func:`mnemo.cognition.scoring.late.shift`) or plain int8, and int8 ``codes`` ``(q, dim)``, exactly,
    into int32 ``(n, q)``: late interaction's MaxSim product (issue 42, decision 1;
    :data:`mnemo.cognition.scoring.late.Int8Product`). ONNX Runtime's ``MatMulInteger`` (MLAS,
    VNNI where the CPU has it), already loaded for the query embedding: numpy's integer matmul has
    no such kernel (slower than the float product it replaces), and ``torch._int_mm`` would import
    torch into every recall process (seconds). Recall hands it to late interaction, the scope-wide
    scan and the head's re-rank alike (``benchmarks/maxsim_kernel.py`` measures the kernel)."""
    if not len(rows) or not len(codes):
        return np.zeros((len(rows), len(codes)), dtype=np.int32)
    # MLAS's VNNI kernel multiplies unsigned by signed bytes: the rows go in as uint8 codes + 128
    # (the sign bit flipped) with a zero point of 128, the same integers exactly (12x faster than
    # int8 x int8 here); an index holds them shifted already, so the flip is paid once, not per recall
    shifted = rows if rows.dtype == np.uint8 else np.bitwise_xor(rows.view(np.uint8), np.uint8(0x80))
    feeds = {"A": shifted, "B": np.ascontiguousarray(codes.T), "A_zero": np.array(128, dtype=np.uint8)}
    out = _product_session().run(None, feeds)[0]
    return np.asarray(out, dtype=np.int32)


@functools.lru_cache(maxsize=1)
def _product_session() -> Any:
    """One ``MatMulInteger`` graph (uint8 with a zero point by int8, into int32) under ONNX Runtime, built on
    first use."""
    import onnxruntime
    from onnx import TensorProto, helper

    inputs = [
        helper.make_tensor_value_info("A", TensorProto.UINT8, [None, None]),
        helper.make_tensor_value_info("B", TensorProto.INT8, [None, None]),
        helper.make_tensor_value_info("A_zero", TensorProto.UINT8, []),
    ]
    output = helper.make_tensor_value_info("Y", TensorProto.INT32, [None, None])
    node = helper.make_node("MatMulInteger", ["A", "B", "A_zero"], ["Y"])
    model = helper.make_model(
        helper.make_graph([node], "maxsim", inputs, [output]), opset_imports=[helper.make_opsetid("", 13)]
    )
    model.ir_version = 8
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = max(1, min(os.cpu_count() or 1, 8))
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return onnxruntime.InferenceSession(
        model.SerializeToString(), sess_options=options, providers=["CPUExecutionProvider"]
    )


def _key(pipeline: Pipeline) -> str:
    """The export's directory name: the model files' names, sizes and times, and the export version."""
    digest = hashlib.sha256(f"{EXPORT_VERSION}:{pipeline}".encode())
    for file in sorted(p for p in pipeline.transformer.rglob("*") if p.is_file()):
        stat = file.stat()
        digest.update(f"{file.relative_to(pipeline.transformer)}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return f"{pipeline.transformer.name or 'model'}-{digest.hexdigest()[:16]}"


@contextlib.contextmanager
def _locked(directory: Path) -> Iterator[None]:
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / ".export.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _export(path: str, pipeline: Pipeline, target: Path, truncate_dim: int | None) -> None:
    """Export, check against PyTorch, and move into place (another process may have done it first)."""
    with _locked(target.parent):
        if (target / "model.onnx").is_file():
            return
        _log.info("exporting %s to ONNX under %s (once)", path, target)
        work = Path(tempfile.mkdtemp(prefix=".export-", dir=target.parent))
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the tracer's notes on data-dependent branches
                _write_graph(pipeline, work / "model.onnx")
            _agree(path, pipeline, work, truncate_dim)
            (work / "export.json").write_text(json.dumps({"source": path, "version": EXPORT_VERSION}))
            shutil.rmtree(target, ignore_errors=True)  # what is left of an export whose graph was deleted
            os.replace(work, target)
        except EmbedderError:
            raise
        except Exception as exc:
            raise EmbedderError(f"cannot export {path} to ONNX: {exc}") from exc
        finally:
            shutil.rmtree(work, ignore_errors=True)


def _write_graph(pipeline: Pipeline, file: Path) -> None:
    import torch
    from transformers import AutoModel, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    model = AutoModel.from_pretrained(str(pipeline.transformer), local_files_only=True).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(pipeline.transformer), local_files_only=True)
    sample = tokenizer(list(PROBES[:2]), padding=True, return_tensors="pt")
    names = [n for n in ("input_ids", "attention_mask", "token_type_ids") if n in sample]

    class Hidden(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, *inputs: Any) -> Any:
            return self.model(**dict(zip(names, inputs, strict=True))).last_hidden_state

    axes = {n: {0: "batch", 1: "tokens"} for n in names} | {"last_hidden_state": {0: "batch", 1: "tokens"}}
    with torch.no_grad():
        torch.onnx.export(
            Hidden(),
            tuple(sample[n] for n in names),
            str(file),
            input_names=names,
            output_names=["last_hidden_state"],
            dynamic_axes=axes,
            opset_version=17,
            dynamo=False,
        )


def _agree(path: str, pipeline: Pipeline, work: Path, truncate_dim: int | None) -> None:
    """Refuse an export whose embeddings differ from PyTorch's beyond float noise."""
    import onnxruntime

    from mnemo.embed import _content_tokens, _st_model

    session = onnxruntime.InferenceSession(str(work / "model.onnx"), providers=["CPUExecutionProvider"])
    tokenizer = load_tokenizer(pipeline.transformer)
    exported = OnnxEncoder(session, tokenizer, pipeline, truncate_dim)
    vectors, tokens = exported.encode(list(PROBES), batch_size=2)
    model = _st_model(path, truncate_dim)
    special = set(model.tokenizer.all_special_ids)
    outs = model.encode(list(PROBES), output_value=None, convert_to_numpy=False, show_progress_bar=False)
    expected = _unit(np.stack([o["sentence_embedding"].float().numpy() for o in outs]))
    worst = float(np.min(np.sum(vectors * expected, axis=1)))
    for mine, out in zip(tokens, outs, strict=True):
        theirs = _content_tokens(out, special)
        if not np.array_equal(mine.ids, theirs.ids):
            raise EmbedderError(f"the ONNX export of {path} tokenises differently from sentence-transformers")
        worst = min(worst, float(np.min(np.sum(mine.vectors * theirs.vectors, axis=1))))
    if worst < AGREEMENT:
        raise EmbedderError(f"the ONNX export of {path} disagrees with PyTorch (cosine {worst:.6f} < {AGREEMENT})")
