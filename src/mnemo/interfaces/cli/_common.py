"""What every command group shares: consoles, option types, error handling, progress, output."""

from __future__ import annotations

import functools
import json
import logging
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from mnemo._sync import Archive
from mnemo.errors import MnemoError
from mnemo.models import Hit, RecallResult, Refusal

__all__ = [
    "EntityOpt",
    "JsonOpt",
    "NamespaceOpt",
    "err",
    "fail_cleanly",
    "hit_json",
    "open_archive",
    "out",
    "print_json",
    "print_recall",
    "progress",
]

out = Console()
err = Console(stderr=True)
F = TypeVar("F", bound=Callable[..., Any])

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
            err.print(f"[bold red]error:[/] {exc}", highlight=False, markup=True, soft_wrap=True)
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


def open_archive() -> Archive:
    """The archive from settings (``MNEMO_*``), with warnings on stderr."""
    logging.basicConfig(level=logging.WARNING, format="warning: %(message)s", stream=sys.stderr)
    return Archive()


def print_json(data: Any) -> None:
    """``data`` as JSON on stdout (pretty on a terminal); what JSON cannot hold is printed as ``str()``."""
    out.print_json(json.dumps(data, default=str))


def hit_json(hit: Hit) -> dict[str, Any]:
    return {
        "id": str(hit.id),
        "item_kind": hit.item_kind,
        "content": hit.content,
        "created_at": hit.created_at.isoformat(),
        "session_id": hit.session_id,
        "turn_number": hit.turn_number,
        "speaker": hit.speaker,
        "memory_kind": hit.memory_kind,
        **hit.components(),
    }


def print_recall(result: RecallResult | Refusal, as_json: bool) -> None:
    if as_json:
        print_json(
            {
                "query": result.query,
                "scope": str(result.scope),
                "refused": result.refused,
                "best_similarity": result.best_similarity,
                "latency_ms": round(result.latency_ms, 2),
                "weights": dict(getattr(result, "weights", {})),
                "hits": [hit_json(h) for h in result.hits],
                **({"message": result.message, "threshold": result.threshold} if isinstance(result, Refusal) else {}),
            }
        )
        return
    if isinstance(result, Refusal):
        best = "none" if result.best_similarity is None else f"{result.best_similarity:.3f}"
        out.print(f"[yellow]{result.message}[/] (best similarity {best} < threshold {result.threshold:.2f})")
        return
    table = Table(title=f"recall: {result.query!r} in {result.scope}  ({result.latency_ms:.1f} ms)")
    for col in ("#", "score", "sim", "act", "wt", "rec", "kind", "when"):
        table.add_column(col, no_wrap=True)
    table.add_column("content", overflow="fold", min_width=24)
    for rank, hit in enumerate(result.hits, start=1):
        who = f"{hit.speaker}: " if hit.speaker else ""
        table.add_row(
            str(rank),
            f"{hit.score:.3f}",
            "-" if hit.similarity is None else f"{hit.similarity:.2f}",
            f"{hit.activation:.2f}",
            f"{hit.weight:.2f}",
            f"{hit.recency:.2f}",
            hit.memory_kind or hit.item_kind,
            hit.created_at.strftime("%Y-%m-%d"),
            who + hit.content,
        )
    out.print(table)
