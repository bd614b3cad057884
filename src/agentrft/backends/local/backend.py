"""`LocalBackend`: GRPO fine-tuning and evaluation on this machine.

Importing this module is cheap: torch, transformers, peft and mlflow are imported inside
the methods that need them.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from agentrft import backend as core
from agentrft.backend import Backend, BackendError, CliOption, Command, EvalResult
from agentrft.backends.local.settings import (
    CLI_OPTIONS,
    LocalConfig,
    LocalEvalOptions,
    LocalTrainOptions,
)

if TYPE_CHECKING:
    from agentrft.config import Config
    from agentrft.evaluation import EvalReport
    from agentrft.task import Task
    from agentrft.trajectory import Trajectory

log = logging.getLogger(__name__)


@dataclass
class TrainResult(core.TrainResult):
    """What `LocalBackend.train` leaves: where, how far, and the before/after reports."""

    run_dir: Path
    final_adapter: Path
    steps: int
    history: list[dict[str, float]] = field(default_factory=list)
    before: list[EvalReport] = field(default_factory=list)
    after: list[EvalReport] = field(default_factory=list)
    #: After the SFT warm-up, before RL (empty without a warm-up).
    after_sft: list[EvalReport] = field(default_factory=list)
    wall_s: float = 0.0


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
        """`loss_fn`, `local.loss_normalization` and `advantage_method` must be registered."""
        from agentrft.backends.local.algorithms import check_algorithms

        check_algorithms(config)

    def play_policy(self, task: Task[Any], config: Config) -> Any:
        """`local.model` with `local.adapter` (`--adapter DIR`), for `agentrft play`."""
        from agentrft.backends.local.play import EnginePolicy

        self.check_available()
        return EnginePolicy(config)

    def effective_config(self, task: Task[Any], config: Config) -> Config:
        """`config` with the CPU preset applied (the built-in tiny model on a CPU machine)."""
        from agentrft.backends.local.engine import apply_cpu_preset

        return apply_cpu_preset(config, has_expert=task.expert() is not None)

    def train(
        self, task: Task[Any], config: Config, options: core.TrainOptions | None = None
    ) -> core.TrainResult:
        """Train `task` (`LocalTrainOptions`: `resume` continues a run from its last
        checkpoint; `dry_run` resolves the model, sampler and CPU preset without training)."""
        opts = core.as_options(LocalTrainOptions, options)
        self.check_available()
        self.check_config(config)
        if opts.dry_run:
            return TrainPlan(plan=plan(task, config))
        return asyncio.run(
            train_async(
                task,
                config,
                resume=opts.resume,
                reward_fn=opts.reward_fn,
                console=opts.console,
                on_step=opts.on_step,
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
                config,
                reward_fn=opts.reward_fn,
                output_dir=opts.output_dir,
                console=opts.console,
                prompts=opts.prompts,
                label=opts.label,
            )
        )
        return EvalResult(reports=reports, trajectories=trajectories)


def plan(task: Task[Any], config: Config) -> dict[str, Any]:
    """What `train` would run, without loading a model (for `--dry-run`)."""
    from agentrft.backends.local.engine import (
        apply_cpu_preset,
        resolve_device,
        resolve_inference,
        uses_tiny_model,
    )

    tiny = uses_tiny_model(config)
    config = apply_cpu_preset(config, has_expert=task.expert() is not None)
    device = resolve_device(config)
    return {
        "task": task.name,
        "model": config.local.model or f"built-in tiny model ({config.local.tiny_model})",
        "cpu_preset": tiny,
        "device": device,
        "inference": resolve_inference(config, device),
        "global_batch_size": config.global_batch_size,
        "group_size": config.group_size,
        "max_steps": config.max_steps,
        "sampling_max_tokens": config.sampling_max_tokens,
        "learning_rate": config.learning_rate,
        "sft_warmup_steps": config.local.sft_warmup_steps,
        "run_dir": config.local.run_dir,
        # Where the rows come from (train --data FILE sets train_dataset).
        "train_rows": config.train_dataset or f"made by task {task.name} (split train)",
        "validation_rows": config.validation_dataset
        or f"made by task {task.name} (split {config.eval.split})",
    }


# -- shared helpers -------------------------------------------------------------------------


def _prompts(task: Task[Any], path: str | None, split: str, n: int | None, seed: int) -> list[str]:
    if path:
        from agentrft.datasets import read_prompts

        prompts = read_prompts(path)
        return prompts[:n] if n else prompts
    from agentrft.task import TaskInputError

    key = "train_dataset" if split == "train" else "validation_dataset"
    try:
        rows = task.make_dataset(split, n, seed)
    except TaskInputError as exc:
        raise TaskInputError(
            f"{exc}; give rows with --set {key}=FILE (JSONL, Parquet, CSV)"
        ) from None
    return [str(r["prompt"]) for r in rows]


def _validation_prompts(task: Task[Any], config: Config) -> list[str]:
    """The held-out rows both `train` (before/after) and `evaluate` run on."""
    return _prompts(
        task, config.validation_dataset, config.eval.split, config.eval.n, config.seed + 1
    )


async def run_eval(
    task: Task[Any],
    config: Config,
    engine: Any,
    prompts: list[str],
    *,
    adapter: str | None,
    label: str,
    reward_fn: Any = None,
) -> tuple[list[EvalReport], list[Any]]:
    """Evaluate through the one agent loop at each `config.eval.temperatures`."""
    from agentrft.backends.local.chat_tokens import TokenPolicy
    from agentrft.backends.local.engine import episode_limits
    from agentrft.evaluation import evaluate
    from agentrft.policy import Sampling

    policy = TokenPolicy(engine.sampler, engine.chat, adapter=adapter, seed=config.seed + 7)
    reports, trajs = await evaluate(
        task,
        prompts,
        policy,
        temperatures=config.eval.temperatures,
        samples_per_row=config.eval.samples_per_row,
        sampling=Sampling(top_p=config.sampling_top_p, max_tokens=config.sampling_max_tokens),
        limits=episode_limits(task, config),
        concurrency=config.eval.concurrency,
        pass_k_values=config.pass_k_values,
        success_threshold=config.success_threshold,
        reward_fn=reward_fn,
        policy_name=label,
        curriculum_level=eval_level(config),
    )
    return reports, trajs


def eval_level(config: Config) -> int:
    """The curriculum level evaluations play: `eval.curriculum_level` when set, else the
    level a training curriculum ends at (so before/after rows compare like with like)."""
    if "curriculum_level" in config.eval.model_fields_set:
        return config.eval.curriculum_level
    return config.local.curriculum_end


def _save_eval(out: Path, label: str, reports: list[EvalReport], trajs: list[Any]) -> None:
    from agentrft.evaluation import write_report
    from agentrft.trajectory import write_trajectories

    write_report(out / f"{label}.json", reports)
    write_trajectories(trajs, out / f"{label}_trajectories.jsonl")


def _load_eval(out: Path, label: str) -> list[EvalReport]:
    from agentrft.evaluation import EvalReport

    p = out / f"{label}.json"
    if not p.is_file():
        return []
    return [EvalReport.model_validate(d) for d in json.loads(p.read_text())]


# -- train ----------------------------------------------------------------------------------


def _with_secrets(run: Any, given: Config) -> Config:
    """The run's saved config with the secrets its config.yaml was written without (URL
    passwords, keys) taken from the config the resume was started with."""
    from agentrft.backend import BackendError
    from agentrft.config import validate_config
    from agentrft.redact import restore_redacted

    saved = run.config()
    data, missing = restore_redacted(saved.model_dump(mode="json"), given.model_dump(mode="json"))
    if missing:
        raise BackendError(
            f"{run.path / 'config.yaml'} was written without the secrets in "
            f"{', '.join(missing)}; pass the same values again to resume (the same --config "
            f"file, or --set {missing[0]}=...)"
        )
    return validate_config(data)


async def train_async(
    task: Task[Any],
    config: Config,
    *,
    resume: str | None = None,
    reward_fn: Any = None,
    console: Any = None,
    on_step: Any = None,
) -> TrainResult:
    from agentrft.backends.local.engine import (
        apply_cpu_preset,
        episode_limits,
        make_engine,
        make_trainer,
        train_sampling,
    )
    from agentrft.backends.local.grpo import GRPOLoop
    from agentrft.backends.local.run import RunDir, Tracker, flatten_config
    from agentrft.backends.local.sft import sft_warmup
    from agentrft.backends.local.view import LiveView
    from agentrft.plugins import get_plugins
    from agentrft.task import TaskInputError

    started = time.perf_counter()
    has_expert = task.expert() is not None
    if resume:
        run = RunDir.open(resume)
        saved = _with_secrets(run, config)
        if "max_steps" in config.model_fields_set and config.max_steps != saved.max_steps:
            saved = saved.model_copy(update={"max_steps": config.max_steps})
        config = saved
        checkpoint = run.latest_checkpoint()
        if checkpoint is None:
            raise FileNotFoundError(f"{run.path} has no checkpoint to resume from")
    else:
        config = apply_cpu_preset(config, has_expert=has_expert)
        run = None
        checkpoint = None

    if config.local.sft_warmup_steps > 0 and not has_expert:
        raise ValueError(
            f"local.sft_warmup_steps={config.local.sft_warmup_steps} but task {task.name!r} has "
            "no scripted expert (Task.expert() returned None); set local.sft_warmup_steps=0"
        )
    levels = (config.local.curriculum_start, config.local.curriculum_end, eval_level(config))
    if max(levels) > task.curriculum_levels:
        raise ValueError(
            f"task {task.name!r} offers curriculum levels 0..{task.curriculum_levels}; "
            f"local.curriculum_start/curriculum_end/eval.curriculum_level ask for "
            f"{max(levels)}"
        )
    # Rows first: a task that cannot make them fails before anything is written.
    limits = episode_limits(task, config)
    train_prompts = _prompts(task, config.train_dataset, "train", None, config.seed)
    say = console.print if console is not None else (lambda *a, **k: None)
    try:
        val_prompts = _validation_prompts(task, config)
    except TaskInputError as exc:  # training can go on without held-out rows
        say(f"no validation rows, so no before/after evaluation: {exc}", highlight=False)
        val_prompts = []
    if run is None:
        run = RunDir.create(config, task.name)
    engine = make_engine(config)
    say(
        f"[bold]agentrft local[/] · task {task.name} · model {engine.model_path} · "
        f"inference {engine.inference} on {engine.device} · run {run.path}",
        highlight=False,
    )
    info = run.read_info()
    tracker = None
    try:
        trainer = make_trainer(
            config,
            engine.model_path,
            max_completion_length=config.sampling_max_tokens * limits.max_turns,
            adapter=config.local.adapter,  # continue training a LoRA adapter (e.g. an SFT one)
        )
        if config.local.tracking == "mlflow":
            tracker = Tracker(
                run,
                enabled=True,
                tracking_uri=config.local.mlflow_tracking_uri,
                experiment=config.local.mlflow_experiment,
                run_name=run.path.name,
                run_id=info.get("mlflow_run_id"),
            )
            if not info.get("mlflow_run_id"):
                tracker.log_params(flatten_config(config))
        run.update_info(
            task=task.name,
            model=engine.model_path,
            inference=engine.inference,
            device=engine.device,
            trainable_parameters=trainer.trainable_parameters,
            mlflow_run_id=tracker.run_id if tracker else None,
            mlflow_tracking_uri=getattr(tracker, "uri", None),
            status="running",
        )
        view = LiveView(console, config.max_steps, title=f"GRPO · {task.name}")
        loop = GRPOLoop(
            task,
            config,
            engine,
            trainer,
            run,
            train_prompts=train_prompts,
            limits=limits,
            sampling=train_sampling(config),
            reward_fn=reward_fn,
            tracker=tracker,
            view=view,
            on_step=on_step,
            hooks=get_plugins().hook,
        )
        view.total = loop.total_steps()
        # Mid-run validation: the validation rows at the first eval temperature only.
        val_config = config.model_copy(
            update={
                "eval": config.eval.model_copy(
                    update={"temperatures": config.eval.temperatures[:1]}
                )
            }
        )

        async def validate(step: int) -> dict[str, float]:
            """Every `val_every` steps: solve rate and mean reward on the validation rows."""
            reports, _ = await run_eval(
                task, val_config, engine, val_prompts, adapter=loop.policy.adapter,
                label=f"step {step}", reward_fn=reward_fn,
            )  # fmt: skip
            r = reports[0]
            view.note(
                f"validation after step {step}: solve rate {r.solve_rate:.1%}, "
                f"reward {r.mean_reward:.3f}"
            )
            return {"val_solve_rate": r.solve_rate, "val_reward_mean": r.mean_reward}

        if val_prompts:
            loop.validate = validate
        eval_dir = run.path / "eval"
        before: list[EvalReport] = _load_eval(eval_dir, "before")
        after_sft: list[EvalReport] = _load_eval(eval_dir, "after_sft")
        if checkpoint is not None:
            state = await loop.restore(checkpoint)
            run.truncate_after(loop.step)
            say(f"resumed from {checkpoint} (step {state['step']})", highlight=False)
        else:
            if config.local.eval_before and val_prompts:
                say(f"evaluating the starting model on {len(val_prompts)} held-out rows ...")
                start = None
                if config.local.adapter:  # training continues from it: it is the start
                    await loop.sync(0)
                    start = loop.policy.adapter
                before, trajs = await run_eval(
                    task, config, engine, val_prompts, adapter=start, label="before",
                    reward_fn=reward_fn,
                )  # fmt: skip
                _save_eval(eval_dir, "before", before, trajs)
            if config.local.sft_warmup_steps > 0:
                say(f"SFT warm-up: {config.local.sft_warmup_steps} steps on expert games ...")

                def sft_log(step: int, m: dict[str, float]) -> None:
                    if tracker is not None:
                        tracker.log_metrics({f"sft_{k}" if not k.startswith("sft") else k: v
                                             for k, v in m.items()}, step - config.local.sft_warmup_steps)  # fmt: skip
                    if step == 1 or step % 10 == 0 or step == config.local.sft_warmup_steps:
                        say(f"  sft step {step}: loss {m['sft_loss']:.4f}", highlight=False)

                t0 = time.perf_counter()
                await sft_warmup(
                    task,
                    trainer,
                    engine.chat,
                    train_prompts,
                    steps=config.local.sft_warmup_steps,
                    batch_size=config.global_batch_size,
                    learning_rate=config.local.sft_learning_rate,
                    limits=limits,
                    max_length=config.local.max_sequence_length,
                    on_step=sft_log,
                    curriculum_level=config.local.curriculum_start,
                )
                say(f"SFT warm-up done in {time.perf_counter() - t0:.1f}s", highlight=False)
            trainer.set_reference()  # the KL reference (local.kl_beta): where RL starts
            await loop.sync(0)
            if config.local.sft_warmup_steps > 0 and config.local.eval_after and val_prompts:
                # What RL adds shows only next to what the warm-up alone reached.
                say(f"evaluating the warmed-up adapter on {len(val_prompts)} held-out rows ...")
                after_sft, trajs = await run_eval(
                    task, config, engine, val_prompts, adapter=loop.policy.adapter,
                    label="after SFT", reward_fn=reward_fn,
                )  # fmt: skip
                _save_eval(eval_dir, "after_sft", after_sft, trajs)
            loop.checkpoint()
        with view:
            history = await loop.train()
        final = trainer.save_adapter(run.path / "final_adapter")
        after: list[EvalReport] = []
        if config.local.eval_after and val_prompts:
            say(f"evaluating the trained adapter on {len(val_prompts)} held-out rows ...")
            after, trajs = await run_eval(
                task, config, engine, val_prompts, adapter=loop.policy.adapter, label="after",
                reward_fn=reward_fn,
            )  # fmt: skip
            _save_eval(eval_dir, "after", after, trajs)
            if tracker is not None:
                for r in after:
                    tracker.log_metrics(
                        {f"eval_solve_rate_t{r.temperature:g}": r.solve_rate,
                         f"eval_reward_t{r.temperature:g}": r.mean_reward},
                        loop.step,
                    )  # fmt: skip
        if console is not None and (before or after):
            from agentrft.evaluation import reports_table

            console.print(reports_table([*before, *after_sft, *after]))
        run.update_info(status="finished", steps=loop.step)
        if tracker is not None:
            if after:
                tracker.log_artifact(eval_dir / "after.json")
            tracker.close()
            tracker = None
        say(f"run directory: {run.path}  (final adapter: {final})", highlight=False)
        return TrainResult(
            run_dir=run.path,
            final_adapter=final,
            steps=loop.step,
            history=history,
            before=before,
            after=after,
            after_sft=after_sft,
            wall_s=time.perf_counter() - started,
        )
    except BaseException:
        run.update_info(status="interrupted")
        if tracker is not None:
            tracker.close(status="KILLED")
        raise
    finally:
        await engine.aclose()


# -- evaluate -------------------------------------------------------------------------------


async def evaluate_async(
    task: Task[Any],
    config: Config,
    *,
    model: str | None = None,
    adapter: str | None = None,
    reward_fn: Any = None,
    output_dir: str | None = None,
    console: Any = None,
    prompts: list[str] | None = None,
    label: str | None = None,
) -> tuple[list[EvalReport], list[Trajectory]]:
    from agentrft.backends.local.engine import apply_cpu_preset, make_engine

    if model:
        config = config.model_copy(
            update={"local": config.local.model_copy(update={"model": model})}
        )
    # The tiny model on CPU: the same eval size and turn limit as `train`'s before/after.
    config = apply_cpu_preset(config, has_expert=False)
    from agentrft.backends.local.play import check_adapter_dir

    adapter = adapter or config.local.adapter
    check_adapter_dir(adapter)
    if prompts is None:
        prompts = _validation_prompts(task, config)
    engine = make_engine(config)
    try:
        name = None
        if adapter:
            name = "eval-adapter"
            await engine.sampler.load_adapter(name, str(Path(adapter).resolve()))
        reports, trajs = await run_eval(
            task, config, engine, prompts, adapter=name,
            label=label or (Path(adapter).name if adapter else Path(engine.model_path).name),
            reward_fn=reward_fn,
        )  # fmt: skip
    finally:
        await engine.aclose()
    if output_dir:
        _save_eval(Path(output_dir), "eval", reports, trajs)
    return reports, trajs  # the caller (the CLI) renders them
