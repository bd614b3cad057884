"""`max_steps_off_policy: k`: batches played ahead of the trainer, at most k versions old,
overlapping the optimizer step, resumable; k = 0 stays the synchronous loop."""

from __future__ import annotations

import json
import threading
import time

import pytest

from agentrft.backends.local.algo.trainer import LoRATrainer
from agentrft.backends.local.backend import train_async
from agentrft.backends.local.inference.hf_sampler import HFSampler
from agentrft.trajectory import read_trajectories

from .conftest import CountA, tiny_config

COMMON = dict(
    global_batch_size=2, group_size=4, max_steps=5, sampling_max_tokens=16,
    learning_rate=5e-3, **{"local.tiny_model": "156k"},
)  # fmt: skip


@pytest.fixture
def slow_trainer(monkeypatch):
    """The trainer's step takes 0.4 s longer, and says when it ran; the sampler says when
    each of its batches ran and how many adapters it held."""
    spans: dict[str, list] = {"train": [], "generate": [], "adapters": []}
    step = LoRATrainer.step

    def slow_step(self, sequences, **kw):
        t0 = time.perf_counter()
        time.sleep(0.4)
        out = step(self, sequences, **kw)
        spans["train"].append((t0, time.perf_counter(), kw.get("off_policy", False)))
        return out

    generate = HFSampler._generate_batch
    lock = threading.Lock()

    def timed_generate(self, reqs, adapter):
        t0 = time.perf_counter()
        out = generate(self, reqs, adapter)
        with lock:
            spans["generate"].append((t0, time.perf_counter(), adapter))
            spans["adapters"].append(len(self.adapters))
        return out

    monkeypatch.setattr(LoRATrainer, "step", slow_step)
    monkeypatch.setattr(HFSampler, "_generate_batch", timed_generate)
    return spans


def _overlapping(spans) -> int:
    """Sampler batches that ran while an optimizer step ran."""
    return sum(
        1 for g0, g1, _ in spans["generate"] for t0, t1, _ in spans["train"] if g0 < t1 and g1 > t0
    )


