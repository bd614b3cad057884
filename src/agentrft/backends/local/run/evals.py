"""Evaluations through the engine, shared by `train` (before, after the SFT warm-up, mid-run
validation, after) and `evaluate`: the same agent loop, the same files (the rows:
`rows.validation_prompts`).

`EvalSettings` is what an evaluation is built from. Importing this module is cheap: the
engine's modules are imported inside `run_eval`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentrft.task import EpisodeLimits

if TYPE_CHECKING:
    from agentrft.backends.local.settings import LocalRunConfig
    from agentrft.evaluation import EvalReport
    from agentrft.task import Task


@dataclass(frozen=True)
class EvalSettings:
    """How held-out rows are played, made once from the config (a run's spec, `evaluate`):
    the temperatures, samples per row, sampling, episode limits, scoring and curriculum
    level, and when a training run evaluates (`before`, `after`)."""

    temperatures: tuple[float, ...]
    samples_per_row: int
    top_p: float
    max_tokens: int
    limits: EpisodeLimits
    concurrency: int
    pass_k_values: tuple[int, ...]
    success_threshold: float
    curriculum_level: int
    #: The evaluation policy's sampling seed (the run's seed + 7: not the training rollouts').
    seed: int
    #: Whether a training run evaluates the starting model / what it trained.
    before: bool = True
    after: bool = True

    @classmethod
    def of(cls, task: Task[Any], config: LocalRunConfig) -> EvalSettings:
        """The evaluations' part of a (resolved) config."""
        from agentrft.config import episode_limits

        return cls(
            temperatures=tuple(config.eval.temperatures),
            samples_per_row=config.eval.samples_per_row,
            top_p=config.sampling_top_p,
            max_tokens=config.sampling_max_tokens,
            limits=episode_limits(task, config),
            concurrency=config.eval.concurrency,
            pass_k_values=tuple(config.pass_k_values),
            success_threshold=config.success_threshold,
            curriculum_level=eval_level(config),
            seed=config.seed + 7,
            before=config.local.eval_before,
            after=config.local.eval_after,
        )

    def first_temperature(self) -> EvalSettings:
        """Mid-run validation's settings: the first temperature only (a full evaluation is
        the after row's job)."""
        return replace(self, temperatures=self.temperatures[:1])

    def describe(self) -> dict[str, Any]:
        """For the dry run (the limits are the run's own, printed once beside them)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "limits"}


async def run_eval(
    task: Task[Any],
    settings: EvalSettings,
    engine: Any,
    prompts: list[str],
    *,
    adapter: str | None,
    label: str,
    reward_fn: Any = None,
) -> tuple[list[EvalReport], list[Any]]:
    """Evaluate through the one agent loop at each of `settings.temperatures`."""
    from agentrft.backends.local.inference.chat_tokens import TokenPolicy
    from agentrft.backends.local.run.side_failures import check_sampled
    from agentrft.evaluation import evaluate
    from agentrft.policy import Sampling

    policy = TokenPolicy(engine.sampler, engine.chat, adapter=adapter, seed=settings.seed)
    reports, trajs = await evaluate(
        task,
        prompts,
        policy,
        temperatures=list(settings.temperatures),
        samples_per_row=settings.samples_per_row,
        sampling=Sampling(top_p=settings.top_p, max_tokens=settings.max_tokens),
        limits=settings.limits,
        concurrency=settings.concurrency,
        pass_k_values=list(settings.pass_k_values),
        success_threshold=settings.success_threshold,
        reward_fn=reward_fn,
        policy_name=label,
        curriculum_level=settings.curriculum_level,
    )
    await check_sampled(engine, trajs, f"the evaluation {label!r}")
    return reports, trajs


def eval_level(config: LocalRunConfig) -> int:
    """The curriculum level evaluations play: `eval.curriculum_level` when set, else the
    level a training curriculum ends at (so before/after rows compare like with like)."""
    if "curriculum_level" in config.eval.model_fields_set:
        return config.eval.curriculum_level
    return config.local.curriculum_end


def save_eval(out: Path, label: str, reports: list[EvalReport], trajs: list[Any]) -> None:
    """`out/LABEL.json` (the reports) and `out/LABEL_trajectories.jsonl` (the episodes)."""
    from agentrft.evaluation import write_report
    from agentrft.trajectory import write_trajectories

    write_report(out / f"{label}.json", reports)
    write_trajectories(trajs, out / f"{label}_trajectories.jsonl")


def load_eval(out: Path, label: str) -> list[EvalReport]:
    """The reports `save_eval` wrote under `label`, [] when there are none (a resumed run
    shows the before rows it measured when it started)."""
    from agentrft.evaluation import EvalReport

    p = out / f"{label}.json"
    if not p.is_file():
        return []
    return [EvalReport.model_validate(d) for d in json.loads(p.read_text())]
