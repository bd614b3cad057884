"""`agentrft mcp serve`: one row of a task served as an MCP server (stdio or streamable HTTP),
for any MCP-speaking agent, or a person in an MCP inspector, to play."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from agentrft.cli.common import DataOpt, RowOpt, RowSeedOpt, SplitOpt, TaskOpt, load_task, pick_row
from agentrft.cli.errors import CliError, error_console


def serve(
    task: TaskOpt = None,
    row: RowOpt = 0,
    split: SplitOpt = "validation",
    data: DataOpt = None,
    seed: RowSeedOpt = 42,
    http: Annotated[
        int | None,
        typer.Option(
            "--http",
            min=1,
            max=65535,
            metavar="PORT",
            help="Serve streamable HTTP on 127.0.0.1:PORT (path /mcp) instead of stdio.",
        ),
    ] = None,
) -> None:
    """Serve one episode of TASK as an MCP server: its tools, end_episode (the reward), and
    the briefing and reward as resources. One episode per server; start another for the
    next row."""
    import asyncio

    from agentrft.mcp.connection import require_mcp
    from agentrft.mcp.serve import EpisodeServer

    try:
        require_mcp()
    except ImportError as exc:
        raise CliError(str(exc)) from None
    the_task = load_task(task)
    episode = EpisodeServer(the_task, pick_row(the_task, row, split, data, seed))
    asyncio.run(_serve(episode, http))


async def _serve(episode: Any, port: int | None) -> None:
    from agentrft.environment_hooks import close_environment

    await episode.start()
    server = episode.mcp_server()
    say = error_console()  # stdout is the protocol's under stdio
    try:
        if port is None:
            from mcp.server.stdio import stdio_server

            say.print(f"serving {episode.task.name} over stdio", highlight=False)
            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())
        else:
            import uvicorn

            app = server.streamable_http_app(host="127.0.0.1")
            say.print(
                f"serving {episode.task.name} at http://127.0.0.1:{port}/mcp", highlight=False
            )
            config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
            await uvicorn.Server(config).serve()
    finally:
        if not episode.over:
            await close_environment(episode.env, episode.traj)


def register(group: typer.Typer) -> None:
    """Add `serve` to the `mcp` group."""
    from agentrft.cli.errors import handle_errors

    group.command("serve")(handle_errors(serve))
