"""A sampler that can no longer sample, or a trainer whose step raises, ends the run with one
clear error naming the step and the checkpoint to resume from; the run then resumes from it
and ends where an uninterrupted run ends.

Controls: a batch where only some episodes got no answer while the sampler still serves goes
on (those episodes say why), and a run whose sampler and trainer never fail finishes.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from agentrft.backends.local.algo.trainer import LoRATrainer
from agentrft.backends.local.backend import train_async
from agentrft.backends.local.inference.hf_sampler import HFSampler
from agentrft.backends.local.inference.vllm_server import VLLMServer, VLLMServerConfig
from agentrft.backends.local.run.engine import Engine
from agentrft.backends.local.run.side_failures import SamplerFailed, TrainerFailed, check_sampled
from agentrft.testing import free_port
from agentrft.trajectory import Failure, Trajectory

from .conftest import CountA, tiny_config

COMMON = dict(
    global_batch_size=2, group_size=4, max_steps=4, sampling_max_tokens=16, learning_rate=5e-3,
    **{"local.tiny_model": "156k", "local.checkpoint_every": 1},
)  # fmt: skip


def _info(run_dir) -> dict:
    return json.loads((run_dir / "run.json").read_text())


def _steps(run_dir) -> list[int]:
    return [json.loads(x)["step"] for x in (run_dir / "metrics.jsonl").read_text().splitlines()]


async def _resumes_to_the_end(config, run_dir) -> None:
    resumed = await train_async(CountA(), config, resume=str(run_dir))
    assert resumed.steps == 4 and _steps(run_dir) == [1, 2, 3, 4]
    assert _info(run_dir)["status"] == "finished"


@pytest.mark.parametrize("ahead", [0, 1], ids=["sync", "one-step-ahead"])
async def test_a_sampler_that_answers_nothing_ends_the_run_and_it_resumes(
    tmp_path, monkeypatch, ahead
):
    real = HFSampler.generate

    async def broken(self, *args, **kwargs):
        raise RuntimeError("the sampler's device is gone")

    def break_after_2(step: int, metrics: dict) -> None:
        if step == 2:
            monkeypatch.setattr(HFSampler, "generate", broken)

    config = tiny_config(tmp_path, **COMMON, max_steps_off_policy=ahead,
                         **{"local.run_name": "r"})  # fmt: skip
    with pytest.raises(SamplerFailed) as info:
        await train_async(CountA(), config, on_step=break_after_2)
    run_dir = tmp_path / "runs" / "r"
    message = str(info.value)
    if ahead:  # step 3's batch played before the break; the step's own probe sample did not
        assert message.startswith("step 3: the weight-sync check's sample"), message
    else:
        assert message.startswith("step 3: 8 of 8 episodes got no answer"), message
        assert "answered none of them" in message
    assert "the sampler's device is gone" in message
    assert "checkpoints/step_000002" in message
    assert f"--resume {run_dir}" in message
    assert _steps(run_dir) == [1, 2]  # nothing trained on the failed batch
    assert _info(run_dir)["status"] == "failed"
    assert "the sampler's device is gone" in _info(run_dir)["error"]

    monkeypatch.setattr(HFSampler, "generate", real)
    await _resumes_to_the_end(config, run_dir)


@pytest.mark.parametrize("ahead", [0, 1], ids=["sync", "one-step-ahead"])
async def test_a_trainer_step_that_raises_ends_the_run_and_it_resumes(tmp_path, monkeypatch, ahead):
    real = LoRATrainer.step
    calls = {"n": 0}

    def step(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("CUDA out of memory (simulated)")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(LoRATrainer, "step", step)
    config = tiny_config(tmp_path, **COMMON, max_steps_off_policy=ahead,
                         **{"local.run_name": "t"})  # fmt: skip
    with pytest.raises(TrainerFailed) as info:
        await train_async(CountA(), config)
    run_dir = tmp_path / "runs" / "t"
    message = str(info.value)
    assert message.startswith("step 2: the trainer's optimizer step failed: RuntimeError: CUDA")
    assert f"traceback: {run_dir / 'error.txt'}" in message
    assert "CUDA out of memory (simulated)" in (run_dir / "error.txt").read_text()
    assert "checkpoints/step_000001" in message
    assert _steps(run_dir) == [1]
    assert _info(run_dir)["status"] == "failed"

    monkeypatch.setattr(LoRATrainer, "step", real)
    await _resumes_to_the_end(config, run_dir)


def _traj(stop: str, detail: str = "") -> Trajectory:
    failures = [Failure(kind=stop, detail=detail)] if stop != "done" else []
    return Trajectory(id="e", task="t", prompt="p", stop_reason=stop, failures=failures)


def _engine(**kw) -> Engine:
    return Engine("m", "cpu", kw.pop("inference", "vllm"), None, None, **kw)  # type: ignore[arg-type]


async def test_some_unanswered_episodes_while_the_sampler_serves_go_on():
    batch = [_traj("policy_error", "one request failed"), _traj("done"), _traj("done")]
    await check_sampled(_engine(inference="transformers"), batch, "step 1")  # control: no raise
    await check_sampled(_engine(inference="transformers"), [_traj("done")], "step 1")


async def test_a_vllm_server_that_no_longer_answers_is_named(tmp_path):
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    engine = _engine(url=url)
    assert "does not answer /health" in (await engine.sampler_problem(timeout_s=2.0))
    batch = [_traj("policy_error", "vLLM unreachable"), _traj("done")]
    with pytest.raises(SamplerFailed, match=r"step 5: 1 of 2 episodes .* does not answer /health"):
        await check_sampled(engine, batch, "step 5")


async def test_a_vllm_server_that_exited_is_named_with_its_code_and_log(tmp_path):
    log = tmp_path / "server.log"
    log.write_text(
        "INFO starting\nRuntimeError: CUDA error: an illegal memory access\n"
        'INFO:     127.0.0.1:38176 - "POST /v1/completions HTTP/1.1" 500 Internal Server Error\n'
    )
    server = VLLMServer(VLLMServerConfig(model="m", log_path=str(log)))
    server._log_file = log  # launched by hand below: the server's own start path needs vLLM
    server.process = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    server.process.wait()
    problem = await _engine(server=server, url="http://127.0.0.1:9").sampler_problem()
    assert problem is not None
    assert f"(pid {server.process.pid}) exited with code 3" in problem
    assert "illegal memory access" in problem and str(log) in problem
    assert "POST /v1/completions" not in problem


async def test_an_evaluation_the_sampler_answers_none_of_stops_with_the_reason(
    tmp_path, monkeypatch
):
    from agentrft.backends.local.backend import evaluate_async

    async def broken(self, *args, **kwargs):
        raise RuntimeError("the sampler's device is gone")

    monkeypatch.setattr(HFSampler, "generate", broken)
    config = tiny_config(tmp_path, **COMMON, **{"eval.n": 4})
    with pytest.raises(SamplerFailed, match=r"^the evaluation 'ev': 4 of 4 episodes got no"):
        await evaluate_async(CountA(), config, label="ev", output_dir=str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()  # nothing half-written
