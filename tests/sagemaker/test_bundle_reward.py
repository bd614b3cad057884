"""A runtime bundle built with `--reward R` holds R's plugin and serves with it.

The bundle is built offline (`--build-only --no-deps`: agentrft and the plugins only) and then
imported by a fresh interpreter that sees the bundle first and the venv's site-packages only
for third-party dependencies: `-S` skips the `.pth` files that put this checkout's editable
plugins on the path, so a plugin module that is not in the bundle cannot be imported.
"""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
import textwrap
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from .test_deploy import cli as deploy_cli

pytest.importorskip("agentrft_expense_report")
pytest.importorskip("agentrft_reward_example")


def build(workdir: Path, *extra: str) -> Path:
    args = ["deploy", "--task", "expense_report", "--build-only", "--no-deps"]
    result = CliRunner().invoke(deploy_cli(), [*args, "--workdir", str(workdir), *extra])
    assert result.exit_code == 0, result.output
    zips = list(workdir.rglob("*.zip"))
    assert len(zips) == 1, zips
    return zips[0]


PROBE = textwrap.dedent(
    """
    import json, os, sys
    bundle, site = sys.argv[1], sys.argv[2]
    sys.path[:0] = [bundle]
    sys.path.append(site)
    os.environ["AGENTRFT_TASK"] = "expense_report"
    from agentrft.backends.sagemaker.runtime.main import REWARD_ENV, load_app
    reward = os.environ.get(REWARD_ENV) or None
    import agentrft
    from agentrft.plugins import get_plugins
    plugins = get_plugins()
    out = {"agentrft": agentrft.__file__, "rewards": sorted(plugins.rewards()), "reward": reward}
    if reward:
        named = plugins.reward(reward, "expense_report")
        out["scorer_module"] = getattr(named.fn, "__module__", "")
        import importlib
        out["scorer_file"] = importlib.import_module(out["scorer_module"]).__file__
        load_app("expense_report", reward)  # what the runtime's main() builds
    print(json.dumps(out))
    """
)


def probe(stage: Path, reward: str | None) -> dict[str, object]:
    main = (stage / "main.py").read_text()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(stage)}
    if reward:
        assert f"os.environ.setdefault('AGENTRFT_REWARD', {reward!r})" in main
        env["AGENTRFT_REWARD"] = reward
    site = sysconfig.get_paths()["purelib"]
    out = subprocess.run(
        [sys.executable, "-S", "-c", PROBE, str(stage), site],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_named_reward_from_another_plugin_travels_in_the_bundle(tmp_path: Path) -> None:
    zip_path = build(tmp_path / "w", "--reward", "expense_report_strict")
    names = zipfile.ZipFile(zip_path).namelist()
    assert any(n.startswith("agentrft_reward_example/") for n in names)
    assert any(n.startswith("agentrft_expense_report/") for n in names)
    stage = tmp_path / "unpacked"
    zipfile.ZipFile(zip_path).extractall(stage)

    seen = probe(stage, "expense_report_strict")
    assert str(seen["agentrft"]).startswith(str(stage))
    assert "expense_report_strict" in seen["rewards"]  # type: ignore[operator]
    assert str(seen["scorer_file"]).startswith(str(stage)), seen


def test_without_the_reward_plugin_the_bundle_cannot_serve_it(tmp_path: Path) -> None:
    """The control: the probe does see a missing plugin (the bug this guards)."""
    zip_path = build(tmp_path / "w")
    names = zipfile.ZipFile(zip_path).namelist()
    assert not any(n.startswith("agentrft_reward_example/") for n in names)
    stage = tmp_path / "unpacked"
    zipfile.ZipFile(zip_path).extractall(stage)
    seen = probe(stage, None)
    assert "expense_report_strict" not in seen["rewards"]  # type: ignore[operator]
