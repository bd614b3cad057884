"""Evaluation reports as tables: several reports side by side (before / after a warm-up /
after GRPO, a temperature sweep), and the suspect row that flags an exploit's shape."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from agentrft.evaluation import SUSPECT_NOTE, EvalReport, reports_by_task, suspect_shapes

if TYPE_CHECKING:
    from rich.table import Table

__all__ = ["reports_table", "reports_tables"]


def reports_table(reports: Sequence[EvalReport]) -> Table:
    """Several reports side by side: one column per report (policy and temperature), one
    row per metric, so before/after rows and temperature sweeps read across and fit 80
    columns; every failure kind is shown whole, one per line."""
    from rich.table import Table

    ks = sorted({k for r in reports for k in r.pass_at_k})
    table = Table(title=f"eval · {reports[0].task}" if reports else "eval", caption_justify="left")
    table.add_column("", style="bold", no_wrap=True)
    for r in reports:
        level = f" level {r.curriculum_level}" if r.curriculum_level else ""
        table.add_column(f"{r.policy}\nT={r.temperature:g}{level}", overflow="fold")
    rows: list[tuple[str, list[str]]] = [
        ("episodes", [str(r.episodes) for r in reports]),
        ("solve rate", [f"{r.solve_rate:.1%}" for r in reports]),
        *[
            (f"pass@{k}", [f"{r.pass_at_k[k]:.1%}" if k in r.pass_at_k else "-" for r in reports])
            for k in ks
        ],
        ("reward", [f"{r.mean_reward:.3f} ± {r.reward_se:.3f}" for r in reports]),
    ]
    suspects = suspect_shapes(reports)
    if any(suspects):
        rows.append(("suspect", [s or "-" for s in suspects]))
        table.caption = SUSPECT_NOTE
    if any(r.foothold is not None for r in reports):
        rows.append(
            ("foothold", [f"{r.foothold:.0%}" if r.foothold is not None else "-" for r in reports])
        )
    rows.append(("turns", [f"{r.mean_turns:.2f}" for r in reports]))
    rows.append(
        (
            "failures",
            ["\n".join(f"{k} {v}" for k, v in r.failure_kinds.items()) or "-" for r in reports],
        )
    )
    for name, values in rows:
        table.add_row(name, *values)
    return table


def reports_tables(reports: Sequence[EvalReport]) -> list[Table]:
    """One `reports_table` per task (a multi-task run: each task, and the whole mix)."""
    return [reports_table(group) for group in reports_by_task(reports)]
