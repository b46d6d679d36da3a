"""The ``bench`` group: retrieval quality (LoCoMo), knowledge that stays current (the lives), the
dynamics scenario, performance.

The harnesses (``mnemo.bench``) are imported inside the commands.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from mnemo.interfaces.cli._common import fail_cleanly, out, progress

if TYPE_CHECKING:
    from mnemo.config import Settings
    from mnemo.embed import Embeddings

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    """Add the ``bench`` group to ``app``."""
    bench = typer.Typer(no_args_is_help=True, help="Benchmarks: retrieval quality and performance.")
    bench.command("locomo")(bench_locomo)
    bench.command("updates")(bench_updates)
    bench.command("spread")(bench_spread)
    bench.command("dynamics")(bench_dynamics)
    bench.command("perf")(bench_perf)
    app.add_typer(bench, name="bench")


def _prepared(pairs: list[str] | None) -> tuple[dict[str, str], Settings, Embeddings]:
    """The ``--set`` overrides, the settings they give (validated before the long run) and the embedder."""
    from mnemo.config import load_settings
    from mnemo.embed import load_embedder

    overrides = _overrides(pairs or [])
    settings = load_settings(**overrides)
    return overrides, settings, load_embedder(settings.embedder, **settings.embedder_options())


def _overrides(pairs: list[str]) -> dict[str, str]:
    settings = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise typer.BadParameter(f"--set expects KEY=VALUE, got {pair!r}")
        settings[key.strip().replace("-", "_")] = value.strip()
    return settings


@fail_cleanly
def bench_locomo(
    path: Annotated[Path, typer.Argument(help="A LoCoMo-format file (e.g. locomo10.json from the LoCoMo repository).")],
    json_out: Annotated[Path | None, typer.Option("--json", help="Write every figure to this JSON file.")] = None,
    set_: Annotated[list[str] | None, typer.Option("--set", help="Override a setting, KEY=VALUE (repeatable).")] = None,
    baselines: Annotated[bool, typer.Option(help="Also run the BM25 and dense baselines.")] = True,
    ablate: Annotated[bool, typer.Option(help="Also run with each recall piece switched off.")] = False,
    night: Annotated[
        bool, typer.Option("--night", help="Run the night cycle first; recall turns, blocks, facts and insights.")
    ] = False,
    ask_at: Annotated[
        str,
        typer.Option(
            "--ask-at",
            help="When questions are asked: 'now', or 'end' (a day after the conversation's last turn, "
            "as recall's as_of: 'last week' means the conversation's last week).",
        ),
    ] = "now",
    live: Annotated[
        bool,
        typer.Option(
            "--live",
            help="After the read-only (lab) pass, ask every question again as a user lives it: the owner's "
            "mutating recall, the default (stochastic) scoring seeded, in conversation order; rows beside the lab's.",
        ),
    ] = False,
    rounds: Annotated[
        int | None,
        typer.Option("--rounds", help="With --live: ask the whole question set this many times (default 1)."),
    ] = None,
    seed: Annotated[
        int | None, typer.Option("--seed", help="With --live: the seed of the lived rounds' stochastic scoring.")
    ] = None,
    conversations: Annotated[
        int | None, typer.Option("--conversations", help="Only the file's first N conversations.")
    ] = None,
) -> None:
    """Retrieval quality on LoCoMo: recall@k per category, evidence within token budgets, latency."""
    import asyncio

    from mnemo.bench.locomo import ABLATIONS, LIVE_SEED, run_locomo
    from mnemo.bench.report import print_ablation, print_locomo

    if not path.is_file():
        raise typer.BadParameter(f"{path} is not a file", param_hint="PATH")
    if ask_at not in ("now", "end"):
        raise typer.BadParameter(f"must be 'now' or 'end', not {ask_at!r}", param_hint="--ask-at")
    if ask_at == "end" and night:
        # the nights run now: asked at the conversation's end, recall would leave out all they made
        raise typer.BadParameter("--night runs its nights now; use --ask-at now with it", param_hint="--ask-at")
    for flag, value in (("--rounds", rounds), ("--seed", seed)):
        if value is not None and not live:
            raise typer.BadParameter("only the lived rounds take it; add --live", param_hint=flag)
    if rounds is not None and rounds < 1:
        raise typer.BadParameter(f"must be at least 1, not {rounds}", param_hint="--rounds")
    if conversations is not None and conversations < 1:
        raise typer.BadParameter(f"must be at least 1, not {conversations}", param_hint="--conversations")
    overrides, settings, embeddings = _prepared(set_)

    def run(extra: dict[str, object], with_baselines: bool, label: str, lived: bool = False) -> dict[str, Any]:
        with progress(label) as update:
            return asyncio.run(
                run_locomo(
                    path,
                    embeddings=embeddings,
                    overrides={**overrides, **extra},
                    baselines=with_baselines,
                    database_url=settings.database_url,
                    progress=lambda _name, done, total: update(done, total),
                    night=night,
                    ask_at=ask_at,
                    live=lived,
                    rounds=rounds or 1,
                    seed=LIVE_SEED if seed is None else seed,
                    conversations_limit=conversations,
                )
            )

    # the ablations are lab-only: read-only and deterministic, each piece off against all on
    result = run({}, baselines, "recall", lived=live)
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


@fail_cleanly
def bench_updates(
    path: Annotated[Path, typer.Argument(help="A folder of life files (e.g. tests/data/lives) or one life file.")],
    rounds: Annotated[
        int, typer.Option("--rounds", min=0, help="Lived rounds of every question before the night a week later.")
    ] = 3,
    seed: Annotated[int, typer.Option("--seed", help="The seed of the lived rounds' stochastic scoring.")] = 0,
    set_: Annotated[list[str] | None, typer.Option("--set", help="Override a setting, KEY=VALUE (repeatable).")] = None,
    stages: Annotated[
        str, typer.Option("--stages", help="Comma-separated stages to run: turns, night, lived (default all).")
    ] = "turns,night,lived",
    json_out: Annotated[Path | None, typer.Option("--json", help="Write every figure to this JSON file.")] = None,
) -> None:
    """Knowledge that stays current (issue 40): over the labelled lives, is the current value named
    first, the stale one above it, what was never said refused? Over the turns, after a night, as lived."""
    import asyncio

    from mnemo.bench.updates import STAGES, run_updates

    if not path.exists():
        raise typer.BadParameter(f"{path} does not exist", param_hint="PATH")
    chosen = tuple(s for s in STAGES if s in {part.strip() for part in stages.split(",")})
    unknown = {part.strip() for part in stages.split(",")} - set(STAGES)
    if unknown or not chosen:
        raise typer.BadParameter(f"choose from {', '.join(STAGES)}, not {stages!r}", param_hint="--stages")
    overrides, settings, embeddings = _prepared(set_)
    with progress("updates") as update:
        result = asyncio.run(
            run_updates(
                path,
                embeddings=embeddings,
                overrides=overrides,
                database_url=settings.database_url,
                rounds=rounds,
                seed=seed,
                stages=chosen,
                progress=lambda _name, done, total: update(done, total),
            )
        )
    out.print(_updates_table(result))
    if json_out is not None:
        json_out.write_text(json.dumps(result, indent=2, ensure_ascii=False))
        out.print(f"wrote {json_out}")


@fail_cleanly
def bench_spread(
    path: Annotated[Path, typer.Argument(help="The spread question set (e.g. tests/data/spread).")],
    locomo: Annotated[
        Path | None, typer.Option("--locomo", help="The LoCoMo dev file its LoCoMo questions are about.")
    ] = None,
    lives: Annotated[Path | None, typer.Option("--lives", help="The lives its life questions are about.")] = None,
    live: Annotated[bool, typer.Option("--live", help="Also a lived round after the lab pass.")] = False,
    night: Annotated[
        bool, typer.Option("--night", help="Run the night cycle first; recall turns and memories.")
    ] = False,
    seed: Annotated[int, typer.Option("--seed", help="The seed of the lived round's stochastic scoring.")] = 0,
    set_: Annotated[list[str] | None, typer.Option("--set", help="Override a setting, KEY=VALUE (repeatable).")] = None,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write every figure to this JSON file.")] = None,
) -> None:
    """Evidence spread over sessions (issue 43): R@5/R@10 and recall_all@5/@10 (every evidence turn
    found) per question kind, beside BM25, dense and their reciprocal-rank fusion."""
    import asyncio

    from mnemo.bench.spread import KINDS, run_spread

    for given, hint in ((path, "PATH"), (locomo, "--locomo"), (lives, "--lives")):
        if given is not None and not given.exists():
            raise typer.BadParameter(f"{given} does not exist", param_hint=hint)
    if locomo is None and lives is None:
        raise typer.BadParameter("give --locomo, --lives or both", param_hint="--locomo")
    overrides, settings, embeddings = _prepared(set_)
    with progress("spread") as update:
        result = asyncio.run(
            run_spread(
                path, embeddings=embeddings, locomo=locomo, lives=lives, overrides=overrides,
                database_url=settings.database_url, live=live, night=night, seed=seed,
                progress=lambda _name, done, total: update(done, total),
            )
        )  # fmt: skip
    systems = result["systems"]
    table = Table(title=f"bench spread: {result['questions']} questions, R@5 / R@10 / all@5 / all@10")
    table.add_column("group")
    for name in systems:
        table.add_column(name, justify="right")
    for group in ("overall", "locomo", "lives", *KINDS):
        if group in systems["mnemo"]:
            cells = [
                " / ".join(f"{s[group][m]:.1f}" for m in ("R@5", "R@10", "RA@5", "RA@10")) for s in systems.values()
            ]
            table.add_row(f"{group} ({systems['mnemo'][group]['n']})", *cells)
    out.print(table)
    if json_out is not None:
        json_out.write_text(json.dumps(result, indent=2, ensure_ascii=False))
        out.print(f"wrote {json_out}")


UPDATES_ROWS = (
    ("changed", "current_first", "current first"),
    ("changed", "stale_above", "stale above current"),
    ("changed", "current_top5", "current in top 5"),
    ("changed", "current_first_turns", "current first (evidence turns)"),
    ("unchanged", "value_top1", "unchanged: value top 1"),
    ("unchanged", "value_top5", "unchanged: value top 5"),
    ("past", "past_first", "past: then-value first"),
    ("never", "refused", "never said: refused"),
    (None, "answerable_refused", "answerable refused"),
)


def _updates_table(result: dict[str, Any]) -> Table:
    """Per metric, each stage's percentage and count (the lived stage: its scored round after the night)."""
    stages = result["stages"]
    columns = {f"{name} ({figures['seconds']:.0f} s)": figures["overall"] for name, figures in stages.items()}
    if "lived" in stages:  # the rounds before the night a week later, beside the scored one after it
        rounds = {f"lived round {r}": overall for r, overall in enumerate(stages["lived"]["rounds"], start=1)}
        lived = list(columns)[-1]
        columns = {k: v for k, v in columns.items() if k != lived} | rounds | {lived: columns[lived]}
    table = Table(title=f"bench updates: {len(result['lives'])} lives, {result['questions_n']} questions")
    table.add_column("metric")
    for name in columns:
        table.add_column(name, justify="right")
    for kind, metric, label in UPDATES_ROWS:
        cells = []
        for overall in columns.values():
            f = overall[metric] if kind is None else overall[kind][metric]
            cells.append("-" if f["pct"] is None else f"{f['pct']:.1f}% ({f['count']}/{f['n']})")
        table.add_row(label, *cells)
    return table


