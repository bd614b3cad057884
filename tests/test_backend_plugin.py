"""A third-party backend, as docs/write-a-backend.md describes one: its own distribution
(tests/fixtures/toy_backend), found through its entry point, with its own config section,
CLI flags, typed options and results, driven through the real console script.

The distribution is built and pip-installed into a private `--target` directory that the
subprocesses put first on PYTHONPATH (as tests/test_scaffold.py does): the shared virtual
environment is never changed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

TOY = Path(__file__).parent / "fixtures" / "toy_backend"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("toy_site")
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "install", "-q"]
    built = subprocess.run(
        [*pip, "--no-deps", "--no-build-isolation", "--target", str(target), str(TOY)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    assert (target / "agentrft_toy_backend-0.1.0.dist-info" / "entry_points.txt").is_file()
    return target


def agentrft(site: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH")]))
    cmd = [sys.executable, "-c", "from agentrft.cli import main; main()", *args]
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_the_backend_is_discovered_with_its_flags(site: Path, tmp_path: Path) -> None:
    listed = agentrft(site, tmp_path, "tasks")
    assert listed.returncode == 0, listed.stderr
    assert "backends:" in listed.stdout and "toy" in listed.stdout.split("backends:")[1]
    helped = agentrft(site, tmp_path, "train", "--help")
    assert helped.returncode == 0, helped.stderr
    assert "toy backend" in helped.stdout and "--session-name" in helped.stdout


def test_config_show_has_its_section_and_refuses_typos(site: Path, tmp_path: Path) -> None:
    shown = agentrft(site, tmp_path, "config", "show", "--format", "json", "--set", "toy.rows=2")
    assert shown.returncode == 0, shown.stderr
    data = json.loads(shown.stdout)
    assert data["toy"] == {"workdir": "toy-sessions", "session_name": None, "rows": 2}
    assert {"local", "sagemaker"} <= set(data)  # the built-in backends' sections too
    typo = agentrft(site, tmp_path, "config", "show", "--set", "toy.wrokdir=x")
    assert typo.returncode == 1
    assert "unknown key 'toy.wrokdir'; did you mean 'toy.workdir'?" in typo.stderr


def test_train_with_its_section_flags_and_options(site: Path, tmp_path: Path) -> None:
    args = ["train", "--backend", "toy", "--task", "find_number", "--session-name", "s1",
            "--note", "first try", "--max-steps", "3", "--workdir", str(tmp_path / "sessions")]  # fmt: skip
    dry = agentrft(site, tmp_path, *args, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "submitted: False" in dry.stdout and not (tmp_path / "sessions").exists()

    done = agentrft(site, tmp_path, *args)
    assert done.returncode == 0, done.stderr
    session = tmp_path / "sessions" / "s1.json"
    assert f"session: {session}" in done.stdout and "steps: 3" in done.stdout
    assert json.loads(session.read_text()) == {
        "task": "find_number", "max_steps": 3, "learning_rate": 4e-05, "note": "first try",
        "rows": "made by the task",
    }  # fmt: skip

    refused = agentrft(site, tmp_path, *args[:5], "--set", "loss_fn=cispo")
    assert refused.returncode == 1
    assert "loss_fn 'cispo': the toy service trains ppo only" in refused.stderr
    # Its flags are its own: with another backend they are refused by name.
    other = agentrft(site, tmp_path, "train", "--backend", "local", "--task", "find_number",
                     "--session-name", "x", "--dry-run")  # fmt: skip
    assert other.returncode == 1
    assert "--session-name is an option of the toy backend, not of 'local'" in other.stderr


def test_eval_writes_its_report_and_trajectories(site: Path, tmp_path: Path) -> None:
    report, trajs = tmp_path / "report.json", tmp_path / "trajs.jsonl"
    result = agentrft(site, tmp_path, "eval", "--backend", "toy", "--task", "find_number",
                      "--set", "toy.rows=3", "--report", str(report),
                      "--trajectories", str(trajs))  # fmt: skip
    assert result.returncode == 0, result.stderr
    data = json.loads(report.read_text())
    assert data["backend"] == "toy" and data["task"] == "find_number"
    (only,) = data["reports"]
    assert only["policy"] == "toy-expert" and only["episodes"] == 3 and only["solve_rate"] == 1.0
    assert len(trajs.read_text().splitlines()) == 3
    replayed = agentrft(site, tmp_path, "replay", str(trajs), "--summary")
    assert replayed.returncode == 0, replayed.stderr
