"""What every command group shares: consoles, option types, error handling, progress, output.

Stored text is printed literally: it reaches rich only as :class:`~rich.text.Text` or through
:func:`lit`, never as markup, so ``[summary]`` or ``a[/i]`` in a memory print as typed. Piped
stdout gets whole lines (no terminal width to fit): nothing is cropped or folded.

``--json`` prints the public record a command produced, as :func:`mnemo.models.to_jsonable` makes
it (ids as strings, times in ISO 8601): the same field names and nesting as the HTTP service and
the MCP tools answer for the same operation.

Nothing here imports the archive (the database, the night cycle, the embedder): commands import
it through :func:`open_archive` once their input is checked, so ``--help``, ``--version`` and bad
input answer at once.
"""

from __future__ import annotations

import functools
import json
import logging
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.console import Console, ConsoleDimensions
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from mnemo.cognition.scoring.blend_components import BLEND
from mnemo.config import Settings, load_settings
from mnemo.errors import MnemoError
from mnemo.interfaces._remedies import say
from mnemo.models import RecallResult, Refusal, to_jsonable

if TYPE_CHECKING:
    from mnemo._sync import Archive
    from mnemo.interfaces.local import LocalService


class ServiceAnswer(MnemoError):
    """An error the running service answered with (its message, as the archive would have said it)."""


__all__ = [
    "PIPED_WIDTH",
    "EntityOpt",
    "JsonOpt",
    "NamespaceOpt",
    "ask",
    "err",
    "fail_cleanly",
    "lit",
    "open_archive",
    "out",
    "print_json",
    "print_recall",
    "progress",
    "service",
    "settings",
]

# Piped output has no width to fit: lines as long as their content (a memory is at most
# MNEMO_MAX_CONTENT_CHARS long; tables pad only to their widest cell).
PIPED_WIDTH = 10_000_000


class _Stdout(Console):
    """stdout: a terminal's own width, whole lines when piped or redirected (``mnemo demo > file``)."""

    @property
    def size(self) -> ConsoleDimensions:
        size = super().size
        return size if self.is_terminal else ConsoleDimensions(PIPED_WIDTH, size.height)

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        self._width, self._height = new_size


out: Console = _Stdout()
err = Console(stderr=True)
F = TypeVar("F", bound=Callable[..., Any])


def lit(text: object) -> str:
    """``text`` escaped for rich markup: printed literally, brackets and all."""
    return escape(str(text))


EntityOpt = Annotated[str, typer.Option("--entity", "-e", envvar="MNEMO_ENTITY", help="Entity id of the scope.")]
NamespaceOpt = Annotated[str, typer.Option("--namespace", "-n", envvar="MNEMO_NAMESPACE", help="Namespace.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]


def fail_cleanly(fn: F) -> F:
    """Turn a :class:`MnemoError` into one line on stderr and exit status 1."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except MnemoError as exc:
            err.print(Text.assemble(("error:", "bold red"), f" {say(exc, 'cli')}"), highlight=False, soft_wrap=True)
            raise typer.Exit(1) from None

    return wrapper  # type: ignore[return-value]


@contextmanager
def progress(label: str) -> Iterator[Callable[[int, int], None]]:
    """A progress bar on stderr (only when it is a terminal); yields ``update(done, total)``."""
    bar = Progress(
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        disable=not err.is_terminal,
        transient=False,
    )
    task = bar.add_task(label, total=None)

    def update(done: int, total: int) -> None:
        bar.update(task, completed=done, total=total)

    with bar:
        yield update


def settings() -> Settings:
    """The settings from ``MNEMO_*`` variables (a bad value is a clean error, before anything starts)."""
    return load_settings()


def service(config: Settings) -> LocalService | None:
    """The running ``mnemo serve`` of this data directory and database, if any
    (:mod:`mnemo.interfaces.local`); commands send their request there instead of opening the archive."""
    from mnemo.interfaces import local

    if not config.use_service:
        return None
    return local.find(config.home, local.database_of(config.database_url, config.home))


def ask(svc: LocalService, method: str, path: str, entity: str, body: Any = None) -> Any:
    """One request to the running service; its error answer becomes the :class:`MnemoError` the
    archive would have raised (one line on stderr, status 1)."""
    from mnemo.interfaces.local import ServiceError

    try:
        return svc.call(method, path, entity, body)
    except ServiceError as exc:
        raise ServiceAnswer(exc.message) from None


def open_archive(config: Settings | None = None) -> Archive:
    """The archive from ``config`` (default: ``MNEMO_*`` settings), with warnings on stderr. The
    embedding model loads only when a command first embeds or counts tokens."""
    from mnemo import Archive

    logging.basicConfig(level=logging.WARNING, format="warning: %(message)s", stream=sys.stderr)
    config = config or settings()
    if "index" not in config.model_fields_set:  # one command, then exit: a read index would not be used
        config = config.model_copy(update={"index": False})
    return Archive(config)


def print_json(data: Any) -> None:
    """``data`` as JSON on stdout (pretty on a terminal); what JSON cannot hold is printed as ``str()``."""
    out.print_json(json.dumps(data, default=str))


def print_recall(result: RecallResult | Refusal | dict[str, Any], as_json: bool) -> None:
    """A recall as a table (or the refusal sentence); with ``as_json``, the record itself
    (:func:`~mnemo.models.to_jsonable`: the shape ``POST /v1/recall`` and MCP ``recall`` answer).
    ``result`` may be that record already (what a running service answered)."""
    data = result if isinstance(result, dict) else to_jsonable(result)
    if as_json:
        print_json(data)
        return
    if data.get("refused"):
        best = "none" if data["best_similarity"] is None else f"{data['best_similarity']:.3f}"
        # the similarity is the reason only when no name or word was (issue 40 item 6)
        why = "" if data.get("unknown") or data.get("unsupported") else f" < threshold {data['threshold']:.2f}"
        out.print(Text.assemble((data["message"], "yellow"), f" (best similarity {best}{why})"), highlight=False)
        return
    title = f"recall: {data['query']!r} in {data['scope']}  ({data['latency_ms']:.1f} ms)"
    table = Table(title=Text(title))
    shown = [c for c in BLEND if c.column is not None]  # the components the table has a column for
    for col in ("#", "score", "tier", "sim", *(c.column or c.name for c in shown), "kind", "when"):
        table.add_column(col, no_wrap=True)
    table.add_column("content", overflow="fold", min_width=24)
    for rank, hit in enumerate(data["hits"], start=1):
        who = f"{hit['speaker']}: " if hit.get("speaker") else ""
        table.add_row(
            str(rank),
            f"{hit['score']:.3f}",  # in rank order; the blend's own number is in --json (issue 40 item 7)
            "-" if hit.get("relevance_tier") is None else str(hit["relevance_tier"]),
            "-" if hit.get("similarity") is None else f"{hit['similarity']:.2f}",
            *(format(hit[c.name], c.fmt) for c in shown),
            hit.get("memory_kind") or hit["item_kind"],
            str(hit.get("event_time") or hit["created_at"])[:10],  # when it happened, not when mnemo wrote it
            Text(who + hit["content"]),
        )
    out.print(table)
