"""`LocalBackend`: GRPO fine-tuning and evaluation on this machine.

Importing this module is cheap: torch, transformers, peft and mlflow are imported inside
the methods that need them.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from agentrft import backend as core
from agentrft.backend import Backend, BackendError, CliOption, Command, EvalResult
from agentrft.backends.local.run.evals import EvalSettings, run_eval, save_eval
from agentrft.backends.local.run.rows import validation_prompts
from agentrft.backends.local.settings import (
    CLI_OPTIONS,
    LocalConfig,
    LocalEvalOptions,
    LocalRunConfig,
    LocalTrainOptions,
    as_local,
)

if TYPE_CHECKING:
    from agentrft.backends.local.run.spec import RunSpec
    from agentrft.backends.local.run.training import TrainResult
    from agentrft.config import Config
    from agentrft.evaluation import EvalReport
    from agentrft.task import Task
    from agentrft.trajectory import Trajectory

__all__ = [
    "LocalBackend",
    "TrainPlan",
    "evaluate_async",
    "plan",
    "run_eval",
    "run_training",
    "train_async",
]

log = logging.getLogger(__name__)


@dataclass
class TrainPlan(core.TrainResult):
    """What `train --dry-run` returns: the resolved plan (`plan()`), nothing run."""

    plan: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        return dict(self.plan)


class LocalBackend(Backend):
    """GRPO on a LoRA adapter: vLLM rollouts on a GPU, a transformers sampler on CPU."""

    name: ClassVar[str] = "local"
    extra: ClassVar[str] = "local"
    requires: ClassVar[tuple[str, ...]] = ("torch", "transformers", "peft")
    config_section: ClassVar[type[LocalConfig]] = LocalConfig
    train_options: ClassVar[type[LocalTrainOptions]] = LocalTrainOptions
    eval_options: ClassVar[type[LocalEvalOptions]] = LocalEvalOptions
    model_key: ClassVar[str] = "local.model"
    keeps_trajectories: ClassVar[bool] = True
    cli_flags: ClassVar[tuple[CliOption, ...]] = CLI_OPTIONS

    @classmethod
    def cli_values(
        cls, command: Command, values: dict[str, Any], extra_args: list[str]
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        config, options = super().cli_values(command, values, extra_args)
        if "resume" in options:
            if not Path(options["resume"]).exists():
                raise BackendError(
                    f"--resume {options['resume']}: no such run directory or checkpoint"
                )
            options["resume"] = str(options["resume"])
        return config, options

    def check_config(self, config: Config) -> None:
        """`loss_fn`, `local.loss_normalization` and `advantage_method` must be registered
        (in code, or by the installed plugins, installed here)."""
        from agentrft.backends.local.algo.algorithms import check_algorithms, install_algorithms
        from agentrft.plugins import get_plugins

        install_algorithms(get_plugins())
        check_algorithms(as_local(config))

    def play_policy(self, task: Task[Any], config: Config) -> Any:
        """`local.model` with `local.adapter` (`--adapter DIR`), for `agentrft play`."""
        from agentrft.backends.local.run.play import EnginePolicy

        self.check_available()
        return EnginePolicy(as_local(config))

    def effective_config(self, task: Task[Any], config: Config) -> Config:
        """`config` with the CPU preset applied (the built-in tiny model on a CPU machine)."""
        from agentrft.backends.local.run.spec import effective_config

        return effective_config(task, as_local(config))

    def run_spec(self, task: Task[Any], config: Config) -> dict[str, Any]:
        """The `RunSpec` a new run of `task` starts from, as `train --dry-run` prints it."""
        self.check_config(config)
        return plan(task, as_local(config))

    def train(
        self, task: Task[Any], config: Config, options: core.TrainOptions | None = None
    ) -> core.TrainResult:
        """Train `task` (`LocalTrainOptions`: `resume` continues a run from its last
        checkpoint; `dry_run` resolves the model, sampler and CPU preset without training)."""
        from agentrft.backends.local.run.spec import resolve_run

        opts = core.as_options(LocalTrainOptions, options)
        self.check_available()
        self.check_config(config)
        # Resolved once, here: the dry run prints the spec a real run would start from.
        resume = None if opts.dry_run else opts.resume
        console = None if opts.dry_run else opts.console
        spec = resolve_run(task, as_local(config), resume=resume, console=console)
        if opts.dry_run:
            return TrainPlan(plan=spec.describe(task))
        return asyncio.run(
            run_training(
                task, spec, reward_fn=opts.reward_fn, console=opts.console, on_step=opts.on_step
            )
        )

    def evaluate(
        self, task: Task[Any], config: Config, options: core.EvalOptions | None = None
    ) -> EvalResult:
        """Evaluate `local.model` (default: the tiny model on CPU) with `local.adapter` on
        the validation rows (or `LocalEvalOptions.prompts`); the trajectories come back too."""
        opts = core.as_options(LocalEvalOptions, options)
        self.check_available()
        self.check_config(config)
        reports, trajectories = asyncio.run(
            evaluate_async(
                task,
                as_local(config),
                reward_fn=opts.reward_fn,
                output_dir=opts.output_dir,
                console=opts.console,
                prompts=opts.prompts,
                label=opts.label,
            )
        )
        return EvalResult(reports=reports, trajectories=trajectories)


def plan(task: Task[Any], config: LocalRunConfig) -> dict[str, Any]:
    """What `train` would run, without loading a model (for `--dry-run`): the run's spec,
    resolved as a real run resolves it (rows read and checked, before any money is spent)."""
    from agentrft.backends.local.run.spec import resolve_run

    return resolve_run(task, config, resume=None, console=None).describe(task)


# -- train ----------------------------------------------------------------------------------


async def train_async(
    task: Task[Any],
    config: LocalRunConfig,
    *,
    resume: str | None = None,
    reward_fn: Any = None,
    console: Any = None,
    on_step: Any = None,
) -> TrainResult:
    """Train `task` with GRPO on this machine, phase by phase (`training.py` says what each
    phase does); `resume` continues a run directory or checkpoint exactly."""
    from agentrft.backends.local.run.spec import resolve_run

    spec = resolve_run(task, config, resume=resume, console=console)  # nothing written yet
    return await run_training(task, spec, reward_fn=reward_fn, console=console, on_step=on_step)


async def run_training(
    task: Task[Any],
    spec: RunSpec,
    *,
    reward_fn: Any = None,
    console: Any = None,
    on_step: Any = None,
) -> TrainResult:
    """Run the training `spec` describes (resolved by `spec.resolve_run`), phase by phase."""
    from agentrft.backends.local.run.side_failures import RunSideFailed
    from agentrft.backends.local.run.training import TrainingRun

    started = time.perf_counter()
    job = TrainingRun.open(task, spec, reward_fn=reward_fn, console=console, on_step=on_step)
    try:
        job.build()
        await job.start()
        history = await job.train()
        return await job.finish(history, started=started)
    except RunSideFailed as exc:
        raise job.stopped_by(exc) from exc
    except BaseException:
        job.interrupted()
        raise
    finally:
        await job.close()


# -- evaluate -------------------------------------------------------------------------------


async def evaluate_async(
    task: Task[Any],
    config: LocalRunConfig,
    *,
    model: str | None = None,
    adapter: str | None = None,
    reward_fn: Any = None,
    output_dir: str | None = None,
    console: Any = None,
    prompts: list[str] | None = None,
    label: str | None = None,
) -> tuple[list[EvalReport], list[Trajectory]]:
    from agentrft.backends.local.run.engine import SamplerSettings, make_engine
    from agentrft.backends.local.run.spec import eval_config

    if model:
        config = config.model_copy(
            update={"local": config.local.model_copy(update={"model": model})}
        )
    # The tiny model on CPU: the same eval size and turn limit as `train`'s before/after.
    config = eval_config(config)
    from agentrft.backends.local.run.play import check_adapter_dir

    adapter = adapter or config.local.adapter
    check_adapter_dir(adapter)
    if prompts is None:
        prompts = validation_prompts(task, config)
    engine = make_engine(SamplerSettings.of(config))
    try:
        name = None
        if adapter:
            name = "eval-adapter"
            await engine.sampler.load_adapter(name, str(Path(adapter).resolve()))
        reports, trajs = await run_eval(
            task, EvalSettings.of(task, config), engine, prompts, adapter=name,
            label=label or (Path(adapter).name if adapter else Path(engine.model_path).name),
            reward_fn=reward_fn,
        )  # fmt: skip
    finally:
        await engine.aclose()
    if output_dir:
        save_eval(Path(output_dir), "eval", reports, trajs)
    return reports, trajs  # the caller (the CLI) renders them
