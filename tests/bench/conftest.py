"""The benchmarks' helpers (bench/*.py) are scripts, not a package: put their folder on the
import path, as running `python bench/rollouts.py` does."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))
