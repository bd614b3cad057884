"""A local training run as named phases, in the order `backend.train_async` runs them:

1. `read_inputs`: the config (a resumed run's own), the checks and the rows; nothing is
   written yet, so bad input leaves no run directory behind;
2. `TrainingRun.open`: the run directory and the engine (sampler + chat tokenizer);
3. `TrainingRun.build`: the trainer, the MLflow tracker and the GRPO loop;
4. `TrainingRun.start`: resume from a checkpoint, or evaluate the starting model, run the
   SFT warm-up and evaluate what it reached;
5. `TrainingRun.train`: the GRPO steps;
6. `TrainingRun.finish`: the final adapter, the after-evaluation and the report.

What the phases share (run directory, engine, trainer, tracker, loop) lives on one
`TrainingRun`; each phase is one method.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentrft import backend as core
from agentrft.backend import BackendError
from agentrft.backends.local.algo.trainer import LoRATrainer, make_trainer
from agentrft.backends.local.algo.warmup import describe_source, warmup_task
from agentrft.backends.local.models.gguf_model import check_model_spec
from agentrft.backends.local.run.engine import Engine, apply_cpu_preset, make_engine, train_sampling
from agentrft.backends.local.run.evals import eval_level, load_eval, run_eval, save_eval
from agentrft.backends.local.run.grpo import GRPOLoop
from agentrft.backends.local.run.rows import check_rows_parse, train_prompts, validation_prompts
from agentrft.backends.local.run.run_dir import RunDir, Tracker, flatten_config
from agentrft.backends.local.run.run_plan import say_plan
from agentrft.backends.local.run.sft import sft_warmup
from agentrft.backends.local.run.view import LiveView
from agentrft.backends.local.settings import LocalRunConfig, as_local
from agentrft.config import episode_limits
from agentrft.config_model import validate_config
from agentrft.plugins import get_plugins
from agentrft.redact import restore_redacted
from agentrft.task import EpisodeLimits, Task, TaskInputError

if TYPE_CHECKING:
    from agentrft.evaluation import EvalReport


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


# -- 1. inputs ------------------------------------------------------------------------------


@dataclass
class RunInputs:
    """What a run starts from, resolved and checked before anything is written."""

    config: LocalRunConfig
    limits: EpisodeLimits
    train_prompts: list[str]
    #: Empty when the task makes no validation rows (no before/after evaluation then).
    val_prompts: list[str]
    #: The run being resumed and its latest checkpoint (None for a new run).
    run: RunDir | None = None
    checkpoint: Path | None = None


def printer(console: Any) -> Callable[..., None]:
    """`console.print`, or a no-op without a console (a library call, a test)."""
    return console.print if console is not None else (lambda *a, **k: None)


def read_inputs(
    task: Task[Any], config: LocalRunConfig, *, resume: str | None, console: Any
) -> RunInputs:
    """Everything a run needs that can be wrong, checked before a file is written or a model
    loaded: the config (on resume the run's own), the expert an SFT warm-up plays, the
    curriculum levels, and the rows (train rows must exist; validation rows may not)."""
    has_expert = warmup_task(task, config.local.sft_source) is not None
    if config.local.model:
        check_model_spec(config.local.model)
    run: RunDir | None = None
    checkpoint: Path | None = None
    if resume:
        run = RunDir.open(resume)
        config = resumed_config(run, config)
        checkpoint = run.latest_checkpoint()
        if checkpoint is None:
            raise FileNotFoundError(f"{run.path} has no checkpoint to resume from")
    else:
        given = config
        config = apply_cpu_preset(config, has_expert=has_expert)
        say_plan(task, given, config, printer(console))
    check_task_fits(task, config, has_expert=has_expert)
    limits = episode_limits(task, config)
    train_rows = train_prompts(task, config)
    if config.train_dataset:
        check_rows_parse(task, train_rows, config.train_dataset, printer(console))
    try:
        val_prompts = validation_prompts(task, config)
    except TaskInputError as exc:  # training can go on without held-out rows
        say = printer(console)
        say(f"no validation rows, so no before/after evaluation: {exc}", highlight=False)
        val_prompts = []
    return RunInputs(config, limits, train_rows, val_prompts, run, checkpoint)


def resumed_config(run: RunDir, given: LocalRunConfig) -> LocalRunConfig:
    """The config a resumed run continues with: the one it saved, with the secrets its
    config.yaml was written without (URL passwords, keys) taken from `given`, and `given`'s
    `max_steps` when it sets another (to train a finished run further)."""
    saved = run.config()
    data, missing = restore_redacted(saved.model_dump(mode="json"), given.model_dump(mode="json"))
    if missing:
        raise BackendError(
            f"{run.path / 'config.yaml'} was written without the secrets in "
            f"{', '.join(missing)}; pass the same values again to resume (the same --config "
            f"file, or --set {missing[0]}=...)"
        )
    config = as_local(validate_config(data))
    if "max_steps" in given.model_fields_set and given.max_steps != config.max_steps:
        config = config.model_copy(update={"max_steps": given.max_steps})
    return config


def check_task_fits(task: Task[Any], config: LocalRunConfig, *, has_expert: bool) -> None:
    """Refuse settings the task cannot serve: an SFT warm-up without the games it needs (a
    scripted expert, or a withheld copy for `local.sft_source=withheld`), a curriculum level
    past the task's last."""
    if config.local.sft_warmup_steps > 0 and not has_expert:
        if config.local.sft_source == "withheld":
            raise ValueError(
                f"local.sft_source=withheld but task {task.name!r} offers no withheld copy "
                "with an expert (Task.withheld() returned None); set local.sft_source=expert "
                "or local.sft_warmup_steps=0"
            )
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


# -- 2.-6. the run --------------------------------------------------------------------------


class TrainingRun:
    """One training run's collaborators and the phases that use them (see the module doc).

    `open` makes it; after that the caller runs `build`, `start`, `train` and `finish`,
    `interrupted` when one of them raises, and `close` in every case.
    """

    # Made by `build`.
    trainer: LoRATrainer
    view: LiveView
    loop: GRPOLoop

    def __init__(
        self,
        task: Task[Any],
        inputs: RunInputs,
        run: RunDir,
        engine: Engine,
        *,
        reward_fn: Any = None,
        console: Any = None,
        on_step: Any = None,
    ) -> None:
        self.task = task
        self.inputs = inputs
        self.config = inputs.config
        self.run = run
        self.engine = engine
        self.reward_fn = reward_fn
        self.console = console
        self.on_step = on_step
        self.say = printer(console)
        self.eval_dir = run.path / "eval"
        #: What run.json held when the run opened (a resumed run's MLflow run id).
        self.info = run.read_info()
        self.tracker: Tracker | None = None
        self.before: list[EvalReport] = []
        self.after_sft: list[EvalReport] = []

    # -- 2. open ----------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        task: Task[Any],
        inputs: RunInputs,
        *,
        reward_fn: Any = None,
        console: Any = None,
        on_step: Any = None,
    ) -> TrainingRun:
        """Create the run directory (a resumed run has one) and start the engine: the first
        phase that writes files or loads a model, so it runs only on checked inputs."""
        config = inputs.config
        run = inputs.run if inputs.run is not None else RunDir.create(config, task.name)
        engine = make_engine(config)
        printer(console)(
            f"[bold]agentrft local[/] · task {task.name} · model "
            f"{config.local.model or engine.model_path} · "
            f"inference {engine.inference} on {engine.device} · run {run.path}",
            highlight=False,
        )
        return cls(task, inputs, run, engine, reward_fn=reward_fn, console=console, on_step=on_step)

    # -- 3. build ---------------------------------------------------------------------------

    def build(self) -> None:
        """Load the trainer, open the tracker and build the GRPO loop, with the mid-run
        validation passed in when there are validation rows; run.json says `running`."""
        config, run, engine = self.config, self.run, self.engine
        self.trainer = make_trainer(
            config,
            engine.model_path,
            max_completion_length=config.sampling_max_tokens * self.inputs.limits.max_turns,
            adapter=config.local.adapter,  # continue training a LoRA adapter (e.g. an SFT one)
        )
        self._open_tracker()
        run.update_info(
            task=self.task.name,
            model=engine.model_path,
            inference=engine.inference,
            device=engine.device,
            trainable_parameters=self.trainer.trainable_parameters,
            mlflow_run_id=self.tracker.run_id if self.tracker else None,
            mlflow_tracking_uri=getattr(self.tracker, "uri", None),
            status="running",
        )
        self.view = LiveView(self.console, config.max_steps, title=f"GRPO · {self.task.name}")
        self.loop = GRPOLoop(
            self.task,
            config,
            engine,
            self.trainer,
            run,
            train_prompts=self.inputs.train_prompts,
            limits=self.inputs.limits,
            sampling=train_sampling(config),
            reward_fn=self.reward_fn,
            tracker=self.tracker,
            view=self.view,
            on_step=self.on_step,
            hooks=get_plugins().hook,
            validate=self.validate if self.inputs.val_prompts else None,
        )
        self.view.total = self.loop.total_steps()
        # Mid-run validation: the validation rows at the first eval temperature only.
        first_temperature = config.eval.model_copy(
            update={"temperatures": config.eval.temperatures[:1]}
        )
        self.val_config = config.model_copy(update={"eval": first_temperature})

    def _open_tracker(self) -> None:
        """The MLflow run (`local.tracking: mlflow`): a resumed run logs into the one it
        started, whose params are logged already."""
        config = self.config
        if config.local.tracking != "mlflow":
            return
        self.tracker = Tracker(
            self.run,
            enabled=True,
            tracking_uri=config.local.mlflow_tracking_uri,
            experiment=config.local.mlflow_experiment,
            run_name=self.run.path.name,
            run_id=self.info.get("mlflow_run_id"),
        )
        if not self.info.get("mlflow_run_id"):
            self.tracker.log_params(flatten_config(config))

    async def validate(self, step: int) -> dict[str, float]:
        """Every `val_every` steps: solve rate and mean reward on the validation rows, at
        the first eval temperature only (a full eval is the after row's job)."""
        reports, _ = await run_eval(
            self.task, self.val_config, self.engine, self.inputs.val_prompts,
            adapter=self.loop.policy.adapter, label=f"step {step}", reward_fn=self.reward_fn,
        )  # fmt: skip
        r = reports[0]  # the whole row set (a multi-task run's per-task reports follow)
        self.view.note(
            f"validation after step {step}: solve rate {r.solve_rate:.1%}, "
            f"reward {r.mean_reward:.3f}"
        )
        out = {"val_solve_rate": r.solve_rate, "val_reward_mean": r.mean_reward}
        for part in reports[1:]:
            if part.temperature == r.temperature and part.task != r.task:
                out[f"val_solve_rate/{part.task}"] = part.solve_rate
                out[f"val_reward_mean/{part.task}"] = part.mean_reward
        return out

    # -- 4. start ---------------------------------------------------------------------------

    async def start(self) -> None:
        """Put the loop where training starts: a resumed run's checkpoint (its before and
        after-SFT rows read back from eval/), else the starting model's before row, the SFT
        warm-up and its after-SFT row, then the step-0 checkpoint."""
        self.before = load_eval(self.eval_dir, "before")
        self.after_sft = load_eval(self.eval_dir, "after_sft")
        if self.inputs.checkpoint is not None:
            await self._resume(self.inputs.checkpoint)
            return
        await self._evaluate_start()
        await self._sft_warmup()
        self.trainer.set_reference()  # the KL reference (local.kl_beta): where RL starts
        await self.loop.sync(0)
        await self._evaluate_after_sft()
        self.loop.checkpoint()

    async def _resume(self, checkpoint: Path) -> None:
        """Restore the trainer, sampler and data cursor, and drop what came after it."""
        state = await self.loop.restore(checkpoint)
        self.run.truncate_after(self.loop.step)
        self.say(f"resumed from {checkpoint} (step {state['step']})", highlight=False)

    async def _evaluate_start(self) -> None:
        """The before row: the model training starts from (with `local.adapter`, that
        adapter, since training continues from it)."""
        val_prompts = self.inputs.val_prompts
        if not (self.config.local.eval_before and val_prompts):
            return
        self.say(f"evaluating the starting model on {len(val_prompts)} held-out rows ...")
        start = None
        if self.config.local.adapter:
            await self.loop.sync(0)
            start = self.loop.policy.adapter
        self.before, trajs = await run_eval(
            self.task, self.config, self.engine, val_prompts, adapter=start, label="before",
            reward_fn=self.reward_fn,
        )  # fmt: skip
        save_eval(self.eval_dir, "before", self.before, trajs)

    async def _sft_warmup(self) -> None:
        """`local.sft_warmup_steps` of supervised steps on the task's expert games, so a
        small model learns the tool-call format before RL needs it."""
        config, steps = self.config, self.config.local.sft_warmup_steps
        if steps <= 0:
            return
        games = warmup_task(self.task, config.local.sft_source)
        assert games is not None  # read_inputs checked it
        self.say(
            f"SFT warm-up: {steps} steps on {describe_source(self.task, config.local.sft_source)}"
            " ..."
        )

        def sft_log(step: int, m: dict[str, float]) -> None:
            if self.tracker is not None:
                # At steps 1-N..0: below the GRPO steps, which keep 1..max_steps.
                self.tracker.log_metrics({f"sft_{k}" if not k.startswith("sft") else k: v
                                          for k, v in m.items()}, step - steps)  # fmt: skip
            if step == 1 or step % 10 == 0 or step == steps:
                self.say(f"  sft step {step}: loss {m['sft_loss']:.4f}", highlight=False)

        t0 = time.perf_counter()
        await sft_warmup(
            games,
            self.trainer,
            self.engine.chat,
            self.inputs.train_prompts,
            steps=steps,
            batch_size=config.global_batch_size,
            learning_rate=config.local.sft_learning_rate,
            limits=self.inputs.limits,
            max_length=config.local.max_sequence_length,
            on_step=sft_log,
            curriculum_level=config.local.curriculum_start,
        )
        self.say(f"SFT warm-up done in {time.perf_counter() - t0:.1f}s", highlight=False)

    async def _evaluate_after_sft(self) -> None:
        """The after-SFT row: what RL adds shows only next to what the warm-up alone reached."""
        config, val_prompts = self.config, self.inputs.val_prompts
        if not (config.local.sft_warmup_steps > 0 and config.local.eval_after and val_prompts):
            return
        self.say(f"evaluating the warmed-up adapter on {len(val_prompts)} held-out rows ...")
        self.after_sft, trajs = await run_eval(
            self.task, config, self.engine, val_prompts, adapter=self.loop.policy.adapter,
            label="after SFT", reward_fn=self.reward_fn,
        )  # fmt: skip
        save_eval(self.eval_dir, "after_sft", self.after_sft, trajs)

    # -- 5. train ---------------------------------------------------------------------------

    async def train(self) -> list[dict[str, float]]:
        """The GRPO steps, under the live view; returns each step's metrics."""
        with self.view:
            return await self.loop.train()

    # -- 6. finish --------------------------------------------------------------------------

    async def finish(self, history: list[dict[str, float]], *, started: float) -> TrainResult:
        """Save the final adapter, evaluate it (the after row, also to MLflow), print the
        before/after table, mark run.json `finished` and close the tracker."""
        run, loop = self.run, self.loop
        final = self.trainer.save_adapter(run.path / "final_adapter")
        after = await self._evaluate_after()
        if self.console is not None and (self.before or after):
            from agentrft.eval_table import reports_tables

            for table in reports_tables([*self.before, *self.after_sft, *after]):
                self.console.print(table)  # one table per task of a multi-task run
        run.update_info(status="finished", steps=loop.step)
        if self.tracker is not None:
            if after:
                self.tracker.log_artifact(self.eval_dir / "after.json")
            self.tracker.close()
            self.tracker = None  # closed: `interrupted` must not mark it KILLED
        self.say(f"run directory: {run.path}  (final adapter: {final})", highlight=False)
        return TrainResult(
            run_dir=run.path,
            final_adapter=final,
            steps=loop.step,
            history=history,
            before=self.before,
            after=after,
            after_sft=self.after_sft,
            wall_s=time.perf_counter() - started,
        )

    async def _evaluate_after(self) -> list[EvalReport]:
        """The after row: the trained adapter on the validation rows."""
        config, val_prompts = self.config, self.inputs.val_prompts
        if not (config.local.eval_after and val_prompts):
            return []
        self.say(f"evaluating the trained adapter on {len(val_prompts)} held-out rows ...")
        after, trajs = await run_eval(
            self.task, config, self.engine, val_prompts, adapter=self.loop.policy.adapter,
            label="after", reward_fn=self.reward_fn,
        )  # fmt: skip
        save_eval(self.eval_dir, "after", after, trajs)
        if self.tracker is not None:
            for r in after:
                # A multi-task run's per-task reports get their task in the name.
                of = "" if r.task == self.task.name else f"/{r.task}"
                self.tracker.log_metrics(
                    {f"eval_solve_rate_t{r.temperature:g}{of}": r.solve_rate,
                     f"eval_reward_t{r.temperature:g}{of}": r.mean_reward},
                    self.loop.step,
                )  # fmt: skip
        return after

    # -- on the way out ---------------------------------------------------------------------

    def interrupted(self) -> None:
        """A phase raised (or the user pressed Ctrl-C): run.json says `interrupted`, and the
        MLflow run ends KILLED, so neither looks finished."""
        self.run.update_info(status="interrupted")
        if self.tracker is not None:
            self.tracker.close(status="KILLED")

    async def close(self) -> None:
        """Stop the engine (a vLLM server it started included), in every case."""
        await self.engine.aclose()
