"""The ``mnemo`` command line (typer + rich).

Every command opens the archive from settings (``MNEMO_*`` variables), prints a
rich table on a terminal or JSON with ``--json``, shows a progress bar on long
work only when stderr is a terminal, and turns any :class:`MnemoError` into one
clear line on stderr and exit status 1.
"""

from __future__ import annotations

import functools
import json
import logging
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from mnemo._sync import Archive
from mnemo.errors import MnemoError
from mnemo.models import MEMORY_KINDS, Hit, RecallResult, Refusal, Scope
from mnemo.night.cycle import STAGES as NIGHT_STAGES

__all__ = ["app", "main"]

app = typer.Typer(add_completion=False, no_args_is_help=True, help="mnemo: local-first long-term memory for agents.")
out = Console()
err = Console(stderr=True)
F = TypeVar("F", bound=Callable[..., Any])

EntityOpt = Annotated[str, typer.Option("--entity", "-e", envvar="MNEMO_ENTITY", help="Entity id of the scope.")]
NamespaceOpt = Annotated[str, typer.Option("--namespace", "-n", envvar="MNEMO_NAMESPACE", help="Namespace.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]


def _fail_cleanly(fn: F) -> F:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except MnemoError as exc:
            err.print(f"[bold red]error:[/] {exc}", highlight=False, markup=True, soft_wrap=True)
            raise typer.Exit(1) from None

    return wrapper  # type: ignore[return-value]


@contextmanager
def _progress(label: str) -> Iterator[Callable[[int, int], None]]:
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


def _open() -> Archive:
    logging.basicConfig(level=logging.WARNING, format="warning: %(message)s", stream=sys.stderr)
    return Archive()


def _hit_json(hit: Hit) -> dict[str, Any]:
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


def _print_recall(result: RecallResult | Refusal, as_json: bool) -> None:
    if as_json:
        out.print_json(
            json.dumps(
                {
                    "query": result.query,
                    "scope": str(result.scope),
                    "refused": result.refused,
                    "best_similarity": result.best_similarity,
                    "latency_ms": round(result.latency_ms, 2),
                    "weights": dict(getattr(result, "weights", {})),
                    "hits": [_hit_json(h) for h in result.hits],
                    **(
                        {"message": result.message, "threshold": result.threshold}
                        if isinstance(result, Refusal)
                        else {}
                    ),
                }
            )
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


@app.command()
@_fail_cleanly
def init(as_json: JsonOpt = False) -> None:
    """Create the database (embedded unless MNEMO_DATABASE_URL is set) and apply migrations."""
    with _open() as archive:
        status = archive.status()
    if as_json:
        out.print_json(json.dumps(status.as_dict()))
    else:
        out.print(f"mnemo is ready: {status.database} (pgvector {status.pgvector}), embedder {status.embedder}")


@app.command()
@_fail_cleanly
def remember(
    content: Annotated[str, typer.Argument(help="The memory text ('-' reads stdin).")],
    entity: EntityOpt = "default",
    namespace: NamespaceOpt = "default",
    kind: Annotated[str, typer.Option(help=f"One of {', '.join(MEMORY_KINDS)}.")] = "semantic",
    anchored: Annotated[bool, typer.Option(help="Anchored memories never decay.")] = False,
    candidate: Annotated[bool, typer.Option(help="Leave it as a candidate for the curator.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Store a curated memory."""
    text = sys.stdin.read() if content == "-" else content
    scope = Scope(entity, namespace)
    with _open() as archive:
        memory = archive.remember(
            scope, text, kind=kind, anchored=anchored, status="candidate" if candidate else "active"
        )
    if as_json:
        out.print_json(json.dumps({"id": str(memory.id), "scope": str(scope), "kind": memory.kind}))
    else:
        out.print(f"remembered {memory.id} in {scope}")


@app.command()
@_fail_cleanly
def record(
    content: Annotated[str, typer.Argument(help="The turn text ('-' reads stdin).")],
    session: Annotated[str, typer.Option("--session", "-s", help="Session id.")] = "default",
    role: Annotated[str, typer.Option(help="user, assistant, system or tool.")] = "user",
    speaker: Annotated[str | None, typer.Option(help="Speaker name.")] = None,
    entity: EntityOpt = "default",
    namespace: NamespaceOpt = "default",
    as_json: JsonOpt = False,
) -> None:
    """Record one raw conversation turn."""
    text = sys.stdin.read() if content == "-" else content
    scope = Scope(entity, namespace)
    with _open() as archive:
        turn = archive.record_turn(scope, session, role, text, speaker=speaker)
    if as_json:
        out.print_json(json.dumps({"id": str(turn.id), "session": turn.session_id, "turn": turn.turn_number}))
    else:
        out.print(f"recorded turn {turn.turn_number} of session {turn.session_id!r} in {scope}")


@app.command("import")
@_fail_cleanly
def import_(
    path: Annotated[Path, typer.Argument(help="A .jsonl file of turns or a LoCoMo .json file.")],
    fmt: Annotated[str, typer.Option("--format", help="auto, jsonl or locomo.")] = "auto",
    sample: Annotated[str | None, typer.Option(help="LoCoMo: import only this sample_id.")] = None,
    entity: EntityOpt = "default",
    namespace: NamespaceOpt = "default",
    as_json: JsonOpt = False,
) -> None:
    """Import a conversation file (all or nothing)."""
    scope = Scope(entity, namespace)
    with _open() as archive, _progress("embedding") as progress:
        report = archive.import_file(scope, path, fmt=fmt, sample=sample, progress=progress)
    if as_json:
        out.print_json(
            json.dumps(
                {
                    "scope": str(scope),
                    "format": report.format,
                    "turns": report.turns,
                    "sessions": report.sessions,
                    "seconds": round(report.seconds, 3),
                }
            )
        )
    else:
        out.print(
            f"imported {report.turns} turns in {report.sessions} sessions ({report.format}) into {scope} "
            f"in {report.seconds:.1f}s"
        )


@app.command()
@_fail_cleanly
def recall(
    query: Annotated[str, typer.Argument(help="What to recall.")],
    k: Annotated[int, typer.Option("-k", help="How many hits.")] = 5,
    entity: EntityOpt = "default",
    namespace: NamespaceOpt = "default",
    as_entity: Annotated[str | None, typer.Option(help="Read as this entity (needs a grant).")] = None,
    threshold: Annotated[float | None, typer.Option(help="Refusal threshold (cosine similarity).")] = None,
    read_only: Annotated[bool, typer.Option(help="No retrieval side effects.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Recall memories and turns for a query: hybrid search, then the cognitive blend (table: similarity,
    ACT-R activation, Beta weight, recency; --json shows every component)."""
    with _open() as archive:
        result = archive.recall(
            Scope(entity, namespace), query, k, as_entity=as_entity, threshold=threshold, read_only=read_only
        )
    _print_recall(result, as_json)


@app.command()
@_fail_cleanly
def context(
    text: Annotated[str, typer.Argument(help="What the agent is attending to (the current message).")],
    budget: Annotated[int, typer.Option(help="Token budget for the block (embedder tokenizer).")] = 1000,
    entity: EntityOpt = "default",
    namespace: NamespaceOpt = "default",
    seed: Annotated[int | None, typer.Option(help="Seed for the identity rolls and blend.")] = None,
    read_only: Annotated[bool, typer.Option(help="No retrieval side effects.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Print the context block to prepend for TEXT: anchored, identity and situational memories."""
    with _open() as archive:
        block = archive.context(Scope(entity, namespace), text, budget, seed=seed, read_only=read_only)
    if as_json:
        out.print_json(json.dumps(block.as_dict()))
        return
    out.print(block.text or "[yellow](nothing to inject)[/]", markup=not block.text, highlight=False)
    tracks = ", ".join(
        f"{t}: {sum(1 for i in block.items if i.track == t)}" for t in ("anchored", "identity", "situational")
    )
    err.print(f"{block.tokens}/{block.budget} tokens · {tracks}" + (" · recall refused" if block.refused else ""))


@app.command()
@_fail_cleanly
def why(
    memory_id: Annotated[str, typer.Argument(help="The memory's id.")],
    entity: EntityOpt = "default",
    namespace: NamespaceOpt = "default",
    as_json: JsonOpt = False,
) -> None:
    """Show a memory's weight history from the audit log."""
    with _open() as archive:
        h = archive.why(Scope(entity, namespace), memory_id)
    if as_json:
        out.print_json(
            json.dumps(
                {
                    "id": str(h.id),
                    "content": h.content,
                    "kind": h.kind,
                    "status": h.status,
                    "anchored": h.anchored,
                    "alpha": h.alpha,
                    "beta": h.beta,
                    "center": h.center,
                    "access_count": h.access_count,
                    "changes": [
                        {
                            "at": c.at.isoformat(),
                            "operation": c.operation,
                            "gain": c.gain,
                            "old": c.old,
                            "new": c.new,
                            "center": c.center,
                            "reason": c.reason,
                            "evidence": dict(c.evidence),
                            "blocked": c.blocked,
                            "ceilings": list(c.ceilings),
                        }
                        for c in h.changes
                    ],
                }
            )
        )
        return
    out.print(
        f"[bold]{h.content}[/]\n{h.kind} · {h.status}{' · anchored' if h.anchored else ''} · "
        f"Beta({h.alpha:.2f}, {h.beta:.2f}) centre {h.center:.3f} · recalled {h.access_count}x"
    )
    table = Table(title=f"weight history of {h.id}")
    for col in ("when", "change", "centre", "alpha, beta", "reason", "ceilings"):
        table.add_column(col)
    for c in h.changes:
        before = "-" if c.old is None else f"{c.old[0] / (c.old[0] + c.old[1]):.3f}"
        table.add_row(
            c.at.strftime("%Y-%m-%d %H:%M:%S"),
            f"{c.operation} {c.gain:g}" + (" (blocked)" if c.blocked else ""),
            f"{before} -> {c.center:.3f}",
            f"{c.new[0]:.2f}, {c.new[1]:.2f}",
            c.reason + ("" if not c.evidence.get("query") else f": {c.evidence['query']!r}"),
            ", ".join(c.ceilings) or "-",
        )
    out.print(table)


@app.command()
@_fail_cleanly
def observe(
    content: Annotated[str, typer.Argument(help="One item of the agent's stream.")],
    entity: EntityOpt = "default",
    namespace: NamespaceOpt = "default",
    kind: Annotated[str, typer.Option(help="Memory kind if it is persisted.")] = "episodic",
    flush: Annotated[bool, typer.Option(help="Run the exit gate right after.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Offer content to the entry gate (scratch buffer); the exit gate decides what becomes memory."""
    scope = Scope(entity, namespace)
    with _open() as archive:
        seen = archive.observe(scope, content, kind=kind)
        report = seen.flushed or (archive.flush(scope) if flush else None)
    outcomes = [] if report is None else list(report.outcomes)
    if as_json:
        out.print_json(
            json.dumps(
                {
                    "item_id": str(seen.item_id),
                    "entry": seen.action,
                    "reason": seen.reason,
                    "exit": [
                        {
                            "item_id": str(o.item_id),
                            "action": o.action,
                            "reason": o.reason,
                            "relevance": o.relevance,
                            "similarity": o.similarity,
                            "contradiction": o.contradiction,
                            "memory_id": None if o.memory_id is None else str(o.memory_id),
                        }
                        for o in outcomes
                    ],
                }
            )
        )
        return
    out.print(f"entry gate: {seen.action} ({seen.reason})")
    for o in outcomes:
        out.print(f"exit gate: {o.action} ({o.reason}) {o.content[:60]!r}")


@app.command()
@_fail_cleanly
def forget(
    item_id: Annotated[str, typer.Argument(help="The turn's or memory's id.")],
    entity: EntityOpt = "default",
    namespace: NamespaceOpt = "default",
    as_json: JsonOpt = False,
) -> None:
    """Remove one turn or memory from every chamber (rows, vectors, links, traces)."""
    with _open() as archive:
        removed = archive.forget(Scope(entity, namespace), item_id)
    if as_json:
        out.print_json(json.dumps({"forgotten": item_id, "removed": removed}))
        return
    out.print(f"forgot {item_id}: " + ", ".join(f"{k} {v}" for k, v in removed.items() if v))


@app.command()
@_fail_cleanly
def purge(
    entity: EntityOpt = "default",
    namespace: NamespaceOpt = "default",
    yes: Annotated[bool, typer.Option("--yes", help="Confirm: this deletes the whole scope.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Remove a whole scope (entity/namespace) from every chamber. Needs --yes."""
    scope = Scope(entity, namespace)
    if not yes:
        raise typer.BadParameter(f"purging {scope} deletes all of it; add --yes to confirm", param_hint="--yes")
    with _open() as archive:
        removed = archive.purge(scope)
    if as_json:
        out.print_json(json.dumps({"purged": str(scope), "removed": removed}))
        return
    out.print(f"purged {scope}: " + ", ".join(f"{k} {v}" for k, v in removed.items() if v))


@app.command()
@_fail_cleanly
def mcp(
    entity: EntityOpt = "default",
    namespace: NamespaceOpt = "default",
    http: Annotated[bool, typer.Option("--http", help="Serve streamable HTTP instead of stdio.")] = False,
    host: Annotated[str, typer.Option(help="HTTP host (with --http).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="HTTP port (with --http).")] = 8765,
    auth: Annotated[
        bool,
        typer.Option("--auth", help="With --http: require a bearer token (mnemo token create); it sets the scope."),
    ] = False,
) -> None:
    """Serve one scope's memory to MCP clients (tools: recall, remember, context, forget)."""
    from mnemo.config import load_settings
    from mnemo.interfaces.mcp import build_server

    if auth and not http:
        raise typer.BadParameter("--auth needs --http (stdio has no bearer tokens)", param_hint="--auth")
    logging.basicConfig(level=logging.WARNING, format="mnemo: %(message)s", stream=sys.stderr)
    server = build_server(load_settings(), Scope(entity, namespace), auth=auth, url=f"http://{host}:{port}")
    if http:
        server.run("streamable-http", host=host, port=port)
    else:
        server.run("stdio")


@app.command()
@_fail_cleanly
def status(as_json: JsonOpt = False) -> None:
    """Counts per chamber, embedder slug, database location, background jobs by status."""
    with _open() as archive:
        st = archive.status()
    if as_json:
        out.print_json(json.dumps(st.as_dict()))
        return
    table = Table(title="mnemo status", show_header=False)
    table.add_row("database", st.database)
    table.add_row("pgvector", st.pgvector)
    table.add_row("embedder", st.embedder)
    table.add_row("vector space", st.vector_table)
    for name, count in st.counts.items():
        table.add_row(name, f"{count:,}")
    for tbl, slug, rows in st.vectors:
        table.add_row(f"vectors {tbl}", f"{rows:,} x {slug}")
    table.add_row("pending re-embed", f"[yellow]{st.pending_reembed:,}[/]" if st.pending_reembed else "0")
    for state, count in st.queue.items():
        table.add_row(f"queue {state}", f"[red]{count:,}[/]" if state == "failed" and count else f"{count:,}")
    out.print(table)


@app.command()
@_fail_cleanly
def reembed(
    batch_size: Annotated[int, typer.Option(min=1, max=10_000)] = 256,
    background: Annotated[bool, typer.Option("--background", help="Queue it for `mnemo worker` instead.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Re-embed items stored with another model (resumable; safe to interrupt)."""
    if background:
        with _open() as archive:
            job = archive.defer_reembed()
        if as_json:
            out.print_json(json.dumps({"job": job, "queued": job is not None}))
        else:
            out.print(f"queued re-embed job {job}" if job is not None else "a re-embed job is already waiting")
        return
    with _open() as archive, _progress("re-embedding") as progress:
        done = archive.reembed(batch_size=batch_size, progress=progress)
        left = archive.pending_reembed
    if as_json:
        out.print_json(json.dumps({"reembedded": done, "pending": left}))
    else:
        out.print(f"re-embedded {done:,} items; {left:,} pending")


@app.command()
@_fail_cleanly
def worker(
    concurrency: Annotated[int, typer.Option("--concurrency", "-c", min=1, max=64, help="Jobs run at once.")] = 1,
    queue: Annotated[
        list[str] | None, typer.Option("--queue", "-q", help="ingest, maintenance or night (repeatable; default all).")
    ] = None,
    wait: Annotated[bool, typer.Option("--wait/--no-wait", help="--no-wait: stop once the queues are empty.")] = True,
    heartbeat: Annotated[float, typer.Option(min=0.1, help="Seconds between liveness updates.")] = 10.0,
    stalled_after: Annotated[
        float, typer.Option(min=0.2, help="A worker silent this long is presumed dead; its jobs run again.")
    ] = 30.0,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log every job.")] = False,
) -> None:
    """Run background jobs: embeddings of turns stored with MNEMO_INGEST_MODE=async, re-embeds, and the
    night cycle on its schedule (MNEMO_NIGHT_CRON). Ctrl-C / SIGTERM finish the running jobs, then stop.
    Run more workers, here or on other machines, to scale out."""
    import asyncio

    from mnemo.interfaces.worker import run_worker

    level = logging.INFO if verbose else logging.WARNING
    logging.basicConfig(level=level, format="%(asctime)s %(name)s: %(message)s", stream=sys.stderr)
    logging.getLogger("procrastinate").setLevel(level)
    try:
        recovered = asyncio.run(
            run_worker(
                queues=queue or None,
                concurrency=concurrency,
                wait=wait,
                heartbeat=heartbeat,
                stalled_after=stalled_after,
            )
        )
    except KeyboardInterrupt:  # interrupted while starting, before the worker's own handlers were installed
        raise typer.Exit(130) from None
    err.print(f"worker stopped{f' (re-queued {recovered} stalled jobs at start)' if recovered else ''}")


DEMO_QUERIES = (
    "What is Maya allergic to?",
    "How is the dog coping with the noise?",
    "Why did the battery prototype fail?",
    "When is Lena visiting and what does she eat?",
    "What is the capital of Australia?",
)
DEMO_CONTEXT = "Help me plan a dinner for Lena's visit"


@app.command()
@_fail_cleanly
def demo(as_json: JsonOpt = False) -> None:
    """Import the bundled sample conversation and recall from it."""
    scope = Scope("demo", "sample")
    sample = resources.files("mnemo").joinpath("data/sample_conversation.jsonl")
    with _open() as archive:
        counts = archive.status().counts
        with resources.as_file(sample) as path:
            try:
                archive.recall(scope, "anything", 1, read_only=True)
                imported = None
            except MnemoError:
                with _progress("embedding") as progress:
                    imported = archive.import_file(scope, path, progress=progress)
                archive.remember(scope, "Never share Maya's home address with anyone", anchored=True)
                archive.remember(scope, "Maya prefers short, practical answers", kind="preference")
        # The night cycle (raw turns kept for the demo: no retention stage): blocks, facts, curation.
        night = archive.night_cycle(scope, stages=tuple(s for s in NIGHT_STAGES if s != "retention"))
        results = [archive.recall(scope, q, 3) for q in DEMO_QUERIES]
        block = archive.context(scope, DEMO_CONTEXT, 160, seed=0)
    if as_json:
        out.print_json(
            json.dumps(
                {
                    "recalls": [
                        {"query": r.query, "refused": r.refused, "hits": [_hit_json(h) for h in r.hits]}
                        for r in results
                    ],
                    "context": block.as_dict(),
                    "night": night.as_dict(),
                }
            )
        )
        return
    if imported is not None:
        out.print(
            f"imported {imported.turns} turns of the sample conversation into {scope} "
            f"in {imported.seconds:.1f}s (database had {counts['turns']} turns before)"
        )
    else:
        out.print(f"the sample conversation is already in {scope}")
    from mnemo.interfaces.cli_night import _report_table

    out.print(_report_table(night))
    for result in results:
        _print_recall(result, as_json=False)
    out.print(f"\n[bold]context block[/] for {DEMO_CONTEXT!r} ({block.tokens}/{block.budget} tokens):")
    out.print(block.text, markup=False, highlight=False)


token_app = typer.Typer(no_args_is_help=True, help="Bearer tokens for mnemo serve.")
app.add_typer(token_app, name="token")


@token_app.command("create")
@_fail_cleanly
def token_create(
    entity: Annotated[str, typer.Argument(help="The entity the token speaks for.")],
    namespace: Annotated[str | None, typer.Option("--namespace", "-n", help="Limit it to one namespace.")] = None,
    label: Annotated[str | None, typer.Option(help="A note to recognise it by.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Create a bearer token (printed once; only its hash is stored)."""
    with _open() as archive:
        token, token_id = archive.create_token(entity, namespace=namespace, label=label)
    if as_json:
        out.print_json(json.dumps({"token": token, "id": str(token_id), "entity": entity, "namespace": namespace}))
        return
    out.print(token, markup=False, highlight=False)
    err.print(
        f"token {token_id} for {entity}{'/' + namespace if namespace else ''}: store it now, it is not shown again"
    )


@token_app.command("revoke")
@_fail_cleanly
def token_revoke(
    entity: Annotated[str, typer.Argument(help="The token's entity.")],
    token_id: Annotated[str, typer.Argument(help="The token's id (from create).")],
) -> None:
    """Revoke a token: requests with it get 401 from now on."""
    with _open() as archive:
        done = archive.revoke_token(entity, token_id)
    if not done:
        raise MnemoError(f"no active token {token_id} for {entity}")
    out.print(f"revoked {token_id}")


@app.command()
@_fail_cleanly
def serve(
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port.")] = 8080,
) -> None:
    """Serve the HTTP API (OpenAPI at /docs); every request needs a token from `mnemo token create`."""
    import uvicorn

    from mnemo.config import load_settings
    from mnemo.interfaces.http import create_app

    logging.basicConfig(level=logging.WARNING, format="mnemo: %(message)s", stream=sys.stderr)
    uvicorn.run(create_app(load_settings()), host=host, port=port, log_level="warning")


bench_app = typer.Typer(no_args_is_help=True, help="Benchmarks: retrieval quality and performance.")
app.add_typer(bench_app, name="bench")


def _overrides(pairs: list[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise typer.BadParameter(f"--set expects KEY=VALUE, got {pair!r}")
        out[key.strip().replace("-", "_")] = value.strip()
    return out


@bench_app.command("locomo")
@_fail_cleanly
def bench_locomo(
    path: Annotated[Path, typer.Argument(help="A LoCoMo-format file, e.g. ../shared/bench/locomo/locomo-dev.json.")],
    json_out: Annotated[Path | None, typer.Option("--json", help="Write every figure to this JSON file.")] = None,
    set_: Annotated[list[str] | None, typer.Option("--set", help="Override a setting, KEY=VALUE (repeatable).")] = None,
    baselines: Annotated[bool, typer.Option(help="Also run the BM25 and dense baselines.")] = True,
    ablate: Annotated[bool, typer.Option(help="Also run with each recall piece switched off.")] = False,
    night: Annotated[
        bool, typer.Option("--night", help="Run the night cycle first; recall turns, blocks, facts and insights.")
    ] = False,
) -> None:
    """Retrieval quality on LoCoMo: recall@k per category, evidence within token budgets, latency."""
    import asyncio

    from mnemo.bench.locomo import ABLATIONS, run_locomo
    from mnemo.bench.report import print_ablation, print_locomo
    from mnemo.config import load_settings
    from mnemo.embed import load_embedder

    if not path.is_file():
        raise typer.BadParameter(f"{path} is not a file", param_hint="PATH")
    overrides = _overrides(set_ or [])
    settings = load_settings(**overrides)  # validates the overrides before the long run
    embeddings = load_embedder(
        settings.embedder, batch_size=settings.embed_batch_size, kind_prefixes=settings.kind_prefixes
    )

    def run(extra: dict[str, object], with_baselines: bool, label: str) -> dict[str, Any]:
        with _progress(label) as progress:
            return asyncio.run(
                run_locomo(
                    path,
                    embeddings=embeddings,
                    overrides={**overrides, **extra},
                    baselines=with_baselines,
                    database_url=settings.database_url,
                    progress=lambda _name, done, total: progress(done, total),
                    night=night,
                )
            )

    result = run({}, baselines, "recall")
    print_locomo(result, out)
    if ablate:
        rows = [("all pieces on", result["systems"]["mnemo"])]
        result["ablation"] = {}
        for name, extra in ABLATIONS.items():
            scores = run(extra, False, f"without {name}")["systems"]["mnemo"]
            rows.append((f"without {name}", scores))
            result["ablation"][name] = {"overrides": extra, "scores": scores}
        print_ablation(rows, out)
    if json_out is not None:
        json_out.write_text(json.dumps(result, indent=2))
        out.print(f"wrote {json_out}")


@bench_app.command("dynamics")
@_fail_cleanly
def bench_dynamics(
    json_out: Annotated[Path | None, typer.Option("--json", help="Write every figure to this JSON file.")] = None,
    seed: Annotated[int, typer.Option(help="Seed for the world and the usage stream.")] = 0,
    topics: Annotated[int, typer.Option(help="Pairs of equally similar facts (one used, one not).")] = 40,
    updates: Annotated[int, typer.Option(help="Facts replaced halfway by a newer fact.")] = 20,
    fillers: Annotated[int, typer.Option(help="Unrelated facts.")] = 40,
    sessions: Annotated[int, typer.Option(help="Simulated days of use.")] = 10,
    use_k: Annotated[int, typer.Option(help="k of each usage recall (its hits are reinforced).")] = 1,
    set_: Annotated[list[str] | None, typer.Option("--set", help="Override a setting, KEY=VALUE (repeatable).")] = None,
) -> None:
    """Scenario: after sessions of use, do used facts outrank equally similar unused ones, and updates
    the facts they superseded? With dynamics vs a static store."""
    import asyncio

    from mnemo.bench.dynamics import run_dynamics
    from mnemo.config import load_settings
    from mnemo.embed import load_embedder

    overrides = _overrides(set_ or [])
    settings = load_settings(**overrides)
    embeddings = load_embedder(
        settings.embedder, batch_size=settings.embed_batch_size, kind_prefixes=settings.kind_prefixes
    )
    with _progress("sessions") as progress:
        result = asyncio.run(
            run_dynamics(
                embeddings=embeddings,
                database_url=settings.database_url,
                overrides=overrides,
                seed=seed,
                topics=topics,
                updates=updates,
                fillers=fillers,
                sessions=sessions,
                use_k=use_k,
                progress=lambda _name, done, total: progress(done, total),
            )
        )
    table = Table(title=f"dynamics scenario: {topics} pairs, {updates} updates, {fillers} fillers, {sessions} sessions")
    for col in ("system", "used > unused", "  (equal sim)", "mean rank used / unused", "update > superseded", "s"):
        table.add_column(col, justify="right")
    for name, f in result["systems"].items():
        table.add_row(
            name,
            f"{f['used_above_unused']:.1f}%",
            f"{f['used_above_unused_equal_similarity']:.1f}% of {f['equal_similarity_pairs']}",
            f"{f['mean_rank_used']:.2f} / {f['mean_rank_unused']:.2f}",
            f"{f['update_above_superseded']:.1f}%",
            f"{f['seconds']:.0f}",
        )
    out.print(table)
    if json_out is not None:
        json_out.write_text(json.dumps(result, indent=2))
        out.print(f"wrote {json_out}")


@bench_app.command("perf")
@_fail_cleanly
def bench_perf(
    locomo: Annotated[Path, typer.Option(help="Source of realistic sentences (LoCoMo format).")] = Path(
        "../shared/bench/locomo/locomo-dev.json"
    ),
    scale: Annotated[list[int] | None, typer.Option(help="Memories in one scope (repeatable).")] = None,
    queries: Annotated[int, typer.Option(min=10, help="Recalls timed per scale.")] = 1000,
    ingest_turns: Annotated[int, typer.Option(min=100, help="Turns for the ingest measurement.")] = 2000,
    cache_dir: Annotated[Path | None, typer.Option(help="Where corpus embeddings are cached.")] = None,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write every figure to this JSON file.")] = None,
) -> None:
    """Ingest throughput, recall latency (p50/p95/p99) and ANN recall@10 at 10k and 100k memories."""
    import asyncio

    from mnemo.bench.perf import run_perf
    from mnemo.bench.report import print_perf
    from mnemo.config import load_settings
    from mnemo.embed import load_embedder

    if not locomo.is_file():
        raise typer.BadParameter(f"{locomo} is not a file", param_hint="--locomo")
    settings = load_settings()
    embeddings = load_embedder(
        settings.embedder, batch_size=settings.embed_batch_size, kind_prefixes=settings.kind_prefixes
    )
    with _progress("perf") as progress:
        result = asyncio.run(
            run_perf(
                locomo,
                embeddings=embeddings,
                scales=tuple(scale or (10_000, 100_000)),
                queries=queries,
                ingest_turns=ingest_turns,
                cache_dir=cache_dir or settings.home / "bench-cache",
                progress=lambda _label, done, total: progress(done, total),
            )
        )
    print_perf(result, out)
    if json_out is not None:
        json_out.write_text(json.dumps(result, indent=2))
        out.print(f"wrote {json_out}")


# Commands defined in sibling modules register themselves on `app` when imported.
from mnemo.interfaces import cli_night  # noqa: E402, F401


def main() -> None:
    """Console-script entry point."""
    app()
