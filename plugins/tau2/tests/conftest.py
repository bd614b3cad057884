"""Shared fixtures: every test plays with the scripted user unless it sets its own model."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from agentrft_tau2.users import API_BASE_ENV, ARGS_ENV, MODEL_ENV

# --import-mode=importlib: the tests import their helpers module by name from here.
sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture(autouse=True)
def _scripted_user(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (MODEL_ENV, API_BASE_ENV, ARGS_ENV):
        monkeypatch.delenv(name, raising=False)
