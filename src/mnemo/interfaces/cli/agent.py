"""``mnemo agent chat``: the reference agent in the terminal (issue 18 item 11)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Annotated

import typer

from mnemo.interfaces.cli._common import EntityOpt, NamespaceOpt, err, fail_cleanly, out, settings

__all__ = ["register"]

agent_app = typer.Typer(no_args_is_help=True, help="The reference cognitive agent (mnemo.agent).")


def register(app: typer.Typer) -> None:
    app.add_typer(agent_app, name="agent")


@agent_app.command()
@fail_cleanly
def chat(
    entity: EntityOpt = "default",
    namespace: NamespaceOpt = "default",
    name: Annotated[str, typer.Option(help="The agent's name (its age and costs are kept under it).")] = "agent",
    identity: Annotated[
        Path | None, typer.Option(help="Directory of values.json / goals.json.", file_okay=False)
    ] = None,
) -> None:
    """Talk to an agent whose memory is this archive. Without MNEMO_LLM it answers from memory
    offline. Commands: /cost, /readiness; Ctrl-D or /quit ends."""
    asyncio.run(_chat(entity, namespace, name, identity))


async def _chat(entity: str, namespace: str, name: str, identity: Path | None) -> None:
    from mnemo.agent import Agent, Identity
    from mnemo.archive import AsyncArchive
    from mnemo.models import Scope

    async with await AsyncArchive.open(settings()) as archive:
        layers = Identity(identity, archive.embeddings) if identity else None
        agent = Agent(archive, Scope(entity, namespace), name=name, identity=layers)
        problem = await agent.start()
        err.print(f"[dim]{await agent.command('/readiness')}[/dim]" if problem is None else f"[red]{problem}[/red]")
        while True:
            if sys.stdin.isatty():
                err.print("[bold]you>[/bold] ", end="")
            line = await asyncio.to_thread(sys.stdin.readline)
            if not line or line.strip() == "/quit":
                return
            if not line.strip():
                continue
            reply = await agent.respond(line.rstrip("\n"))
            out.print(reply.text, markup=False, highlight=False, soft_wrap=True)
