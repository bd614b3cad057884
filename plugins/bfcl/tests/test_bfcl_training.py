"""A short local CPU training run, end to end, through the CLI: the SFT warm-up on the
expert's BFCL episodes, then a GRPO step whose rollouts play BFCL entries (several user
turns) and are scored by BFCL's checker. A tiny built-in model (no download); ~15 s.

The two rows are the entries with the shortest prompts (tool schemas are most of a BFCL
prompt); local.max_sequence_length is raised so the expert's multi-turn episodes fit.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from agentrft_bfcl import TIERS

AGENTRFT = str(Path(sys.executable).parent / "agentrft")
RUNS = {
    "bfcl_multi_turn": ["multi_turn_base_105", "multi_turn_base_142"],
    # add_to_watchlist is held out until turn 1, get_available_stocks until turn 2: the SFT
    # warm-up and the rollouts cross a change of tools (Environment.tools_changed)
    "bfcl_multi_turn_miss_func": ["multi_turn_miss_func_142", "multi_turn_miss_func_105"],
}


@pytest.mark.parametrize("task", RUNS)
def test_local_training_run_completes_end_to_end(tmp_path: Path, task: str) -> None:
    rows = RUNS[task]
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps({"prompt": json.dumps({"id": i})}) + "\n" for i in rows))
    settings = {
        "local.tiny_model": "156k",
        "local.cpu_threads": "1",
        "local.tracking": "none",
        "local.run_dir": str(tmp_path / "runs"),
        "local.eval_before": "false",
        "local.eval_after": "false",
        "local.sft_warmup_steps": "3",
        "local.max_sequence_length": "16384",
        "local.micro_batch_size": "1",
        "group_size": "4",
        "global_batch_size": "1",
        "sampling_max_tokens": "32",
        "local.save_prompt_token_ids": "true",
    }
    args = [
        AGENTRFT,
        "train",
        "--task",
        task,
        "--backend",
        "local",
        "--data",
        str(data),
        "--max-steps",
        "1",
    ]
    for key, value in settings.items():
        args += ["--set", f"{key}={value}"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "COLUMNS": "200", "NO_COLOR": "1"}
    out = subprocess.run(args, capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]

    # the warm-up trained on the expert's episodes: its loss went down
    losses = [
        float(line.split("loss")[1])
        for line in out.stdout.splitlines()
        if line.strip().startswith("sft step")
    ]
    assert len(losses) >= 2 and losses[-1] < losses[0], out.stdout  # it prints the first and last

    (run,) = (tmp_path / "runs").iterdir()
    assert (run / "final_adapter" / "adapter_model.safetensors").is_file()
    (metrics,) = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    # the GRPO step ran its rollouts (this tiny model gets no reward signal: that is the
    # plumbing, not learning)
    assert metrics["step"] == 1 and metrics["rollout/valid_frac"] == 1.0
    trajs = [json.loads(line) for line in (run / "trajectories.jsonl").read_text().splitlines()]
    assert len(trajs) == 4
    for t in trajs:
        assert t["instance_id"] in rows
        assert {s["function"]["name"] for s in t["tools"]} >= {"place_order", "get_stock_info"}
        assert t["reward"]["outcome"] in TIERS.names
    if task == "bfcl_multi_turn_miss_func":
        # the tiny model's text replies move the episode on; where the next turn added a
        # function, that call was offered it and its prompt was rendered afresh
        changed = [
            (t, k) for t in trajs for k, turn in enumerate(t["turns"]) if turn["tools"] is not None
        ]
        assert changed, "no rollout reached the turn that adds a function"
        for t, k in changed:
            names = {s["function"]["name"] for s in t["turns"][k]["tools"]}
            assert names - {s["function"]["name"] for s in t["tools"]} <= {
                "add_to_watchlist",
                "get_available_stocks",
            } and names > {s["function"]["name"] for s in t["tools"]}
            before = t["turns"][k - 1]
            head = before["prompt_token_ids"] + before["completion_token_ids"]
            assert t["turns"][k]["prompt_token_ids"][: len(head)] != head
