"""SFT warm-up: a few supervised steps on scripted games before RL.

Small models rarely find the tool-call format by sampling alone; a warm-up on scripted games
(played through the same agent loop, rendered with the same chat template) teaches the format
so RL has rewards to compare. Whose games (`local.sft_source`): the task's expert
(`Task.expert()`, answers included), or its withheld copy (`Task.withheld()`: the replies
hide what the decision depends on and the expert guesses), which teaches the calls and
leaves the decision to RL.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentrft.backends.local.algo.sequences import TrainSequence, sft_sequences
from agentrft.backends.local.algo.trainer import LoRATrainer
from agentrft.backends.local.algo.warmup import warmup_task
from agentrft.backends.local.inference.chat_tokens import ChatTokenizer
from agentrft.policy import Sampling
from agentrft.rollout import run_episodes
from agentrft.task import EpisodeLimits, Task

if TYPE_CHECKING:
    from agentrft.backends.local.settings import LocalRunConfig

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class WarmupSettings:
    """The SFT warm-up's part of a run's config: how many supervised steps on whose games
    (`local.sft_source`), at what learning rate, batch and length, at which curriculum level."""

    steps: int
    source: str
    learning_rate: float
    batch_size: int
    max_length: int | None
    curriculum_level: int

    @classmethod
    def of(cls, config: LocalRunConfig) -> WarmupSettings:
        local = config.local
        return cls(
            steps=local.sft_warmup_steps,
            source=local.sft_source,
            learning_rate=local.sft_learning_rate,
            batch_size=config.global_batch_size,
            max_length=local.max_sequence_length,
            curriculum_level=local.curriculum_start,
        )


async def expert_sequences(
    task: Task[Any],
    prompts: Sequence[str],
    chat: ChatTokenizer,
    *,
    limits: EpisodeLimits | None = None,
    max_length: int | None = None,
    curriculum_level: int = 0,
) -> list[TrainSequence]:
    """Play `prompts` with the task's expert (at `curriculum_level`) and tokenise the games
    (assistant ids trained).

    Only games the expert won (`reward.solved`) are kept when any was won.
    """
    expert = task.expert()
    if expert is None:
        raise ValueError(
            f"task {task.name!r} has no scripted expert (Task.expert() returned None); "
            "set local.sft_warmup_steps=0"
        )
    trajs = await run_episodes(
        task, prompts, expert, sampling=Sampling(), limits=limits, curriculum_level=curriculum_level
    )
    won = [t for t in trajs if t.solved]
    seqs = [s for t in (won or trajs) for s in sft_sequences(t, chat, max_length)]
    return [s for s in seqs if any(s.mask)]


async def sft_warmup(
    task: Task[Any],
    trainer: LoRATrainer,
    chat: ChatTokenizer,
    prompts: Sequence[str],
    *,
    steps: int,
    batch_size: int,
    learning_rate: float,
    limits: EpisodeLimits | None = None,
    max_length: int | None = None,
    on_step: Callable[[int, dict[str, float]], None] | None = None,
    curriculum_level: int = 0,
) -> list[dict[str, float]]:
    """`steps` supervised steps of `batch_size` expert games each; returns their metrics.

    The optimizer state is reset afterwards so RL starts with fresh Adam moments at its
    own learning rate.
    """
    if steps <= 0:
        return []
    if not prompts:
        raise ValueError("the SFT warm-up needs training prompts")
    t0 = time.perf_counter()
    needed = steps * batch_size
    games = [prompts[i % len(prompts)] for i in range(needed)]
    seqs = await expert_sequences(
        task, games, chat, limits=limits, max_length=max_length, curriculum_level=curriculum_level
    )
    if not seqs:
        raise ValueError(f"the expert of task {task.name!r} produced no trainable games")
    play_s = time.perf_counter() - t0
    rl_lr = trainer.optimizer.param_groups[0]["lr"]
    trainer.set_learning_rate(learning_rate)
    history: list[dict[str, float]] = []
    for step in range(steps):
        batch = [seqs[(step * batch_size + i) % len(seqs)] for i in range(batch_size)]
        t1 = time.perf_counter()
        metrics = trainer.sft_step(batch)
        metrics["sft_step_s"] = time.perf_counter() - t1
        if step == 0:
            metrics["expert_play_s"] = play_s
        history.append(metrics)
        if on_step is not None:
            on_step(step + 1, metrics)
    trainer.reset_optimizer(rl_lr)
    return history


async def warmup_adapter(
    task: Task[Any], config: Any, out: Any, *, prompts: Sequence[str] | None = None
) -> Any:
    """Run only the SFT warm-up of `config` (its `local.sft_warmup_steps` on the games
    `local.sft_source` picks for `task`, at `local.sft_learning_rate`) and save the adapter
    to `out`; returns its path.

    The adapter can then start a separate GRPO run (`local.adapter`), e.g. to evaluate the
    warm-up on its own.
    """
    from pathlib import Path

    from agentrft.backends.local.algo.trainer import make_trainer
    from agentrft.backends.local.algo.trainer_settings import TrainerSettings
    from agentrft.backends.local.devices import resolve_device
    from agentrft.backends.local.run.engine import resolve_model_path, set_cpu_threads
    from agentrft.backends.local.run.rows import train_prompts
    from agentrft.config import episode_limits

    warm = WarmupSettings.of(config)
    games = warmup_task(task, warm.source)
    if games is None:
        raise ValueError(
            f"task {task.name!r} offers no {warm.source} warm-up games; set "
            "local.sft_source=expert or local.sft_warmup_steps=0"
        )
    model = resolve_model_path(config.local.model, config.local.tiny_model)
    settings = TrainerSettings.of(config, device=resolve_device(config.local.device))
    trainer = make_trainer(settings, model, max_completion_length=config.sampling_max_tokens,
                           adapter=config.local.adapter)  # fmt: skip
    set_cpu_threads(config.local.cpu_threads, config.local.model, trainer.device)
    if prompts is None:
        prompts = train_prompts(task, config)  # the rows `train` would warm up on
    await sft_warmup(
        games,
        trainer,
        ChatTokenizer(trainer.tokenizer),
        prompts,
        steps=warm.steps,
        batch_size=warm.batch_size,
        learning_rate=warm.learning_rate,
        limits=episode_limits(task, config),
        max_length=warm.max_length,
        curriculum_level=warm.curriculum_level,
    )
    return trainer.save_adapter(Path(out))