@fail_cleanly
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

    from mnemo.bench.dynamics_scenario import run_dynamics

    overrides, settings, embeddings = _prepared(set_)
    with progress("sessions") as update:
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
                progress=lambda _name, done, total: update(done, total),
            )
        )
    table = Table(title=f"dynamics scenario: {topics} pairs, {updates} updates, {fillers} fillers, {sessions} sessions")
    columns: tuple[str, ...] = ("system", "used > unused", "  (equal sim)", "  (same tier)")
    columns += ("mean rank used / unused", "update > superseded")
    for col in (*columns, "s"):
        table.add_column(col, justify="right")
    for name, f in result["systems"].items():
        table.add_row(
            name,
            f"{f['used_above_unused']:.1f}%",
            f"{f['used_above_unused_equal_similarity']:.1f}% of {f['equal_similarity_pairs']}",
            f"{f['used_above_unused_same_tier']:.1f}% of {f['same_tier_pairs']}",
            f"{f['mean_rank_used']:.2f} / {f['mean_rank_unused']:.2f}",
            f"{f['update_above_superseded']:.1f}%",
            f"{f['seconds']:.0f}",
        )
    out.print(table)
    if json_out is not None:
        json_out.write_text(json.dumps(result, indent=2))
        out.print(f"wrote {json_out}")


