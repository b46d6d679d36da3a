"""The ``mnemo`` command line (typer + rich).

Every command opens the archive from settings (``MNEMO_*`` variables), prints a
rich table on a terminal or JSON with ``--json``, shows a progress bar on long
work only when stderr is a terminal, and turns any :class:`MnemoError` into one
clear line on stderr and exit status 1.

Commands live in one module per group (:mod:`.memory`, :mod:`.night`,
:mod:`.admin`, :mod:`.reflection`, :mod:`.demo`, :mod:`.service`, :mod:`.bench`); each has ``register(app)``, and
:func:`create_app` calls them. Importing a module registers nothing.

Global options: ``--version``, and ``--home PATH`` (the data directory, as
``MNEMO_HOME``, for this command).

Start-up is kept short: the archive is imported when a command opens it, after
its input is checked, and the embedding model (torch) loads only when a command
embeds or counts tokens, so ``status``, ``forget``, ``why`` and input errors
never load it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from mnemo.interfaces.cli import admin, agent, bench, cortex, demo, memory, night, portability, reflection, service

__all__ = ["app", "create_app", "main"]


def _version(value: bool) -> None:
    if value:
        from mnemo import __version__

        typer.echo(f"mnemo {__version__}")
        raise typer.Exit()


def _options(
    ctx: typer.Context,
    home: Annotated[
        Path | None,
        typer.Option(
            "--home",
            help="Data directory of the embedded database (sets MNEMO_HOME for this command).",
            file_okay=False,
        ),
    ] = None,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print mnemo's version and exit.")
    ] = False,
) -> None:
    """mnemo: local-first long-term memory for agents."""
    if home is not None:
        home = home.expanduser().absolute()
        os.environ["MNEMO_HOME"] = str(home)
        ctx.obj = {"home": home}  # `quickstart` runs in a temporary home unless --home names one


def create_app() -> typer.Typer:
    """A new ``mnemo`` app with every command group."""
    app = typer.Typer(
        add_completion=False, no_args_is_help=True, help="mnemo: local-first long-term memory for agents."
    )
    app.callback()(_options)
    for group in (memory, night, cortex, admin, reflection, demo, portability, service, agent, bench):
        group.register(app)
    return app


app = create_app()


def main() -> None:
    """Console-script entry point."""
    app()
