"""The whole CPU loop on a Wordle-shaped tool task: SFT warm-up on expert games, GRPO steps
through the one agent loop with the transformers sampler, weight sync."""

from __future__ import annotations

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
from agentrft.config import episode_limits
from agentrft.trajectory import read_trajectories

from .conftest import FRUITS, FruitGuess, tiny_config


async def test_tool_episodes_train_on_sampled_ids_and_sync_changes_logprobs(tmp_path, tiny_1m):
    task = FruitGuess()
    config = tiny_config(
        tmp_path, global_batch_size=4, group_size=4, max_steps=2, learning_rate=2e-3
    )
    engine = make_engine(SamplerSettings.of(config))
    try:
        limits = episode_limits(task, config)
        trainer = make_trainer(
            TrainerSettings.of(config, device=engine.device),
            engine.model_path,
            max_completion_length=32 * 4,
        )
        run = RunDir.create(config, task.name)
        loop = GRPOLoop(
            task, LoopSettings.of(config), engine, trainer, run, train_prompts=FRUITS, limits=limits,
            sampling=train_sampling(config),
        )  # fmt: skip
        sft = await sft_warmup(
            task, trainer, engine.chat, FRUITS, steps=30, batch_size=4, learning_rate=3e-3,
            limits=limits,
        )  # fmt: skip
        assert sft[-1]["sft_loss"] < 0.2 * sft[0]["sft_loss"]
        await loop.sync(0)

        trained: list = []
        step = trainer.step
        trainer.step = lambda seqs: (trained.append(seqs), step(seqs))[1]  # type: ignore[method-assign]
        metrics = await loop.train_step()

        trajs = list(read_trajectories(run.path / "trajectories.jsonl"))
        assert len(trajs) == 16 and all(t.metadata["step"] == 1 for t in trajs)
        with_tools = [t for t in trajs if t.tool_calls >= 1 and len(t.turns) >= 2]
        assert with_tools, [t.failure_kinds for t in trajs]  # the warm-up taught the format

        # The trainer got exactly the sequences built from the sampled ids.
        expected = [s for t in trajs for s in trajectory_sequences(t, 0.0)]
        assert [s.token_ids for s in trained[0]] == [s.token_ids for s in expected]
        chat = engine.chat
        for t in with_tools:
            (seq,) = trajectory_sequences(t, 0.0)
            ids_trained = [i for i, m in zip(seq.token_ids, seq.mask, strict=True) if m]
            sampled = [i for turn in t.turns for i in turn.completion_token_ids]
            assert ids_trained == sampled
            assert chat.decode(ids_trained) == "".join(
                chat.decode(turn.completion_token_ids) for turn in t.turns
            )
            masked = chat.decode([i for i, m in zip(seq.token_ids, seq.mask, strict=True) if not m])
            for turn in t.turns[:-1]:  # tool replies that a later turn saw: all masked
                for msg in turn.tool_messages:
                    assert msg.content in masked
                    assert msg.content not in chat.decode(ids_trained)
        # Sampler and trainer agree on the policy that sampled (the sync was real).
        assert metrics["sampler_logprob_abs_diff"] < 1e-3

        # After one more step and sync, the same seeded request gets different logprobs.
        prompt = trajs[0].turns[0].prompt_token_ids
        probe = Sampling(max_tokens=8, seed=123)
        before = await engine.sampler.generate(prompt, probe, adapter=loop.policy.adapter)
        assert loop.policy.adapter == "policy-v1"
        await loop.train_step()
        assert loop.policy.adapter == "policy-v2"
        assert set(engine.sampler.adapters) == {"policy-v2"}  # the stale version is unloaded
        after = await engine.sampler.generate(prompt, probe, adapter=loop.policy.adapter)
        assert after.logprobs[0] != pytest.approx(before.logprobs[0], abs=1e-6)
        # Reloading the same files reproduces the same numbers.
        again = await engine.sampler.generate(prompt, probe, adapter=loop.policy.adapter)
        assert again.logprobs == after.logprobs
    finally:
        await engine.aclose()


async def test_wordle_plugin_episodes_after_expert_warmup(tmp_path, tiny_1m):
    pytest.importorskip("agentrft_wordle")
    from agentrft.plugins import get_plugins

    task = get_plugins().task("wordle")
    config = tiny_config(
        tmp_path,
        global_batch_size=2,
        group_size=4,
        sampling_max_tokens=40,
        learning_rate=2e-3,
        **{"limits.max_turns": 4},
    )
    engine = make_engine(SamplerSettings.of(config))
    try:
        limits = episode_limits(task, config)
        rows = [r["prompt"] for r in task.make_dataset("train", 16, 0)]
        trainer = make_trainer(
            TrainerSettings.of(config, device=engine.device),
            engine.model_path,
            max_completion_length=40 * 4,
        )
        run = RunDir.create(config, task.name)
        loop = GRPOLoop(
            task, LoopSettings.of(config), engine, trainer, run, train_prompts=rows, limits=limits,
            sampling=train_sampling(config),
        )  # fmt: skip
        await sft_warmup(
            task, trainer, engine.chat, rows, steps=30, batch_size=4, learning_rate=3e-3,
            limits=limits,
        )  # fmt: skip
        await loop.sync(0)
        metrics = await loop.train_step()
        trajs = list(read_trajectories(run.path / "trajectories.jsonl"))
        guesses = [c for t in trajs for turn in t.turns for c in (turn.assistant.tool_calls or [])]
        assert any(c.name == "guess_word" for c in guesses)  # the format was learned
        assert metrics["reward_mean"] > -1.5  # some episode played a guess
        for t in trajs:
            for seq in trajectory_sequences(t, 0.0):
                trained = [i for i, m in zip(seq.token_ids, seq.mask, strict=True) if m]
                assert trained == [i for turn in t.turns for i in turn.completion_token_ids]
                text = engine.chat.decode(trained)
                assert "Current Knowledge" not in text  # tool replies are never trained
        assert metrics["sampler_logprob_abs_diff"] < 1e-3
        # The policy never saw the hidden answer before the game ended.
        for t in trajs:
            answer = task.parse(t.prompt).answer
            first = engine.chat.decode(t.turns[0].prompt_token_ids).lower()
            assert answer not in first.split()
    finally:
        await engine.aclose()
