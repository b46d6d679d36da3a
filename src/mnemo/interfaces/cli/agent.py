"""``mnemo agent chat``: the reference agent in the terminal (issue 18 item 11)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

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
    docs: Annotated[
        list[Path] | None,
        typer.Option(
            help="A directory System 1 may read (repeatable; read-only, no path leads out).",
            file_okay=False,
            exists=True,
        ),
    ] = None,
    context_tokens: Annotated[
        int, typer.Option(min=64, help="Context the agent may fill at full intensity: conversation plus memory.")
    ] = 4000,
) -> None:
    """Talk to an agent whose memory is this archive: System 1 is MNEMO_LLM (offline, it notes what you
    tell it and answers questions from memory), System 2 MNEMO_SYSTEM2_LLM. Each line goes through
    attention with any thoughts the agent queued; what it tells you is printed, its own thoughts go to
    stderr. /help lists the commands; Ctrl-D ends."""
    asyncio.run(_chat(entity, namespace, name, identity, docs or [], context_tokens))


CYCLES_PER_LINE = 3
"""Cycles run after each line: the line and up to two queued thoughts (the rest wait)."""

THINK, HELP, QUIT = "/think", "/help", "/quit"
CHAT_COMMANDS = {
    THINK: ("TEXT", "a thought of your own: it goes through the same loop, its answer stays inside (stderr)"),
    HELP: ("", "this list"),
    QUIT: ("", "end the chat (so does Ctrl-D)"),
}
"""The chat's own commands (usage, what it does), beside the loop's (:data:`mnemo.agent.loop.COMMANDS`)."""


def _commands() -> dict[str, tuple[str, str]]:
    """Every command the chat accepts: the loop's, then its own."""
    from mnemo.agent.loop import COMMANDS

    return {name: ("", does) for name, does in COMMANDS.items()} | CHAT_COMMANDS


def _help(first: str) -> str:
    rows = [(f"{name} {usage}".strip(), does) for name, (usage, does) in _commands().items()]
    width = max(len(call) for call, _ in rows)
    return "\n".join([first, *(f"  {call.ljust(width)}  {does}" for call, does in rows)])


async def _chat(
    entity: str, namespace: str, name: str, identity: Path | None, docs: list[Path], context_tokens: int
) -> None:
    from mnemo.agent import Agent, DocsTool, Identity
    from mnemo.archive import AsyncArchive
    from mnemo.models import Scope

    async with await AsyncArchive.open(settings()) as archive:
        layers = Identity(identity, archive.embeddings) if identity else None
        agent = Agent(
            archive, Scope(entity, namespace), name=name, identity=layers, context_tokens=context_tokens,
            docs=DocsTool.of(*docs) if docs else None,
        )  # fmt: skip
        problem = await agent.start()
        err.print(f"[dim]{await agent.command('/readiness')}[/dim]" if problem is None else f"[red]{problem}[/red]")
        try:
            while (line := await _read()) is not None:
                await _turn(agent, line)
        finally:
            await agent.close()  # what is still in view passes the exit gate


async def _read() -> str | None:
    if sys.stdin.isatty():
        err.print("[bold]you>[/bold] ", end="")
    line = await asyncio.to_thread(sys.stdin.readline)
    return None if not line or line.lower().split()[:1] == [QUIT] else line.strip()


async def _turn(agent: Any, line: str) -> None:
    if not line:
        return
    if line.startswith("/") and not await _command(agent, line):
        return
    if line.startswith("/"):
        await agent.submit(line.split(maxsplit=1)[1], "internal_dmn")
    else:
        await agent.submit(line)
    for _ in range(CYCLES_PER_LINE):
        reply = await agent.cycle()
        if reply is None:
            return
        if reply.tag is not None and reply.tag.source != "external_user":
            err.print(f"[dim]({reply.tag.source}) {escape(reply.text)}[/dim]", highlight=False)
        for message in reply.outbox:
            out.print(message, markup=False, highlight=False, soft_wrap=True)


async def _command(agent: Any, line: str) -> bool:
    """Answer a command line; True when it is a thought (``/think TEXT``) for the loop to take in."""
    name, _, text = line.partition(" ")
    name = name.lower()
    if name == THINK and text.strip():
        return True
    if name == THINK:
        answer = f"usage: {THINK} {CHAT_COMMANDS[THINK][0]}: {CHAT_COMMANDS[THINK][1]}"
    elif name == HELP:
        answer = _help("commands:")
    elif name in _commands():
        answer = await agent.command(line)
    else:
        answer = _help(f"unknown command {name}; the commands are:")
    out.print(answer, markup=False, highlight=False, soft_wrap=True)
    return False
