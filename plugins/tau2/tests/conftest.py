"""Shared fixtures: every test plays with the scripted user unless it sets its own model."""

from __future__ import annotations

import pytest
from agentrft_tau2.users import API_BASE_ENV, ARGS_ENV, MODEL_ENV


@pytest.fixture(autouse=True)
def _scripted_user(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (MODEL_ENV, API_BASE_ENV, ARGS_ENV):
        monkeypatch.delenv(name, raising=False)
