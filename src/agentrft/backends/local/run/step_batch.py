"""From a step's rollouts to what the trainer trains on: advantages (per episode or per turn),
the format credit, the groups admitted, and the token sequences (`step_batch`)."""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass

from agentrft.backends.local.algo.advantages import (
    PER_TURN_METHODS,
    compute_advantages,
    group_per_turn,
    turn_penalty_credit,
    usable_per_turn,
)
from agentrft.backends.local.algo.sequences import TrainSequence, rollout_sequences
from agentrft.backends.local.run.health import format_faults
from agentrft.backends.local.run.loop_settings import LoopSettings
from agentrft.trajectory import Trajectory

__all__ = ["StepBatch", "step_batch"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class StepBatch:
    """What one step trains on, and the figures its metrics report."""

    rewards: list[float]
    sequences: list[TrainSequence]
    #: Groups whose every advantage is 0 (nothing to learn from them), as a fraction.
    zero_variance: float
    #: Under a per-turn advantage method: the rollouts that fell back to their episode's.
    per_turn_fallback: float
    #: Rollouts left out by `drop_zero_variance_groups`, in groups.
    dropped_groups: float


def step_batch(cfg: LoopSettings, step: int, trajs: list[Trajectory]) -> StepBatch:
    """Advantages for `trajs` (whole groups of `cfg.group_size`, in order) and their
    training sequences."""
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
            admitted = [ok or any(c != 0.0 for c in penalties[i]) for i, ok in enumerate(admitted)]
    seqs = [
        s
        for t, a, ta, c, ok in zip(trajs, adv.values, turn_adv, credit, admitted, strict=True)
        if ok
        for s in rollout_sequences(t, a, ta, c)
    ]
    return StepBatch(
        rewards=rewards,
        sequences=seqs,
        zero_variance=zero_var,
        per_turn_fallback=fallback,
        dropped_groups=admitted.count(False) / cfg.group_size,
    )
