"""Config -> the rows a local run plays, through the core's one row loader
(`agentrft.datasets.task_prompts`, which the CLI uses too): the same checks everywhere."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentrft.datasets import task_prompts

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
