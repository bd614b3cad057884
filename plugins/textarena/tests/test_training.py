"""A short local CPU run end to end: tiny built-in model, SFT warm-up on expert games, one
GRPO step on TextArena episodes, before/after evaluation, a saved adapter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from agentrft_textarena.reward import TIERS


def test_local_training_run_completes(tmp_path):
    exe = Path(sys.executable).with_name("agentrft")
    args = [
        str(exe), "train", "--task", "textarena_guess_the_number", "--backend", "local",
        "--max-steps", "1", "--set", "global_batch_size=2", "--set", "group_size=2",
        "--set", "eval.n=4", "--set", "local.sft_warmup_steps=4",
    ]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1", "COLUMNS": "200"}
    proc = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (run,) = (tmp_path / "runs").iterdir()
    assert (run / "final_adapter" / "adapter_model.safetensors").is_file()
    metrics = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert any(m.get("step") == 1 for m in metrics)
    trajs = [json.loads(line) for line in (run / "trajectories.jsonl").read_text().splitlines()]
    assert len(trajs) == 4  # 2 prompts x 2 samples
    for t in trajs:
        assert t["task"] == "textarena_guess_the_number"
        assert t["reward"]["outcome"] in TIERS.names
    assert "after" in proc.stdout and "solve rate" in proc.stdout
