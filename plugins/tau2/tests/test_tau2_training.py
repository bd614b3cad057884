"""Short local CPU training runs end to end, on tau2_mock (through the CLI) and on telecom
(in process, with the domain policy left out of the prompt so it fits the tiny model): a
tiny model built on the spot, GRPO steps whose rollouts play tau2's environment with the
scripted user and are scored by tau2's evaluator, an adapter saved. They prove the
plumbing, not learning."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, ClassVar

import pytest
from agentrft_tau2.suite import AGENT_INSTRUCTION, AGENT_SYSTEM_PROMPT
from agentrft_tau2.task import TelecomTask

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


class TinyContextTelecom(TelecomTask):
    """tau2_telecom with tau2's agent instruction but without the domain policy: the policy
    (main policy and tech support manual, ~24k characters) is ~16k tokens for the tiny
    model's byte-level tokenizer, twice its 8192-token context. Everything else (the rows,
    the tools, the scripted user and its phone, tau2's evaluator) is tau2_telecom's."""

    name: ClassVar[str] = "tau2_telecom_tiny_context"

    def system_prompt(self, instance: Any) -> str:
        return AGENT_SYSTEM_PROMPT.format(
            domain_policy="(left out for the tiny test model)", agent_instruction=AGENT_INSTRUCTION
        )


def test_local_training_run_on_telecom_completes(tmp_path: Path) -> None:
    """A short SFT warm-up on the expert's telecom games (the user's phone steps stay out of
    what is trained on) and a GRPO step whose rollouts play telecom with the scripted user."""
    from agentrft.backends.local.backend import LocalBackend
    from agentrft.config_model import load_config

    config = load_config(
        values={
            "local.run_dir": str(tmp_path), "local.tracking": "none",
            "local.eval_before": False, "local.eval_after": False,
            "local.tiny_model": "156k", "local.cpu_threads": 1,
            "local.sft_warmup_steps": 2, "local.max_sequence_length": 6144,
            "local.micro_batch_size": 1, "local.save_prompt_token_ids": True,
            "group_size": 2, "global_batch_size": 2, "max_steps": 1,
            "sampling_max_tokens": 24, "limits.max_turns": 3,
        }
    )  # fmt: skip
    result = LocalBackend().train(TinyContextTelecom(), config)
    run = result.run_dir
    assert (run / "final_adapter").is_dir()
    trajs = [json.loads(line) for line in (run / "trajectories.jsonl").read_text().splitlines()]
    assert len(trajs) == 4 and all(t["reward"] is not None for t in trajs)
    for t in trajs:
        names = {tool["function"]["name"] for tool in t["tools"]}
        assert {"get_customer_by_phone", "refuel_data"} <= names and "toggle_data" not in names
        assert "[case telecom/" in t["messages"][2]["content"]  # the scripted user opened
        assert "tau2_reward" in t["reward"]["components"]
        assert not any("Status Bar:" in (m.get("content") or "") for m in t["messages"])
    # The rollouts were trained on: the policy's tokens were sampled within the context.
    assert all(t["turns"] and t["turns"][0]["prompt_token_ids"] for t in trajs)
