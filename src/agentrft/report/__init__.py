"""`agentrft report`: one self-contained HTML page of a run or an evaluation.

What it shows (read from the files a local run or `eval --output-dir` writes, nothing else):
the step metrics as plots, the before / after-warm-up / after table with standard errors,
health conditions with the steps they held, failure kinds over time, and an episode
browser (filters, search, each episode turn by turn, the row and its hidden values shown
only after the episode), with the same row before and after training side by side.

The page needs no server and no network: the plots are inline SVG drawn by matplotlib, the
episodes are JSON in the page and a few lines of script filter them. The plots are also
written as PNG files next to the page, for people who read logs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentrft.report.inputs import ReportError, ReportInputs, Split, read_inputs
from agentrft.report.page import check_available, write_page, write_report

__all__ = ["ReportError", "ReportInputs", "Split", "check_available", "eval_page", "read_inputs",
           "write_page", "write_report"]  # fmt: skip


def eval_page(
    target: str | Path, reports: list[Any], trajectories: list[Any], *, name: str = "eval"
) -> Path:
    """Write the page of one evaluation held in memory (`agentrft eval --report-html`):
    its table and its episodes."""
    out = Path(target)
    inputs = ReportInputs(
        path=out.parent,
        evals=[("eval", [r.model_dump(mode="json") for r in reports])],
        splits=[Split("eval", list(trajectories))],
        name=name,
    )
    return write_page(inputs, out)
