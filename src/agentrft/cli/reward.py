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
    worse outcome can score at least as much as a better one. `--task a,b` checks each."""
    from agentrft.mixture import subtasks
    from agentrft.render import reward_check_table
    from agentrft.reward_check import check_task_reward

    the_task = load_task(task)
    reward_fn = load_reward(reward, the_task)
    out = console()
    failed = False
    # Several tasks (`--task a,b`): each is checked on its own; their rewards need not
    # share a scale, since no group ever compares rollouts of two tasks.
    for name_, each in subtasks(the_task).items():
        report = check_task_reward(each, reward_fn)
        name = f"{name_}" + (f" with reward {reward}" if reward else "")
        if report.samples:
            out.print(reward_check_table(report, title=f"reward check · {name}"))
        prefix = f"{name_}: " if each is not the_task else ""
        if report.ok:
            out.print(Text(f"{prefix}ok: {report.explain()}", style="green"))
            continue
        out.print(Text(f"{prefix}FAILED: ", style="bold red") + Text(report.explain()))
        failed = True
    if failed:
        raise typer.Exit(1)


def register(group: typer.Typer) -> None:
    group.command("check")(handle_errors(check))
