"""`agentrft train`: train a task on a backend with the resolved config.

The core flags are the same for every backend; each installed backend adds its own
(`Backend.cli_options`, e.g. the local backend's `--adapter` and `--resume`, the sagemaker
backend's `--role-arn`), which set keys of its config section or its options. `--set
key=value` wins over every flag.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agentrft.cli.backend_flags import BackendFlags
from agentrft.cli.common import (
    ConfigOpt,
    DryRunOpt,
    ExtraArgs,
    RewardOpt,
    SetOpt,
    TaskOpt,
    console,
    load_backend,
    resolve_config,
)
from agentrft.cli.summary import print_summary

BackendOpt = Annotated[
    str, typer.Option("--backend", "-b", help="Where to train (see `agentrft tasks`).")
]
ModelOpt = Annotated[
    str | None,
    typer.Option(
        help="The model to train: its backend's model key (local: local.model, an HF id, "
        "directory, .gguf file or pkg:MODULE; sagemaker: sagemaker.base_model, a hub id)."
    ),
]
DataOpt = Annotated[
    Path | None,
    typer.Option(
        "--data",
        help='Training rows file, JSONL/JSON/Parquet/CSV of {"prompt": ...} '
        "(train_dataset; default: rows the task makes).",
    ),
]


def train(
    task: TaskOpt = None,
    backend: BackendOpt = "local",
    config: ConfigOpt = None,
    set_: SetOpt = None,
    reward: RewardOpt = None,
    model: ModelOpt = None,
    data: DataOpt = None,
    max_steps: Annotated[
        int | None, typer.Option(min=1, help="Training steps (max_steps).")
    ] = None,
    dry_run: DryRunOpt = False,
    extra_args: ExtraArgs = None,
    backend_flags: BackendFlags | None = None,
) -> None:
    """Train TASK on a backend with the resolved config."""
    impl = load_backend(backend)
    own = backend_flags.for_backend(backend) if backend_flags else {}
    keys, fields = impl.cli_values(
        "train", {**own, "model": model, "dry_run": dry_run}, list(extra_args or [])
    )
    values = {
        "task": task,
        "reward": reward,
        "max_steps": max_steps,
        "train_dataset": str(data) if data is not None else None,
        **keys,
    }
    cfg, the_task, reward_fn = resolve_config(config, set_, values)
    # `impl.train` checks the config first (Backend.check_config): once, here too.
    options = impl.train_options(reward_fn=reward_fn, dry_run=dry_run, console=console(), **fields)
    print_summary(impl.train(the_task, cfg, options))
