"""Identity layers: an agent's values (layer 0) and goals (layer 1), embedded once and cached.

Seed: cognitive-plan §2.4 ("Embed Layer 0 / Layer 1": the text of each value and goal is embedded,
cached on disk and re-embedded only when its text changes; blank layers at bootstrap are empty
lists that every consumer handles).

The layers are small JSON files an operator edits by hand, in one directory per agent::

    values.json   [{"text": "Be honest about what I do not know.", "weight": 1.0}, ...]
    goals.json    ["Help Maya plan the garden", ...]          (a bare string has weight 1)

Vectors are cached in ``.identity-cache/<model slug>.npz`` beside them, keyed by the text's hash,
so a change of text or of embedder re-embeds exactly what changed.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mnemo.embed import Embeddings
from mnemo.errors import ConfigurationError

__all__ = ["LAYERS", "Identity", "IdentityItem"]

LAYERS = {0: "values.json", 1: "goals.json"}


@dataclass(frozen=True, slots=True)
class IdentityItem:
    """One value or goal with its weight and its embedding."""

    text: str
    weight: float
    vector: np.ndarray = field(repr=False, compare=False)


class Identity:
    """The identity layers of the agent whose files are in ``directory``."""

    def __init__(self, directory: str | os.PathLike[str], embeddings: Embeddings) -> None:
        self.directory = Path(directory)
        self.embeddings = embeddings
        self.embedded = 0
        """How many texts this object sent to the model (the rest came from the cache)."""

    async def layer(self, number: int) -> list[IdentityItem]:
        """Layer ``number`` (0: values, 1: goals); empty when its file is missing or empty."""
        if number not in LAYERS:
            raise ConfigurationError(f"identity layers are 0 (values) and 1 (goals), not {number!r}")
        entries = await asyncio.to_thread(_read_layer, self.directory / LAYERS[number])
        if not entries:
            return []
        cache_path = self.directory / ".identity-cache" / f"{_slug_key(str(self.embeddings.slug))}.npz"
        cache = await asyncio.to_thread(_load_cache, cache_path)
        keys = [_text_key(text) for text, _ in entries]
        missing = [text for (text, _), key in zip(entries, keys, strict=True) if key not in cache]
        if missing:
            vectors = await self.embeddings.embed_documents(missing)
            self.embedded += len(missing)
            cache |= {_text_key(t): np.asarray(v, dtype=np.float32) for t, v in zip(missing, vectors, strict=True)}
            await asyncio.to_thread(_save_cache, cache_path, cache)
        return [IdentityItem(text, weight, cache[key]) for (text, weight), key in zip(entries, keys, strict=True)]


def _read_layer(path: Path) -> list[tuple[str, float]]:
    """``(text, weight)`` of each entry of a layer file; [] when the file is absent or blank."""
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigurationError(f"cannot read the identity layer {path}: {exc}") from exc
    if not raw.strip():
        return []
    try:
        data: Any = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ConfigurationError(f"{path} is not valid JSON (line {exc.lineno}): {exc.msg}") from exc
    if not isinstance(data, list):
        raise ConfigurationError(f"{path} must hold a JSON list of texts or {{'text', 'weight'}} objects")
    return [_entry(path, n, item) for n, item in enumerate(data, 1)]


def _entry(path: Path, n: int, item: Any) -> tuple[str, float]:
    if isinstance(item, str):
        item = {"text": item}
    if not isinstance(item, dict) or not isinstance(item.get("text"), str) or not item["text"].strip():
        raise ConfigurationError(
            f"{path} entry {n}: give a non-empty text (a string, or {{'text': ..., 'weight': ...}})"
        )
    weight = item.get("weight", 1.0)
    if isinstance(weight, bool) or not isinstance(weight, int | float) or not 0 <= weight <= 1:
        raise ConfigurationError(f"{path} entry {n}: weight must be a number from 0 to 1, not {weight!r}")
    return item["text"].strip(), float(weight)


def _text_key(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _slug_key(slug: str) -> str:
    return hashlib.sha256(slug.encode()).hexdigest()[:16]


def _load_cache(path: Path) -> dict[str, np.ndarray]:
    if not path.exists():
        return {}
    try:
        with np.load(path, allow_pickle=False) as data:
            return {str(k): np.asarray(data[k], dtype=np.float32) for k in data.files}
    except (OSError, ValueError):
        return {}  # a damaged cache is only a cache: embed again


def _save_cache(path: Path, cache: dict[str, np.ndarray]) -> None:
    """Written beside and moved into place: readers never see half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".npz")
    try:
        with os.fdopen(fd, "wb") as out:
            np.savez(out, **cache)  # type: ignore[arg-type]  # numpy's stub types the keyword form oddly
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)
