"""Rich tables for benchmark results (terminal) — the JSON carries every figure."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from mnemo.bench.locomo import BUDGETS, CATEGORIES, KS

__all__ = ["print_ablation", "print_locomo"]


def print_locomo(result: dict[str, Any], console: Console) -> None:
    systems: dict[str, Any] = result["systems"]
    for group in ("overall 1-5", "overall 1-4"):
        table = Table(
            title=f"LoCoMo retrieval, {group} ({result['questions']} questions, {result['turns']} turns, "
            f"{result['conversations']} conversations)"
        )
        table.add_column("system")
        table.add_column("n", justify="right")
        for k in KS:
            table.add_column(f"R@{k}", justify="right")
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
                *(f"{row[f'B@{b}']:.1f}" for b in BUDGETS),
                f"{lat.get('p50', float('nan')):.1f}",
                f"{lat.get('p95', float('nan')):.1f}",
            )
        if group == "overall 1-5":
            anchor = result["anchor"]
            table.add_row(
                "anchor: DRAGON (paper)",
                "",
                "",
                *(f"{anchor.get(f'R@{k}', '')}" for k in KS[1:]),
                *("" for _ in BUDGETS),
                "",
                "",
            )
        console.print(table)
    table = Table(title="per category: R@5 / R@10 / evidence@1000 tokens")
    table.add_column("system")
    for name in CATEGORIES.values():
        table.add_column(name, justify="right")
    for name, scores in systems.items():
        table.add_row(
            name,
            *(
                f"{scores[c]['R@5']:.1f} / {scores[c]['R@10']:.1f} / {scores[c]['B@1000']:.1f}"
                if scores[c]["n"]
                else "-"
                for c in CATEGORIES.values()
            ),
        )
    console.print(table)


def print_ablation(rows: list[tuple[str, dict[str, Any]]], console: Console) -> None:
    table = Table(title="ablation: each recall piece switched off (overall, all 5 categories)")
    for col in ("configuration", "R@5", "R@10", "R@25", "ev@1000tok", "p50 ms"):
        table.add_column(col, justify="left" if col == "configuration" else "right")
    for name, scores in rows:
        row = scores["overall 1-5"]
        table.add_row(
            name,
            f"{row['R@5']:.1f}",
            f"{row['R@10']:.1f}",
            f"{row['R@25']:.1f}",
            f"{row['B@1000']:.1f}",
            f"{scores.get('latency_ms', {}).get('p50', float('nan')):.1f}",
        )
    console.print(table)
