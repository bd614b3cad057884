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

import json
import logging
import math
import shutil
import statistics
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict
from typing import Any

from agentrft.backends.local.algo.advantages import (
    PER_TURN_METHODS,
    compute_advantages,
    group_per_turn,
    turn_penalty_credit,
    usable_per_turn,
)
from agentrft.backends.local.algo.sequences import rollout_sequences
from agentrft.backends.local.algo.trainer import LoRATrainer
from agentrft.backends.local.inference.chat_tokens import TokenPolicy
from agentrft.backends.local.run.data_cursor import DataCursor, batch_keys
from agentrft.backends.local.run.engine import Engine
from agentrft.backends.local.run.exploit_watch import ExploitWatch, declares_success, lowest_total
from agentrft.backends.local.run.health import HealthMonitor, format_faults, rollout_health
from agentrft.backends.local.run.health_watch import HealthEvent, HealthWatch
from agentrft.backends.local.run.loop_settings import (
    LoopSettings,
    curriculum_level,
    learning_rate_at,
    step_seed,
)
from agentrft.backends.local.run.run_dir import RunDir, Tracker
from agentrft.backends.local.run.view import LiveView
from agentrft.group_scoring import run_grouped_episodes
from agentrft.judges import judge_metrics
from agentrft.mixture import MixtureTask, per_task_metrics
from agentrft.policy import Sampling
from agentrft.rollout import RewardFn
from agentrft.task import EpisodeLimits, Task
from agentrft.trajectory import Trajectory, append_trajectories

log = logging.getLogger(__name__)

StepCallback = Callable[[int, dict[str, float]], None]


