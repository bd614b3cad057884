"""Helpers shared by the CLI commands: tasks, rewards, policy options (rows and limits come
from the core: `agentrft.datasets.task_prompts`, `agentrft.config.episode_limits`)."""

import asyncio
import math
import os
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console

from agentrft.cli.errors import CliError
from agentrft.config import Config
from agentrft.plugins import PluginError, get_plugins
from agentrft.task import Task

T = TypeVar("T")

# Options reused by several commands (one definition, one help text).
TASK_HELP = "Task name (see `agentrft tasks`)."
REWARD_HELP = "A named reward from a plugin that replaces the task's own reward."
POLICY_HELP = (
    "expert (the task's scripted expert), openai:MODEL, an OpenAI-compatible URL "
    "(http://host:port/v1), or litellm:PROVIDER/MODEL."
)
BASE_URL_HELP = "Server URL for openai:MODEL (default: $OPENAI_BASE_URL)."
MODEL_HELP = "Model name served at a --policy URL (default: the server's first model)."
API_KEY_ENV_HELP = "Environment variable holding the API key (default: OPENAI_API_KEY)."
HEADER_HELP = "Extra HTTP header for the policy server, NAME=VALUE (repeatable)."


#: Console width when stdout is not a terminal (a file, a pipe, CI) and $COLUMNS is unset:
#: rich's default there is 80 columns, which folds tables and wraps every longer line.
LOG_WIDTH = 160


class _Console(Console):
    """Off a terminal, a line of text is printed whole (soft wrap: a step line or a warning
    stays one line in a log file); tables and panels still fit the width, which is
    `LOG_WIDTH` unless $COLUMNS says otherwise. On a terminal, rich's own behaviour."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not self.is_terminal and not os.environ.get("COLUMNS", "").isdigit():
            self.width = LOG_WIDTH

    def print(self, *objects: Any, soft_wrap: bool | None = None, **kwargs: Any) -> None:
        if soft_wrap is None and not self.is_terminal and all(isinstance(o, str) for o in objects):
            soft_wrap = True  # not on the console: a panel's text must still wrap inside it
        super().print(*objects, soft_wrap=soft_wrap, **kwargs)


def console() -> Console:
    """stdout console; built per command so test runners that swap stdout see the output."""
    return _Console(highlight=False)


def load_task(name: str | None) -> Task[Any, Any]:
    """The task `name`, or the mixture a `--task a=0.7,b=0.3` (or `a,b`) spec names."""
    from agentrft.plugins import resolve_task

    if not name:
        raise CliError("pass --task NAME (see `agentrft tasks` for the installed tasks)")
    try:
        return resolve_task(name)
    except PluginError:
        raise
    except ValueError as exc:
        raise CliError(str(exc)) from None


def load_reward(name: str | None, task: Task[Any, Any]) -> Any:
    """The plugin reward `name` for `task`, or None to keep the task's own."""
    from agentrft.plugins import resolve_reward

    try:
        return resolve_reward(name, task)
    except PluginError:
        raise
    except ValueError as exc:
        raise CliError(str(exc)) from None


def finite(value: Any) -> Any:
    """typer callback: refuse nan and inf, which click's FloatRange lets through."""
    values = value if isinstance(value, (list, tuple)) else [value]
    for v in values:
        if v is not None and not math.isfinite(v):
            raise typer.BadParameter(f"must be a finite number, got {v}")
    return value


def parse_headers(items: list[str] | None) -> dict[str, str]:
    headers = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise CliError(f"--header {item!r} must look like NAME=VALUE")
        headers[name.strip()] = value
    return headers


def api_key_from_env(var: str | None) -> str | None:
    """The key in `$var` (error when that variable is unset); None = the client's default."""
    if not var:
        return None
    value = os.environ.get(var)
    if not value:
        raise CliError(f"--api-key-env {var}: the environment variable {var} is not set")
    return value


def resolve_cli_policy(
    spec: str,
    task: Task[Any, Any],
    *,
    base_url: str | None,
    model: str | None,
    api_key_env: str | None,
    headers: list[str] | None,
) -> Any:
    from agentrft.policies.resolve import resolve_policy

    return resolve_policy(
        spec,
        task,
        base_url=base_url,
        api_key=api_key_from_env(api_key_env),
        headers=parse_headers(headers) or None,
        model=model,
    )


