"""`local.sampler_process`: the transformers sampler in a child process samples exactly what
the in-process sampler samples, hot-loads adapters by directory, and when the child dies every
waiting request fails naming its exit code and the run stops with a checkpoint it resumes
from."""

from __future__ import annotations

import asyncio
import json
import os
import signal

import pytest

from agentrft import Sampling
from agentrft.backends.local.backend import train_async
from agentrft.backends.local.inference.hf_sampler import HFSampler
from agentrft.backends.local.inference.process_sampler import ProcessSampler
from agentrft.backends.local.inference.sampler import SamplerError
from agentrft.backends.local.run.side_failures import SamplerFailed

from .conftest import CountA, tiny_config

PROMPTS = [[5, 17, 42, 9], [5, 17, 42, 9, 100, 3], [77, 12]]


@pytest.fixture(scope="module")
def child(tiny_156k):
    sampler = ProcessSampler(tiny_156k, seed=3, threads=1)
    yield sampler
    asyncio.run(sampler.aclose())


async def _sample(sampler, adapter=None):
    outs = await asyncio.gather(*(
        sampler.generate(p, Sampling(temperature=1.0, max_tokens=12, seed=100 + i),
                         adapter=adapter)
        for i, p in enumerate(PROMPTS)
    ))  # fmt: skip
    return [(g.token_ids, g.logprobs, g.finish_reason) for g in outs]


async def test_samples_what_the_in_process_sampler_samples(child, tiny_156k):
    import torch

    torch.set_num_threads(1)
    here = HFSampler.from_pretrained(tiny_156k, seed=3)
    here.stop_ids = frozenset(child_stop_ids(tiny_156k))
    try:
        there, ours = await _sample(child), await _sample(here)
        # The same draws (per-request seeds); logprobs to float32 noise, since which
        # requests share a batch (and so the matmul shapes) depends on arrival timing.
        assert [(ids, why) for ids, _, why in there] == [(ids, why) for ids, _, why in ours]
        for (_, a, _), (_, b, _) in zip(there, ours, strict=True):
            assert a == pytest.approx(b, abs=1e-4)
    finally:
        await here.aclose()


def child_stop_ids(model_dir):
    from agentrft.backends.local.inference.chat_tokens import ChatTokenizer
    from agentrft.backends.local.models.model_loading import load_tokenizer

    return ChatTokenizer(load_tokenizer(model_dir)).end_of_turn_ids


async def test_adapters_load_by_directory_and_unknown_ones_are_named(child, tmp_path, tiny_156k):
    from agentrft.backends.local.algo.trainer import LoRATrainer

    base = await _sample(child)
    trainer = LoRATrainer(tiny_156k, lora_rank=4, lora_alpha=8)
    for p in trainer.model.parameters():
        if p.requires_grad:
            p.data.normal_(0, 0.5)  # an adapter that changes the samples
    trainer.save_adapter(tmp_path / "a")
    await child.load_adapter("a", str(tmp_path / "a"))
    assert await _sample(child, "a") != base
    await child.unload_adapter("a")
    with pytest.raises(SamplerError, match="adapter 'a' is not loaded"):
        await child.generate([1, 2], Sampling(max_tokens=2), adapter="a")
    with pytest.raises(SamplerError, match="not a PEFT adapter directory"):
        await child.load_adapter("b", str(tmp_path))


async def test_a_killed_child_fails_waiting_and_later_requests(tiny_156k):
    sampler = ProcessSampler(tiny_156k, threads=1)
    assert sampler.problem() is None
    waiting = asyncio.ensure_future(
        sampler.generate([1, 2, 3], Sampling(max_tokens=4000, temperature=1.0))
    )
    await asyncio.sleep(0.2)
    os.kill(sampler.process.pid, signal.SIGKILL)
    with pytest.raises(SamplerError, match=r"sampler process \(pid \d+\) exited with code -9"):
        await asyncio.wait_for(waiting, 30)
    with pytest.raises(SamplerError, match="exited with code -9"):
        await sampler.generate([1], Sampling(max_tokens=2))
    assert "exited with code -9" in (sampler.problem() or "")
    await sampler.aclose()


async def test_a_bad_model_directory_fails_the_start_with_the_reason(tmp_path):
    with pytest.raises(SamplerError, match="could not start"):
        ProcessSampler(tmp_path / "nothing", threads=1)


COMMON = dict(
    global_batch_size=2, group_size=4, max_steps=4, sampling_max_tokens=16, learning_rate=5e-3,
    **{"local.tiny_model": "156k", "local.checkpoint_every": 1, "local.sampler_process": True},
)  # fmt: skip


async def test_a_run_one_step_ahead_with_the_sampler_in_its_own_process(tmp_path):
    result = await train_async(CountA(), tiny_config(tmp_path, **COMMON, max_steps_off_policy=1))
    assert result.steps == 4
    metrics = [json.loads(x) for x in (result.run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [m["off_policy/staleness_max"] for m in metrics] == [0, 1, 1, 1]
    assert all(m["analysis/sync_stale"] == 0.0 for m in metrics)  # the child serves new weights


async def test_a_sampler_process_killed_mid_run_stops_it_and_it_resumes(tmp_path, monkeypatch):
    started: list[ProcessSampler] = []
    init = ProcessSampler.__init__

    def recording(self, *args, **kwargs):
        init(self, *args, **kwargs)
        started.append(self)

    monkeypatch.setattr(ProcessSampler, "__init__", recording)

    def kill_after_step_2(step: int, metrics: dict) -> None:
        if step == 2:
            os.kill(started[0].process.pid, signal.SIGKILL)
            started[0].process.join(10)

    config = tiny_config(tmp_path, **COMMON, **{"local.run_name": "k"})
    with pytest.raises(SamplerFailed) as info:
        await train_async(CountA(), config, on_step=kill_after_step_2)
    message = str(info.value)
    assert message.startswith("step 3: 8 of 8 episodes got no answer"), message
    assert f"the sampler process (pid {started[0].process.pid}) exited with code -9" in message
    assert "checkpoints/step_000002" in message
    resumed = await train_async(CountA(), config, resume=str(tmp_path / "runs" / "k"))
    assert resumed.steps == 4 and len(started) == 2
