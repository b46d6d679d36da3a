"""The bundled sample conversation, end to end: ``demo`` and ``quickstart``.

Both run the same stages (:func:`run_sample`): import the sample conversation (package data,
``mnemo/data/sample_conversation.jsonl``) into ``demo/sample``, run the night cycle over it
(blocks, facts, curation; raw turns kept: no retention stage), recall five questions (the last
one off-topic, so refused) and build one context block (DESIGN §6: recall and ``context()``).

- ``demo`` does it in the configured archive (``MNEMO_HOME`` or ``MNEMO_DATABASE_URL``); a
  second run finds the sample there and skips the import.
- ``quickstart`` (issue 30 item 8) does it where it cannot touch a user's data: the embedded
  PostgreSQL in a fresh temporary home, stopped and deleted at the end, or in the home ``--home``
  names (the command's own option or the global one), which keeps the data. ``MNEMO_HOME`` alone
  does not choose it, and ``MNEMO_DATABASE_URL`` is not used. It is what a user who installed the
  wheel (``pip install mnemo-archive``) runs first, without a checkout.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.text import Text

from mnemo.config import Settings, load_settings
from mnemo.errors import MnemoError
from mnemo.interfaces.cli._common import (
    JsonOpt,
    err,
    fail_cleanly,
    open_archive,
    out,
    print_json,
    print_recall,
    progress,
)
from mnemo.interfaces.cli.night import report_table
from mnemo.interfaces.shapes import DemoHomeOut, DemoOut, dump
from mnemo.models import ContextBlock, ImportReport, NightReport, RecallResult, Refusal, Scope

if TYPE_CHECKING:
    from mnemo._sync import Archive

__all__ = ["DEMO_CONTEXT", "DEMO_QUERIES", "SAMPLE_SCOPE", "SampleRun", "register", "run_sample"]

DEMO_QUERIES = (
    "What is Maya allergic to?",
    "How is the dog coping with the noise?",
    "Why did the battery prototype fail?",
    "When is Lena visiting and what does she eat?",
    "What is the capital of Australia?",
)
DEMO_CONTEXT = "Help me plan a dinner for Lena's visit"
SAMPLE_SCOPE = Scope("demo", "sample")


def register(app: typer.Typer) -> None:
    """Add ``demo`` and ``quickstart`` to ``app``."""
    app.command()(demo)
    app.command()(quickstart)


@dataclass(frozen=True, slots=True)
class SampleRun:
    """What the stages did: the import (None: the sample was there already), the night, the
    recalls and the context block; ``turns_before``: the archive's turns before the import."""

    turns_before: int
    imported: ImportReport | None
    night: NightReport
    recalls: list[RecallResult | Refusal]
    context: ContextBlock


def _import_sample(archive: Archive, scope: Scope) -> ImportReport | None:
    """Import the sample conversation and two memories into ``scope``, unless it is there already."""
    if scope in archive.maintenance.night_scopes():
        return None
    sample = resources.files("mnemo").joinpath("data/sample_conversation.jsonl")
    with resources.as_file(sample) as path, progress("embedding") as update:
        imported = archive.import_file(scope, path, progress=update)
    archive.remember(scope, "Never share Maya's home address with anyone", anchored=True)
    archive.remember(scope, "Maya prefers short, practical answers", kind="preference")
    return imported


def run_sample(archive: Archive, scope: Scope = SAMPLE_SCOPE) -> SampleRun:
    """The sample conversation's stages in ``archive``: import, night, recall, context."""
    from mnemo.archive import AsyncArchive

    turns_before = archive.status().counts["turns"]
    imported = _import_sample(archive, scope)
    # The night cycle (raw turns kept for the demo: no retention stage): blocks, facts, curation.
    night = archive.night_cycle(scope, stages=tuple(s.name for s in AsyncArchive.NIGHT_STAGES if s.name != "retention"))
    recalls = [archive.recall(scope, q, 3) for q in DEMO_QUERIES]
    block = archive.context(scope, DEMO_CONTEXT, 160, seed=0)
    return SampleRun(turns_before, imported, night, recalls, block)


