"""`--resume` after a kill that tore an append-only file, and without duplicate MLflow points.

A kill -9 during an append leaves a prefix of what was being written: whole lines, then at
most one unterminated line. Resume must cut that torn tail (a warning names the file and the
bytes dropped) and end exactly where an uninterrupted run ends; a damaged line before a
file's end is an error naming the file and line, and changes nothing. The steps replayed
after the checkpoint were already logged to MLflow once: they must not be logged again.
"""

from __future__ import annotations

import json
import logging
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from agentrft.backend import BackendError
from agentrft.backends.local.backend import train_async
from agentrft.backends.local.run.run_dir import RunDir
from agentrft.config import dump_config

from ..local.conftest import CountA, tiny_config

# Wall-clock figures (seconds, rates, the trainer's share of the measured matmul peak).
TIMING = ("_s", "/s", "tokens_per_s", "rollouts_per_s", "peak_frac")
COMMON = dict(
    global_batch_size=2, group_size=4, max_steps=4, sampling_max_tokens=16,
    learning_rate=5e-3, **{"local.tiny_model": "156k", "local.checkpoint_every": 2},
)  # fmt: skip
RUN_LOG = "agentrft.backends.local.run.run_dir"


def _metrics(run_dir: Path) -> list[dict]:
    rows = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [{k: v for k, v in r.items() if not k.endswith(TIMING)} for r in rows]


def _adapter(run_dir: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(run_dir / "final_adapter" / "adapter_model.safetensors"))


def _lines_of_step(path: Path, step: int) -> list[bytes]:
    out = []
    for line in path.read_bytes().splitlines(keepends=True):
        record = json.loads(line)
        if record.get("step", (record.get("metadata") or {}).get("step")) == step:
            out.append(line)
    return out


def _assert_same_run(run: Path, straight: Path) -> None:
    import torch

    assert _metrics(run) == _metrics(straight)
    a, b = _adapter(straight), _adapter(run)
    assert a.keys() == b.keys()
    for key in a:
        assert torch.equal(a[key], b[key]), key
    lines = (run / "trajectories.jsonl").read_bytes().splitlines(keepends=True)
    assert len(lines) == 4 * 2 * 4 and all(line.endswith(b"\n") for line in lines)
    steps = [json.loads(line)["metadata"]["step"] for line in lines]
    assert steps == sorted(steps) and set(steps) == {1, 2, 3, 4}


async def _interrupted_after_step_3(tmp_path: Path, **values: object) -> tuple[Path, object]:
    """Run b, stopped after step 3 (the last checkpoint is step 2, so resume replays 3)."""

    def interrupt(step: int, metrics: dict) -> None:
        if step == 3:
            raise KeyboardInterrupt

    config = tiny_config(tmp_path, **COMMON, **{"local.run_name": "b", **values})
    with pytest.raises(KeyboardInterrupt):
        await train_async(CountA(), config, on_step=interrupt)
    return tmp_path / "runs" / "b", config


