"""A local training run as named phases, in the order `backend.train_async` runs them:

1. `spec.resolve_run`: the config (a resumed run's own), the checks, the rows and each
   part's settings; nothing is written yet, so bad input leaves no run directory behind;
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentrft import backend as core
from agentrft.backends.local.algo.trainer import LoRATrainer, make_trainer
from agentrft.backends.local.algo.warmup import describe_source, warmup_task
from agentrft.backends.local.run.engine import Engine, make_engine
from agentrft.backends.local.run.evals import load_eval, run_eval, save_eval
from agentrft.backends.local.run.grpo import GRPOLoop
from agentrft.backends.local.run.run_dir import RunDir, Tracker, flatten_config
from agentrft.backends.local.run.sft import sft_warmup
from agentrft.backends.local.run.side_failures import RunSideFailed, resume_hint, write_traceback
from agentrft.backends.local.run.spec import RunSpec, printer
from agentrft.backends.local.run.view import LiveView
from agentrft.plugins import get_plugins
from agentrft.redact import scrub_text
from agentrft.task import Task

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
        inputs: RunSpec,
        run: RunDir,
        engine: Engine,
        *,
        reward_fn: Any = None,
        console: Any = None,
        on_step: Any = None,
    ) -> None:
        self.task = task
        self.inputs = inputs
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
        inputs: RunSpec,
        *,
        reward_fn: Any = None,
        console: Any = None,
        on_step: Any = None,
    ) -> TrainingRun:
        """Create the run directory (a resumed run has one) and start the engine: the first
        phase that writes files or loads a model, so it runs only on checked inputs."""
        run = inputs.run if inputs.run is not None else RunDir.create(inputs.config, task.name)
        engine = make_engine(inputs.sampler)
        printer(console)(
            f"[bold]agentrft local[/] · task {task.name} · model "
            f"{inputs.sampler.model or engine.model_path} · "
            f"inference {engine.inference} on {engine.device} · run {run.path}",
            highlight=False,
        )
        return cls(task, inputs, run, engine, reward_fn=reward_fn, console=console, on_step=on_step)

    # -- 3. build ---------------------------------------------------------------------------

    def build(self) -> None:
        """Load the trainer, open the tracker and build the GRPO loop, with the mid-run
        validation passed in when there are validation rows; run.json says `running`."""
        spec, run, engine = self.inputs, self.run, self.engine
        self.trainer = make_trainer(
            spec.trainer,
            engine.model_path,
            max_completion_length=spec.sampling.max_tokens * spec.limits.max_turns,
            adapter=spec.adapter,  # continue training a LoRA adapter (e.g. an SFT one)
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
        self.view = LiveView(self.console, spec.loop.max_steps, title=f"GRPO · {self.task.name}")
        self.loop = GRPOLoop(
            self.task,
            self.inputs.loop,
            engine,
            self.trainer,
            run,
            train_prompts=self.inputs.train_prompts,
            limits=self.inputs.limits,
            sampling=self.inputs.sampling,
            reward_fn=self.reward_fn,
            tracker=self.tracker,
            view=self.view,
            on_step=self.on_step,
            hooks=get_plugins().hook,
            validate=self.validate if self.inputs.val_prompts else None,
        )
        self.view.total = self.loop.total_steps()

    def _open_tracker(self) -> None:
        """The MLflow run (`local.tracking: mlflow`): a resumed run logs into the one it
        started, whose params are logged already."""
        tracking = self.inputs.tracking
        if not tracking.enabled:
            return
        self.tracker = Tracker(
            self.run,
            enabled=True,
            tracking_uri=tracking.tracking_uri,
            experiment=tracking.experiment,
            run_name=self.run.path.name,
            run_id=self.info.get("mlflow_run_id"),
            trace_evals=tracking.trace_evals,
            trace_per_step=tracking.trace_per_step,
        )
        if not self.info.get("mlflow_run_id"):
            self.tracker.log_params(flatten_config(self.inputs.config))

    async def validate(self, step: int) -> dict[str, float]:
        """Every `val_every` steps: solve rate and mean reward on the validation rows, at
        the first eval temperature only (a full eval is the after row's job)."""
        # Mid-run validation: the validation rows at the first eval temperature only.
        reports, _ = await run_eval(
            self.task, self.inputs.evals.first_temperature(), self.engine, self.inputs.val_prompts,
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
        if not (self.inputs.evals.before and val_prompts):
            return
        self.say(f"evaluating the starting model on {len(val_prompts)} held-out rows ...")
        start = None
        if self.inputs.adapter:
            await self.loop.sync(0)
            start = self.loop.policy.adapter
        self.before, trajs = await run_eval(
            self.task, self.inputs.evals, self.engine, val_prompts, adapter=start, label="before",
            reward_fn=self.reward_fn,
        )  # fmt: skip
        save_eval(self.eval_dir, "before", self.before, trajs)
        self._traces(trajs, "before")

    async def _sft_warmup(self) -> None:
        """`local.sft_warmup_steps` of supervised steps on the task's expert games, so a
        small model learns the tool-call format before RL needs it."""
        warm = self.inputs.warmup
        steps = warm.steps
        if steps <= 0:
            return
        games = warmup_task(self.task, warm.source)
        assert games is not None  # resolve_run checked it
        self.say(f"SFT warm-up: {steps} steps on {describe_source(self.task, warm.source)} ...")

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
            batch_size=warm.batch_size,
            learning_rate=warm.learning_rate,
            limits=self.inputs.limits,
            max_length=warm.max_length,
            on_step=sft_log,
            curriculum_level=warm.curriculum_level,
        )
        self.say(f"SFT warm-up done in {time.perf_counter() - t0:.1f}s", highlight=False)

    async def _evaluate_after_sft(self) -> None:
        """The after-SFT row: what RL adds shows only next to what the warm-up alone reached."""
        evals, val_prompts = self.inputs.evals, self.inputs.val_prompts
        if not (self.inputs.warmup.steps > 0 and evals.after and val_prompts):
            return
        self.say(f"evaluating the warmed-up adapter on {len(val_prompts)} held-out rows ...")
        self.after_sft, trajs = await run_eval(
            self.task, evals, self.engine, val_prompts, adapter=self.loop.policy.adapter,
            label="after SFT", reward_fn=self.reward_fn,
        )  # fmt: skip
        save_eval(self.eval_dir, "after_sft", self.after_sft, trajs)
        self._traces(trajs, "after SFT")

    def _traces(self, trajectories: list[Any], split: str) -> None:
        if self.tracker is not None:
            self.tracker.log_eval_traces(trajectories, split)

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
        self._write_report()
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

    def _write_report(self) -> None:
        """The run's page (report.html, plots/*.png): a page that fails to render is a
        warning, never a failed run (the adapter and the evaluations are saved already)."""
        from agentrft.report import write_report

        try:
            page = write_report(self.run.path)
        except Exception as exc:
            self.say(f"warning: the run's report was not written: {exc}", highlight=False)
            return
        self.say(f"report: {page}  (agentrft report {self.run.path} writes it again)",
                 highlight=False)  # fmt: skip

    async def _evaluate_after(self) -> list[EvalReport]:
        """The after row: the trained adapter on the validation rows."""
        evals, val_prompts = self.inputs.evals, self.inputs.val_prompts
        if not (evals.after and val_prompts):
            return []
        self.say(f"evaluating the trained adapter on {len(val_prompts)} held-out rows ...")
        after, trajs = await run_eval(
            self.task, evals, self.engine, val_prompts, adapter=self.loop.policy.adapter,
            label="after", reward_fn=self.reward_fn,
        )  # fmt: skip
        save_eval(self.eval_dir, "after", after, trajs)
        self._traces(trajs, "after")
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

    def stopped_by(self, exc: RunSideFailed) -> RunSideFailed:
        """`exc` (the sampler or the trainer failed) with what the user does next: the
        checkpoint to resume from; the traceback of what it stopped on goes to error.txt. run.json
        says `failed` and why."""
        extra = ""
        if exc.__cause__ is not None:
            extra = f" (traceback: {write_traceback(self.run.path, exc.__cause__)})"
        hint = resume_hint(self.run.path, self.run.latest_checkpoint(), self.task.name)
        said = f"{exc}{extra}"
        stopped = type(exc)(said + ("\n" if "\n" in said else ". ") + hint)
        self.run.update_info(status="failed", error=scrub_text(str(exc)))
        if self.tracker is not None:
            self.tracker.close(status="FAILED")
            self.tracker = None
        return stopped

    def interrupted(self) -> None:
        """A phase raised (or the user pressed Ctrl-C): run.json says `interrupted`, and the
        MLflow run ends KILLED, so neither looks finished."""
        self.run.update_info(status="interrupted")
        if self.tracker is not None:
            self.tracker.close(status="KILLED")

    async def close(self) -> None:
        """Stop the engine (a vLLM server it started included), in every case."""
        await self.engine.aclose()
