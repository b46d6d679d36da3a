"""Rich tables for benchmark results (terminal) — the JSON carries every figure."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from mnemo.bench.locomo import ALL_KS, ANY_KS, BUDGETS, CATEGORIES, KS, SPREAD

__all__ = ["print_ablation", "print_locomo", "print_perf"]


def _lat3(d: dict[str, float]) -> str:
    return f"{d['p50']:.1f} / {d['p95']:.1f} / {d['p99']:.1f}"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _rows(result: dict[str, Any]) -> dict[str, Any]:
    """The systems' scores by row label; with ``--live`` each lab row followed by its lived rounds."""
    lived = (result.get("lived") or {}).get("systems", {})
    rows: dict[str, Any] = {}
    for name, scores in result["systems"].items():
        label = "mnemo after night" if name == "mnemo" and result.get("night") else name
        rows[f"{label} (lab)" if name in lived else label] = scores
        for r, lived_round in enumerate(lived.get(name, ()), start=1):
            rows[f"{label}, lived round {r}"] = lived_round["scores"]
    return rows


def print_locomo(result: dict[str, Any], console: Console) -> None:
    systems = _rows(result)
    if lived := result.get("lived"):
        console.print(
            f"lived rounds: the owner's mutating recall, {lived['scoring']} scoring seeded {lived['seed']}, "
            f"{lived['rounds']} round(s) of every question in conversation order, after the lab (read-only, "
            "deterministic) pass on the same store."
        )
        for name, rounds in lived["systems"].items():
            use = ", ".join(
                f"{u['weight_changes_recalled']} reinforced / {u['memories_accessed']} memories used"
                for u in (r["use"] for r in rounds)
            )
            console.print(f"  use after each round, {name}: {use}")
    if night := result.get("night"):
        console.print(
            f"night cycle: {night['blocks']} blocks ({night['arcs']} arcs), {night['facts_new']} facts, "
            f"{night['insights']} insights, {night['turns_removed']} raw turns removed by retention, "
            f"{night['seconds']:.0f}s. Memory hits count as the turns they were made from; R@k is not comparable "
            "with turn-only runs, evidence-in-budget is."
        )
    for group in ("overall 1-5", "overall 1-4"):
        n = next(iter(systems.values()))[group]["n"]
        table = Table(
            title=f"LoCoMo retrieval, {group} ({n} questions; {result['turns']} turns in "
            f"{result['conversations']} conversations)"
        )
        table.add_column("system")
        table.add_column("n", justify="right")
        for k in KS:
            table.add_column(f"R@{k}", justify="right")
        for k in ANY_KS:
            table.add_column(f"any@{k}", justify="right")
        for k in ALL_KS:
            table.add_column(f"all@{k}", justify="right")
        for b in BUDGETS:
            table.add_column(f"ev@{b}tok", justify="right")
        table.add_column("p50 ms", justify="right")
        table.add_column("p95 ms", justify="right")
        for name, scores in systems.items():
            row = scores[group]
            lat = scores.get("latency_ms", {})
            table.add_row(
                name,
                str(row["n"]),
                *(f"{row[f'R@{k}']:.1f}" for k in KS),
                *(f"{row[f'A@{k}']:.1f}" for k in ANY_KS),
                *(f"{row[f'RA@{k}']:.1f}" for k in ALL_KS),
                *(f"{row[f'B@{b}']:.1f}" for b in BUDGETS),
                _ms(lat.get("p50")),
                _ms(lat.get("p95")),
            )
        if group == "overall 1-5":
            anchor = result["anchor"]
            table.add_row(
                "anchor: DRAGON (paper)",
                "",
                "",
                *(f"{anchor.get(f'R@{k}', '')}" for k in KS[1:]),
                *("" for _ in ANY_KS),
                *("" for _ in ALL_KS),
                *("" for _ in BUDGETS),
                "",
                "",
            )
        console.print(table)
    groups = [*CATEGORIES.values(), SPREAD]
    for title, cell in (
        ("R@1 / R@5 / R@10 / evidence@1000 tokens", lambda r: _cells(r, ["R@1", "R@5", "R@10", "B@1000"])),
        ("recall_all@5 / @10 (every evidence turn found)", lambda r: _cells(r, [f"RA@{k}" for k in ALL_KS])),
    ):
        table = Table(title=f"per category: {title}")
        table.add_column("system")
        for group in groups:
            table.add_column(group if group != SPREAD else f"{SPREAD} (1-4)", justify="right")
        for name, scores in systems.items():
            table.add_row(name, *(cell(scores[g]) if scores.get(g, {}).get("n") else "-" for g in groups))
        console.print(table)
    _print_refusal(systems, console)


