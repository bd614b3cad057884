"""agentrft as a user installs it: a wheel built from this checkout, installed (not editable)
into a fresh virtual environment, ships the top-level `templates/` as `agentrft.templates`
and scaffolds a task from there, not from the checkout."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[1]


def test_the_package_list_holds_every_package() -> None:
    """pyproject lists its packages (a find cannot also map templates/): none is missing."""
    from setuptools import find_packages

    listed = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert set(listed["packages"]) == {*find_packages(str(REPO / "src")), "agentrft.templates"}
    assert listed["package-dir"]["agentrft.templates"] == "templates"
    assert (REPO / "templates" / "new_task" / "pyproject.toml.tmpl").is_file()
    assert not (REPO / "src" / "agentrft" / "templates").exists()


@pytest.mark.slow
def test_a_wheel_installed_in_a_fresh_venv_scaffolds_a_task(tmp_path: Path) -> None:
    src = tmp_path / "checkout"
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "*.pyc")
    for part in ("src", "templates"):
        shutil.copytree(REPO / part, src / part, ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    built = subprocess.run(
        [*pip, "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(tmp_path / "dist"),
         str(src)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    (wheel,) = (tmp_path / "dist").glob("agentrft-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
    assert "agentrft/templates/new_task/src/__package__/task.py.tmpl" in names
    assert "agentrft/templates/new_task/dot-gitignore.tmpl" in names

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    installed = subprocess.run(
        [*pip, "--python", str(python), "install", "-q", "--no-deps", str(wheel)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stdout + installed.stderr
    # Its dependencies come from this environment's site-packages, after its own (a path
    # line: the editable install's .pth there is not processed, so the checkout stays out).
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()
    )  # fmt: skip
    (site / "zz_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")

    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    where = subprocess.run(
        [str(python), "-c", "import agentrft.scaffold as s; print(s.__file__); print(s.template_root())"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert where.returncode == 0, where.stderr
    module, root = where.stdout.split()
    assert module.startswith(str(site)) and root.startswith(str(site)), where.stdout
    made = subprocess.run(
        [str(venv / "bin" / "agentrft"), "new-task", "wheel_flow", "--dir", str(tmp_path / "out")],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert made.returncode == 0, made.stdout + made.stderr
    target = tmp_path / "out" / "wheel_flow"
    assert (target / "src" / "agentrft_wheel_flow" / "task.py").is_file()
    assert (target / ".gitignore").is_file()
    assert 'wheel_flow = "agentrft_wheel_flow.plugin"' in (target / "pyproject.toml").read_text()
