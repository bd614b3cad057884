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
    config.addinivalue_line(
        "markers",
        "eula_unaccepted: the test starts with no base model license accepted (the others "
        "run as a user who accepted every model's license before)",
    )


@pytest.fixture(autouse=True)
def license_record(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """Each test's own accepted-license record, never the user's ~/.config. Tests of other
    features submit as a user who accepted the license before; tests/sagemaker/test_eula.py
    (marked eula_unaccepted) checks the acceptance itself."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    if request.node.get_closest_marker("eula_unaccepted") is None:
        monkeypatch.setattr(Eula, "accepted", lambda self: True)
    return tmp_path / "xdg-config" / "agentrft" / "accepted-eulas.json"