def _cells(row: dict[str, Any], metrics: list[str]) -> str:
    return " / ".join(f"{row[m]:.1f}" for m in metrics)


def _print_refusal(systems: dict[str, Any], console: Console) -> None:
    rated = {name: s["refusal"] for name, s in systems.items() if "refusal" in s}
    if not rated:
        return
    table = Table(title="refusal: share of questions refused (foreign: other conversations' questions)")
    for col in ("system", "foreign", "own", *(f"own {c}" for c in CATEGORIES.values())):
        table.add_column(col, justify="left" if col == "system" else "right")
    for name, r in rated.items():
        table.add_row(
            name,
            f"{r['foreign']:.1f} of {r['n_foreign']}",
            f"{r['own']:.1f} of {r['n_own']}",
            *("-" if r.get(f"own {c}") is None else f"{r[f'own {c}']:.1f}" for c in CATEGORIES.values()),
        )
    console.print(table)
    for name, r in rated.items():
        curve = "  ".join(f"{t}: {v['own']:.1f}/{v['foreign']:.1f}" for t, v in r["by threshold"].items())
        console.print(
            f"{name}: refused for unknown names {r['unknown names: foreign']:.1f}% of foreign, "
            f"{r['unknown names: own']:.1f}% of own questions; own/foreign refused % by similarity threshold: {curve}"
        )


def print_ablation(rows: list[tuple[str, dict[str, Any]]], console: Console) -> None:
    table = Table(title="ablation: each recall piece switched off (overall, all 5 categories)")
    for col in (
        "configuration",
        "R@5",
        "R@10",
        "R@25",
        "ev@1000tok",
        "refused foreign",
        "refused own",
        "p50 ms",
        "p95 ms",
    ):
        table.add_column(col, justify="left" if col == "configuration" else "right")
    for name, scores in rows:
        row = scores["overall 1-5"]
        table.add_row(
            name,
            f"{row['R@5']:.1f}",
            f"{row['R@10']:.1f}",
            f"{row['R@25']:.1f}",
            f"{row['B@1000']:.1f}",
            _ms(scores.get("refusal", {}).get("foreign")),
            _ms(scores.get("refusal", {}).get("own")),
            _ms(scores.get("latency_ms", {}).get("p50")),
            _ms(scores.get("latency_ms", {}).get("p95")),
        )
    console.print(table)


