"""A two-task run on the local engine, CPU and the tiny model: rows of both tasks in one
run, per-task metrics at every step, per-task evaluation tables before and after."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from agentrft.mixture import route_prompt
from agentrft.trajectory import read_trajectories

from .test_cli_local import TINY, cli

__all__ = ["cli"]  # the fixture, used by name


def test_two_tasks_train_and_evaluate_with_per_task_tables(cli: Any, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    result = cli(
        "train", "--task", "count_a=0.5,fruit_guess=0.5", "--backend", "local", *TINY,
        "--set", f"local.run_dir={runs}", "--set", "local.tracking=none",
        "--set", "max_steps=2", "--set", "global_batch_size=4", "--set", "group_size=2",
        "--set", "local.eval_before=true", "--set", "local.eval_after=true",
        "--set", "eval.n=4", "--set", "sampling_max_tokens=16",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    (run,) = runs.iterdir()
    # Each step's rollouts: 4 rows x 2 samples, two rows of each task, grouped per row.
    trajs = list(read_trajectories(run / "trajectories.jsonl"))
    assert Counter(t.task for t in trajs) == {"count_a": 8, "fruit_guess": 8}
    for t in trajs:
        assert route_prompt(t.prompt)[0] == t.task
    groups: dict[tuple[int, int], set[str]] = {}
    for t in trajs:
        groups.setdefault((t.metadata["step"], t.metadata["group"]), set()).add(t.prompt)
    assert all(len(prompts) == 1 for prompts in groups.values())  # a group is one (task, prompt)

    metrics = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    steps = [m for m in metrics if "reward/count_a/mean" in m]
    assert len(steps) == 2
    for step, m in enumerate(steps, start=1):
        played = [t for t in trajs if t.metadata["step"] == step]
        for name in ("count_a", "fruit_guess"):
            own = [t.reward.total for t in played if t.task == name]
            assert m.get(f"rollouts/{name}", 0.0) == len(own)
            if own:
                assert abs(m[f"reward/{name}/mean"] - sum(own) / len(own)) < 1e-9
                assert f"solve_rate/{name}" in m and f"reward/{name}/std" in m

    before = json.loads((run / "eval" / "before.json").read_text())
    after = json.loads((run / "eval" / "after.json").read_text())
    for reports in (before, after):
        assert [r["task"] for r in reports] == ["count_a+fruit_guess", "count_a", "fruit_guess"]
        assert [r["episodes"] for r in reports] == [4, 2, 2]
    out = result.output
    # The before/after table, once per task and once for the whole mix.
    titles = [line.strip() for line in out.splitlines() if line.strip().startswith("eval · ")]
    assert titles == ["eval · count_a+fruit_guess", "eval · count_a", "eval · fruit_guess"]
