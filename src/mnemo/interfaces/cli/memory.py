"""Memory commands: ``init``, ``remember``, ``record``, ``import``, ``recall``, ``context``, ``why``,
``observe``, ``forget``, ``purge``."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from mnemo._validate import (
    check_content,
    check_id,
    check_idempotency_key,
    check_kind,
    check_query,
    check_role,
    check_session,
    to_utc,
)
from mnemo.errors import InvalidContentError
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
    print_recall,
    progress,
    service,
    settings,
)
from mnemo.interfaces.shapes import (
    ContextIn,
    FileImportOut,
    FileSkippedOut,
    ForgetOut,
    PurgeOut,
    RecallIn,
    RememberIn,
    TurnIn,
    dump,
    request_body,
)
from mnemo.models import MEMORY_KINDS, Scope, to_jsonable

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    """Add the memory commands to ``app``."""
    app.command()(init)
    app.command()(remember)
    app.command()(record)
    app.command("import")(import_)
    app.command()(recall)
    app.command()(context)
    app.command()(why)
    app.command()(observe)
    app.command()(forget)
    app.command()(purge)


@fail_cleanly
def init(as_json: JsonOpt = False) -> None:
    """Create the database (embedded unless MNEMO_DATABASE_URL is set) and apply migrations."""
    with open_archive() as archive:
        status = archive.status()
    if as_json:
        print_json(to_jsonable(status))
    else:
        out.print(
            f"mnemo is ready: {status.database} (pgvector {status.pgvector}), embedder {status.embedder}",
            markup=False,
            highlight=False,
        )


@fail_cleanly
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
    config = settings()
    check_content(text, max_chars=config.max_content_chars)  # bad input fails before anything starts
    check_kind(kind)
    if not anchored and not candidate and (svc := service(config)) is not None:
        body = request_body(RememberIn, content=text, kind=kind, namespace=namespace)
        saved = ask(svc, "POST", "/v1/memories", entity, body)
    else:
        with open_archive(config) as archive:
            memory = archive.remember(
                scope, text, kind=kind, anchored=anchored, status="candidate" if candidate else "active"
            )
        saved = to_jsonable(memory)
    if as_json:
        print_json(saved)
    else:
        out.print(f"remembered {saved['id']} in {scope}")


@fail_cleanly
def record(
    content: Annotated[str, typer.Argument(help="The turn text ('-' reads stdin).")],
    session: Annotated[str, typer.Option("--session", "-s", help="Session id.")] = "default",
    role: Annotated[str, typer.Option(help="user, assistant, system or tool.")] = "user",
    speaker: Annotated[str | None, typer.Option(help="Speaker name.")] = None,
    key: Annotated[
        str | None,
        typer.Option(
            "--key",
            help="An idempotency key: recording again with the same key stores nothing (a safe retry).",
        ),
    ] = None,
    entity: EntityOpt = "default",
    namespace: NamespaceOpt = "default",
    as_json: JsonOpt = False,
) -> None:
    """Record one raw conversation turn (again with the same --key: nothing stored, it says so)."""
    text = sys.stdin.read() if content == "-" else content
    scope = Scope(entity, namespace)
    config = settings()
    check_session(session)
    check_role(role)
    check_content(text, max_chars=config.max_content_chars)
    if key is not None:
        check_idempotency_key(key, label="--key")
    if (svc := service(config)) is not None:
        fields = {"session": session, "role": role, "content": text, "speaker": speaker, "namespace": namespace}
        body = request_body(TurnIn, **fields, idempotency_key=key)
        turn = ask(svc, "POST", "/v1/turns", entity, body)
    else:
        with open_archive(config) as archive:
            turn = to_jsonable(archive.record_turn(scope, session, role, text, speaker=speaker, idempotency_key=key))
    if as_json:
        print_json(turn)
        return
    done = "already recorded (a repeat: nothing stored):" if turn.get("repeat") else "recorded"
    out.print(
        f"{done} turn {turn['turn_number']} of session {turn['session_id']!r} in {scope}",
        markup=False,
        highlight=False,
    )


@fail_cleanly
def import_(
    path: Annotated[Path, typer.Argument(help="A .jsonl file of turns or a LoCoMo .json file.")],
    fmt: Annotated[str, typer.Option("--format", help="auto, jsonl or locomo.")] = "auto",
    sample: Annotated[str | None, typer.Option(help="LoCoMo: import only this sample_id.")] = None,
    skip_invalid: Annotated[
        bool,
        typer.Option(
            "--skip-invalid", help="Import the valid turns and list each invalid line with its reason (on stderr)."
        ),
    ] = False,
    entity: EntityOpt = "default",
    namespace: NamespaceOpt = "default",
    as_json: JsonOpt = False,
) -> None:
    """Import a conversation file: all or nothing, unless --skip-invalid."""
    scope = Scope(entity, namespace)
    with open_archive() as archive, progress("embedding") as update:
        report = archive.import_file(scope, path, fmt=fmt, sample=sample, progress=update, skip_invalid=skip_invalid)
    if as_json:
        left_out = [FileSkippedOut(line=line, reason=reason) for line, reason in report.skipped]
        print_json(
            dump(
                FileImportOut(
                    scope=str(scope),
                    format=report.format,
                    turns=report.turns,
                    sessions=report.sessions,
                    seconds=round(report.seconds, 3),
                    skipped=left_out,
                    skipped_repeats=report.skipped_repeats,
                )
            )
        )
        return
    for line, reason in report.skipped:
        where = f"line {line}" if line is not None else "turn"
        err.print(f"skipped {where}: {reason}", markup=False, highlight=False, soft_wrap=True)
    skipped = f"; skipped {len(report.skipped)} invalid" if report.skipped else ""
    if report.skipped_repeats:
        skipped += f"; skipped {report.skipped_repeats} already stored (repeats)"
    out.print(
        f"imported {report.turns} turns in {report.sessions} sessions ({report.format}) into {scope} "
        f"in {report.seconds:.1f}s{skipped}",
        markup=False,
        highlight=False,
    )


AsOfOpt = Annotated[
    str | None,
    typer.Option("--as-of", help="Recall as at this time (ISO-8601, UTC without an offset): nothing written after it."),
]


@fail_cleanly
def recall(
    query: Annotated[str, typer.Argument(help="What to recall.")],
    k: Annotated[int, typer.Option("-k", help="How many hits.")] = 5,
    entity: EntityOpt = "default",
    namespace: NamespaceOpt = "default",
    as_entity: Annotated[str | None, typer.Option(help="Read as this entity (needs a grant).")] = None,
    threshold: Annotated[float | None, typer.Option(help="Refusal threshold (cosine similarity).")] = None,
    read_only: Annotated[bool, typer.Option(help="No retrieval side effects.")] = False,
    as_of: AsOfOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Recall memories and turns for a query: hybrid search, then the cognitive blend (table: similarity,
    ACT-R activation, Beta weight, recency; --json shows every component)."""
    config = settings()
    check_query(query, max_chars=config.max_content_chars)
    if not 1 <= k <= config.max_k:
        raise InvalidContentError(f"k must be an integer between 1 and {config.max_k}, not {k!r}")
    when = None if as_of is None else to_utc(as_of, label="--as-of")
    scope = Scope(entity, namespace)
    if as_entity is not None:
        Scope(as_entity)  # a malformed reader fails here, as in the archive
    if (svc := service(config)) is not None:
        body = request_body(
            RecallIn, query=query, k=k, namespace=namespace, threshold=threshold, read_only=read_only,
            as_of=None if when is None else when.isoformat(),
            owner=None if as_entity in (None, entity) else entity,  # read as the grantee: the service checks the grant
        )  # fmt: skip
        print_recall(ask(svc, "POST", "/v1/recall", as_entity or entity, body), as_json)
        return
    with open_archive(config) as archive:
        result = archive.recall(
            scope,
            query,
            k,
            as_entity=as_entity,
            threshold=threshold,
            read_only=read_only,
            as_of=when,
        )
    print_recall(result, as_json)


