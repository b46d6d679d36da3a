"""Administration commands: ``status``, ``reembed``, ``scopes``, ``grant``, ``revoke``, ``grants``."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from mnemo.errors import MnemoError
from mnemo.interfaces.cli._common import (
    EntityOpt,
    JsonOpt,
    NamespaceOpt,
    ask,
    err,
    fail_cleanly,
    open_archive,
    out,
    print_json,
    progress,
    service,
    settings,
)
from mnemo.interfaces.shapes import GrantOut, GrantsOut, ReembedOut, ReembedQueuedOut, RevokeOut, dump
from mnemo.models import Scope, to_jsonable

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    """Add the administration commands to ``app``."""
    app.command()(status)
    app.command()(reembed)
    app.command()(scopes)
    app.command()(grant)
    app.command()(revoke)
    app.command()(grants)


@fail_cleanly
def status(as_json: JsonOpt = False) -> None:
    """Counts per chamber, embedder slug, database location, background jobs by status."""
    config = settings()
    if (svc := service(config)) is not None:
        st = ask(svc, "GET", "/v1/local/status", "default")
    else:
        with open_archive(config) as archive:
            st = to_jsonable(archive.status())
    if as_json:
        print_json(st)
        return
    table = Table(title="mnemo status", show_header=False)
    table.add_row("database", Text(st["database"]))
    table.add_row("pgvector", Text(st["pgvector"]))
    table.add_row("embedder", Text(st["embedder"]))
    table.add_row("vector space", Text(st["vector_table"]))
    for name, count in st["counts"].items():
        table.add_row(Text(name), f"{count:,}")
    for vectors in st["vectors"]:
        table.add_row(Text(f"vectors {vectors['table']}"), Text(f"{vectors['rows']:,} x {vectors['slug']}"))
    pending = st["pending_reembed"]
    table.add_row("pending re-embed", f"[yellow]{pending:,}[/]" if pending else "0")
    for state, count in st["queue"].items():
        table.add_row(f"queue {state}", f"[red]{count:,}[/]" if state == "failed" and count else f"{count:,}")
    for removed in st.get("swept", ()):
        table.add_row("removed stale staging", Text(removed))
    out.print(table)


@fail_cleanly
def reembed(
    batch_size: Annotated[int, typer.Option(min=1, max=10_000)] = 256,
    background: Annotated[bool, typer.Option("--background", help="Queue it for `mnemo worker` instead.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Re-embed items stored with another model (resumable; safe to interrupt)."""
    if background:
        with open_archive() as archive:
            job = archive.maintenance.defer_reembed()
        if as_json:
            print_json(dump(ReembedQueuedOut(job=job, queued=job is not None)))
        else:
            out.print(f"queued re-embed job {job}" if job is not None else "a re-embed job is already waiting")
        return
    with open_archive() as archive, progress("re-embedding") as update:
        done = archive.maintenance.reembed(batch_size=batch_size, progress=update)
        left = archive.pending_reembed
    if as_json:
        print_json(dump(ReembedOut(reembedded=done, pending=left)))
    else:
        out.print(f"re-embedded {done:,} items; {left:,} pending")


@fail_cleanly
def scopes(
    entity: Annotated[str | None, typer.Option("--entity", "-e", help="Only this entity's scopes.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Every scope (or one entity's) with its turns, memories, blocks, current facts and last write."""
    if entity is not None:
        Scope(entity)  # a bad id is a clean error before the archive opens
    with open_archive() as archive:
        rows = archive.access.scopes(entity)
    if as_json:
        print_json([to_jsonable(row) for row in rows])
        return
    if not rows:
        err.print(Text(f"no scopes{f' of {entity}' if entity else ''}"))
        return
    table = Table(title="mnemo scopes")
    table.add_column("scope")
    for col in ("turns", "memories", "blocks", "facts"):
        table.add_column(col, justify="right")
    table.add_column("last write", no_wrap=True)
    for row in rows:
        table.add_row(
            Text(str(row.scope)),
            f"{row.turns:,}",
            f"{row.memories:,}",
            f"{row.blocks:,}",
            f"{row.facts:,}",
            row.last_write.strftime("%Y-%m-%d %H:%M:%S %Z").strip(),
        )
    out.print(table)


GranteeArg = Annotated[str, typer.Argument(help="The entity that is given (or loses) read access.")]


@fail_cleanly
def grant(
    grantee: GranteeArg,
    entity: EntityOpt = "default",
    namespace: NamespaceOpt = "default",
    export: Annotated[
        bool, typer.Option("--export", help="Also let it export the scope's packets (mnemo export --as).")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Let another entity read a scope (-e, -n: the scope, which must exist). --json prints grantee
    and created (false: the grant was there already), as the HTTP service does."""
    scope = Scope(entity, namespace)
    Scope(grantee)
    with open_archive() as archive:
        added = archive.access.grant(scope, grantee, export=export)
    if as_json:
        print_json(dump(GrantOut(grantee=grantee, created=added)))
        return
    right = "read and export" if export else "read"
    said = f"granted {grantee} {right} access to {scope}" if added else f"{grantee} could already {right} {scope}"
    out.print(Text(said))


@fail_cleanly
def revoke(
    grantee: GranteeArg,
    entity: EntityOpt = "default",
    namespace: NamespaceOpt = "default",
    as_json: JsonOpt = False,
) -> None:
    """Withdraw another entity's read access to a scope. --json prints grantee and revoked (false,
    with exit status 0: there was no grant), as the HTTP service does."""
    scope = Scope(entity, namespace)
    Scope(grantee)
    with open_archive() as archive:
        done = archive.access.revoke(scope, grantee)
    if as_json:
        print_json(dump(RevokeOut(grantee=grantee, revoked=done)))
        return
    if not done:
        raise MnemoError(f"{grantee} has no grant on {scope}")
    out.print(Text(f"revoked {grantee}'s read access to {scope}"))


@fail_cleanly
def grants(entity: EntityOpt = "default", namespace: NamespaceOpt = "default", as_json: JsonOpt = False) -> None:
    """The entities that may read a scope besides its owner, one per line."""
    scope = Scope(entity, namespace)
    with open_archive() as archive:
        names = archive.access.grants(scope)
    if as_json:
        print_json(dump(GrantsOut(scope=str(scope), grantees=names)))
        return
    if not names:
        err.print(Text(f"no grants on {scope}: only {scope.entity_id} reads it"))
    for name in names:
        out.print(Text(name))
