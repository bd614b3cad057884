"""A GRPO step's figures: what its rollouts did (`rollout_metrics`) and how fast the
optimizer step ran against this machine's matmul peak (`trainer_speed`)."""

from __future__ import annotations

import statistics
from collections import Counter
from typing import Any

from agentrft.backends.local.algo.trainer import LoRATrainer
from agentrft.mixture import MixtureTask, per_task_metrics
from agentrft.task import Task
from agentrft.trajectory import Trajectory

__all__ = ["rollout_metrics", "trainer_speed"]


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


def rollout_metrics(
    task: Task[Any],
    trajs: list[Trajectory],
    rewards: list[float],
    zero_var: float,
    rollout_s: float,
) -> dict[str, float]:
    """A step's rollouts in numbers: reward, solve rate, turns, tokens, speed, failures
    (and each task's own curve in a multi-task run)."""
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
    if isinstance(task, MixtureTask):  # a multi-task run: each task's own curve
        out.update(per_task_metrics(trajs))
    return out