def print_perf(result: dict[str, Any], console: Console) -> None:
    cores = result["cores"]
    ing = result["ingest"]
    table = Table(title=f"ingest ({ing['turns']:,} turns, {cores} cores, {result['embedder']})")
    for col in ("raw embedder sent/s", "write path turns/s", "write / raw", "store-only rows/s (COPY)"):
        table.add_column(col, justify="right")
    table.add_row(
        f"{ing['raw_embedder_per_s']:,.1f}",
        f"{ing['write_path_per_s']:,.1f}",
        f"{100 * ing['write_vs_raw']:.1f}%",
        f"{ing['store_only_rows_per_s']:,.0f}",
    )
    console.print(table)
    console.print(f"write / raw per round: {', '.join(f'{100 * r:.1f}%' for r in ing['write_vs_raw_per_round'])}")
    if emb := result.get("embedding"):
        table = Table(title=f"query embedding: {emb['backend']} against {emb['baseline']} (same run, interleaved)")
        for col in ("backend", "query ms p50/p95/p99", f"documents/s ({emb['documents']:,})", "least cosine"):
            table.add_column(col, justify="right")
        table.add_row(
            emb["backend"],
            _lat3(emb["query_ms"]),
            f"{emb['documents_per_s']:,.1f}",
            f"{emb['least_cosine_to_baseline']:.6f}",
        )
        table.add_row(emb["baseline"], _lat3(emb["baseline_query_ms"]), f"{emb['baseline_documents_per_s']:,.1f}", "1")
        console.print(table)
    if mut := result.get("mutation"):
        table = Table(
            title=f"mutating recall against read-only ({mut['memories']:,} memories, "
            f"{mut['queries']} queries each, interleaved)"
        )
        for col in ("read-only p50/p95/p99", "mutating p50/p95/p99", "extra p50", "extra p95", "SQL path read-only"):
            table.add_column(col, justify="right")
        table.add_row(
            _lat3(mut["read_only_ms"]),
            _lat3(mut["mutating_ms"]),
            f"{mut['mutating_extra_ms_p50']:.1f}",
            f"{mut['mutating_extra_ms_p95']:.1f}",
            _lat3(mut["sql_read_only_ms"]) if "sql_read_only_ms" in mut else "-",
        )
        console.print(table)
    table = Table(title=f"recall latency, ms ({cores} cores; k=10; read index warm, SQL path beside it)")
    for col in (
        "memories",
        "with embedding p50/p95/p99",
        "without embedding p50/p95/p99",
        "SQL path, with / without embedding p95",
        "index build s / MiB",
        "numpy exact p50/p95/p99",
        "ANN R@10",
        "ANN R@10, 1% filter",
        "filtered: k results",
        "index ANN R@10",
    ):
        table.add_column(col, justify="right")
    for s in result["scales"]:

        def fmt(d: dict[str, float]) -> str:
            return f"{d['p50']:.1f} / {d['p95']:.1f} / {d['p99']:.1f}"

        table.add_row(
            f"{s['memories']:,}",
            fmt(s["recall_ms_with_embedding"]),
            fmt(s["recall_ms_without_embedding"]),
            f"{s['sql_recall_ms_with_embedding']['p95']:.1f} / {s['sql_recall_ms_without_embedding']['p95']:.1f}"
            if "sql_recall_ms_with_embedding" in s
            else "-",
            f"{s['index_build_s']:.2f} / {s['index_mb']:.1f}" if "index_build_s" in s else "-",
            fmt(s["numpy_exact_scan_ms"]),
            f"{s['ann_recall_at_10']:.3f}",
            f"{s['ann_recall_at_10_filtered_1pct']:.3f}",
            f"{100 * s['filtered_queries_with_10_results']:.0f}%",
            f"{s['index_ann_recall_at_10']:.3f}" if s.get("index_ann_recall_at_10") is not None else "-",
        )
    console.print(table)
    _print_perf_notes(result, console)


def _print_perf_notes(result: dict[str, Any], console: Console) -> None:
    """Where the vectors came from, each scale's load and read index, and what a scope over
    ``index_mb`` does (issue 42)."""
    if note := result.get("vectors", {}).get("note"):
        console.print(f"vectors: {note}")
    for s in result["scales"]:
        if "index_held" not in s:
            continue
        hnsw = f", HNSW built after the load in {s['hnsw_build_s']:.1f} s" if s.get("hnsw_build_s") is not None else ""
        console.print(
            f"{s['memories']:,}: stored in {s['store_s']:.1f} s{hnsw}; read index {s['index_mb']:.1f} MiB "
            f"(index_mb {s['index_budget_mb']:.0f}), built in {s['index_build_s']:.1f} s, "
            f"dense search: {s['index_dense']}"
        )
        if s.get("index_note"):
            console.print(f"  {s['index_note']}")
    if over := result.get("over_budget"):
        console.print(
            f"over index_mb: {over['memories']:,} memories, an index of {over['index_mb']:.1f} MiB under index_mb "
            f"{over['budget_mb']} MiB: held {over['index_held']}, answered through {over['answered_through']}; "
            f"recall p50/p95/p99 {_lat3(over['recall_ms_with_embedding'])} ms"
        )
