"""A local run's MLflow tracking sends nothing anywhere: MLflow's usage telemetry (a thread
that fetches config.mlflow-telemetry.io at import) stays off unless the user turns it on."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("mlflow")

from agentrft.backends.local.run.run_dir import TELEMETRY_ENV, RunDir, Tracker, import_mlflow

# MLflow also turns telemetry off by itself under pytest and in CI (mlflow/telemetry/utils.py
# `_is_ci_env_or_testing`), which would hide a regression: the check runs in a child
# process without those variables.
_MLFLOW_SELF_DISABLE = {
    "PYTEST_CURRENT_TEST", "GITHUB_ACTIONS", "CI", "CIRCLECI", "GITLAB_CI", "JENKINS_URL",
    "TRAVIS", "TF_BUILD", "BITBUCKET_BUILD_NUMBER", "CODEBUILD_BUILD_ARN", "BUILDKITE",
    "TEAMCITY_VERSION", "CLOUD_RUN_EXECUTION", "RUNBOT_HOST_URL", "RUNBOT_BUILD_NAME",
    "RUNBOT_WORKER_ID", "DO_NOT_TRACK", TELEMETRY_ENV,
}  # fmt: skip

START_TRACKER = textwrap.dedent(
    """
    import os, sys
    from agentrft.backends.local.run.run_dir import RunDir, Tracker

    assert "mlflow" not in sys.modules
    tracker = Tracker(RunDir(sys.argv[1]), enabled=True, tracking_uri=None,
                      experiment="e", run_name="r")
    tracker.log_metrics({"x": 1.0}, 1)
    tracker.close()
    print(os.environ.get("MLFLOW_DISABLE_TELEMETRY"))
    """
)


def test_tracker_starts_mlflow_with_telemetry_off(tmp_path: Path) -> None:
    # A telemetry client, when one is constructed, first writes an installation id to
    # $XDG_CONFIG_HOME/mlflow/telemetry.json (mlflow/telemetry/installation_id.py): proof
    # of construction that does not depend on whether its network calls get through.
    env = {k: v for k, v in os.environ.items() if k not in _MLFLOW_SELF_DISABLE}
    env["XDG_CONFIG_HOME"] = str(tmp_path / "xdg")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", START_TRACKER, str(run_dir)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["true"]
    assert (run_dir / "mlflow.db").is_file()  # the tracker really ran
    assert not (tmp_path / "xdg" / "mlflow" / "telemetry.json").exists()


def test_a_user_setting_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TELEMETRY_ENV, "false")  # the user asked for telemetry
    import_mlflow()
    assert os.environ[TELEMETRY_ENV] == "false"
    monkeypatch.delenv(TELEMETRY_ENV)
    import_mlflow()
    assert os.environ[TELEMETRY_ENV] == "true"


def test_disabled_tracker_imports_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TELEMETRY_ENV, raising=False)
    tracker = Tracker(
        RunDir(tmp_path), enabled=False, tracking_uri=None, experiment="e", run_name="r"
    )
    tracker.log_metrics({"x": 1.0}, 1)
    assert TELEMETRY_ENV not in os.environ and not list(tmp_path.iterdir())
