"""Moving and sharing a mind: ``backup``, ``backup verify``, ``restore`` (archive-adr §6, "Declared
Reanimation"); ``export``, ``import-packets`` (memory-architecture §6, bifocal packets); ``fork``,
``discard``, ``merge`` (speculative timelines)."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from mnemo.interfaces.cli._common import JsonOpt, err, fail_cleanly, open_archive, out, print_json, settings
from mnemo.interfaces.shapes import BackupOut, ForkOut, dump
from mnemo.models import BackupManifest, PacketImport, Scope, to_jsonable

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    """Add the portability commands to ``app``."""
    app.command()(backup)
    app.command()(restore)
    app.command()(export)
    app.command("import-packets")(import_packets)
    app.command()(fork)
    app.command()(discard)
    app.command()(merge)


def _stage(label: str) -> None:
    if err.is_terminal:
        err.print(f"[dim]{label}…[/dim]")


@fail_cleanly
def backup(
    target: Annotated[str, typer.Argument(help="The file to write, or `verify` followed by a file to check.")],
    file: Annotated[Path | None, typer.Argument(help="With `verify`: the backup file to check.")] = None,
    compression: Annotated[
        int, typer.Option("--compression", min=0, max=9, help="gzip level of the database dump (0: none).")
    ] = 1,
    as_json: JsonOpt = False,
) -> None:
    """Back up the whole archive (database and cortex, one consistent snapshot) to one file while
    writes go on; `mnemo backup verify FILE` checks a file without restoring it."""
    if file is not None:
        if target != "verify":
            raise typer.BadParameter(f"use `mnemo backup FILE` or `mnemo backup verify FILE`, not {target!r}")
        from mnemo.archive import AsyncArchive

        manifest = AsyncArchive.portability.verify_backup(file)
        _show(manifest, file, None, as_json, "verified")
        if manifest.format < 2:
            err.print(
                "note: an older mnemo made this file: its manifest has no seal of its own, so an edit of it shows "
                "only when restoring (which then changes nothing); a new backup is sealed",
                highlight=False,
                soft_wrap=True,
            )
        return
    started = time.perf_counter()
    with open_archive() as archive:
        manifest = archive.portability.backup(Path(target), compression=compression, progress=_stage)
    _show(manifest, Path(target), time.perf_counter() - started, as_json, "wrote")


@fail_cleanly
def restore(
    file: Annotated[Path, typer.Argument(help="A file written by `mnemo backup`.")],
    force: Annotated[
        bool, typer.Option("--force", help="Replace whatever mnemo data the target home/database holds.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Restore a backup into this home (or MNEMO_DATABASE_URL), which must be empty unless --force.
    All or nothing: checked against the backup's manifest before it commits; a failed or
    interrupted restore leaves the target as it was, so running it again works."""
    import asyncio

    from mnemo.archive import AsyncArchive

    started = time.perf_counter()
    run = AsyncArchive.portability.restore(file, settings(), force=force, progress=_stage, force_hint="use --force")
    manifest = asyncio.run(run)
    _show(manifest, file, time.perf_counter() - started, as_json, "restored")


def _show(manifest: BackupManifest, file: Path, seconds: float | None, as_json: bool, verb: str) -> None:
    size = file.stat().st_size
    if as_json:
        print_json(dump(BackupOut(file=str(file), bytes=size, seconds=seconds, manifest=manifest)))
        return
    rows = sum(manifest.counts.values())
    took = f" in {seconds:.1f} s" if seconds is not None else ""
    out.print(
        f"{verb} {file} ({size / 1e6:,.1f} MB){took}: {rows:,} rows, {sum(manifest.cortex_rows.values()):,} "
        f"cortex rows, schema {manifest.last_migration}, made {manifest.created_at:%Y-%m-%d %H:%M} UTC"
    )
    table = Table(show_header=True, header_style="bold")
    table.add_column("table")
    table.add_column("rows", justify="right")
    for name, n in sorted(manifest.counts.items()):
        if n:
            table.add_row(name, f"{n:,}")
    for name, n in sorted(manifest.cortex_rows.items()):
        table.add_row(f"cortex {name} (v{manifest.cortex_versions.get(name)})", f"{n:,}")
    out.print(table)


