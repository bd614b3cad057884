"""Interrupt a run after step k, resume it, and end exactly where an uninterrupted run ends."""

from __future__ import annotations

import json

import pytest

from agentrft.backends.local.backend import train_async

from .conftest import CountA, tiny_config

# Wall-clock figures (seconds, rates, the trainer's share of the measured matmul peak).
TIMING = ("_s", "/s", "tokens_per_s", "rollouts_per_s", "peak_frac")


def _metrics(run_dir) -> list[dict]:
    rows = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [{k: v for k, v in r.items() if not k.endswith(TIMING)} for r in rows]


def _adapter(run_dir):
    from safetensors.torch import load_file

    return load_file(str(run_dir / "final_adapter" / "adapter_model.safetensors"))


async def test_resume_continues_exactly(tmp_path):
    import torch

    common = dict(
        global_batch_size=2, group_size=4, max_steps=4, sampling_max_tokens=16,
        learning_rate=5e-3, **{"local.tiny_model": "156k", "local.checkpoint_every": 2},
    )  # fmt: skip
    straight = await train_async(
        CountA(), tiny_config(tmp_path, **common, **{"local.run_name": "a"})
    )

    def interrupt(step: int, metrics: dict) -> None:
        if step == 3:  # after step 3, whose checkpoint is not due: resume replays it
            raise KeyboardInterrupt

    config = tiny_config(tmp_path, **common, **{"local.run_name": "b"})
    with pytest.raises(KeyboardInterrupt):
        await train_async(CountA(), config, on_step=interrupt)
    run_b = tmp_path / "runs" / "b"
    assert json.loads((run_b / "run.json").read_text())["status"] == "interrupted"
    assert len(_metrics(run_b)) == 3
    resumed = await train_async(CountA(), config, resume=str(run_b))

    assert resumed.steps == straight.steps == 4
    assert _metrics(run_b) == _metrics(straight.run_dir)
    a, b = _adapter(straight.run_dir), _adapter(run_b)
    assert a.keys() == b.keys()
    for key in a:
        assert torch.equal(a[key], b[key]), key
    # The replayed step's trajectories were not duplicated.
    lines = (run_b / "trajectories.jsonl").read_text().splitlines()
    assert len(lines) == 4 * 2 * 4


async def test_resume_needs_a_run_directory(tmp_path):
    with pytest.raises(FileNotFoundError, match="is not a run directory"):
        await train_async(CountA(), tiny_config(tmp_path), resume=str(tmp_path))


def test_runs_started_in_the_same_second_get_their_own_directories(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    from agentrft.backends.local.run.run_dir import RunDir

    config = tiny_config(tmp_path, **{"local.run_name": "same"})
    (tmp_path / "runs" / "same-3").mkdir(parents=True)
    (tmp_path / "runs" / "same-3" / "notes.txt").write_text("not a run")
    with ThreadPoolExecutor(8) as pool:
        runs = list(pool.map(lambda _: RunDir.create(config, "t"), range(8)))
    paths = {r.path.name for r in runs}
    assert len(paths) == 8 and "same" in paths and "same-3" not in paths
    assert all((r.path / "config.yaml").is_file() for r in runs)
