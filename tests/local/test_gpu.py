"""GPU checks (skipped without CUDA): bf16 training and sampling on the device, same loop."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA"),
]


async def test_count_a_learns_on_gpu_in_bf16(tmp_path, tiny_1m):
    from agentrft.backends.local.backend import train_async

    from .conftest import CountA, tiny_config

    config = tiny_config(
        tmp_path,
        global_batch_size=2,
        group_size=8,
        max_steps=30,
        learning_rate=5e-3,
        **{"local.model": tiny_1m, "local.inference": "transformers", "local.device": "cuda"},
    )
    result = await train_async(CountA(), config)
    rewards = [m["reward_mean"] for m in result.history]
    assert max(rewards[-5:]) >= 5 * rewards[0], rewards
    # bf16 sampling vs the trainer: agreement is looser than fp32 but still close.
    assert result.history[-1]["sampler_logprob_abs_diff"] < 0.05


def test_trainer_uses_bf16_base_and_fp32_adapter(tiny_1m):
    from agentrft.backends.local.algo.trainer import make_trainer
    from agentrft.config_model import validate_config

    trainer = make_trainer(
        validate_config({"local": {"model": tiny_1m, "device": "cuda"}}),
        tiny_1m,
        max_completion_length=8,
    )
    dtypes = {p.dtype for n, p in trainer.model.named_parameters() if "lora_" not in n}
    lora = {p.dtype for n, p in trainer.model.named_parameters() if "lora_" in n}
    assert dtypes == {torch.bfloat16}
    assert lora == {torch.float32}
