"""The GRPO training loop.

Each step: `global_batch_size` prompts x `group_size` rollouts through `run_episodes` (the
one agent loop) with a token-exact `TokenPolicy`; sequences built from the turns' token ids
(training sees exactly the sampled ids); group advantages; one optimizer step; weight sync
(save the adapter, load it into the sampler under a NEW versioned name, unload the old one,
so no cache computed with old weights can answer).

The sampler never serves the bare base model during training: version 0 is the untouched
LoRA (B = 0, identical to the base), so base and adapter requests are never mixed.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import shutil
import statistics
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict
from typing import Any

from agentrft.backends.local.algo.advantages import PER_TURN_METHODS
from agentrft.backends.local.algo.trainer import LoRATrainer
from agentrft.backends.local.inference.chat_tokens import TokenPolicy
from agentrft.backends.local.run.data_cursor import DataCursor, batch_keys
from agentrft.backends.local.run.engine import Engine
from agentrft.backends.local.run.exploit_watch import ExploitWatch, declares_success, lowest_total
from agentrft.backends.local.run.health import HealthMonitor, rollout_health
from agentrft.backends.local.run.health_watch import HealthEvent, HealthWatch
from agentrft.backends.local.run.loop_settings import (
    LoopSettings,
    curriculum_level,
    learning_rate_at,
    step_seed,
)
from agentrft.backends.local.run.rollout_queue import GroupQueue, RolloutQueue
from agentrft.backends.local.run.run_dir import RunDir, Tracker
from agentrft.backends.local.run.side_failures import TrainerFailed, check_sampled, sampler_call
from agentrft.backends.local.run.step_batch import step_batch
from agentrft.backends.local.run.step_metrics import rollout_metrics, trainer_speed
from agentrft.backends.local.run.sync_probe import SyncProbe
from agentrft.backends.local.run.view import LiveView
from agentrft.group_scoring import run_grouped_episodes
from agentrft.judges import judge_metrics
from agentrft.policy import Sampling
from agentrft.rollout import RewardFn
from agentrft.task import EpisodeLimits, Task
from agentrft.trajectory import Trajectory, append_trajectories

log = logging.getLogger(__name__)

StepCallback = Callable[[int, dict[str, float]], None]

PROBE = "the weight-sync check's sample (local.sync_check)"


class GRPOLoop:
    """Owns one training run's sampler, trainer, adapters and bookkeeping."""

    ADAPTER_PREFIX = "policy-v"

    def __init__(
        self,
        task: Task[Any],
        settings: LoopSettings,
        engine: Engine,
        trainer: LoRATrainer,
        run: RunDir,
        *,
        train_prompts: Sequence[str],
        limits: EpisodeLimits,
        sampling: Sampling,
        reward_fn: RewardFn | None = None,
        tracker: Tracker | None = None,
        view: LiveView | None = None,
        on_step: StepCallback | None = None,
        hooks: Any = None,
        validate: Callable[[int], Awaitable[dict[str, float]]] | None = None,
    ) -> None:
        if not train_prompts:
            raise ValueError("training needs at least one prompt")
        self.task = task
        self.settings = settings
        self.engine = engine
        self.trainer = trainer
        self.run = run
        self.prompts = list(train_prompts)
        self.limits = limits
        self.sampling = sampling
        self.reward_fn = reward_fn
        self.tracker = tracker
        self.view = view
        self.on_step = on_step
        self.hooks = hooks
        self.validate = validate
        self.cursor = DataCursor(
            len(self.prompts),
            settings.seed,
            keys=batch_keys(task, self.prompts) if settings.balanced_batches else None,
        )
        self.policy = TokenPolicy(engine.sampler, engine.chat, seed=settings.seed)
        self.version: int | None = None
        self.step = 0
        self.health = HealthWatch(
            HealthMonitor(stop_after=settings.health_stop_after),
            ExploitWatch(can_solve=declares_success(task), floor=lowest_total(task)),
        )
        #: The latest step's rollouts, for the health view's exploit watch.
        self.rollouts: list[Trajectory] = []
        #: Set when the health stop rule (local.health_stop_after) ended the run early.
        self.stopped: str | None = None
        #: The batches played ahead of the trainer (max_steps_off_policy > 0), else None.
        self.queue: RolloutQueue | None = None
        if settings.max_steps_off_policy > 0 and settings.carry_over_groups:
            self.queue = GroupQueue(
                settings.max_steps_off_policy, self._drop_adapter, settings.global_batch_size
            )
        elif settings.max_steps_off_policy > 0:
            self.queue = RolloutQueue(settings.max_steps_off_policy, self._drop_adapter)
        #: The data cursor as of the last trained batch (what a checkpoint resumes from).
        self.trained_cursor = 0

    # -- weight sync ----------------------------------------------------------------------

    async def sync(self, version: int) -> float:
        """Push the trainer's adapter to the sampler as version `version`; returns seconds."""
        t0 = time.perf_counter()
        path = self.run.path / "adapters" / f"v{version:06d}"
        self.trainer.save_adapter(path)
        name = f"{self.ADAPTER_PREFIX}{version}"
        load = self.engine.sampler.load_adapter(name, str(path))
        await sampler_call(self.engine, f"loading adapter version {version} into the sampler", load)
        old, self.version = self.version, version
        self.policy.adapter = name
        if old is not None and old != version:
            if self.queue is not None:  # batches still playing from it keep it loaded
                await self.queue.retire(old)
            else:
                await self._drop_adapter(old)
        return time.perf_counter() - t0

    async def _drop_adapter(self, version: int) -> None:
        await self.engine.sampler.unload_adapter(f"{self.ADAPTER_PREFIX}{version}")
        shutil.rmtree(self.run.path / "adapters" / f"v{version:06d}", ignore_errors=True)

    # -- one step -------------------------------------------------------------------------

    async def train_step(self) -> dict[str, float]:
        if self.queue is not None:
            return await self._train_step_ahead(self.queue)
        step = self.step + 1
        t0 = time.perf_counter()
        rows = self.cursor.take(self.settings.global_batch_size)
        self.policy.reseed(step_seed(self.settings.seed, step))
        trajs = await self._play(step, rows, self.policy)
        return await self._learn(step, trajs, time.perf_counter() - t0, t0)

    async def _train_step_ahead(self, queue: RolloutQueue) -> dict[str, float]:
        """A step of `max_steps_off_policy` > 0: launch the batches the bound allows, wait
        for this step's, train on it while the others play."""
        step = self.step + 1
        t0 = time.perf_counter()
        assert self.version is not None  # `start` or `restore` synced version 0 or later
        queue.fill(self.step, self.total_steps(), self._take, self._play_from)
        taken = await queue.next(step)
        wait_s = time.perf_counter() - t0
        self.trained_cursor = self.cursor.position if taken.cursor is None else taken.cursor
        metrics = await self._learn(step, taken.trajectories, taken.played_s, t0, off_policy=True)
        stale = [step - 1 - v for v in taken.versions] or [0]
        metrics.update({
            "off_policy/staleness_mean": statistics.fmean(stale),
            "off_policy/staleness_max": float(max(stale)),
            "off_policy/batches_ahead": float(queue.ahead),
            "rollout_wait_s": wait_s,
        })  # fmt: skip
        if isinstance(queue, GroupQueue):
            metrics["off_policy/dropped_groups"] = float(queue.dropped)
        return metrics

    def _take(self) -> tuple[list[int], int]:
        rows = self.cursor.take(self.settings.global_batch_size)
        return rows, self.cursor.position

    async def _play_from(
        self, step: int, rows: list[int], version: int, part: int
    ) -> list[Trajectory]:
        """Play step `step`'s rows from adapter `version`, with a policy of their own (the
        shared one moves to each new version); `part` numbers a step's separate calls (one
        per group under local.carry_over_groups), whose seeds must differ."""
        seed = step_seed(self.settings.seed, step) + 100_003 * part
        policy = self.policy.sibling(adapter=f"{self.ADAPTER_PREFIX}{version}", seed=seed)
        return await self._play(step, rows, policy, version)

    async def _play(
        self, step: int, rows: list[int], policy: TokenPolicy, version: int | None = None
    ) -> list[Trajectory]:
        cfg = self.settings
        prompts = [self.prompts[i] for i in rows for _ in range(cfg.group_size)]
        version = self.version if version is None else version

        def meta(i: int) -> dict[str, Any]:
            return {
                "phase": "train",
                "step": step,
                "row": rows[i // cfg.group_size],
                "group": i // cfg.group_size,
                "sample": i % cfg.group_size,
                "policy_version": version,
            }

        # A task or reward with score_group scores each prompt's rollouts together.
        return await run_grouped_episodes(
            self.task,
            prompts,
            policy,
            group_size=cfg.group_size,
            sampling=self.sampling,
            limits=self.limits,
            reward_fn=self.reward_fn,
            curriculum_level=self.curriculum_level(step),
            concurrency=len(prompts),  # all at once: the sampler batches them
            metadata=meta,
            on_episode=self._episode_finished if self.hooks is not None else None,
        )

    async def _learn(
        self,
        step: int,
        trajs: list[Trajectory],
        rollout_s: float,
        t0: float,
        *,
        off_policy: bool = False,
    ) -> dict[str, float]:
        """Advantages, one optimizer step on `trajs` (in a thread when batches play ahead,
        so their episodes go on meanwhile), the weight sync; returns the step's metrics."""
        cfg = self.settings
        await check_sampled(self.engine, trajs, f"step {step}")
        level = self.curriculum_level(step)
        t1 = time.perf_counter()
        self.trainer.set_learning_rate(learning_rate_at(cfg, step))
        batch = step_batch(cfg, step, trajs)
        probe = (
            SyncProbe.of(trajs, self.engine.sampler, self.trainer, self.sampling, cfg.seed)
            if cfg.sync_check
            else None
        )
        # The sampler's copy of the current version is not touched by the trainer, so with
        # batches playing ahead its probe sample waits its turn while the trainer runs.
        before_task = (
            asyncio.ensure_future(
                sampler_call(
                    self.engine, f"step {step}: {PROBE}", probe.sample(self.policy.adapter)
                )
            )
            if probe
            else None
        )
        before = await before_task if before_task is not None and not off_policy else None
        t2 = time.perf_counter()
        try:
            if off_policy:
                train_metrics = await asyncio.to_thread(
                    self.trainer.step, batch.sequences, off_policy=True
                )
            else:
                train_metrics = self.trainer.step(batch.sequences)
        except Exception as exc:
            raise TrainerFailed(
                f"step {step}: the trainer's optimizer step failed: {type(exc).__name__}: {exc}"
            ) from exc
        trainer_s = time.perf_counter() - t2
        train_metrics.update(trainer_speed(self.trainer, train_metrics, trainer_s))
        train_s = time.perf_counter() - t1
        if before_task is not None and off_policy:
            before = await before_task

        sync_s = await self.sync(step)
        self.step = step

        metrics = rollout_metrics(self.task, trajs, batch.rewards, batch.zero_variance, rollout_s)
        metrics.update(rollout_health(trajs, batch.zero_variance))
        metrics.update(judge_metrics(trajs))  # judge/tokens, judge/cost_usd, ... (if judged)
        if cfg.advantage_method in PER_TURN_METHODS:
            metrics["analysis/per_turn_fallback"] = batch.per_turn_fallback
        metrics["analysis/dropped_groups"] = batch.dropped_groups
        metrics["learning_rate"] = learning_rate_at(cfg, step)
        if cfg.curriculum_start or cfg.curriculum_end:
            metrics["curriculum_level"] = float(level)
        metrics.update(train_metrics)
        if probe and before:
            compare = probe.compare(before, self.policy.adapter)
            metrics.update(await sampler_call(self.engine, f"step {step}: {PROBE}", compare))
        metrics.update(train_s=train_s, sync_s=sync_s, step_s=time.perf_counter() - t0)
        append_trajectories(self._for_storage(trajs), self.run.path / "trajectories.jsonl")
        self.rollouts = trajs
        return metrics

    def curriculum_level(self, step: int) -> int:
        local = self.settings
        return curriculum_level(
            local.curriculum_start, local.curriculum_end, step, self.total_steps()
        )

    def _for_storage(self, trajs: list[Trajectory]) -> list[Trajectory]:
        if self.settings.save_prompt_token_ids:
            return trajs
        out = []
        for t in trajs:
            turns = [turn.model_copy(update={"prompt_token_ids": None}) for turn in t.turns]
            out.append(t.model_copy(update={"turns": turns}))
        return out

    def _episode_finished(self, trajectory: Trajectory) -> None:
        try:
            self.hooks.agentrft_episode_finished(trajectory=trajectory)
        except Exception as exc:  # a logging plugin must not end training
            log.warning("agentrft_episode_finished hook failed: %s", exc)

    # -- checkpoints ----------------------------------------------------------------------

    def checkpoint(self, extra: dict[str, Any] | None = None) -> None:
        with self.run.writing_checkpoint(self.step) as path:
            self.trainer.save_state(path)
            state = {
                "step": self.step,
                # Batches played ahead are not in it: a resumed run draws them again
                # (carried-over groups are listed under `queued` and replayed instead).
                "cursor": self.cursor.position if self.queue is None else self.trained_cursor,
                **({"queued": self.queue.queued()} if self.queue is not None else {}),
                "version": self.version,
                **(extra or {}),
            }
            (path / "state.json").write_text(json.dumps(state, indent=2))
            for version in sorted(self.queue.pins if self.queue is not None else ()):
                # The adapters the queued batches play from: a resumed run replays them.
                name = f"v{version:06d}"
                shutil.copytree(self.run.path / "adapters" / name, path / "adapters" / name)

    async def restore(self, path: Any) -> dict[str, Any]:
        """Load a checkpoint written by `checkpoint` and sync its adapter to the sampler."""
        state = json.loads((path / "state.json").read_text())
        self.trainer.load_state(path)
        self.step = int(state["step"])
        self.cursor.position = self.trained_cursor = int(state["cursor"])
        if self.queue is not None and (path / "adapters").is_dir():
            for kept in sorted((path / "adapters").iterdir()):
                version = int(kept.name.removeprefix("v"))
                if version >= self.step:
                    continue
                target = self.run.path / "adapters" / kept.name
                shutil.copytree(kept, target, dirs_exist_ok=True)
                name = f"{self.ADAPTER_PREFIX}{version}"
                await self.engine.sampler.load_adapter(name, str(target))
                self.queue.retired.add(version)  # unloaded once its batches finish
        if self.queue is not None:
            self.queue.requeue(state.get("queued", []))
        await self.sync(self.step)
        return state

    # -- the loop -------------------------------------------------------------------------

    def total_steps(self) -> int:
        cfg = self.settings
        per_epoch = math.ceil(len(self.prompts) / cfg.global_batch_size)
        return min(cfg.max_steps, per_epoch * cfg.max_epochs) if cfg.max_epochs else cfg.max_steps

    async def train(self) -> list[dict[str, float]]:
        try:
            return await self._train()
        finally:
            if self.queue is not None:  # batches launched for steps that will not run
                await self.queue.cancel()

    async def _train(self) -> list[dict[str, float]]:
        history: list[dict[str, float]] = []
        total = self.total_steps()
        while self.step < total:
            metrics = await self.train_step()
            every = self.settings.val_every
            if self.validate is not None and every and self.step % every == 0:
                metrics.update(await self.validate(self.step))
            health = self.health.step(self.step, metrics, self.rollouts)
            metrics["health_warnings"] = float(len(health.warnings))  # the threshold rules'
            history.append(metrics)
            self.run.append_metrics(self.step, metrics)
            if self.tracker is not None:
                self.tracker.log_metrics(metrics, self.step)
                self.tracker.log_step_traces(self.rollouts, self.step)
            if self.view is not None:
                self.view.step(self.step, metrics)
                self.view.health([c.name for c in self.health.log.active.values()])
            for event in health.events:  # once when a warning starts, once when it clears
                log.warning("%s", self._event_line(event))
            if self.hooks is not None:
                try:
                    self.hooks.agentrft_step_finished(step=self.step, metrics=metrics)
                except Exception as exc:  # a logging plugin must not end training
                    log.warning("agentrft_step_finished hook failed: %s", exc)
            if self.step % self.settings.checkpoint_every == 0 or self.step == total:
                self.checkpoint()
            if self.on_step is not None:
                self.on_step(self.step, metrics)
            reason = self.health.stop_reason()
            if reason is not None:
                self.stopped = reason
                if self.step % self.settings.checkpoint_every != 0 and self.step != total:
                    self.checkpoint()
                log.warning("stopping at step %d: %s (local.health_stop_after)", self.step, reason)
                break
        self._health_summary()
        return history

    # -- the health view ------------------------------------------------------------------

    def _event_line(self, event: HealthEvent) -> str:
        """The event's line; a warning that started with an example rollout also says how
        to read that rollout."""
        line = event.line
        finding = event.finding
        if event.started and finding is not None and finding.example is not None:
            line += f"; {self._replay_hint(finding.example)}"
        return line

    def _replay_hint(self, position: int) -> str:
        """`agentrft replay <run>/trajectories.jsonl --index N (...)` for the latest step's
        rollout at `position` (the step's rollouts are the file's last lines)."""
        path = self.run.path / "trajectories.jsonl"
        t = self.rollouts[position]
        try:
            with path.open("rb") as fh:
                lines = sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b""))
        except OSError:
            return f"example: trajectory {t.id}"
        index = lines - len(self.rollouts) + position
        m = t.metadata
        where = ", ".join(f"{k} {m[k]}" for k in ("step", "row", "group", "sample") if k in m)
        return f"example: agentrft replay {path} --index {index} (trajectory {t.id}: {where})"

    def _health_summary(self) -> None:
        """The run's health conditions at the end of training: on the console when there
        is one, else in the log."""
        lines = self.health.summary(self.step)
        self.run.write_health([asdict(c) for c in self.health.log.conditions()])
        if self.view is not None and self.view.console is not None:
            for line in lines:
                self.view.note(line, markup=False)
        else:
            for line in lines:
                log.info("%s", line)
