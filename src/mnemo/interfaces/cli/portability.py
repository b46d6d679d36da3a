"""Moving a mind: ``backup``, ``backup verify``, ``restore`` (archive-adr §6, "Declared Reanimation")."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from mnemo.interfaces.cli._common import JsonOpt, err, fail_cleanly, open_archive, out, print_json, settings
from mnemo.models import BackupManifest, to_jsonable

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    """Add the portability commands to ``app``."""
    app.command()(backup)
    app.command()(restore)


def _stage(label: str) -> None:
    if err.is_terminal:
        err.print(f"[dim]{label}…[/dim]")


@fail_cleanly
def backup(
    target: Annotated[str, typer.Argument(help="The file to write, or `verify` followed by a file to check.")],
    file: Annotated[Path | None, typer.Argument(help="With `verify`: the backup file to check.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Back up the whole archive (database and cortex, one consistent snapshot) to one file while
    writes go on; `mnemo backup verify FILE` checks a file without restoring it."""
    if file is not None:
        if target != "verify":
            raise typer.BadParameter(f"use `mnemo backup FILE` or `mnemo backup verify FILE`, not {target!r}")
        from mnemo._backup import verify

        _show(verify(file), file, None, as_json, "verified")
        return
    started = time.perf_counter()
    with open_archive() as archive:
        manifest = archive.backup(Path(target), progress=_stage)
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
    All or nothing; checked against the backup's manifest afterwards."""
    import asyncio

    from mnemo._backup import restore as restore_backup

    started = time.perf_counter()
    manifest = asyncio.run(restore_backup(file, settings(), force=force, progress=_stage))
    _show(manifest, file, time.perf_counter() - started, as_json, "restored")


def _show(manifest: BackupManifest, file: Path, seconds: float | None, as_json: bool, verb: str) -> None:
    size = file.stat().st_size
    if as_json:
        print_json({"file": str(file), "bytes": size, "seconds": seconds, "manifest": to_jsonable(manifest)})
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
