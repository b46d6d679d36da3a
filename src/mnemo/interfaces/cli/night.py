"""Night-cycle commands: ``night``, ``curate``, ``facts``, ``believe``."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from mnemo._validate import check_id, to_utc
from mnemo.errors import InvalidContentError
from mnemo.interfaces.cli._common import (
    EntityOpt,
    JsonOpt,
    NamespaceOpt,
    err,
    fail_cleanly,
    open_archive,
    out,
    print_json,
)
from mnemo.interfaces.shapes import BelieveOut, CurationAppliedOut, dump
from mnemo.models import Curation, NightReport, Scope, to_jsonable

# The night cycle's stage names, as declared by mnemo.night.stage_registry (tests/integration/
# test_cli.py keeps them equal), for --stages' help and check: importing the registry here would load
# the store and every stage before any command has even parsed its arguments (and a face reaches the
# night through the archive only). The table's rows come from the registry (report_table).
STAGES = (
    "surprisal", "blocks", "knowledge", "insights", "curate", "decay", "inner", "migrate", "cluster", "retention",
    "reflexes",
)  # fmt: skip

__all__ = ["register", "report_table"]


def register(app: typer.Typer) -> None:
    """Add the night-cycle commands to ``app``."""
    app.command()(night)
    app.command()(curate)
    app.command()(facts)
    app.command()(believe)


def report_table(report: NightReport) -> Table:
    """A night's report as a table: one row per stage, as the stage shows it
    (:meth:`mnemo.night.stage_protocol.Stage.row`; the archive is loaded once a night has run)."""
    from mnemo.archive import AsyncArchive

    if report.dry_run:
        resumes = " (would resume an unfinished run)" if report.resumed else ""
        title = f"night cycle plan — {report.scope}{resumes} (dry run, nothing written)"
    else:
        title = f"night cycle — {report.scope}" + (" (resumed)" if report.resumed else "")
    table = Table(title=Text(title))  # the scope is user text: no markup
    table.add_column("stage")
    table.add_column("would do" if report.dry_run else "result")
    table.add_column("seconds", justify="right")
    secs = report.stage_seconds
    for stage in AsyncArchive.NIGHT_STAGES:
        text = stage.row(report)
        if text is None:
            continue
        if stage.name in report.skipped:
            text = "skipped"
        table.add_row(stage.name, text, f"{secs[stage.name]:.1f}" if stage.name in secs else "-")
    if report.dry_run:
        table.caption = (
            f"{report.turns} turns to consolidate, as of {report.as_of:%Y-%m-%d %H:%M} UTC; nothing written "
            "(each stage planned over what the stages before it leave, as the night runs them; the blocks, facts "
            "and insights this night makes are not in the counts after them)"
        )
    else:
        table.caption = (
            f"{report.turns} turns in {report.seconds:.1f}s ({report.turns_per_second:.0f} turns/s), as of "
            f"{report.as_of:%Y-%m-%d %H:%M} UTC"
        )
    return table


@fail_cleanly
def night(
    entity: EntityOpt = "default",
    namespace: NamespaceOpt = "default",
    scope_text: Annotated[
        str | None, typer.Option("--scope", help="ENTITY or ENTITY/NAMESPACE (instead of -e/-n).")
    ] = None,
    every: Annotated[bool, typer.Option("--all", help="Every scope that has turns, one after another.")] = False,
    as_of: Annotated[str | None, typer.Option("--as-of", help="Consolidate as if it were this time (ISO).")] = None,
    stages: Annotated[str | None, typer.Option(help=f"Comma-separated subset of: {', '.join(STAGES)}.")] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show what every stage would do (retention included); write nothing.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Run (or resume) the night cycle: blocks, facts, curation, decay, retention.

    Retention removes raw turns that blocks of an earlier night cover once they have been in
    mnemo for a cycle (a day by default, counted from when they arrived; MNEMO_RETENTION=false
    keeps them); each night's table says what the next one will remove."""
    scope = Scope.parse(scope_text) if scope_text else Scope(entity, namespace)
    chosen = tuple(s.strip() for s in stages.split(",") if s.strip()) if stages else STAGES
    if bad := [s for s in chosen if s not in STAGES]:
        raise InvalidContentError(f"unknown stages {bad}; choose from {', '.join(STAGES)}")
    when: datetime | None = to_utc(as_of, label="--as-of") if as_of else None
    bar = Progress(
        TextColumn("{task.description:<10}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        disable=not err.is_terminal,
    )
    tasks: dict[str, Any] = {}

    def progress(stage: str, done: int, total: int) -> None:
        if stage not in tasks:
            tasks[stage] = bar.add_task(stage, total=total or None)
        bar.update(tasks[stage], completed=done, total=max(total, done) or None)

    reports: list[NightReport] = []
    with open_archive() as archive, bar:
        for target in archive.maintenance.night_scopes() if every else [scope]:
            tasks.clear()
            reports.append(archive.night_cycle(target, as_of=when, progress=progress, stages=chosen, dry_run=dry_run))
    if as_json:
        data = [to_jsonable(r) for r in reports]
        print_json(data if every else data[0])
    else:
        for report in reports:
            out.print(report_table(report))


def _curation_table(result: Curation, limit: int) -> Table:
    if result.version is None:
        what = "dry run" if result.changes else "nothing to change"
        title = f"curation {what} — {result.scope} (nothing written)"
    else:
        title = f"curation version {result.version} — {result.scope} ({'applied' if result.applied else 'staged'})"
    table = Table(title=title)
    for col in ("verdict", "kind", "status", "score", "memory", "why"):
        table.add_column(col, overflow="fold")
    for v in result.changes[:limit]:
        c = v.classification
        table.add_row(
            c.verdict,
            v.kind,
            f"{v.from_status} → {v.to_status}",
            f"{c.score:.2f}",
            Text(v.content[:80]),
            Text(c.reasons[-1]),
        )
    counts = ", ".join(f"{k} {n}" for k, n in sorted(result.counts.items())) or "no memories"
    more = f"; {len(result.changes) - limit} more changes not shown" if len(result.changes) > limit else ""
    table.caption = f"{counts}; {len(result.changes)} changes{more}"
    return table


@fail_cleanly
def curate(
    entity: EntityOpt = "default",
    namespace: NamespaceOpt = "default",
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what would change; write nothing.")] = False,
    stage_only: Annotated[bool, typer.Option("--stage-only", help="Stage a version without applying it.")] = False,
    apply: Annotated[int | None, typer.Option("--apply", help="Apply this staged version.")] = None,
    limit: Annotated[int, typer.Option(help="Rows to show.")] = 30,
    as_json: JsonOpt = False,
) -> None:
    """Classify memories promote / keep / archive / prune / quarantine as a numbered version."""
    scope = Scope(entity, namespace)
    with open_archive() as archive:
        if apply is not None:
            changed = archive.knowledge.apply_curation(scope, apply)
            if as_json:
                print_json(dump(CurationAppliedOut(version=apply, changed=changed)))
            else:
                out.print(f"applied curation version {apply} of {scope}: {changed} memories changed status")
            return
        result = archive.knowledge.curate(scope, dry_run=dry_run, apply=not stage_only)
    if as_json:
        print_json(to_jsonable(result))
    else:
        out.print(_curation_table(result, limit))


@fail_cleanly
def facts(
    name: Annotated[str, typer.Argument(help="The entity, e.g. a person's name.")],
    entity: EntityOpt = "default",
    namespace: NamespaceOpt = "default",
    as_json: JsonOpt = False,
) -> None:
    """Current and past facts about an entity, with validity intervals."""
    with open_archive() as archive:
        found = archive.knowledge.facts(Scope(entity, namespace), name)
    if as_json:
        print_json(to_jsonable(found))
        return
    table = Table(title=Text(f"{found.name} — {found.mention_count} mentions"))
    for col in ("attribute", "value", "kind", "valid", "mentions", "conf."):
        table.add_column(col, overflow="fold")
    for f in found.facts:
        start = f"{f.valid_from:%Y-%m-%d}" if f.valid_from else "?"
        valid = f"since {start}" if f.current else f"[dim]{start} → {f.valid_to:%Y-%m-%d}[/]"
        value = Text(f.value, style="" if f.current else "dim")
        table.add_row(Text(f.attribute), value, f.kind, valid, str(f.mention_count), f"{f.confidence:.2f}")
    for predicate, obj, count in found.triples:
        table.add_row(Text(f"({predicate})"), Text(obj), "triple", "", str(count), "")
    out.print(table)


@fail_cleanly
def believe(
    memory_id: Annotated[str, typer.Argument(help="An insight, narrative or fact memory id.")],
    entity: EntityOpt = "default",
    namespace: NamespaceOpt = "default",
    as_json: JsonOpt = False,
) -> None:
    """Why do I believe this? The chain a memory was derived from (--json: its id and the chain)."""
    wanted = check_id(memory_id, label="memory id")
    with open_archive() as archive:
        chain = archive.knowledge.why_do_i_believe(Scope(entity, namespace), wanted)
    if as_json:
        print_json(dump(BelieveOut(id=wanted, chain=list(chain))))
        return
    if not chain:
        out.print("nothing recorded: this memory was not derived from others")
        return
    for b in chain:
        text = (b.content, "") if b.content is not None else ("(forgotten)", "dim")
        out.print(Text.assemble(f"{'  ' * b.depth}└ ", (b.kind, "bold"), f" {b.id}: ", text), highlight=False)
