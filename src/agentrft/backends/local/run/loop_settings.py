"""What the GRPO loop reads of a run's config (`LoopSettings`, made once by the run's spec)
and the schedules it derives from it: the learning-rate warm-up, the curriculum level and
each step's sampling seed."""

from __future__ import annotations

from dataclasses import dataclass

from agentrft.backends.local.settings import LocalRunConfig
from agentrft.policy import Sampling

__all__ = ["LoopSettings", "curriculum_level", "learning_rate_at", "step_seed", "train_sampling"]


@dataclass(frozen=True)
class LoopSettings:
    """What the GRPO loop reads of a run's config: the step's shape, the advantage and its
    filters, the schedule, validation and checkpoints, health and curriculum. A run's spec
    (`run/spec.py`) makes it once."""

    global_batch_size: int
    group_size: int
    advantage_method: str
    seed: int
    learning_rate: float
    lr_warmup_steps: int
    max_steps: int
    max_epochs: int
    scale_rewards: bool
    format_credit: float
    drop_zero_variance_groups: bool
    balanced_batches: bool
    sync_check: bool
    val_every: int
    checkpoint_every: int
    save_prompt_token_ids: bool
    health_stop_after: int | None
    curriculum_start: int
    curriculum_end: int
    #: Steps the rollouts may lag the trainer (0: play, then train).
    max_steps_off_policy: int = 0
    #: With max_steps_off_policy > 0: train on the first groups to finish, carry the rest.
    carry_over_groups: bool = False

    @classmethod
    def of(cls, config: LocalRunConfig) -> LoopSettings:
        """The loop's part of a run's (resolved) config."""
        local = config.local
        return cls(
            global_batch_size=config.global_batch_size,
            group_size=config.group_size,
            advantage_method=config.advantage_method,
            seed=config.seed,
            learning_rate=config.learning_rate,
            lr_warmup_steps=local.lr_warmup_steps,
            max_steps=config.max_steps,
            max_epochs=config.max_epochs,
            scale_rewards=local.scale_rewards,
            format_credit=local.format_credit,
            drop_zero_variance_groups=local.drop_zero_variance_groups,
            balanced_batches=local.balanced_batches,
            sync_check=local.sync_check,
            val_every=config.val_every,
            checkpoint_every=local.checkpoint_every,
            save_prompt_token_ids=local.save_prompt_token_ids,
            health_stop_after=local.health_stop_after,
            curriculum_start=local.curriculum_start,
            curriculum_end=local.curriculum_end,
            max_steps_off_policy=config.max_steps_off_policy,
            carry_over_groups=local.carry_over_groups,
        )


def curriculum_level(start: int, end: int, step: int, total: int) -> int:
    """The task's curriculum level at `step` (1-based) of `total`: `start` at the first step,
    moving linearly to `end` at the last (rounded to the nearest level)."""
    if start == end or total <= 1:
        return end
    return round(start + (end - start) * (min(step, total) - 1) / (total - 1))


def learning_rate_at(settings: LoopSettings, step: int) -> float:
    """`learning_rate`, ramped linearly over the first `local.lr_warmup_steps` steps."""
    warmup = settings.lr_warmup_steps
    if warmup and step < warmup:
        return settings.learning_rate * step / warmup
    return settings.learning_rate


def step_seed(seed: int, step: int) -> int:
    return (seed * 1_000_003 + step * 100_003) % (2**31)


def train_sampling(config: LocalRunConfig) -> Sampling:
    """How a run's training rollouts sample: its temperature, top_p and max_tokens."""
    return Sampling(
        temperature=config.temperature,
        top_p=config.sampling_top_p,
        max_tokens=config.sampling_max_tokens,
    )
