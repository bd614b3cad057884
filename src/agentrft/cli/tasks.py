"""`agentrft tasks`: what the installed plugins provide, and which plugins failed to load."""

from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from agentrft.cli.common import console
from agentrft.plugins import get_plugins


def tasks(
    name: Annotated[
        str | None, typer.Argument(help="Show only this task (exit 1 if it is not installed).")
    ] = None,
) -> None:
    """List installed tasks, named rewards and backends; report plugins that failed to load
    or broke a contract, and names two distributions both provide."""
    out = console()
    plugins = get_plugins()
    classes = plugins.task_classes()
    if name is not None and name not in classes:
        plugins.task(name)  # raises PluginError with the installed names and a suggestion
    sources = plugins.task_sources()

    longest = max((len(n) for n in classes), default=4)
    table = Table(title="tasks")
    # Names whole (a user copies them into --task); the description wraps instead.
    table.add_column("name", style="bold", no_wrap=True, min_width=max(4, longest))
    table.add_column("description")
    table.add_column("distribution", style="dim", no_wrap=True)
    table.add_column("tiers", style="dim")
    for task_name, cls in classes.items():
        if name is not None and task_name != name:
            continue
        tiers = getattr(cls, "tiers", None)
        table.add_row(
            task_name,
            Text(getattr(cls, "description", "") or ""),
            sources.get(task_name, "-"),
            _tiers(tiers.names) if tiers is not None else "-",
        )
    if classes:
        out.print(table)
    else:
        out.print("No tasks installed. Install a task plugin, e.g. pip install -e plugins/wordle")

    if name is None:
        rewards = plugins.rewards()
        backends = plugins.backend_classes()
        out.print(Text(f"rewards: {', '.join(rewards) or '-'}", style="dim"))
        out.print(Text(f"backends: {', '.join(backends) or '-'}", style="dim"))

    if plugins.broken:
        broken = Table(title="plugins that failed to load", title_style="bold red")
        broken.add_column("distribution")
        broken.add_column("entry point")
        broken.add_column("error", style="red")
        for b in plugins.broken:
            broken.add_row(b.distribution, f"{b.entry_point} = {b.value}", Text(b.error))
        out.print(broken)
    for conflict in plugins.conflicts():
        out.print(Text(f"conflict: {conflict}", style="red"))


def _tiers(names: list[str]) -> str:
    """Tier names best first, shortened when there are many."""
    if len(names) <= 3:
        return " > ".join(names)
    return f"{names[0]} > … > {names[-1]} ({len(names)})"