@pytest.mark.parametrize("torn_file", ["trajectories.jsonl", "metrics.jsonl"])
async def test_torn_tail_is_cut_with_a_warning_and_resume_is_exact(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, torn_file: str
) -> None:
    straight = await train_async(
        CountA(), tiny_config(tmp_path, **COMMON, **{"local.run_name": "a"})
    )
    run_b, config = await _interrupted_after_step_3(tmp_path)
    # What a kill -9 part-way through step 4's append leaves: for trajectories, some of
    # the step's lines and a torn one; for metrics, all trajectories then a torn line.
    traj_4 = _lines_of_step(straight.run_dir / "trajectories.jsonl", 4)
    metrics_4 = _lines_of_step(straight.run_dir / "metrics.jsonl", 4)[0]
    with (run_b / "trajectories.jsonl").open("ab") as fh:
        if torn_file == "trajectories.jsonl":
            fh.write(b"".join(traj_4[:3]) + traj_4[3][: len(traj_4[3]) // 2])
        else:
            fh.write(b"".join(traj_4))
    torn = len(metrics_4 if torn_file == "metrics.jsonl" else traj_4[3]) // 2
    if torn_file == "metrics.jsonl":
        with (run_b / "metrics.jsonl").open("ab") as fh:
            fh.write(metrics_4[:torn])

    with caplog.at_level(logging.WARNING, logger=RUN_LOG):
        resumed = await train_async(CountA(), config, resume=str(run_b))

    warnings = [r.getMessage() for r in caplog.records if r.name == RUN_LOG]
    assert warnings == [
        f"{run_b / torn_file}: dropped a torn last line ({torn} bytes) left by an interrupted write"
    ]
    assert resumed.steps == 4
    _assert_same_run(run_b, straight.run_dir)


async def test_damaged_line_before_the_end_is_an_error_and_changes_nothing(
    tmp_path: Path,
) -> None:
    run_b, config = await _interrupted_after_step_3(tmp_path)
    path = run_b / "trajectories.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    lines[1] = lines[1][:100] + b"\n"  # torn, then appended to: not a tail any more
    path.write_bytes(b"".join(lines))
    before = {p.name: p.read_bytes() for p in (path, run_b / "metrics.jsonl")}

    with pytest.raises(BackendError, match=r"trajectories\.jsonl: line 2 is not a JSON record"):
        await train_async(CountA(), config, resume=str(run_b))

    assert {p.name: p.read_bytes() for p in (path, run_b / "metrics.jsonl")} == before
    assert not list(run_b.glob("*.partial"))


def test_torn_tail_cut_inside_a_multibyte_character(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    whole = json.dumps({"step": 1, "text": "héllo"}, ensure_ascii=False).encode() + b"\n"
    torn = json.dumps({"step": 2, "text": "é"}, ensure_ascii=False).encode()[:-3]
    assert torn.endswith(b"\xc3")  # half of the two-byte 'é'
    (tmp_path / "metrics.jsonl").write_bytes(whole + torn)

    run.truncate_after(5)

    assert (tmp_path / "metrics.jsonl").read_bytes() == whole


# A real kill -9 in the middle of step 4's trajectory append, MLflow tracking on.
KILLED_RUN = textwrap.dedent(
    """
    import asyncio, importlib.util, os, signal, sys

    from agentrft.backends.local.run import grpo
    from agentrft.backends.local.backend import train_async
    from agentrft.config_model import load_config
    from agentrft.trajectory import trajectory_line

    spec = importlib.util.spec_from_file_location("local_conftest", sys.argv[2])
    conftest = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conftest)
    original = grpo.append_trajectories

    def append_then_die(trajectories, path):
        trajectories = list(trajectories)
        if trajectories[0].metadata["step"] < 4:
            return original(trajectories, path)
        data = b"".join(trajectory_line(t).encode() for t in trajectories[:3])
        last = trajectory_line(trajectories[3]).encode()
        with open(path, "ab") as fh:
            fh.write(data + last[: len(last) // 2])
            fh.flush()
            os.kill(os.getpid(), signal.SIGKILL)

    grpo.append_trajectories = append_then_die
    asyncio.run(train_async(conftest.CountA(), load_config(sys.argv[1])))
    """
)


async def test_kill_9_mid_append_resumes_exactly_without_duplicate_mlflow_points(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from mlflow.tracking import MlflowClient

    straight = await train_async(
        CountA(), tiny_config(tmp_path, **COMMON, **{"local.run_name": "a"})
    )
    config = tiny_config(tmp_path, **COMMON, **{"local.run_name": "b", "local.tracking": "mlflow"})
    config_file = tmp_path / "b.yaml"
    config_file.write_text(dump_config(config))
    conftest = Path(__file__).parents[1] / "local" / "conftest.py"
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_RUN, str(config_file), str(conftest)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    run_b = tmp_path / "runs" / "b"
    raw = (run_b / "trajectories.jsonl").read_bytes()
    torn = len(raw) - raw.rfind(b"\n") - 1
    assert torn > 0  # the kill really left half a line
    info = json.loads((run_b / "run.json").read_text())
    assert info["status"] == "running"  # nothing ran after the kill
    client = MlflowClient(f"sqlite:///{run_b / 'mlflow.db'}")
    run_id = info["mlflow_run_id"]
    assert [m.step for m in client.get_metric_history(run_id, "reward_mean")] == [1, 2, 3]

    with caplog.at_level(logging.WARNING, logger=RUN_LOG):
        resumed = await train_async(CountA(), config, resume=str(run_b))

    assert f"trajectories.jsonl: dropped a torn last line ({torn} bytes)" in caplog.text
    assert resumed.steps == 4
    _assert_same_run(run_b, straight.run_dir)
    # Step 3 was logged before the kill and replayed after it: one point per step.
    jsonl = {
        r["step"]: r for r in map(json.loads, (run_b / "metrics.jsonl").read_text().splitlines())
    }
    for key in ("reward_mean", "solve_rate", "loss"):
        history = client.get_metric_history(run_id, key)
        assert sorted(m.step for m in history) == [1, 2, 3, 4], key
        assert {m.step: m.value for m in history} == {s: r[key] for s, r in jsonl.items()}
    assert client.get_run(run_id).info.status == "FINISHED"
