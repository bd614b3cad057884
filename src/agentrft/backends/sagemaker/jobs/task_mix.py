"""What a multi-task SageMaker run prints about its tasks: the one runtime that serves them
and how many of each task's rows every dataset holds."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

    from agentrft.backends.sagemaker.settings import SageMakerRunConfig
    from agentrft.task import Task


def print_task_mix(task: Task[Any], config: SageMakerRunConfig, out: Console) -> None:
    """A multi-task run: the one runtime that serves every task, and each task's rows (from
    `train_dataset` / `validation_dataset` when set, else the rows the tasks make, which is
    what `agentrft dataset make --task <spec>` writes for upload). Prints nothing for one
    task."""
    from agentrft.datasets import task_prompts
    from agentrft.mixture import MixtureTask, row_task_counts

    if not isinstance(task, MixtureTask):
        return
    sm = config.sagemaker
    out.print(
        f"one runtime serves tasks {', '.join(task.tasks)}: {sm.runtime_arn} (each row goes "
        f"to its task by the agentrft_task field inside its prompt string; deploy it with "
        f"`agentrft deploy --task {','.join(task.tasks)}`)"
    )
    sources = [
        ("train", config.train_dataset, "train", sm.train_s3_uri),
        ("validation", config.validation_dataset, config.eval.split, sm.validation_s3_uri),
    ]
    for label, data, split, uri in sources:
        if label == "validation" and not uri:
            continue
        prompts = task_prompts(task, data=data, split=split, n=None, seed=config.seed)
        counts = row_task_counts(prompts)
        origin = data or f"made by the tasks (split {split})"
        names = [*task.tasks, *(n for n in counts if n not in task.tasks)]  # strays too
        listed = ", ".join(f"{n} {counts.get(n, 0)}" for n in names)
        out.print(f"{label} rows, {origin}, for {uri}: {listed}")
