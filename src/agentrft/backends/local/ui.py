"""`agentrft ui [RUN_DIR]`: MLflow's UI for a local run's store, on loopback.

A local run keeps its own MLflow store (`RUN_DIR/mlflow.db`, or the tracking URI it was
given): its params, metrics per step and episode traces (`run/traces.py`). This starts
MLflow's server on 127.0.0.1 for that store and prints the run's address; Ctrl-C stops it.
MLflow's server and UI come with the `ui` extra (`pip install 'agentrft[ui]'`; the README's
setup installs it): the `local` extra's mlflow-skinny logs but serves nothing.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

__all__ = ["register", "server_command", "ui"]


class UiError(ValueError):
    """What keeps the UI from starting (the message names the fix)."""


def find_run(run_dir: Path | None, runs: Path) -> Path:
    """`run_dir`, or the newest run under `runs` (a folder of run directories)."""
    if run_dir is not None:
        if not (run_dir / "run.json").is_file():
            raise UiError(f"{run_dir}: not a run directory (no run.json); give one under runs/")
        return run_dir
    found = sorted((p for p in runs.glob("*/run.json")), key=lambda p: p.stat().st_mtime)
    if not found:
        raise UiError(f"no run directory under {runs}/; give one: agentrft ui RUN_DIR")
    return found[-1].parent


def server_command(run: Path, port: int) -> tuple[list[str], str]:
    """The `mlflow server` command for `run`'s store on 127.0.0.1:`port`, and the run's URL."""
    info = json.loads((run / "run.json").read_text())
    uri = info.get("mlflow_tracking_uri")
    if not uri:
        raise UiError(
            f"{run} was trained without MLflow (local.tracking=none): its metrics are in "
            f"metrics.jsonl and its page is agentrft report {run}"
        )
    if (
        importlib.util.find_spec("mlflow.server") is None
        or importlib.util.find_spec("flask") is None
    ):
        raise UiError(
            "MLflow's server is not installed (the local extra has mlflow-skinny, which logs "
            "but serves nothing): pip install 'agentrft[ui]', or bash scripts/setup.sh"
        )
    cmd = [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", uri,
           "--host", "127.0.0.1", "--port", str(port), "--workers", "1"]  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    run_id = info.get("mlflow_run_id")
    if run_id:
        from mlflow.tracking import MlflowClient

        experiment = MlflowClient(uri).get_run(run_id).info.experiment_id
        url = f"{url}/#/experiments/{experiment}/runs/{run_id}"
    return cmd, url


def ui(
    run_dir: Annotated[
        Path | None,
        typer.Argument(help="A run directory (default: the newest under --runs)."),
    ] = None,
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port on 127.0.0.1.")] = 5000,
    runs: Annotated[Path, typer.Option(help="Where run directories are (local.run_dir).")] = Path(
        "runs"
    ),
) -> None:
    """Serve MLflow's UI for a local run's store (params, metrics, episode traces) on
    127.0.0.1 and print the run's address; Ctrl-C stops it."""
    from agentrft.backends.local.run.run_dir import TELEMETRY_ENV
    from agentrft.cli.errors import CliError

    try:
        run = find_run(run_dir, runs)
        cmd, url = server_command(run, port)
    except UiError as exc:
        raise CliError(str(exc)) from None
    typer.echo(f"MLflow UI for {run}: {url}  (traces: the experiment's Traces tab; Ctrl-C stops)")
    # The server's usage telemetry off, as for the runs, unless the user chose otherwise.
    env = {TELEMETRY_ENV: "true", **os.environ}
    try:
        code = subprocess.call(cmd, env=env)
    except KeyboardInterrupt:
        code = 0
    if code not in (0, -2, 130):
        raise CliError(f"mlflow server exited with {code} (its output is above)")


def register(app: Any) -> None:
    from agentrft.cli.errors import handle_errors

    app.command("ui")(handle_errors(ui))
