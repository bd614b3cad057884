"""A short local CPU training run end to end on tau2_mock: a tiny model built on the spot,
GRPO steps whose rollouts play tau2's environment with the scripted user and are scored by
tau2's evaluator, an adapter saved. Proves the plumbing, not learning (~1 min)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("peft")

AGENTRFT = str(Path(sys.executable).with_name("agentrft"))


def test_local_training_run_completes(tmp_path: Path) -> None:
    cmd = [
        AGENTRFT, "train", "--task", "tau2_mock", "--backend", "local", "--max-steps", "2",
        "--set", "local.tiny_model=156k", "--set", "local.cpu_threads=1",
        "--set", f"local.run_dir={tmp_path}", "--set", "local.tracking=none",
    ]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    (run,) = [p for p in tmp_path.iterdir() if p.name.startswith("tau2_mock-")]
    assert (run / "final_adapter").is_dir()
    steps = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [s["step"] for s in steps if "reward_mean" in s] == [1, 2]
    trajs = [json.loads(line) for line in (run / "trajectories.jsonl").read_text().splitlines()]
    assert trajs and all(t["reward"] is not None for t in trajs)
    # The rollouts played tau2's mock environment (its tools) and got tau2's score.
    names = {tool["function"]["name"] for tool in trajs[0]["tools"]}
    assert {"create_task", "update_task_status"} <= names
    assert all("tau2_reward" in t["reward"]["components"] for t in trajs)
