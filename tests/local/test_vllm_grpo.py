"""The same GRPO loop with a real vLLM server (the CPU build) in place of the transformers
sampler: weight sync through `/v1/load_lora_adapter`, token-exact tool episodes.

Runs where a vLLM interpreter exists (`$AGENTRFT_VLLM_PYTHON` or `.venv-vllm/`, built by
`scripts/vllm_cpu_env.sh`); skipped elsewhere. Server start ~20-55 s.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentrft import Sampling
from agentrft.backends.local.algo.sequences import trajectory_sequences
from agentrft.backends.local.algo.trainer import make_trainer
from agentrft.backends.local.algo.trainer_settings import TrainerSettings
from agentrft.backends.local.run.engine import SamplerSettings, make_engine
from agentrft.backends.local.run.grpo import GRPOLoop
from agentrft.backends.local.run.loop_settings import LoopSettings
from agentrft.backends.local.run.run_dir import RunDir
from agentrft.backends.local.run.sft import sft_warmup
from agentrft.backends.local.run.spec import train_sampling
from agentrft.trajectory import read_trajectories

from .conftest import FRUITS, CountA, FruitGuess, tiny_config

REPO = Path(__file__).resolve().parents[2]
VLLM_PYTHON = os.environ.get("AGENTRFT_VLLM_PYTHON") or str(REPO / ".venv-vllm" / "bin" / "python")

pytestmark = pytest.mark.vllm


def _gpu_vllm() -> bool:
    import importlib.util

    import torch

    return torch.cuda.is_available() and importlib.util.find_spec("vllm") is not None


@pytest.mark.skipif(not Path(VLLM_PYTHON).exists(), reason="no vLLM interpreter")
async def test_grpo_through_a_real_vllm_server(tmp_path, tiny_1m):
    settings = {"local.vllm_python": VLLM_PYTHON, "local.device": "cpu", "local.cpu_threads": 1}
    await _grpo_through_vllm(tmp_path, {**settings, "local.model": tiny_1m})


@pytest.mark.gpu
@pytest.mark.skipif(not _gpu_vllm(), reason="needs CUDA and the vllm extra")
async def test_grpo_through_a_real_vllm_server_on_gpu(tmp_path, tiny_1m):
    import sys

    # bf16 on the GPU: the sampler/trainer logprob gap is larger than fp32's ~1e-6.
    await _grpo_through_vllm(
        tmp_path,
        {"local.vllm_python": sys.executable, "local.device": "cuda", "local.model": tiny_1m},
        gap=0.05,
    )


async def _grpo_through_vllm(tmp_path, settings: dict, gap: float = 1e-4) -> None:
    config = tiny_config(
        tmp_path,
        global_batch_size=2,
        group_size=8,
        sampling_max_tokens=32,
        learning_rate=5e-3,
        **{"local.inference": "vllm", **settings},
    )
    engine = make_engine(SamplerSettings.of(config))
    try:
        assert engine.inference == "vllm"
        task = CountA()
        trainer = make_trainer(
            TrainerSettings.of(config, device=engine.device),
            engine.model_path,
            max_completion_length=32,
        )
        loop = GRPOLoop(
            task, LoopSettings.of(config), engine, trainer, RunDir.create(config, "count_a"),
            train_prompts=[f"Write text {k}" for k in range(8)], limits=task.limits,
            sampling=train_sampling(config),
        )  # fmt: skip
        await loop.sync(0)
        prompt = engine.chat.render(
            [{"role": "user", "content": "Write text 0"}], None, add_generation_prompt=True
        )
        probe = Sampling(max_tokens=8, seed=7)
        first = await engine.sampler.generate(prompt, probe, adapter=loop.policy.adapter)
        history = [await loop.train_step() for _ in range(10)]
        # The server samples from exactly the policy the trainer holds (no silent stale sync).
        assert all(m["sampler_logprob_abs_diff"] < gap for m in history)
        last = await engine.sampler.generate(prompt, probe, adapter=loop.policy.adapter)
        assert loop.policy.adapter == "policy-v10"
        assert last.logprobs[0] != pytest.approx(first.logprobs[0], abs=1e-3)
        rewards = [m["reward_mean"] for m in history]
        assert max(rewards[-3:]) >= 3 * rewards[0], rewards  # measured: 3.8 -> 30.9

        # Multi-turn tool episodes through the server: still token-exact.
        fruit = FruitGuess()
        await sft_warmup(
            fruit, trainer, engine.chat, FRUITS, steps=30, batch_size=4, learning_rate=3e-3,
            limits=fruit.limits,
        )  # fmt: skip
        run = RunDir.create(config, "fruit")
        floop = GRPOLoop(
            fruit, LoopSettings.of(config), engine, trainer, run, train_prompts=FRUITS, limits=fruit.limits,
            sampling=train_sampling(config),
        )  # fmt: skip
        floop.version = loop.version
        await floop.sync(100)
        metrics = await floop.train_step()
        assert metrics["tool_calls_mean"] > 0.5 and metrics["sampler_logprob_abs_diff"] < gap
        for t in read_trajectories(run.path / "trajectories.jsonl"):
            for seq in trajectory_sequences(t, 0.0):
                trained = [i for i, m in zip(seq.token_ids, seq.mask, strict=True) if m]
                assert trained == [i for turn in t.turns for i in turn.completion_token_ids]
    finally:
        await engine.aclose()
