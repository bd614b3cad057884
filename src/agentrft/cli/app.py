"""The `agentrft` command line (typer + rich).

`app` holds the core commands. `main()` (the console script) builds the full app: core
commands, `new-task` when the scaffold module is installed, and the commands plugins add
through the `agentrft_cli(app)` hook.

A plugin extends a core group by looking it up on the `app` it receives::

    @agentrft.hookimpl
    def agentrft_cli(app):
        from agentrft.cli.app import get_group
        get_group(app, "dataset").command("upload")(upload)

Every module this file imports stays light (no torch, litellm, boto3, transformers), so
`agentrft --help` is fast; commands import what they need when they run.
"""

import importlib.util
from typing import Annotated, Any

import typer

from agentrft.cli import config as config_cmd
from agentrft.cli import dataset as dataset_cmd
from agentrft.cli import mcp as mcp_cmd
from agentrft.cli import reward as reward_cmd
from agentrft.cli.backend_flags import with_backend_flags
from agentrft.cli.errors import debug_from_env, error_console, handle_errors, state
from agentrft.cli.evaluate import eval_
from agentrft.cli.help_types import hide_flag_types
from agentrft.cli.logs import configure_logging
from agentrft.cli.play import play, replay
from agentrft.cli.report import report
from agentrft.cli.tasks import tasks
from agentrft.cli.train import train

#: Groups core creates; plugins add verbs to them with `get_group(app, name)`.
GROUPS = {
    "dataset": 'Make, check and show dataset files (rows of {"prompt": ...}).',
    "reward": "Check a task's reward.",
    "config": "Show the resolved configuration.",
    "mcp": "Serve a task's episode as an MCP server (needs the mcp extra).",
}


def _version(value: bool) -> None:
    if value:
        from agentrft import __version__

        typer.echo(f"agentrft {__version__}")
        raise typer.Exit()


def _root(
    debug: Annotated[
        bool, typer.Option("--debug", help="Show tracebacks instead of one-line errors.")
    ] = False,
    verbose: Annotated[
        int,
        typer.Option(
            "--verbose",
            "-v",
            count=True,
            help="Show agentrft's info log lines (-vv: debug too); secrets are scrubbed.",
        ),
    ] = 0,
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    """Reinforcement fine-tuning of multi-turn, tool-using LLM agents, locally or on Amazon
    SageMaker AI."""
    state.debug = debug or debug_from_env()  # per invocation (tests run many in one process)
    configure_logging(verbose)


def create_app(*, plugins: bool = True) -> typer.Typer:
    """A fresh `agentrft` app; with `plugins`, also the installed backends' flags on
    `train`/`eval`, `new-task` and plugin commands."""
    hide_flag_types()
    app = typer.Typer(
        name="agentrft",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    app.callback()(_root)
    app.command("tasks")(handle_errors(tasks))
    backends = installed_backends() if plugins else {}
    app.command("play")(handle_errors(with_backend_flags(play, "play", backends)))
    app.command("replay")(handle_errors(replay))
    app.command("report")(handle_errors(report))
    app.command("train")(handle_errors(with_backend_flags(train, "train", backends)))
    app.command("eval")(handle_errors(with_backend_flags(eval_, "eval", backends)))

    for name, help_text in GROUPS.items():
        app.add_typer(typer.Typer(name=name, no_args_is_help=True, help=help_text), name=name)
    dataset_cmd.register(get_group(app, "dataset"))
    reward_cmd.register(get_group(app, "reward"))
    config_cmd.register(get_group(app, "config"))
    mcp_cmd.register(get_group(app, "mcp"))

    if plugins:
        register_new_task(app)
        register_plugin_commands(app)
    return app


def get_group(app: typer.Typer, name: str) -> typer.Typer:
    """The sub-app registered under `name` (e.g. "dataset"), for plugins to add verbs to."""
    for info in app.registered_groups:
        if info.name == name and info.typer_instance is not None:
            return info.typer_instance
    names = [i.name for i in app.registered_groups if i.name]
    raise KeyError(f"no command group {name!r}; groups: {', '.join(names)}")


def installed_backends() -> dict[str, Any]:
    """The installed backends' classes, for their flags ({} when discovery fails: the core
    commands still work)."""
    from agentrft.plugins import get_plugins

    try:
        return get_plugins().backend_classes()
    except Exception as exc:
        error_console().print(f"warning: backends could not be loaded: {exc}")
        return {}


def register_new_task(app: typer.Typer) -> None:
    """`agentrft new-task`, from `agentrft.cli.new_task` when that module is present."""
    if importlib.util.find_spec("agentrft.cli.new_task") is None:
        return
    from agentrft.cli import new_task

    new_task.register(app)


def register_plugin_commands(app: typer.Typer) -> None:
    """Let each plugin's `agentrft_cli(app)` hook add commands; a failing one is reported."""
    from agentrft.plugins import get_plugins

    try:
        hook = get_plugins().hook.agentrft_cli
    except Exception as exc:  # plugin discovery itself failed: keep the core commands
        error_console().print(f"warning: plugins could not be loaded: {exc}")
        return
    for impl in hook.get_hookimpls():
        try:
            impl.function(app=app)
        except Exception as exc:
            if state.debug:
                raise
            error_console().print(
                f"warning: plugin {impl.plugin_name!r} failed to add its commands: "
                f"{type(exc).__name__}: {exc}"
            )


#: The core app (what tests drive with typer's CliRunner).
app = create_app(plugins=False)


def main() -> None:
    """Console-script entry point: the core app plus `new-task` and plugin commands.

    A usage error (an unknown option, a value out of range) prints one line, `error: ...`
    with the command's `--help`, and exits 2: the same shape as every other bad input,
    rather than click's boxed panel."""
    import sys

    from rich.console import Console

    app = create_app(plugins=True)
    try:
        code = app(standalone_mode=False, prog_name="agentrft")
    except Exception as exc:
        click_error = next((c for c in type(exc).__mro__ if c.__name__ == "ClickException"), None)
        if click_error is None:
            raise
        fmt = getattr(exc, "format_message", None)
        message = str(fmt()) if callable(fmt) else str(exc)
        if not message:
            sys.exit(getattr(exc, "exit_code", 2))  # no arguments: the help was the answer
        ctx = getattr(exc, "ctx", None)
        hint = f" (see: {ctx.command_path} --help)" if ctx is not None else ""
        Console(stderr=True, highlight=False, soft_wrap=True).print(
            f"error: {message}{hint}", markup=False
        )
        sys.exit(getattr(exc, "exit_code", 2))
    except KeyboardInterrupt:
        sys.exit(130)
    sys.exit(code if isinstance(code, int) else 0)
