"""Markers and shared fixtures of the SageMaker tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentrft.backends.sagemaker.jobs.eula import Eula


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "sdk: compares against AWS's own SageMaker SDK in its own venv "
        "(scripts/sagemaker_sdk_env.sh builds .venv-sagemaker-sdk; skipped without it)",
    )


@pytest.fixture(autouse=True)
def license_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test's own accepted-license record, never the user's ~/.config; the tests here
    submit as a user who accepted the base model's license before (tests/faults/
    test_accept_eula.py checks the acceptance itself)."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setattr(Eula, "accepted", lambda self: True)
    return tmp_path / "xdg-config" / "agentrft" / "accepted-eulas.json"
