"""The real bundles, built and played (scripts/bundle_check.sh): opt-in, because it downloads
wheels (AGENTRFT_BUNDLE_CHECK=1; each plugin's suite venv from scripts/suite_plugins.sh)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VENVS = Path(os.environ.get("AGENTRFT_SUITE_VENVS", Path.home() / ".cache" / "agentrft"))

pytestmark = pytest.mark.skipif(
    os.environ.get("AGENTRFT_BUNDLE_CHECK") != "1",
    reason="downloads wheels: set AGENTRFT_BUNDLE_CHECK=1 to build and play the bundles",
)


@pytest.mark.parametrize("plugin", ["bfcl", "tau2", "textarena"])
def test_the_plugin_bundle_builds_for_arm64_and_its_x86_twin_plays_every_task(
    plugin: str, tmp_path: Path
) -> None:
    if not (VENVS / f"venv-{plugin}" / "bin" / "python").exists():
        pytest.skip(f"no venv-{plugin} (bash scripts/suite_plugins.sh {plugin})")
    out = subprocess.run(
        ["bash", str(ROOT / "scripts" / "bundle_check.sh"), plugin],
        env={**os.environ, "AGENTRFT_BUNDLE_WORKDIR": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-4000:]
    assert "[bundle_check] OK" in out.stdout