def trainer_speed(
    trainer: LoRATrainer, metrics: dict[str, float], seconds: float
) -> dict[str, float]:
    """The optimizer step's speed: positions and FLOP/s through the model, and the FLOP/s of
    one large matmul on this machine in the trainer's dtype and threads (its peak)."""
    import torch

    from agentrft.backends.local.algo.flops import matmul_peak

    if seconds <= 0 or "trainer/flops" not in metrics:
        return {}
    out = {
        "trainer/s": seconds,
        "trainer/tokens_per_s": metrics["trainer/tokens"] / seconds,
        "trainer/flops_per_s": metrics["trainer/flops"] / seconds,
    }
    if trainer.device == "cpu":
        dtype = str(next(trainer.model.parameters()).dtype).removeprefix("torch.")
        peak = matmul_peak(dtype, torch.get_num_threads())
        out["trainer/peak_flops_per_s"] = peak
        out["trainer/peak_frac"] = out["trainer/flops_per_s"] / peak
    return out


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

    # -- weight sync ----------------------------------------------------------------------

    async def sync(self, version: int) -> float:
        """Push the trainer's adapter to the sampler as version `version`; returns seconds."""
        t0 = time.perf_counter()
        path = self.run.path / "adapters" / f"v{version:06d}"
        self.trainer.save_adapter(path)
        name = f"{self.ADAPTER_PREFIX}{version}"
        await self.engine.sampler.load_adapter(name, str(path))
        old, self.version = self.version, version
        self.policy.adapter = name
        if old is not None and old != version:
            await self.engine.sampler.unload_adapter(f"{self.ADAPTER_PREFIX}{old}")
            shutil.rmtree(self.run.path / "adapters" / f"v{old:06d}", ignore_errors=True)
        return time.perf_counter() - t0

    # -- one step -------------------------------------------------------------------------

    async def train_step(self) -> dict[str, float]:
        cfg = self.settings
        step = self.step + 1
        t0 = time.perf_counter()
        rows = self.cursor.take(cfg.global_batch_size)
        prompts = [self.prompts[i] for i in rows for _ in range(cfg.group_size)]
        self.policy.reseed(step_seed(cfg.seed, step))

        def meta(i: int) -> dict[str, Any]:
            return {
                "phase": "train",
                "step": step,
                "row": rows[i // cfg.group_size],
                "group": i // cfg.group_size,
                "sample": i % cfg.group_size,
                "policy_version": self.version,
            }

        level = self.curriculum_level(step)
        # A task or reward with score_group scores each prompt's rollouts together.
        trajs = await run_grouped_episodes(
            self.task,
            prompts,
            self.policy,
            group_size=cfg.group_size,
            sampling=self.sampling,
            limits=self.limits,
            reward_fn=self.reward_fn,
            curriculum_level=level,
            concurrency=len(prompts),  # all at once: the sampler batches them
            metadata=meta,
            on_episode=self._episode_finished if self.hooks is not None else None,
        )
        rollout_s = time.perf_counter() - t0

        t1 = time.perf_counter()
        self.trainer.set_learning_rate(learning_rate_at(cfg, step))
        rewards = [t.reward.total if t.reward else 0.0 for t in trajs]
        adv = compute_advantages(
            rewards,
            cfg.group_size,
            method=cfg.advantage_method,
            scale=cfg.scale_rewards,
        )
        # Per rollout, one advantage per turn (per-turn credit), or None: the episode's.
        turn_adv: list[list[float] | None] = [None] * len(trajs)
        fallback = 0.0
        zero_var = adv.zero_variance_fraction
        if cfg.advantage_method in PER_TURN_METHODS:
            per_turn = [usable_per_turn(t) for t in trajs]
            pt = group_per_turn(
                [values for values, _ in per_turn],
                rewards,
                cfg.group_size,
                scale=cfg.scale_rewards,
            )
            turn_adv, fallback, zero_var = pt.turns, pt.fallback_fraction, pt.zero_variance_fraction
            problems = Counter(problem for _, problem in per_turn if problem)
            if problems:
                log.warning(
                    "step %d: %d of %d rollouts train with their episode advantage under "
                    "advantage_method=%s (%s); return RewardResult.per_turn with one value "
                    "per policy call to credit each turn",
                    step,
                    sum(problems.values()),
                    len(trajs),
                    cfg.advantage_method,
                    "; ".join(f"{n}x {why}" for why, n in problems.most_common(3)),
                )
        admitted = [True] * len(trajs)
        if cfg.drop_zero_variance_groups:
            signal = [
                any(a != 0.0 for a in ta) if ta is not None else a0 != 0.0
                for ta, a0 in zip(turn_adv, adv.values, strict=True)
            ]
            admitted = [
                any(signal[g : g + cfg.group_size])
                for g in range(0, len(trajs), cfg.group_size)
                for _ in range(cfg.group_size)
            ]
        credit: list[list[float] | None] = [None] * len(trajs)
        if cfg.format_credit > 0:
            faults = [format_faults(t) for t in trajs]
            penalties = turn_penalty_credit(faults, cfg.group_size, cfg.format_credit)
            credit = list(penalties)
            if cfg.drop_zero_variance_groups:  # a group with format signal is admitted
                admitted = [
                    ok or any(c != 0.0 for c in penalties[i]) for i, ok in enumerate(admitted)
                ]
        seqs = [
            s
            for t, a, ta, c, ok in zip(trajs, adv.values, turn_adv, credit, admitted, strict=True)
            if ok
            for s in rollout_sequences(t, a, ta, c)
        ]
        probe = self._probe_prompt(trajs) if cfg.sync_check else None
        probe_before = await self._probe_sample(probe) if probe else None
        t2 = time.perf_counter()
        train_metrics = self.trainer.step(seqs)
        trainer_s = time.perf_counter() - t2
        train_metrics.update(trainer_speed(self.trainer, train_metrics, trainer_s))
        train_s = time.perf_counter() - t1

        sync_s = await self.sync(step)
        self.step = step

        metrics = self._metrics(trajs, rewards, zero_var, rollout_s)
        metrics.update(rollout_health(trajs, zero_var))
        metrics.update(judge_metrics(trajs))  # judge/tokens, judge/cost_usd, ... (if judged)
        if cfg.advantage_method in PER_TURN_METHODS:
            metrics["analysis/per_turn_fallback"] = fallback
        metrics["analysis/dropped_groups"] = admitted.count(False) / cfg.group_size
        metrics["learning_rate"] = learning_rate_at(cfg, step)
        if cfg.curriculum_start or cfg.curriculum_end:
            metrics["curriculum_level"] = float(level)
        metrics.update(train_metrics)
        if probe and probe_before:
            metrics.update(await self._sync_probe(probe, probe_before))
        metrics.update(train_s=train_s, sync_s=sync_s, step_s=time.perf_counter() - t0)
        append_trajectories(self._for_storage(trajs), self.run.path / "trajectories.jsonl")
        self.rollouts = trajs
        return metrics

    def curriculum_level(self, step: int) -> int:
        local = self.settings
        return curriculum_level(
            local.curriculum_start, local.curriculum_end, step, self.total_steps()
        )

    # -- sync probe -----------------------------------------------------------------------

    #: The trainer moved the probe token's logprob by at least this much, yet the sampler's
    #: logprob stayed put (to float32 noise): the sampler is not serving the new weights.
    PROBE_MOVED = 1e-3
    PROBE_STILL = 1e-6

    @staticmethod
    def _probe_prompt(trajs: list[Trajectory]) -> list[int] | None:
        for t in trajs:
            for turn in t.turns:
                if turn.prompt_token_ids:
                    return list(turn.prompt_token_ids)
        return None

    async def _probe_sample(self, prompt: list[int]) -> tuple[int, float] | None:
        """(token, logprob) of one seeded sample from the current adapter, or None."""
        sampling = Sampling(
            temperature=self.sampling.temperature, max_tokens=1, seed=self.settings.seed
        )
        gen = await self.engine.sampler.generate(prompt, sampling, adapter=self.policy.adapter)
        if not gen.token_ids or not gen.logprobs:
            return None
        return gen.token_ids[0], gen.logprobs[0]

    async def _sync_probe(self, prompt: list[int], before: tuple[int, float]) -> dict[str, float]:
        """Score the probe token again after the sync: with the sampler (new adapter) and the
        trainer. `analysis/sync_stale` is 1 when only the trainer moved."""
        token, lp_before = before
        after = await self._probe_sample(prompt)
        if after is None or after[0] != token:
            # Another token came out: the sampler's distribution changed, so it is not stale.
            return {"analysis/sync_stale": 0.0}
        lp_trainer = self.trainer.token_logprob(prompt, token, self.sampling.temperature)
        moved_trainer = abs(lp_trainer - lp_before)
        moved_sampler = abs(after[1] - lp_before)
        stale = moved_trainer >= self.PROBE_MOVED and moved_sampler < self.PROBE_STILL
        return {
            "analysis/sync_stale": float(stale),
            "analysis/sync_logprob_gap": abs(after[1] - lp_trainer),
            "analysis/probe_logprob_delta": moved_trainer,
        }

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

    def _metrics(
        self, trajs: list[Trajectory], rewards: list[float], zero_var: float, rollout_s: float
    ) -> dict[str, float]:
        completion = sum(turn.completion_tokens for t in trajs for turn in t.turns)
        prompt = sum(turn.prompt_tokens for t in trajs for turn in t.turns)
        failures: Counter[str] = Counter()
        for t in trajs:
            failures.update(set(t.failure_kinds))
        out = {
            "reward_mean": statistics.fmean(rewards),
            "reward_std": statistics.pstdev(rewards) if len(rewards) > 1 else 0.0,
            "reward_max": max(rewards),
            "solve_rate": sum(t.solved for t in trajs) / len(trajs),
            "zero_variance_groups": zero_var,
            "turns_mean": statistics.fmean(len(t.turns) for t in trajs),
            "tool_calls_mean": statistics.fmean(t.tool_calls for t in trajs),
            "completion_tokens": float(completion),
            "prompt_tokens": float(prompt),
            "tokens_per_s": completion / rollout_s if rollout_s > 0 else 0.0,
            "rollouts_per_s": len(trajs) / rollout_s if rollout_s > 0 else 0.0,
            "rollout_s": rollout_s,
        }
        for kind, n in failures.items():
            out[f"failure_{kind}"] = n / len(trajs)
        if isinstance(self.task, MixtureTask):  # a multi-task run: each task's own curve
            out.update(per_task_metrics(trajs))
        return out

    # -- checkpoints ----------------------------------------------------------------------

    def checkpoint(self, extra: dict[str, Any] | None = None) -> None:
        with self.run.writing_checkpoint(self.step) as path:
            self.trainer.save_state(path)
            state = {
                "step": self.step,
                "cursor": self.cursor.position,
                "version": self.version,
                **(extra or {}),
            }
            (path / "state.json").write_text(json.dumps(state, indent=2))

    async def restore(self, path: Any) -> dict[str, Any]:
        """Load a checkpoint written by `checkpoint` and sync its adapter to the sampler."""
        state = json.loads((path / "state.json").read_text())
        self.trainer.load_state(path)
        self.step = int(state["step"])
        self.cursor.position = int(state["cursor"])
        await self.sync(self.step)
        return state

    # -- the loop -------------------------------------------------------------------------

    def total_steps(self) -> int:
        cfg = self.settings
        per_epoch = math.ceil(len(self.prompts) / cfg.global_batch_size)
        return min(cfg.max_steps, per_epoch * cfg.max_epochs) if cfg.max_epochs else cfg.max_steps

    async def train(self) -> list[dict[str, float]]:
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
