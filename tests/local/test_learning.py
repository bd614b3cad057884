"""GRPO learns on CPU: a ~1M-parameter tiny model, reward = count of 'a' in the reply."""

from __future__ import annotations

from agentrft.backends.local.backend import train_async

from .conftest import CountA, tiny_config


async def test_mean_reward_rises_five_fold(tmp_path, tiny_1m):
    config = tiny_config(
        tmp_path,
        global_batch_size=2,
        group_size=8,
        max_steps=30,
        sampling_max_tokens=32,
        learning_rate=5e-3,
    )
    result = await train_async(CountA(), config)
    rewards = [m["reward_mean"] for m in result.history]
    assert len(rewards) == 30
    first, best_late = rewards[0], max(rewards[-5:])
    # Measured: ~3.4 at step 1, ~31 by step 12 (max 32 'a' tokens).
    assert first < 6
    assert best_late >= 5 * first, rewards
    assert rewards[-1] > 25, rewards
