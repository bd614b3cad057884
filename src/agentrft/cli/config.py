"""`agentrft config show`: the resolved configuration (file + `--set` overrides)."""

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from agentrft.cli.common import CONFIG_HELP, SET_HELP, echo
from agentrft.cli.errors import handle_errors


class ConfigFormat(str, Enum):
    yaml = "yaml"
    toml = "toml"
    json = "json"


def show(
    config: Annotated[Path | None, typer.Option("--config", "-c", help=CONFIG_HELP)] = None,
    set_: Annotated[list[str] | None, typer.Option("--set", "-s", help=SET_HELP)] = None,
    fmt: Annotated[ConfigFormat, typer.Option("--format", "-f", help="Output format.")] = (
        ConfigFormat.yaml
    ),
) -> None:
    """Print the configuration that train/eval would use, defaults included."""
    from agentrft.config import dump_config, load_config

    resolved = load_config(config, overrides=set_ or [])
    echo(dump_config(resolved, fmt.value).rstrip("\n"))


def register(group: typer.Typer) -> None:
    group.command("show")(handle_errors(show))