ScopeArg = Annotated[str, typer.Argument(help="The scope, `entity` or `entity/namespace`.")]


@fail_cleanly
def export(
    scope: ScopeArg,
    as_entity: Annotated[
        str | None, typer.Option("--as", help="Export as this entity (needs the owner's export grant).")
    ] = None,
) -> None:
    """Write SCOPE's turns and memories as bifocal packets, one JSON line each, to stdout, with what
    its nights made (blocks and their lines, facts, triples, the cortex tree, links, the night's
    bookkeeping): a whole copy."""
    with open_archive() as archive:
        count = archive.portability.export_packets(Scope.parse(scope), sys.stdout, as_entity=as_entity)
    sys.stdout.flush()
    err.print(f"exported {count:,} packets of {scope}", highlight=False)


@fail_cleanly
def import_packets(
    file: Annotated[Path, typer.Argument(help="A JSONL file of packets (`mnemo export`).")],
    into: Annotated[str, typer.Option("--into", help="The scope to import into, `entity/namespace`.")],
    strict: Annotated[
        bool, typer.Option("--strict", help="Refuse packets without a vector of the active model.")
    ] = False,
    process: Annotated[str, typer.Option("--process", help="The process the writes are attributed to.")] = "import",
    as_json: JsonOpt = False,
) -> None:
    """Import bifocal packets into a scope: checked first, idempotent by packet id, re-embedded when
    they carry another model's vectors (unless --strict)."""
    with open_archive() as archive:
        report = archive.portability.import_packets(Scope.parse(into), file, strict=strict, process=process)
    _show_import(report, as_json)


@fail_cleanly
def fork(
    scope: ScopeArg,
    into: Annotated[str, typer.Option("--into", help="The new namespace the fork lives in.")],
    as_json: JsonOpt = False,
) -> None:
    """Branch SCOPE into a new namespace: a copy that diverges and never writes back on its own."""
    with open_archive() as archive:
        branch = archive.portability.fork(Scope.parse(scope), into)
    if as_json:
        print_json(dump(ForkOut(fork=str(branch), parent=scope)))
    else:
        out.print(f"forked {scope} into {branch}")


@fail_cleanly
def discard(fork_scope: Annotated[str, typer.Argument(help="The fork, `entity/namespace`.")]) -> None:
    """Drop a fork and everything in it."""
    with open_archive() as archive:
        removed = archive.portability.discard(Scope.parse(fork_scope))
    out.print(f"discarded {fork_scope}: {sum(removed.values()):,} rows removed")


@fail_cleanly
def merge(
    fork_scope: Annotated[str, typer.Argument(help="The fork, `entity/namespace`.")],
    memory_ids: Annotated[list[str], typer.Argument(help="The fork's memories to bring back.")],
    as_json: JsonOpt = False,
) -> None:
    """Bring chosen memories of a fork back into the scope it branched from, with their provenance."""
    with open_archive() as archive:
        report = archive.portability.merge(Scope.parse(fork_scope), memory_ids)
    _show_import(report, as_json)


_QUIET = ("link", "night")  # links are counted above; the bookkeeping is one packet


def _show_import(report: PacketImport, as_json: bool) -> None:
    if as_json:
        print_json(to_jsonable(report))
        return
    out.print(
        f"{report.scope}: {report.turns:,} turns and {report.memories:,} memories written, "
        f"{report.already_there:,} packets already there, {report.reembedded:,} embedded again, "
        f"{report.links:,} links"
        + "".join(f", {n:,} {kind}s" for kind, n in sorted(report.state.items()) if n and kind not in _QUIET)
        + (", the night's bookkeeping" if report.state.get("night") else "")
    )
