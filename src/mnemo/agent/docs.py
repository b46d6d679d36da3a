"""A read-only file tool over configured directories: the agent reads its own docs.

Seed: cognitive-plan §4.10 ("Agent Reads Own Docs": read-only access to its own source and notes,
exposed as a tool System 1 can call). Every path is resolved (symbolic links included) and must stay
inside one of the roots; nothing is ever written.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from mnemo.errors import AccessDeniedError, ConfigurationError, InvalidContentError, NotFoundError

__all__ = ["DocsTool"]

MAX_BYTES = 200_000


@dataclass(frozen=True, slots=True)
class DocsTool:
    """Read-only access to the files under ``roots`` (named by their last path part)."""

    roots: tuple[Path, ...]

    @classmethod
    def of(cls, *roots: str | os.PathLike[str]) -> DocsTool:
        resolved = tuple(Path(r).expanduser().resolve() for r in roots)
        for root in resolved:
            if not root.is_dir():
                raise ConfigurationError(f"docs root {root} is not a directory")
        if len({r.name for r in resolved}) != len(resolved):
            raise ConfigurationError("docs roots need distinct directory names (they name the roots)")
        return cls(resolved)

    def list(self, path: str = "") -> list[str]:
        """The entries of a directory (``root/sub``), or the roots themselves for ``""``; directories
        end with ``/``."""
        if not path.strip("/"):
            return [f"{r.name}/" for r in self.roots]
        target = self._resolve(path)
        if not target.is_dir():
            raise InvalidContentError(f"{path} is not a directory")
        return sorted(f"{p.name}/" if p.is_dir() else p.name for p in target.iterdir() if not p.name.startswith("."))

    def read(self, path: str, max_bytes: int = MAX_BYTES) -> str:
        """A text file's content (at most ``max_bytes``, cut with a note); binary files are refused."""
        target = self._resolve(path)
        if not target.is_file():
            raise InvalidContentError(f"{path} is not a file")
        with target.open("rb") as f:
            data = f.read(max_bytes + 1)
        if b"\x00" in data:
            raise InvalidContentError(f"{path} is a binary file")
        text = data[:max_bytes].decode("utf-8", errors="replace")
        return text + (f"\n[… cut at {max_bytes} bytes]" if len(data) > max_bytes else "")

    def _resolve(self, path: str) -> Path:
        """``root/rest`` inside its root, or :class:`AccessDeniedError`."""
        if "\x00" in path or Path(path).is_absolute():
            raise AccessDeniedError(f"{path!r}: give a path relative to one of {', '.join(self.list())}")
        name, _, rest = path.strip("/").partition("/")
        root = next((r for r in self.roots if r.name == name), None)
        if root is None:
            raise NotFoundError(f"no docs root {name!r}; the roots are {', '.join(self.list())}")
        target = (root / rest).resolve()
        if not target.is_relative_to(root):
            raise AccessDeniedError(f"{path!r} leads outside {root.name}/: refused")
        if not target.exists():
            raise NotFoundError(f"no {path} under {root.name}/")
        return target
