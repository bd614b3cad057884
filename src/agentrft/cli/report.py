"""`agentrft report RUN_DIR`: the run's (or an evaluation's) page, one HTML file."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agentrft.cli.common import echo
from agentrft.cli.errors import CliError


def report(
    folder: Annotated[
        Path,
        typer.Argument(
            help="A run directory (agentrft train --backend local) or the folder of "
            "agentrft eval --output-dir."
        ),
    ],
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="Where to write the page (default: FOLDER/report.html)."),
    ] = None,
) -> None:
    """Write one self-contained HTML page of a run: plots of the steps, the before/after
    table, health conditions and an episode browser. Opens from disk; no server."""
    from agentrft.report import ReportError, write_report

    if out is not None and not out.parent.is_dir():
        raise CliError(f"--out {out}: the folder {out.parent} does not exist")
    try:
        page = write_report(folder, out)
    except ReportError as exc:
        raise CliError(str(exc)) from None
    echo(f"report: {page}")