def run_async(factory: Callable[[], Coroutine[Any, Any, T]]) -> T:
    return asyncio.run(factory())


def notify_episode(trajectory: Any) -> None:
    """The `agentrft_episode_finished` hook; a plugin's logging bug must not stop an eval."""
    try:
        get_plugins().hook.agentrft_episode_finished(trajectory=trajectory)
    except Exception as exc:
        Console(stderr=True).print(f"warning: an agentrft_episode_finished hook failed: {exc}")


def echo(text: str) -> None:
    """Plain output (no rich wrapping): configs, paths, JSON."""
    typer.echo(text)


# Options of train and eval (the backends add their own: agentrft.cli.backend_flags).
CONFIG_HELP = "YAML or TOML config file."
SET_HELP = "Override one key, e.g. --set group_size=16 --set local.model=gpt2 (repeatable)."
ConfigOpt = Annotated[Path | None, typer.Option("--config", "-c", help=CONFIG_HELP)]
SetOpt = Annotated[list[str] | None, typer.Option("--set", "-s", help=SET_HELP)]
TaskOpt = Annotated[
    str | None, typer.Option("--task", "-t", help=TASK_HELP + " Default: the config's `task`.")
]
RewardOpt = Annotated[str | None, typer.Option(help=REWARD_HELP)]
# The row one episode plays (`play`, `mcp serve`): --row of --split (seed --seed), or of --data.
RowOpt = Annotated[int, typer.Option("--row", min=0, help="Row index (0-based).")]
SplitOpt = Annotated[str, typer.Option(help="Split made by the task.")]
DataOpt = Annotated[
    Path | None, typer.Option("--data", help="Take the row from this dataset file instead.")
]
RowSeedOpt = Annotated[int, typer.Option(help="Seed of the split the task makes.")]
DryRunOpt = Annotated[
    bool, typer.Option("--dry-run", help="Print what would run; call nothing remote.")
]
#: Words after the flags: refused unless the chosen backend gives them a meaning (the
#: sagemaker backend's `--runs base:1.0 trained:1.0`).
ExtraArgs = Annotated[list[str] | None, typer.Argument(hidden=True)]


def resolve_config(
    config: Path | None, set_: list[str] | None, values: dict[str, Any]
) -> tuple[Config, Task[Any, Any], Any]:
    """The config (file < flags < --set), the task it names, and the plugin reward it
    names (None: the task's own): resolved in one pass, config then plugins."""
    from agentrft.config_model import load_config
    from agentrft.plugins import resolve_task_and_reward

    cfg = load_config(config, overrides=set_ or [], values=values)
    if not cfg.tasks and not cfg.task:
        raise CliError(
            "pass --task NAME or set `task` (or `tasks` for several) in the config "
            "(see `agentrft tasks`)"
        )
    try:
        the_task, reward_fn = resolve_task_and_reward(
            None if cfg.tasks else cfg.task, cfg.tasks or None, cfg.reward
        )
        return cfg, the_task, reward_fn
    except PluginError:
        raise
    except ValueError as exc:
        raise CliError(str(exc)) from None


def load_backend(name: str) -> Any:
    """The installed backend `name`, its dependencies checked."""
    backend = get_plugins().backend(name)  # unknown: PluginError naming the extra
    backend.check_available()  # missing dependency: BackendUnavailable naming the extra
    return backend


def pick_row(task: Task[Any, Any], row: int, split: str, data: Path | None, seed: int) -> str:
    """The prompt of row `row` (`RowOpt`) of `data`, or of the task's `split` made with
    `seed`; a row past the end is a `CliError` saying how many rows there are."""
    from agentrft.datasets import task_prompts

    prompts = task_prompts(task, data=data, split=split, n=None, seed=seed)  # the whole split
    if row >= len(prompts):
        where = str(data) if data is not None else f"split {split!r} (seed {seed})"
        raise CliError(f"--row {row} is out of range: {where} has {len(prompts)} rows")
    return prompts[row]
