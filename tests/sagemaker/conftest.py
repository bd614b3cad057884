"""Markers of the SageMaker tests."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "sdk: compares against AWS's own SageMaker SDK in its own venv "
        "(scripts/sagemaker_sdk_env.sh builds .venv-sagemaker-sdk; skipped without it)",
    )
