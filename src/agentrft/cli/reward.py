"""`agentrft reward check`: prove that no worse outcome can outscore a better one."""

from typing import Annotated

import typer
from rich.text import Text

from agentrft.cli.common import REWARD_HELP, TASK_HELP, console, load_reward, load_task
from agentrft.cli.errors import handle_errors


def check(
    task: Annotated[str, typer.Option("--task", "-t", help=TASK_HELP)],
    reward: Annotated[str | None, typer.Option(help=REWARD_HELP)] = None,
) -> None:
    """Score TASK's outcome tiers at extreme shaping values; exit 1 with a counterexample if a
    worse outcome can score at least as much as a better one."""
    from agentrft.render import reward_check_table
    from agentrft.reward_check import check_task_reward

    the_task = load_task(task)
    reward_fn = load_reward(reward, the_task)
    report = check_task_reward(the_task, reward_fn)
    out = console()
    name = f"{task}" + (f" with reward {reward}" if reward else "")
    if report.samples:
        out.print(reward_check_table(report, title=f"reward check · {name}"))
    if report.ok:
        out.print(Text(f"ok: {report.explain()}", style="green"))
        return
    out.print(Text("FAILED: ", style="bold red") + Text(report.explain()))
    raise typer.Exit(1)


def register(group: typer.Typer) -> None:
    group.command("check")(handle_errors(check))
