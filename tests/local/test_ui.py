"""`agentrft ui RUN_DIR`: MLflow's server for a run's own store, on loopback, serving the
run's episode traces (read back through MLflow's client, as the UI reads them).

The server comes with the `ui` extra (the README's setup installs it); where it is
missing the serving test skips and says so, unless AGENTRFT_REQUIRE_MLFLOW_UI=1 (CI).
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentrft.backends.local import plugin as local_plugin
from agentrft.backends.local.run.run_dir import RunDir, Tracker
from agentrft.cli.app import create_app
from agentrft.evaluation import evaluate
from agentrft.plugins import load_plugins, use_plugins
from agentrft.testing import free_port

from .conftest import FruitGuess, tiny_config

HAS_SERVER = all(importlib.util.find_spec(m) for m in ("flask", "mlflow.server"))
needs_server = pytest.mark.skipif(
    not HAS_SERVER and os.environ.get("AGENTRFT_REQUIRE_MLFLOW_UI") != "1",
    reason="MLflow's server is not installed (pip install 'agentrft[ui]')",
)


def traced_run(tmp_path: Path, *, tracking: bool = True) -> tuple[Path, list[str]]:
    """A run directory whose store holds the fruit expert's 4 evaluation episodes as traces."""
    task = FruitGuess()
    config = tiny_config(tmp_path, **{"local.tracking": "mlflow" if tracking else "none"})
    run = RunDir.create(config, task.name)
    if not tracking:
        run.update_info(task=task.name, status="finished")
        return run.path, []
    _, episodes = asyncio.run(evaluate(task, ["apple", "banana", "cherry", "grape"],
                                       task.expert()))  # fmt: skip
    tracker = Tracker(run, enabled=True, tracking_uri=None, experiment="agentrft",
                      run_name=run.path.name, trace_evals=True)  # fmt: skip
    assert tracker.log_eval_traces(episodes, "after") == 4
    run.update_info(task=task.name, status="finished", mlflow_run_id=tracker.run_id,
                    mlflow_tracking_uri=tracker.uri)  # fmt: skip
    tracker.close()
    return run.path, [t.id for t in episodes]


@needs_server
def test_ui_serves_the_runs_traces_on_loopback(tmp_path: Path) -> None:
    run, episodes = traced_run(tmp_path)
    port = free_port()
    agentrft = Path(sys.executable).with_name("agentrft")
    proc = subprocess.Popen(
        [str(agentrft), "ui", str(run), "--port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        info = json.loads((run / "run.json").read_text())
        assert f"http://127.0.0.1:{port}/#/experiments/" in first
        assert first.split()[4].endswith(f"/runs/{info['mlflow_run_id']}")
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            assert proc.poll() is None, f"mlflow server exited: {proc.stdout.read()[-2000:]}"
            assert time.monotonic() < deadline, "mlflow server did not answer in 120 s"
            time.sleep(0.5)

        from mlflow.tracking import MlflowClient

        client = MlflowClient(f"http://127.0.0.1:{port}")  # through the server, as the UI
        experiment = client.get_run(info["mlflow_run_id"]).info.experiment_id
        traces = client.search_traces(locations=[experiment])
        assert sorted(t.info.tags["agentrft.episode"] for t in traces) == sorted(episodes)
        # The search's order follows the traces' times, which vary with the machine's load;
        # one row (banana) is refused before any turn, so pick a played one by its outcome.
        won = next(t for t in traces if t.info.tags["agentrft.outcome"] == "won")
        trace = client.get_trace(won.info.trace_id)
        names = [s.name for s in trace.data.spans]
        assert names[0] == "episode fruit_guess" and "policy turn 1" in names and "guess" in names
        assert [a.name for a in trace.info.assessments] == ["reward"]
        refused = next(t for t in traces if t.info.tags["agentrft.failures"] == "bad_input")
        assert [s.name for s in client.get_trace(refused.info.trace_id).data.spans] == [
            "episode fruit_guess"
        ]
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    with pytest.raises(OSError):  # nothing listens there any more
        urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2)


def test_ui_refuses_a_run_without_mlflow_and_a_folder_without_runs(tmp_path: Path) -> None:
    run, _ = traced_run(tmp_path, tracking=False)
    with use_plugins(load_plugins(extra=[local_plugin], entry_points=False)):
        app = create_app()
        untracked = CliRunner().invoke(app, ["ui", str(run)])
        assert untracked.exit_code == 1 and "trained without MLflow" in untracked.output
        none = CliRunner().invoke(app, ["ui", "--runs", str(tmp_path / "empty")])
        assert none.exit_code == 1 and "no run directory under" in none.output
        not_run = CliRunner().invoke(app, ["ui", str(tmp_path)])
        assert not_run.exit_code == 1 and "not a run directory" in not_run.output