@fail_cleanly
def bench_perf(
    locomo: Annotated[
        Path, typer.Option(help="Source of realistic sentences: a LoCoMo-format file (required).", exists=True)
    ],
    scale: Annotated[list[int] | None, typer.Option(help="Memories in one scope (repeatable).")] = None,
    queries: Annotated[int, typer.Option(min=10, help="Recalls timed per scale.")] = 1000,
    ingest_turns: Annotated[int, typer.Option(min=100, help="Turns for the ingest measurement.")] = 2000,
    real: Annotated[
        int | None,
        typer.Option(
            min=100,
            help="Embed only this many turns; the vectors of the rest are synthesised from theirs (a 1,000,000 "
            "scale in minutes; the output says so).",
        ),
    ] = None,
    cache_dir: Annotated[Path | None, typer.Option(help="Where corpus embeddings are cached.")] = None,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write every figure to this JSON file.")] = None,
) -> None:
    """Ingest throughput, query embedding against PyTorch, mutating against read-only recall, recall
    latency (p50/p95/p99), ANN recall@10 (HNSW and the read index's) and the read index's size and
    build time at 10k and 100k memories (``--scale 1000000 --real 20000`` for the million)."""
    import asyncio

    from mnemo.bench.perf import run_perf
    from mnemo.bench.report import print_perf
    from mnemo.config import load_settings
    from mnemo.embed import load_embedder

    if not locomo.is_file():
        raise typer.BadParameter(f"{locomo} is not a file", param_hint="--locomo")
    settings = load_settings()
    embeddings = load_embedder(settings.embedder, **settings.embedder_options())
    # a model under ONNX Runtime is timed against the same model on PyTorch, in the same run
    baseline = (
        load_embedder(settings.embedder, **(settings.embedder_options() | {"backend": "torch"}))
        if embeddings.load().backend == "onnx"
        else None
    )
    with progress("perf") as update:
        result = asyncio.run(
            run_perf(
                locomo,
                embeddings=embeddings,
                baseline=baseline,
                scales=tuple(scale or (10_000, 100_000)),
                real=real,
                queries=queries,
                ingest_turns=ingest_turns,
                cache_dir=cache_dir or settings.home / "bench-cache",
                progress=lambda _label, done, total: update(done, total),
            )
        )
    print_perf(result, out)
    if json_out is not None:
        json_out.write_text(json.dumps(result, indent=2))
        out.print(f"wrote {json_out}")
