"""Root typer app (placeholder until the CLI lands)."""

import typer

app = typer.Typer(
    name="agentrft",
    no_args_is_help=True,
    help="Reinforcement fine-tuning of tool-using LLM agents.",
)


@app.command()
def tasks() -> None:
    """List installed tasks."""
    from agentrft.plugins import get_plugins

    for name in get_plugins().task_classes():
        typer.echo(name)


def main() -> None:
    app()
