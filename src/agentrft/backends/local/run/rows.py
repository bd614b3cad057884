"""Config -> the rows a local run plays, through the core's one row loader
(`agentrft.datasets.task_prompts`, which the CLI uses too): the same checks everywhere."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentrft.datasets import task_prompts
from agentrft.task import TaskInputError

if TYPE_CHECKING:
    from agentrft.config import Config
    from agentrft.task import Task


def train_prompts(task: Task[Any], config: Config) -> list[str]:
    """The rows GRPO and the SFT warm-up train on: `train_dataset`, else the task's train
    split (all of it; the data cursor walks it in epochs)."""
    return task_prompts(
        task,
        data=config.train_dataset,
        split="train",
        n=None,
        seed=config.seed,
        data_flag="--set train_dataset=FILE",
    )


def check_rows_parse(task: Task[Any], prompts: list[str], source: str, say: Any = None) -> None:
    """Refuse rows of which none parses as an instance of `task` (a run on them would
    train on the lowest reward alone); `say` a warning when only some fail. Called before a
    model is loaded or a file written, for rows from a file (the task's own rows parse)."""
    from agentrft.datasets import DatasetError

    bad: list[int] = []
    first = ""
    for i, prompt in enumerate(prompts):
        try:
            task.parse(prompt)
        except Exception as exc:  # TaskInputError, or a plugin's parse bug
            if not bad:
                first = (
                    str(exc) if isinstance(exc, TaskInputError) else f"{type(exc).__name__}: {exc}"
                )
            bad.append(i + 1)
    if not bad:
        return
    if len(bad) == len(prompts):
        raise DatasetError(
            f"{source}: none of its {len(prompts)} rows parses as a {task.name} instance "
            f"(row 1: {first}); `agentrft dataset make --task {task.name}` writes rows in "
            f"its format, `agentrft dataset check` checks a file"
        )
    if say is not None:
        shown = ", ".join(map(str, bad[:10])) + (" …" if len(bad) > 10 else "")
        say(
            f"warning: {len(bad)} of {len(prompts)} rows of {source} do not parse as "
            f"{task.name} instances and would score the lowest reward (rows {shown}); "
            f"row {bad[0]}: {first}",
            highlight=False,
        )


def validation_prompts(task: Task[Any], config: Config) -> list[str]:
    """The held-out rows both `train` (before/after) and `evaluate` run on:
    `validation_dataset`, else `eval.n` rows of the task's `eval.split`, at a seed of their
    own (so they are not the train rows)."""
    return task_prompts(
        task,
        data=config.validation_dataset,
        split=config.eval.split,
        n=config.eval.n,
        seed=config.seed + 1,
        data_flag="--set validation_dataset=FILE",
    )
