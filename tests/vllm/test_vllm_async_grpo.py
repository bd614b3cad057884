"""`max_steps_off_policy` through a real vLLM server: the queued batches play from older
adapter versions while the newest is hot-loaded beside them (vLLM holds k + 2 LoRAs), and
every version is unloaded once no batch plays from it. And a server that dies mid-run (a
GPU fault, the OOM killer) ends the run with a clear error and a checkpoint it resumes from."""

from __future__ import annotations

import json
import os
import signal
from typing import Any

import pytest

from agentrft import Environment, EpisodeLimits, RewardResult, Task
from agentrft.backends.local.backend import train_async
from agentrft.backends.local.inference.vllm_server import VLLMServer
from agentrft.backends.local.run.side_failures import SamplerFailed
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


def _config(tmp_path: Any, python: str, model: Any, **values: Any) -> Any:
    return load_config(
        values={
            "local.run_dir": str(tmp_path / "runs"),
            "local.tracking": "none",
            "local.eval_before": False,
            "local.eval_after": False,
            "local.inference": "vllm",
            "local.vllm_python": python,
            "local.device": "cpu",
            "local.model": str(model),
            "local.cpu_threads": 1,
            "max_epochs": 1000,
            "global_batch_size": 2,
            "group_size": 4,
            "lora_rank": 16,
            "lora_alpha": 32,
            "sampling_max_tokens": 16,
            "learning_rate": 5e-3,
            **values,
        }
    )


def _python(vllm_helpers: Any) -> str:
    python = vllm_helpers.vllm_python("cpu")
    if python is None:
        pytest.skip("no vLLM interpreter (scripts/vllm_cpu_env.sh builds one)")
    return str(python)


async def test_batches_play_ahead_of_the_trainer_through_vllm(
    tmp_path: Any, tiny_model_dir: Any, vllm_helpers: Any
) -> None:
    k = 2
    config = _config(
        tmp_path, _python(vllm_helpers), tiny_model_dir, max_steps=5, max_steps_off_policy=k
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


async def test_a_vllm_server_killed_mid_run_ends_it_and_the_run_resumes(
    tmp_path: Any, tiny_model_dir: Any, vllm_helpers: Any, monkeypatch: Any
) -> None:
    started: list[VLLMServer] = []
    start = VLLMServer.start

    def recording_start(self: VLLMServer) -> str:
        started.append(self)
        return start(self)

    monkeypatch.setattr(VLLMServer, "start", recording_start)

    killed: list[int] = []

    def kill_after_step_2(step: int, metrics: dict[str, float]) -> None:
        if step == 2:  # what the OOM killer does: no goodbye, the whole process group
            pid = started[0].pid()
            assert pid is not None
            os.killpg(pid, signal.SIGKILL)
            started[0].process.wait()  # type: ignore[union-attr]
            killed.append(pid)

    config = _config(tmp_path, _python(vllm_helpers), tiny_model_dir, max_steps=4,
                     **{"local.run_name": "killed", "local.checkpoint_every": 1})  # fmt: skip
    with pytest.raises(SamplerFailed) as info:
        await train_async(_CountA(), config, on_step=kill_after_step_2)
    message = str(info.value)
    run_dir = tmp_path / "runs" / "killed"
    assert message.startswith("step 3: 8 of 8 episodes got no answer from the vllm sampler")
    assert f"the vLLM server (pid {killed[0]}) was killed by SIGKILL" in message
    assert '"POST /v1/' not in message  # its last words, not its access log
    assert "checkpoints/step_000002; once the cause is fixed, resume with:" in message
    assert json.loads((run_dir / "run.json").read_text())["status"] == "failed"

    resumed = await train_async(_CountA(), config, resume=str(run_dir))  # a new server
    assert resumed.steps == 4 and len(started) == 2
    steps = [json.loads(x)["step"] for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert steps == [1, 2, 3, 4]
