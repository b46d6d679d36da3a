"""The ``mnemo`` command line (typer + rich).

Every command opens the archive from settings (``MNEMO_*`` variables), prints a
rich table on a terminal or JSON with ``--json``, shows a progress bar on long
work only when stderr is a terminal, and turns any :class:`MnemoError` into one
clear line on stderr and exit status 1.

Commands live in one module per group (:mod:`.memory`, :mod:`.night`,
:mod:`.admin`, :mod:`.service`, :mod:`.bench`); each has ``register(app)``, and
:func:`create_app` calls them. Importing a module registers nothing.
"""

from __future__ import annotations

import typer

from mnemo.interfaces.cli import admin, bench, memory, night, service

__all__ = ["app", "create_app", "main"]


def create_app() -> typer.Typer:
    """A new ``mnemo`` app with every command group."""
    app = typer.Typer(
        add_completion=False, no_args_is_help=True, help="mnemo: local-first long-term memory for agents."
    )
    for group in (memory, night, admin, service, bench):
        group.register(app)
    return app


app = create_app()


def main() -> None:
    """Console-script entry point."""
    app()