def show_sample(
    run: SampleRun, as_json: bool, scope: Scope = SAMPLE_SCOPE, *, home: str | None = None, kept: bool = False
) -> None:
    """Print ``run``: tables and the context block, or one JSON object (with the ``home`` it ran in
    and whether it was ``kept``, when it ran in a home of its own)."""
    if as_json:
        recalls, block, night = list(run.recalls), run.context, run.night
        shown = (
            DemoOut(recalls=recalls, context=block, night=night)
            if home is None
            else DemoHomeOut(recalls=recalls, context=block, night=night, home=home, kept=kept)
        )
        print_json(dump(shown))
        return
    if run.imported is not None:
        out.print(
            f"imported {run.imported.turns} turns of the sample conversation into {scope} "
            f"in {run.imported.seconds:.1f}s (database had {run.turns_before} turns before)"
        )
    else:
        out.print(f"the sample conversation is already in {scope}")
    out.print(report_table(run.night))
    for result in run.recalls:
        print_recall(result, as_json=False)
    out.print(f"\n[bold]context block[/] for {DEMO_CONTEXT!r} ({run.context.tokens}/{run.context.budget} tokens):")
    out.print(run.context.text, markup=False, highlight=False)


@fail_cleanly
def demo(as_json: JsonOpt = False) -> None:
    """Import the bundled sample conversation and recall from it."""
    with open_archive() as archive:
        run = run_sample(archive)
    show_sample(run, as_json)


HomeOpt = Annotated[
    Path | None,
    typer.Option(
        "--home",
        file_okay=False,
        help="Run in this data directory and keep it (default: a temporary one, deleted at the end).",
    ),
]


@fail_cleanly
def quickstart(ctx: typer.Context, home: HomeOpt = None, as_json: JsonOpt = False) -> None:
    """The demo without a checkout or a configured archive: the sample conversation imported,
    a night, recalls and a context block, in a temporary home that is deleted at the end (its
    embedded PostgreSQL stopped first), or in --home, which keeps the data. --json adds home
    and kept to the demo's JSON."""
    chosen = home or (ctx.obj or {}).get("home")
    place = Path(chosen).expanduser().absolute() if chosen else Path(tempfile.mkdtemp(prefix="mnemo-quickstart-"))
    keep = chosen is not None
    _announce(place, keep)
    try:
        with open_archive(_quickstart_settings(place)) as archive:
            run = run_sample(archive)
    finally:
        _finish(place, keep)
    show_sample(run, as_json, home=str(place), kept=keep)


def _quickstart_settings(home: Path) -> Settings:
    """The settings with ``home`` and its embedded server (every other ``MNEMO_*`` still applies)."""
    return load_settings(home=home, database_url=None)


def _say(line: str) -> None:
    """One line on stderr, as typed (a path may hold brackets), never folded."""
    err.print(Text(line), soft_wrap=True, highlight=False)


def _announce(home: Path, keep: bool) -> None:
    if os.environ.get("MNEMO_DATABASE_URL"):
        _say("quickstart does not use MNEMO_DATABASE_URL: it runs the embedded PostgreSQL under its home")
    if keep:
        _say(f"quickstart: working in {home} (kept afterwards)")
    else:
        _say(f"quickstart: working in a temporary home, {home}; it is deleted at the end (--home keeps it)")


def _finish(home: Path, keep: bool) -> None:
    """Stop the embedded PostgreSQL this process started under ``home``; delete ``home`` unless kept."""
    from mnemo.archive import AsyncArchive

    AsyncArchive.maintenance.release_embedded()
    if keep:
        _say(f"the data stays in {home}: mnemo --home {home} recall -e demo -n sample 'QUESTION'")
        return
    if AsyncArchive.maintenance.embedded_running(home):  # another process attached to it: not ours to delete under it
        _say(f"the embedded PostgreSQL in {home} is still in use by another process: {home} is left")
        return
    _delete(home)
    _say(f"stopped the embedded PostgreSQL and deleted {home}")


def _delete(home: Path) -> None:
    """Delete ``home``. The server's watchdog removes its own record file as it exits, which may be
    while this runs: a file gone under it is no error, and the next try finds the rest."""
    for _ in range(3):
        try:
            shutil.rmtree(home)
            return
        except FileNotFoundError:
            if not home.exists():
                return
        except OSError as exc:
            raise MnemoError(f"could not delete the temporary home {home}: {exc}") from exc
    raise MnemoError(f"could not delete the temporary home {home}: files kept going away under it")
