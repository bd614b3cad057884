"""A local run resolved once: `RunSpec`.

Everything that turns what the user gave (the config, the CLI's flags, a resumed run's saved
config) into what runs happens here, once, before a file is written or a model loaded: the
CPU preset (applied here and nowhere else), the device and the inference engine, the
episode limits, the rows, and the settings each part of a run is built from: the sampler's
`SamplerSettings`, the trainer's `TrainerSettings`, the GRPO loop's `LoopSettings`, the
evaluations' `EvalSettings`, the warm-up's `WarmupSettings` and the tracker's
`TrackingSettings`. Each part receives only its own; the whole config stays on the spec only
to be saved (config.yaml, MLflow params). `--dry-run` and `config show` print the same spec a
real run starts from.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from agentrft.backends.local.algo.trainer_settings import TrainerSettings
from agentrft.backends.local.algo.warmup import warmup_task
from agentrft.backends.local.devices import resolve_device
from agentrft.backends.local.models.gguf_model import check_model_spec
from agentrft.backends.local.run.engine import (
    SamplerSettings,
    apply_cpu_preset,
    uses_tiny_model,
)
from agentrft.backends.local.run.evals import EvalSettings
from agentrft.backends.local.run.loop_settings import LoopSettings, train_sampling
from agentrft.backends.local.run.rows import run_rows
from agentrft.backends.local.run.run_dir import RunDir, TrackingSettings
from agentrft.backends.local.run.run_plan import check_task_fits, say_plan
from agentrft.backends.local.run.sft import WarmupSettings
from agentrft.backends.local.settings import LocalRunConfig
from agentrft.policy import Sampling
from agentrft.task import EpisodeLimits, Task

__all__ = [
    "RunSpec",
    "effective_config",
    "eval_config",
    "printer",
    "resolve_run",
    "train_sampling",  # its home is loop_settings; kept importable from here
]


@dataclass(frozen=True)
class RunSpec:
    """What a run starts from, resolved and checked before anything is written."""

    #: The run's config: the preset applied (a resumed run: its own saved config). Kept to
    #: be saved (config.yaml, MLflow params); the parts read their settings below.
    config: LocalRunConfig
    limits: EpisodeLimits
    train_prompts: list[str]
    #: Empty when the task makes no validation rows (no before/after evaluation then).
    val_prompts: list[str]
    sampler: SamplerSettings
    trainer: TrainerSettings
    loop: LoopSettings
    #: How training rollouts sample (temperature, top_p, max_tokens).
    sampling: Sampling
    evals: EvalSettings
    warmup: WarmupSettings
    tracking: TrackingSettings
    #: `local.adapter`: the LoRA adapter training continues from (None: a fresh one).
    adapter: str | None
    #: Whether the built-in tiny model's CPU preset applies.
    cpu_preset: bool
    #: The run being resumed and its latest checkpoint (None for a new run).
    run: RunDir | None = None
    checkpoint: Path | None = None

    def describe(self, task: Task[Any]) -> dict[str, Any]:
        """The spec as `train --dry-run` prints it: the run's shape, where the rows come
        from, and the sampler's and the trainer's settings."""
        config = self.config
        train_rows = f"made by task {task.name} (split train)"
        if config.train_dataset:
            n = len(self.train_prompts)
            train_rows = f"{config.train_dataset} ({n} row{'' if n == 1 else 's'})"
        return {
            "task": task.name,
            "model": config.local.model or f"built-in tiny model ({config.local.tiny_model})",
            "cpu_preset": self.cpu_preset,
            "device": self.sampler.device,
            "inference": self.sampler.inference,
            "global_batch_size": config.global_batch_size,
            "group_size": config.group_size,
            "max_steps": config.max_steps,
            "sampling_max_tokens": config.sampling_max_tokens,
            "learning_rate": config.learning_rate,
            "sft_warmup_steps": config.local.sft_warmup_steps,
            "run_dir": config.local.run_dir,
            # Where the rows come from (train --data FILE sets train_dataset).
            "train_rows": train_rows,
            "validation_rows": config.validation_dataset
            or f"made by task {task.name} (split {config.eval.split})",
            "limits": self.limits.model_dump(),
            "sampler": asdict(self.sampler),
            "trainer": asdict(self.trainer),
            "loop": asdict(self.loop),
            "sampling": self.sampling.model_dump(),
            "evals": self.evals.describe(),
            "warmup": asdict(self.warmup),
            "tracking": asdict(self.tracking),
        }


def printer(console: Any) -> Callable[..., None]:
    """`console.print`, or a no-op without a console (a library call, a test)."""
    return console.print if console is not None else (lambda *a, **k: None)


def resolve_run(
    task: Task[Any], config: LocalRunConfig, *, resume: str | None, console: Any
) -> RunSpec:
    """Everything a run needs that can be wrong, checked before a file is written or a model
    loaded: the config (on resume the run's own), the expert an SFT warm-up plays, the
    curriculum levels, and the rows (train rows must exist; validation rows may not)."""
    has_expert = warmup_task(task, config.local.sft_source) is not None
    if config.local.model:
        check_model_spec(config.local.model)
    run: RunDir | None = None
    checkpoint: Path | None = None
    tiny = uses_tiny_model(config)
    if resume:
        run = RunDir.open(resume)
        config = run.resumed_config(config)
        checkpoint = run.latest_checkpoint()
        if checkpoint is None:
            raise FileNotFoundError(f"{run.path} has no checkpoint to resume from")
    else:
        given = config
        config = apply_cpu_preset(config, has_expert=has_expert)
        say_plan(task, given, config, printer(console))
    check_task_fits(task, config, has_expert=has_expert)
    limits = task.limits.overridden_by(config.limits)  # as agentrft.config.episode_limits
    train_rows, val_prompts = run_rows(task, config, printer(console))
    device = resolve_device(config.local.device)  # once: the sampler and trainer share it
    return RunSpec(
        config,
        limits,
        train_rows,
        val_prompts,
        sampler=SamplerSettings.of(config, device=device),
        trainer=TrainerSettings.of(config, device=device),
        loop=LoopSettings.of(config),
        sampling=train_sampling(config),
        evals=EvalSettings.of(task, config),
        warmup=WarmupSettings.of(config),
        tracking=TrackingSettings.of(config),
        adapter=config.local.adapter,
        cpu_preset=tiny,
        run=run,
        checkpoint=checkpoint,
    )


def eval_config(config: LocalRunConfig) -> LocalRunConfig:
    """The config an evaluation or `play` runs with: the CPU preset's choices for a model
    on CPU, without a warm-up (an evaluation trains nothing)."""
    return apply_cpu_preset(config, has_expert=False)


def effective_config(task: Task[Any], config: LocalRunConfig) -> LocalRunConfig:
    """The config a new training run of `task` would run with (`config show`)."""
    return apply_cpu_preset(
        config, has_expert=warmup_task(task, config.local.sft_source) is not None
    )
