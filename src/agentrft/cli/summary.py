"""What a backend's result says, printed plainly at the end of `train` and `eval`."""

from __future__ import annotations

from typing import Any

import typer


def print_summary(result: Any) -> None:
    """A backend result's plain fields, `name: value` per line (a run dir, a job name); a
    nested mapping (a dry run's sampler and trainer settings) indented under its name."""
    for line in _summary_lines(result.summary(), ""):
        typer.echo(line)


def _summary_lines(fields: dict[str, Any], indent: str) -> list[str]:
    lines = []
    for key, value in fields.items():
        if isinstance(value, dict) and value:
            lines.append(f"{indent}{key}:")
            lines.extend(_summary_lines(value, indent + "  "))
        else:
            lines.append(f"{indent}{key}: {value}")
    return lines