@pytest.mark.parametrize("k", [1, 2])
async def test_staleness_never_exceeds_k_and_rollouts_overlap_training(tmp_path, slow_trainer, k):
    config = tiny_config(tmp_path, max_steps_off_policy=k, **COMMON)
    result = await train_async(CountA(), config)
    assert result.steps == 5

    trajs = list(read_trajectories(result.run_dir / "trajectories.jsonl"))
    assert len(trajs) == 5 * 2 * 4  # batches launched past the last step were dropped
    for t in trajs:
        step, version = t.metadata["step"], t.metadata["policy_version"]
        assert 0 <= step - 1 - version <= k, (step, version)
        assert version == max(0, step - 1 - k)  # the schedule, whatever the timing
    metrics = [json.loads(x) for x in (result.run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [m["off_policy/staleness_max"] for m in metrics] == [min(s - 1, k) for s in range(1, 6)]
    assert all("ratio_mean" in m for m in metrics)
    # The sampler ran while the trainer did; all optimizer steps took the off-policy ratio.
    assert _overlapping(slow_trainer) > 0
    assert all(off for *_, off in slow_trainer["train"])
    # The current and next adapter, and one per version a queued batch still plays from.
    assert max(slow_trainer["adapters"]) <= k + 2
    left = sorted(p.name for p in (result.run_dir / "adapters").iterdir())
    assert left == ["v000005"]  # every older version was unloaded and deleted


async def test_k_zero_plays_then_trains(tmp_path, slow_trainer):
    """The negative control: synchronous, so no sampler batch runs during a step."""
    config = tiny_config(tmp_path, **COMMON)
    result = await train_async(CountA(), config)
    assert result.steps == 5
    assert _overlapping(slow_trainer) == 0
    assert not any(off for *_, off in slow_trainer["train"])
    trajs = list(read_trajectories(result.run_dir / "trajectories.jsonl"))
    assert all(t.metadata["policy_version"] == t.metadata["step"] - 1 for t in trajs)
    metrics = (result.run_dir / "metrics.jsonl").read_text()
    assert "off_policy/" not in metrics


async def test_a_resumed_async_run_replays_the_queued_batches(tmp_path):
    common = dict(COMMON, max_steps_off_policy=2, **{"local.checkpoint_every": 2})
    straight = await train_async(
        CountA(), tiny_config(tmp_path, **common, **{"local.run_name": "a"})
    )

    def interrupt(step: int, metrics: dict) -> None:
        if step == 3:  # batches 4 and 5 are queued; the step-2 checkpoint is the last
            raise KeyboardInterrupt

    config = tiny_config(tmp_path, **common, **{"local.run_name": "b"})
    with pytest.raises(KeyboardInterrupt):
        await train_async(CountA(), config, on_step=interrupt)
    run_b = tmp_path / "runs" / "b"
    kept = sorted(p.name for p in (run_b / "checkpoints").glob("*/adapters/*"))
    assert kept, "the step-2 checkpoint keeps the queued batches' adapters"
    resumed = await train_async(CountA(), config, resume=str(run_b))
    assert resumed.steps == straight.steps == 5

    def schedule(run_dir):
        return [
            (t.metadata["step"], t.metadata["row"], t.metadata["policy_version"])
            for t in read_trajectories(run_dir / "trajectories.jsonl")
        ]

    # The same rows from the same versions at every step, and no step twice.
    assert sorted(schedule(run_b)) == sorted(schedule(straight.run_dir))


def test_the_behaviour_policy_is_the_samplers_on_sampled_tokens():
    import torch

    from agentrft.backends.local.algo.sequences import TrainSequence
    from agentrft.backends.local.algo.trainer import _behaviour

    with_lps = TrainSequence([1, 2, 3, 4], [0, 1, 1, 0], 1.0, [0.0, -0.5, -0.25, 0.0])
    without = TrainSequence([1, 2, 3], [0, 1, 1], 1.0)
    logp = torch.tensor([[-1.0, -2.0, -3.0], [-4.0, -5.0, 0.0]], requires_grad=True)
    old = _behaviour([with_lps, without], logp)
    assert not old.requires_grad
    # Position j scores token j + 1: the sampler's where that token was sampled.
    assert old.tolist() == [[-0.5, -0.25, -3.0], [-4.0, -5.0, 0.0]]


def test_an_older_behaviour_policy_is_clipped_as_the_loss_clips_any_ratio():
    import torch

    from agentrft.backends.local.algo.loss import LossInputs, LossSettings, StepScale, policy_loss

    logp = torch.zeros(2, 3, requires_grad=True)
    mask = torch.ones(2, 3)
    scale = StepScale(tokens=6, sequences=2, max_completion_length=3)
    adv = torch.tensor([1.0, -1.0])
    on = policy_loss(LossInputs(logp, logp.detach(), adv, mask), LossSettings(), scale)
    # The sampler gave these tokens e^-0.5 of the current policy's probability: ratio 1.65.
    off = policy_loss(LossInputs(logp, logp.detach() - 0.5, adv, mask), LossSettings(), scale)
    assert on.metrics["ratio_mean"] == pytest.approx(1.0)
    assert off.metrics["ratio_mean"] == pytest.approx(float(torch.exp(torch.tensor(0.5))))
    assert off.metrics["clip_high_frac"] == pytest.approx(0.5)  # the positive advantages
    off.loss.backward()
    # Clipped where the advantage is positive (no gradient), weighted where it is negative.
    assert logp.grad[0].abs().sum() == 0 and logp.grad[1].abs().sum() > 0


async def test_the_queue_launches_within_the_bound_and_unloads_what_no_batch_needs():
    import asyncio

    from agentrft.backends.local.run.rollout_queue import RolloutQueue, StalenessError

    dropped: list[int] = []
    played: list[tuple[int, int]] = []
    gate = asyncio.Event()

    async def drop(version: int) -> None:
        dropped.append(version)

    async def play(step: int, rows: list[int], version: int, part: int) -> list:
        played.append((step, version))
        await gate.wait()
        return []

    cursor = iter(range(100))
    queue = RolloutQueue(2, drop)
    queue.fill(0, 10, lambda: ([0], next(cursor)), play)  # steps 1..3, all from version 0
    await asyncio.sleep(0)
    assert played == [(1, 0), (2, 0), (3, 0)] and queue.pins == {0: 3}
    gate.set()
    taken = await queue.next(1)
    assert (taken.versions, taken.cursor) == ([], 0)
    await queue.retire(0)  # version 1 is out; batches 2 and 3 still play from 0
    assert dropped == []
    queue.fill(1, 10, lambda: ([0], next(cursor)), play)  # step 4, from version 1
    await asyncio.sleep(0)
    assert played[-1] == (4, 1)
    await queue.next(2)
    await queue.next(3)
    assert dropped == [0]  # the last batch from version 0 finished
    with pytest.raises(StalenessError, match="no batch was launched for step 6"):
        await queue.next(6)
    gate.clear()
    queue.fill(3, 10, lambda: ([0], next(cursor)), play)  # steps 5 and 6
    await queue.retire(1)
    await queue.cancel()  # the run ended with batches 4..6 unplayed
    assert not queue.pending and not queue.pins
    assert sorted(dropped) == [0, 1]


def test_the_live_view_shows_the_batches_age_only_when_it_has_one():
    from rich.console import Console

    from agentrft.backends.local.run.view import LiveView

    ahead = {"reward_mean": 0.5, "off_policy/staleness_max": 1.0, "rollout_wait_s": 0.25}
    for metrics, shown in (({"reward_mean": 0.5}, False), (ahead, True)):
        console = Console(width=200, record=True)
        view = LiveView(console, 3, title="GRPO")
        view.step(1, metrics)
        headers = [str(c.header) for c in view._table().columns]
        assert ("stale" in headers) is shown and ("wait s" in headers) is shown
        assert ("stale 1 · wait s 0.25" in console.export_text()) is shown


def test_a_batchs_policy_warns_once_for_the_run(tiny_156k):
    from agentrft.backends.local.inference.chat_tokens import ChatTokenizer, TokenPolicy
    from agentrft.backends.local.models.model_loading import load_tokenizer

    chat = ChatTokenizer(load_tokenizer(tiny_156k))
    run = TokenPolicy(object(), chat, adapter="policy-v3", seed=1)  # type: ignore[arg-type]
    batch = run.sibling(adapter="policy-v1", seed=7)
    assert (batch.adapter, batch.seed, batch.sampler) == ("policy-v1", 7, run.sampler)
    batch.warned_not_prefix_preserving = True
    assert run.warned_not_prefix_preserving
    assert run.sibling(adapter=None, seed=None).warned_not_prefix_preserving


class SlowRowZero(CountA):
    """CountA whose row `Write text 0` takes 1.5 s a reply: one slow group in every epoch."""

    def environment(self, instance: str):
        from agentrft import Environment

        class Slow(Environment):
            async def on_text_reply(self, text: str) -> None:
                if instance == "Write text 0":
                    import asyncio

                    await asyncio.sleep(1.5)
                self.done = True

        return Slow()


async def test_carried_over_groups_train_later_and_never_past_the_bound(tmp_path):
    config = tiny_config(
        tmp_path, max_steps_off_policy=1, **COMMON, **{"local.carry_over_groups": True}
    )
    result = await train_async(SlowRowZero(), config)
    assert result.steps == 5
    trajs = list(read_trajectories(result.run_dir / "trajectories.jsonl"))
    assert len(trajs) == 5 * 2 * 4  # each step trained global_batch_size whole groups
    for t in trajs:
        step, version = t.metadata["step"], t.metadata["policy_version"]
        assert 0 <= step - 1 - version <= 1, (step, version)
    by_group = {}
    for t in trajs:
        by_group.setdefault((t.metadata["step"], t.metadata["group"]), []).append(t)
    assert all(len(g) == 4 and len({t.metadata["row"] for t in g}) == 1 for g in by_group.values())
    # A group launched for one step and trained at a later one: carried over.
    assert any(t.metadata["launched_step"] < t.metadata["step"] for t in trajs)
    metrics = [json.loads(x) for x in (result.run_dir / "metrics.jsonl").read_text().splitlines()]
    assert all(m["off_policy/staleness_max"] <= 1 for m in metrics)
    assert "off_policy/dropped_groups" in metrics[-1]


async def test_a_resumed_carry_over_run_replays_the_queued_groups(tmp_path):
    common = dict(
        COMMON, max_steps_off_policy=1,
        **{"local.checkpoint_every": 2, "local.carry_over_groups": True},
    )  # fmt: skip

    def interrupt(step: int, metrics: dict) -> None:
        if step == 3:
            raise KeyboardInterrupt

    config = tiny_config(tmp_path, **common, **{"local.run_name": "b"})
    with pytest.raises(KeyboardInterrupt):
        await train_async(CountA(), config, on_step=interrupt)
    run_b = tmp_path / "runs" / "b"
    state = json.loads(next(run_b.glob("checkpoints/*2/state.json")).read_text())
    assert state["queued"], "the step-2 checkpoint lists the groups not trained yet"
    resumed = await train_async(CountA(), config, resume=str(run_b))
    assert resumed.steps == 5
    trajs = list(read_trajectories(run_b / "trajectories.jsonl"))
    assert len(trajs) == 5 * 2 * 4
    step3 = {
        (t.metadata["row"], t.metadata["policy_version"]) for t in trajs if t.metadata["step"] == 3
    }
    queued = {(row, version) for row, version in state["queued"]}
    assert step3 & queued, (step3, queued)  # the replayed groups trained first


async def test_carry_over_without_rollouts_ahead_is_refused_before_anything_is_written(tmp_path):
    config = tiny_config(tmp_path, **COMMON, **{"local.carry_over_groups": True})
    with pytest.raises(ValueError, match="max_steps_off_policy=1 or more"):
        await train_async(CountA(), config)
    assert not (tmp_path / "runs").exists()
