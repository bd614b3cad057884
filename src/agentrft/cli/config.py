"""`agentrft config show`: the resolved configuration (file + `--set` overrides).

With `--task T`, the `limits` section shows the limits an episode of T really gets (the
task's own where the config sets none); with `--backend NAME` too, what a run on that
backend will really use, its presets applied (the local backend's CPU preset), and every
value the backend changed is listed on stderr; `--spec` prints the backend's resolved run
spec instead (what `train --dry-run` prints).
"""

from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer

from agentrft.cli.common import (
    CONFIG_HELP,
    SET_HELP,
    TASK_HELP,
    echo,
    load_backend,
    load_task,
)
from agentrft.cli.errors import CliError, error_console, handle_errors
from agentrft.config import episode_limits


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
    task: Annotated[
        str | None,
        typer.Option("--task", "-t", help=TASK_HELP + " Shows the limits its episodes get."),
    ] = None,
    backend: Annotated[
        str | None,
        typer.Option(
            "--backend",
            "-b",
            help="Show what a run on this backend will really use (its presets applied).",
        ),
    ] = None,
    spec: Annotated[
        bool,
        typer.Option(
            "--spec",
            help="With --backend: print the run's resolved spec instead (the settings each "
            "part of a run receives, as train --dry-run prints them).",
        ),
    ] = False,
) -> None:
    """Print the configuration that train/eval would use, defaults included."""
    from agentrft.config import dump_config, dump_data
    from agentrft.config_model import load_config

    if spec and backend is None:
        raise CliError("config show --spec needs --backend NAME: the spec is a backend's")
    resolved = load_config(config, overrides=set_ or [], values={"task": task})
    from agentrft.plugins import resolve_task

    the_task = (
        resolve_task(tasks=resolved.tasks)  # several tasks: the mixture they make
        if resolved.tasks
        else load_task(resolved.task)
        if resolved.task
        else None
    )
    notes: list[str] = []
    if backend is not None:
        if the_task is None:
            raise CliError(
                "config show --backend needs a task (--task NAME, or `task` or `tasks` in "
                "the config): "
                "what a run uses depends on it"
            )
        impl = load_backend(backend)
        impl.check_config(resolved)
        if spec:
            described = impl.run_spec(the_task, resolved)
            if described is None:
                raise CliError(
                    f"config show --spec: the {backend} backend resolves no run spec ahead of "
                    "its run; drop --spec to see the config it would use"
                )
            echo(dump_data(described, fmt.value).rstrip("\n"))
            return
        # The preset sees the config as given (a limit the task sets is not "set" by you).
        effective = _with_task_limits(impl.effective_config(the_task, resolved), the_task)
        resolved = _with_task_limits(resolved, the_task)
        notes = [f"{k}: {a!r} -> {b!r}" for k, (a, b) in _changes(resolved, effective).items()]
        if notes:
            notes.insert(0, f"the {backend} backend changes, for its runs:")
        resolved = effective
    elif the_task is not None:
        resolved = _with_task_limits(resolved, the_task)
    echo(dump_config(resolved, fmt.value).rstrip("\n"))
    for line in notes:
        error_console().print(line, markup=False, highlight=False)


def _with_task_limits(config: Any, task: Any) -> Any:
    """`config` whose `limits` are those an episode of `task` gets (the task's own where the
    config sets none). Several tasks: each plays under its own limits, so the config's
    own `limits` are shown as they are."""
    from agentrft.mixture import MixtureTask

    if isinstance(task, MixtureTask):
        return config
    merged = episode_limits(task, config)
    return config.model_copy(
        update={"limits": config.limits.model_copy(update=merged.model_dump())}
    )


def _changes(before: Any, after: Any) -> dict[str, tuple[Any, Any]]:
    """Dotted key -> (before, after) for every value that differs."""
    a, b = _flat(before.model_dump(mode="json")), _flat(after.model_dump(mode="json"))
    return {k: (a.get(k), b[k]) for k in b if a.get(k) != b[k]}


def _flat(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, dict):
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[prefix + key] = value
    return out


def register(group: typer.Typer) -> None:
    group.command("show")(handle_errors(show))
