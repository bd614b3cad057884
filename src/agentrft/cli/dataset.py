"""`agentrft dataset make|check|show`. Plugins add more verbs (e.g. `dataset upload`) to this
group through the `agentrft_cli` hook: `get_group(app, "dataset").command("upload")(fn)`.
"""

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from agentrft.cli.common import TASK_HELP, console, load_task
from agentrft.cli.errors import CliError, handle_errors
from agentrft.datasets import (
    FORMATS,
    DatasetError,
    detect_format,
    prompt_column,
    prompts_from_rows,
    read_rows,
    write_rows,
)

FORMAT_HELP = f"One of {', '.join(FORMATS)} (default: from the file extension)."


def make(
    task: Annotated[str, typer.Option("--task", "-t", help=TASK_HELP)],
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="File to write (omitted or '-': stdout, JSONL)."),
    ] = None,
    split: Annotated[str, typer.Option(help="train, validation or test.")] = "train",
    n: Annotated[int | None, typer.Option("--n", min=1, help="Rows (default: the task's).")] = None,
    seed: Annotated[int, typer.Option(help="Seed: the same seed makes the same rows.")] = 42,
    fmt: Annotated[str | None, typer.Option("--format", "-f", help=FORMAT_HELP)] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing file.")] = False,
) -> None:
    """Write a split of TASK's rows ({"prompt": ...}) to a JSONL, Parquet, CSV or JSON file,
    or print them as JSONL."""
    if output is None or str(output) == "-":
        if fmt not in (None, "jsonl"):
            raise CliError(f"--format {fmt} needs a file: pass --output FILE (stdout is JSONL)")
        the_task = load_task(task)
        rows = the_task.make_dataset(split, n, seed)
        prompts_from_rows(rows, source=f"task {task!r} split {split!r}")
        # Plain stdout, not the rich console: the lines must be the rows byte for byte.
        typer.echo("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), nl=False)
        return
    fmt = detect_format(output, fmt)
    if output.exists() and not force:
        raise CliError(f"{output} already exists; pass --force to overwrite it")
    the_task = load_task(task)
    rows = the_task.make_dataset(split, n, seed)
    # Fail here, before writing, if the task made a row the backends could not read.
    prompts_from_rows(rows, source=f"task {task!r} split {split!r}")
    write_rows(rows, output, fmt, overwrite=force)
    console().print(f"wrote {len(rows)} rows of {task}/{split} (seed {seed}) to {output} ({fmt})")


def check(
    file: Annotated[Path, typer.Argument(help="Dataset file to check.")],
    task: Annotated[str, typer.Option("--task", "-t", help=TASK_HELP)],
    fmt: Annotated[str | None, typer.Option("--format", "-f", help=FORMAT_HELP)] = None,
) -> None:
    """Parse every row of FILE with TASK; exit 1 naming the first bad row."""
    from agentrft.task import TaskInputError

    the_task = load_task(task)
    prompts = prompts_from_rows(read_rows(file, fmt), source=str(file))
    for i, prompt in enumerate(prompts, start=1):
        try:
            the_task.parse(prompt)
        except TaskInputError as exc:
            raise DatasetError(f"{file}: row {i}: {exc}") from None
    console().print(f"{file}: {len(prompts)} rows, all parse as {task} instances")


def show(
    file: Annotated[Path, typer.Argument(help="Dataset file.")],
    n: Annotated[int, typer.Option("--n", min=1, help="Rows to show.")] = 5,
    fmt: Annotated[str | None, typer.Option("--format", "-f", help=FORMAT_HELP)] = None,
) -> None:
    """Print the row count, the prompt column and the first rows of FILE."""
    rows = read_rows(file, fmt)
    column = prompt_column(rows, str(file))
    table = Table(title=f"{file} · {len(rows)} rows · prompt column {column!r}")
    table.add_column("#", justify="right")
    table.add_column(column)
    for i, row in enumerate(rows[:n], start=1):
        table.add_row(str(i), Text(_cell(row.get(column))))
    console().print(table)


def _cell(value: object, limit: int = 2000) -> str:
    # A whole-document prompt (or a 10 MB list) would take rich minutes to lay out.
    text = str(value)
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text):,} characters)"


def register(group: typer.Typer) -> None:
    group.command("make")(handle_errors(make))
    group.command("check")(handle_errors(check))
    group.command("show")(handle_errors(show))
