"""Shared fixtures for the bfcl plugin's tests (run in the plugin's own venv: scripts/ci.sh)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from agentrft_bfcl import BfclMultiTurnTask

# --import-mode=importlib: the tests import their helpers module by name from here.
sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture(scope="session")
def task() -> BfclMultiTurnTask:
    return BfclMultiTurnTask()
