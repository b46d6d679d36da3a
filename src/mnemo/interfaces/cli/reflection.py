"""Inner-life commands (issue 31): ``readiness``, ``reflect``, ``approve``."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from mnemo._validate import check_id, to_utc
from mnemo.interfaces.cli._common import EntityOpt, JsonOpt, NamespaceOpt, fail_cleanly, open_archive, out, print_json
from mnemo.interfaces.shapes import ReadinessOut
from mnemo.models import Scope, to_jsonable

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    """Add the inner-life commands to ``app``."""
    app.command()(readiness)
    app.command()(reflect)
    app.command()(approve)


@fail_cleanly
def readiness(entity: EntityOpt = "default", namespace: NamespaceOpt = "default", as_json: JsonOpt = False) -> None:
    """Show the ten bootstrap readiness milestones: which real events have reached them, and when."""
    with open_archive() as archive:
        found = archive.inner.readiness(Scope(entity, namespace))
    if as_json:
        print_json(ReadinessOut.of(found).model_dump(mode="json"))
        return
    table = Table(title=f"readiness of {found.scope}: {found.reached} of {len(found.milestones)} milestones")
    for col in ("", "milestone", "reached", "what reaches it"):
        table.add_column(col)
    for n, m in enumerate(found.milestones, 1):
        when = m.reached_at.strftime("%Y-%m-%d %H:%M") if m.reached_at else "-"
        table.add_row(str(n), m.name, when, m.description)
    out.print(table)


@fail_cleanly
def reflect(
    entity: EntityOpt = "default",
    namespace: NamespaceOpt = "default",
    as_of: Annotated[str | None, typer.Option("--as-of", help="Reflect as of this time (ISO 8601).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Run the night's inner-life stage now: promotion, tensions, self-tuning, gut axes, the
    frustration ledger, the safety monitors and the milestones."""
    when = None if as_of is None else to_utc(as_of, label="--as-of")
    with open_archive() as archive:
        done = archive.inner.reflect(Scope(entity, namespace), as_of=when)
    if as_json:
        print_json(to_jsonable(done))
        return
    p, t, tu = done["promotion"], done["tensions"], done["tuning"]
    out.print(
        f"promoted {p['goal']} to goal and {p['identity']} to identity weight, {p['awaiting_approval']} await "
        f"approval, {p['demoted']} demoted · tensions: {t['found']} new, {t['acknowledged']} acknowledged, "
        f"{t['resolved']} resolved · blend alphas {'tuned' if tu['alphas_applied'] else 'unchanged'} "
        f"({tu['samples']} recalls with outcomes) · {done['gut']['axes']} gut axes · "
        f"{done['frustration']['surfaced']} persistent failures surfaced · safety events {done['safety'] or 'none'}"
        + (f" · milestones reached: {', '.join(done['milestones'])}" if done["milestones"] else ""),
        highlight=False,
    )


@fail_cleanly
def approve(
    memory_id: Annotated[str, typer.Argument(help="The memory whose promotion waits for approval.")],
    entity: EntityOpt = "default",
    namespace: NamespaceOpt = "default",
) -> None:
    """Approve a promotion past a 0.85 centre that waits for the operator (at operator_trust < 3)."""
    check_id(memory_id, label="memory id")
    with open_archive() as archive:
        done = archive.inner.approve_promotion(Scope(entity, namespace), memory_id)
    out.print("approved: the promotion is applied" if done else "nothing waits for approval on that memory")
    if not done:
        raise typer.Exit(1)
