"""Config -> the rows a local run plays, through the core's one row loader
(`agentrft.datasets.task_prompts`, which the CLI uses too): the same checks everywhere."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentrft.datasets import check_prompts_parse, task_prompts
from agentrft.task import TaskInputError

if TYPE_CHECKING:
    from agentrft.config import Config
    from agentrft.task import Task


def run_rows(task: Task[Any], config: Config, say: Any = None) -> tuple[list[str], list[str]]:
    """A training run's rows: the train rows (`train_rows`; the data cursor walks them in
    epochs; rows from a file are checked to parse), and the held-out rows of the before/after evaluations (`validation_rows`; [] when the
    task makes none and no file is given: training goes on without them, and `say` says
    so)."""
    # task_prompts is called here, not through train_prompts/validation_prompts: the rows
    # are read and checked in one pass through the core's loader.
    train_from, held_out_from = train_rows(config), validation_rows(config)
    train = task_prompts(task, **train_from)
    if config.train_dataset:
        check_prompts_parse(task, train, config.train_dataset, say)
    try:
        held_out = task_prompts(task, **held_out_from)
    except TaskInputError as exc:
        if say is not None:
            say(f"no validation rows, so no before/after evaluation: {exc}", highlight=False)
        held_out = []
    return train, held_out


def train_rows(config: Config) -> dict[str, Any]:
    """Where the train rows come from (`task_prompts`' arguments): `train_dataset`, else
    the task's train split, all of it."""
    return {
        "data": config.train_dataset,
        "split": "train",
        "n": None,
        "seed": config.seed,
        "data_flag": "--set train_dataset=FILE",
    }


def train_prompts(task: Task[Any], config: Config) -> list[str]:
    """The rows GRPO and the SFT warm-up train on."""
    return task_prompts(task, **train_rows(config))


def validation_rows(config: Config) -> dict[str, Any]:
    """Where the held-out rows come from (`task_prompts`' arguments): `validation_dataset`,
    else `eval.n` rows of the task's `eval.split`, at a seed of their own (so they are not
    the train rows)."""
    return {
        "data": config.validation_dataset,
        "split": config.eval.split,
        "n": config.eval.n,
        "seed": config.seed + 1,
        "data_flag": "--set validation_dataset=FILE",
    }


def validation_prompts(task: Task[Any], config: Config) -> list[str]:
    """The held-out rows both `train` (before/after) and `evaluate` run on."""
    return task_prompts(task, **validation_rows(config))