@fail_cleanly
def context(
    text: Annotated[str, typer.Argument(help="What the agent is attending to (the current message).")],
    budget: Annotated[int, typer.Option(help="Token budget for the block (embedder tokenizer).")] = 1000,
    entity: EntityOpt = "default",
    namespace: NamespaceOpt = "default",
    seed: Annotated[int | None, typer.Option(help="Seed for the identity rolls and blend.")] = None,
    read_only: Annotated[bool, typer.Option(help="No retrieval side effects.")] = False,
    as_of: AsOfOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Print the context block to prepend for TEXT: anchored, identity and situational memories."""
    config = settings()
    check_query(text, max_chars=config.max_content_chars, label="attention text")
    when = None if as_of is None else to_utc(as_of, label="--as-of")
    if seed is None and not read_only and (svc := service(config)) is not None:
        body = request_body(
            ContextIn, text=text, budget=budget, namespace=namespace, as_of=None if when is None else when.isoformat()
        )
        block = ask(svc, "POST", "/v1/context", entity, body)
    else:
        with open_archive(config) as archive:
            made = archive.context(Scope(entity, namespace), text, budget, seed=seed, read_only=read_only, as_of=when)
        block = to_jsonable(made)
    if as_json:
        print_json(block)
        return
    out.print(block["text"] or "[yellow](nothing to inject)[/]", markup=not block["text"], highlight=False)
    tracks = ", ".join(
        f"{t}: {sum(1 for i in block['items'] if i['track'] == t)}" for t in ("anchored", "identity", "situational")
    )
    refused = " · recall refused" if block["refused"] else ""
    err.print(f"{block['tokens']}/{block['budget']} tokens · {tracks}" + refused)


@fail_cleanly
def why(
    memory_id: Annotated[str, typer.Argument(help="The memory's id.")],
    entity: EntityOpt = "default",
    namespace: NamespaceOpt = "default",
    as_json: JsonOpt = False,
) -> None:
    """Show a memory's weight history from the audit log."""
    check_id(memory_id, label="memory id")
    with open_archive() as archive:
        h = archive.inspect.why(Scope(entity, namespace), memory_id)
    if as_json:
        print_json(to_jsonable(h))
        return
    out.print(
        Text.assemble(
            (h.content, "bold"),
            f"\n{h.kind} · {h.status}{' · anchored' if h.anchored else ''} · "
            f"Beta({h.alpha:.2f}, {h.beta:.2f}) centre {h.center:.3f} · recalled {h.access_count}x",
        ),
        highlight=False,
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
            Text(c.reason + ("" if not c.evidence.get("query") else f": {c.evidence['query']!r}")),
            Text(", ".join(c.ceilings) or "-"),
        )
    out.print(table)


@fail_cleanly
def observe(
    content: Annotated[str, typer.Argument(help="One item of the agent's stream.")],
    entity: EntityOpt = "default",
    namespace: NamespaceOpt = "default",
    kind: Annotated[str, typer.Option(help="Memory kind if it is persisted.")] = "episodic",
    flush: Annotated[bool, typer.Option(help="Run the exit gate right after.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Offer content to the entry gate (scratch buffer); the exit gate decides what becomes memory.

    --json: the observation, with the exit gate's report (its own, or --flush's) as ``flushed``."""
    scope = Scope(entity, namespace)
    config = settings()
    check_content(content, max_chars=config.max_content_chars)
    check_kind(kind)
    with open_archive(config) as archive:
        seen = archive.observe(scope, content, kind=kind)
        report = seen.flushed or (archive.flush(scope) if flush else None)
    if as_json:
        print_json(to_jsonable(replace(seen, flushed=report)))
        return
    outcomes = () if report is None else report.outcomes
    out.print(f"entry gate: {seen.action} ({seen.reason})", markup=False, highlight=False)
    for o in outcomes:
        out.print(f"exit gate: {o.action} ({o.reason}) {o.content[:60]!r}", markup=False, highlight=False)


@fail_cleanly
def forget(
    item_id: Annotated[str, typer.Argument(help="The turn's or memory's id.")],
    entity: EntityOpt = "default",
    namespace: NamespaceOpt = "default",
    as_json: JsonOpt = False,
) -> None:
    """Remove one turn or memory from every chamber (rows, vectors, links, traces)."""
    wanted = check_id(item_id, label="item id")
    with open_archive() as archive:
        removed = archive.forget(Scope(entity, namespace), wanted)
    if as_json:
        print_json(dump(ForgetOut(forgotten=wanted, removed=removed)))
        return
    out.print(f"forgot {item_id}: " + ", ".join(f"{k} {v}" for k, v in removed.items() if v), markup=False)


@fail_cleanly
def purge(
    entity: EntityOpt = "default",
    namespace: NamespaceOpt = "default",
    all_namespaces: Annotated[
        bool, typer.Option("--all-namespaces", help="Purge every namespace of the entity (ignores --namespace).")
    ] = False,
    yes: Annotated[bool, typer.Option("--yes", help="Confirm: this deletes the whole scope.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Remove a whole scope (entity/namespace), or with --all-namespaces every scope of the entity,
    from every chamber. Needs --yes."""
    target = f"every namespace of {Scope(entity).entity_id}" if all_namespaces else str(Scope(entity, namespace))
    if not yes:
        raise typer.BadParameter(f"purging {target} deletes all of it; add --yes to confirm", param_hint="--yes")
    with open_archive() as archive:
        removed = archive.purge_entity(entity) if all_namespaces else archive.purge(Scope(entity, namespace))
    if as_json:
        print_json(dump(PurgeOut(purged=target if not all_namespaces else f"{entity}/*", removed=removed)))
        return
    out.print(f"purged {target}: " + ", ".join(f"{k} {v}" for k, v in removed.items() if v))
