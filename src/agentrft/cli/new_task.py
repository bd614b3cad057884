"""`agentrft new-task NAME [--dir PATH]`: start a new task plugin from the packaged template."""

from pathlib import Path
from typing import Annotated

import typer

from agentrft.cli.errors import CliError, handle_errors


def new_task(
    name: Annotated[
        str, typer.Argument(help="Task name: lowercase letters, digits, underscores (my_flow).")
    ],
    directory: Annotated[
        Path,
        typer.Option(
            "--dir", help="Where to create the plugin directory NAME/ (created if missing)."
        ),
    ] = Path("."),
) -> None:
    """Scaffold a new task plugin NAME: installable, tested, ready for `agentrft eval`.

    It holds a pyproject with the entry point, a task module with an environment, two typed
    tools, a tiered reward, a dataset maker and a scripted expert, tests and a README.
    Refuses an invalid or taken name and an existing directory, writing nothing."""
    from agentrft.scaffold import ScaffoldError, TaskNames, create_task

    try:
        target = create_task(name, directory)
    except ScaffoldError as exc:
        raise CliError(str(exc)) from None
    names = TaskNames.of(name)
    shown = target if not target.is_absolute() else _relative(target)
    typer.echo(f"created {shown}/ ({names.dist}, task {name!r}, class {names.class_name})")
    typer.echo("next:")
    typer.echo(f"  pip install -e {shown}")
    typer.echo("  agentrft tasks")
    typer.echo(f"  agentrft play --task {name} --policy expert")
    typer.echo(f"  agentrft reward check --task {name}")
    typer.echo(f"  agentrft eval --task {name} --policy expert")
    typer.echo(f"  python -m pytest {shown}/tests")


def _relative(path: Path) -> Path:
    try:
        return path.relative_to(Path.cwd())
    except ValueError:
        return path


def register(app: typer.Typer) -> None:
    """Add `new-task` to the root app (called by `agentrft.cli.app.create_app`)."""
    app.command("new-task")(handle_errors(new_task))
