"""Evaluations through the engine, shared by `train` (before, after the SFT warm-up, mid-run
validation, after) and `evaluate`: the same agent loop, the same files (the rows:
`rows.validation_prompts`).

Importing this module is cheap: the engine's modules are imported inside `run_eval`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentrft.backends.local.settings import LocalRunConfig
    from agentrft.evaluation import EvalReport
    from agentrft.task import Task


async def run_eval(
    task: Task[Any],
    config: LocalRunConfig,
    engine: Any,
    prompts: list[str],
    *,
    adapter: str | None,
    label: str,
    reward_fn: Any = None,
) -> tuple[list[EvalReport], list[Any]]:
    """Evaluate through the one agent loop at each `config.eval.temperatures`."""
    from agentrft.backends.local.inference.chat_tokens import TokenPolicy
    from agentrft.config import episode_limits
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
