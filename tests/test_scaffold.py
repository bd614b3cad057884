"""`agentrft new-task` end to end, as a user runs it: scaffold, install, test, discover.

Runs the real console script in subprocesses and installs the generated plugin into the
test environment for the duration of the test (uninstalled afterwards).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

DIST = "agentrft-my-flow"


def agentrft_cmd() -> list[str]:
    script = Path(sys.executable).parent / "agentrft"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "from agentrft.cli import main; main()"]


def run(cmd: list[str], cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def pip(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run([sys.executable, "-m", "pip", "--disable-pip-version-check", *args], cwd)


@pytest.fixture
def scaffolded(tmp_path: Path):
    pip("uninstall", "-y", DIST, cwd=tmp_path)  # left over by an interrupted run
    made = run([*agentrft_cmd(), "new-task", "my_flow", "--dir", str(tmp_path)], tmp_path)
    assert made.returncode == 0, made.stderr
    target = tmp_path / "my_flow"
    try:
        yield target, made.stdout
    finally:
        pip("uninstall", "-y", DIST, cwd=tmp_path)


def test_new_task_installs_passes_its_tests_and_is_discovered(scaffolded):
    target, stdout = scaffolded
    assert "created" in stdout and "pip install -e" in stdout
    for rel in (
        "pyproject.toml",
        "README.md",
        ".gitignore",
        "src/agentrft_my_flow/__init__.py",
        "src/agentrft_my_flow/plugin.py",
        "src/agentrft_my_flow/task.py",
        "tests/test_my_flow.py",
    ):
        assert (target / rel).is_file(), rel
    assert 'my_flow = "agentrft_my_flow.plugin"' in (target / "pyproject.toml").read_text()

    installed = pip(
        "install", "--no-deps", "--no-build-isolation", "-e", str(target), cwd=target.parent
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr

    tests = run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], target)
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert "6 passed" in tests.stdout

    listed = run([*agentrft_cmd(), "tasks"], target)
    assert listed.returncode == 0, listed.stderr
    assert "my_flow" in listed.stdout

    check = run([*agentrft_cmd(), "reward", "check", "--task", "my_flow"], target)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "ok: reward order holds" in check.stdout

    # Now installed, the name is taken: a second scaffold is refused and writes nothing.
    other = target.parent / "elsewhere"
    again = run([*agentrft_cmd(), "new-task", "my_flow", "--dir", str(other)], target.parent)
    assert again.returncode == 1
    assert "already installed" in again.stderr
    assert not other.exists()
