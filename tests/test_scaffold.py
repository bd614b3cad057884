"""`agentrft new-task` end to end, as a user runs it: scaffold, install, test, discover.

Runs the real console script in subprocesses. The generated plugin is pip-installed (built
as a wheel through its own pyproject) into a private `--target` directory that the
subprocesses put first on PYTHONPATH: the shared virtual environment is never changed, so
concurrent test runs and a user's own `my_flow` are unaffected, and nothing needs undoing.
"""

from __future__ import annotations

import importlib.metadata as md
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def free_name() -> str:
    """`my_flow`, unless this environment already has a plugin by that name (a developer's
    own scaffold); then a name nobody uses."""
    taken = {ep.name for ep in md.entry_points(group="agentrft")}
    return "my_flow" if "my_flow" not in taken else "my_flow_ci"


def agentrft_cmd() -> list[str]:
    return [sys.executable, "-c", "from agentrft.cli import main; main()"]


def run(
    cmd: list[str], cwd: Path, site: Path | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    if site is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH")]))
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def test_new_task_installs_passes_its_tests_and_is_discovered(tmp_path: Path):
    name = free_name()
    made = run([*agentrft_cmd(), "new-task", name, "--dir", str(tmp_path)], tmp_path)
    assert made.returncode == 0, made.stderr
    target = tmp_path / name
    assert "created" in made.stdout and "pip install -e" in made.stdout
    for rel in (
        "pyproject.toml",
        "README.md",
        ".gitignore",
        f"src/agentrft_{name}/__init__.py",
        f"src/agentrft_{name}/plugin.py",
        f"src/agentrft_{name}/task.py",
        f"tests/test_{name}.py",
    ):
        assert (target / rel).is_file(), rel
    assert f'{name} = "agentrft_{name}.plugin"' in (target / "pyproject.toml").read_text()

    site = tmp_path / "site"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "install", "-q"]
    installed = run(
        [*pip, "--no-deps", "--no-build-isolation", "--target", str(site), str(target)], tmp_path
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert list(site.glob(f"agentrft_{name}-0.1.0.dist-info/entry_points.txt"))

    tests = run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], target, site)
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert "7 passed" in tests.stdout  # the async one too: asyncio_mode = "auto"

    # A task that hides nothing fails the leak test with the fix named, until it says so.
    task_py = target / f"src/agentrft_{name}/task.py"
    original = task_py.read_text()
    task_py.write_text(original.replace("return [fmt(instance.total_cents)]", "return []"))
    assert task_py.read_text() != original
    leak = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "hidden"]
    edited = tmp_path / "edited"  # the edited source first, the install's metadata after
    edited.mkdir()
    (edited / f"agentrft_{name}").symlink_to(target / f"src/agentrft_{name}")
    for dist in site.iterdir():
        if dist.name != f"agentrft_{name}":
            (edited / dist.name).symlink_to(dist)
    refused = run(leak, target, edited)
    assert refused.returncode == 1 and "set NOTHING_HIDDEN" in refused.stdout, refused.stdout
    test_py = target / f"tests/test_{name}.py"
    test_py.write_text(
        test_py.read_text().replace("NOTHING_HIDDEN = False", "NOTHING_HIDDEN = True")
    )
    allowed = run(leak, target, edited)
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    task_py.write_text(original)

    listed = run([*agentrft_cmd(), "tasks"], target, site)
    assert listed.returncode == 0, listed.stderr
    assert name in listed.stdout

    check = run([*agentrft_cmd(), "reward", "check", "--task", name], target, site)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "ok: reward order holds" in check.stdout

    # Now installed, the name is taken: a second scaffold is refused and writes nothing.
    other = target.parent / "elsewhere"
    again = run([*agentrft_cmd(), "new-task", name, "--dir", str(other)], tmp_path, site)
    assert again.returncode == 1
    assert "already installed" in again.stderr
    assert not other.exists()
