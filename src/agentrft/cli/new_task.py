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
    from_mcp: Annotated[
        str | None,
        typer.Option(
            "--from-mcp",
            metavar="CMD_OR_URL",
            help='Wire the tools of an MCP server: a command line ("python -m my_server") or '
            "a streamable-HTTP URL. The server is started (or reached) to list its tools.",
        ),
    ] = None,
    judged: Annotated[
        bool,
        typer.Option(
            "--judged",
            help="With --from-mcp: a rubric judge (a chat model) decides whether an episode "
            "succeeded, for workflows code cannot check.",
        ),
    ] = False,
    mcp_header: Annotated[
        list[str] | None,
        typer.Option(
            "--mcp-header",
            metavar="NAME: VALUE",
            help="A header for --from-mcp URL, to list the tools (repeatable; never written).",
        ),
    ] = None,
) -> None:
    """Scaffold a new task plugin NAME: installable, tested, ready for `agentrft eval`.

    It holds a pyproject with the entry point, a task module with an environment, two typed
    tools, a tiered reward, a dataset maker and a scripted expert, tests and a README.
    Refuses an invalid or taken name and an existing directory, writing nothing."""
    from agentrft.scaffold import ScaffoldError, TaskNames, create_task

    try:
        if from_mcp is None:
            if mcp_header or judged:
                flag = "--mcp-header" if mcp_header else "--judged"
                raise ScaffoldError(f"{flag} goes with --from-mcp")
            target = create_task(name, directory)
        else:
            target = _create_from_mcp(name, directory, from_mcp, mcp_header or [], judged)
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


def _create_from_mcp(
    name: str, directory: Path, spec: str, header_lines: list[str], judged: bool
) -> Path:
    """The MCP template, rendered around the tools the server lists (checked first: a
    server that cannot list its tools writes nothing)."""
    from agentrft.mcp.scaffold import list_tools, server_spec, template_values
    from agentrft.scaffold import ScaffoldError, TaskNames, create_task, validate_name

    headers: dict[str, str] = {}
    for line in header_lines:
        key, sep, value = line.partition(":")
        if not sep or not key.strip():
            raise ScaffoldError(f"--mcp-header {key.strip()!r}...: write it as 'NAME: VALUE'")
        headers[key.strip()] = value.strip()
    if headers and not spec.startswith(("http://", "https://")):
        raise ScaffoldError("--mcp-header goes with --from-mcp URL (an http(s) server)")
    validate_name(name)  # before starting a server for nothing
    server = server_spec(spec, name, headers)
    tools = list_tools(server)

    def values(names: TaskNames) -> dict[str, str]:
        return template_values(names, server, tools, judged=judged)

    target = create_task(name, directory, template="new_task_mcp", extra=values)
    typer.echo(f"the server lists {len(tools)} tools: {', '.join(t.name for t in tools)}")
    return target


def _relative(path: Path) -> Path:
    try:
        return path.relative_to(Path.cwd())
    except ValueError:
        return path


def register(app: typer.Typer) -> None:
    """Add `new-task` to the root app (called by `agentrft.cli.app.create_app`)."""
    app.command("new-task")(handle_errors(new_task))
